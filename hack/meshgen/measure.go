package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/mesh-explain/kubectl-mesh-explain/internal/testkit/meshgen"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/plan"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// Results is what `meshgen measure` writes: the machine, the mesh, and every sample.
type Results struct {
	Machine Machine       `json:"machine"`
	Scale   float64       `json:"scale"`
	Seed    uint64        `json:"seed"`
	Sizes   meshgen.Sizes `json:"sizes"`
	Objects int           `json:"objects"`
	// FilesBytes is the size of the files the offline runs read.
	FilesBytes int64  `json:"filesBytes"`
	Repeat     int    `json:"repeat"`
	Steps      []Step `json:"steps"`
	// Audit compares, per command, the requests the API server saw from the plugin and from
	// the bare reads.
	Audit []AuditCheck `json:"audit,omitempty"`
	// Analyze compares what `check -A -f` and `istioctl analyze` found on the files.
	Analyze *AnalyzeComparison `json:"analyze,omitempty"`
}

// Machine describes where the benchmark ran.
type Machine struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	MemoryGiB int    `json:"memoryGiB"`
	Kernel    string `json:"kernel"`
	Go        string `json:"go"`
}

// Step is one measured command and its samples.
type Step struct {
	Name string `json:"name"`
	// Verb is cluster, authz (an ambient pod), authz-sidecar, authz-waypoint or check, or
	// analyze for istioctl analyze ("" for the startup baselines); Mode is live, bare, offline or startup; Output is the -o value ("table": none
	// given).
	Verb    string   `json:"verb,omitempty"`
	Mode    string   `json:"mode"`
	Output  string   `json:"output,omitempty"`
	Command string   `json:"command"`
	Samples []Sample `json:"samples"`
}

// Sample is one run of a command as a child process.
type Sample struct {
	WallNanos int64 `json:"wallNanos"`
	// MaxRSSKiB is the child's peak resident set, as GNU time reports it.
	MaxRSSKiB int64 `json:"maxRSSKiB"`
	// CPUNanos is the child's user and system CPU time (10 ms resolution).
	CPUNanos int64       `json:"cpuNanos"`
	Bare     *BareResult `json:"bare,omitempty"`
}

// AuditCheck says whether the plugin and the bare reads issued the same requests.
type AuditCheck struct {
	Command string   `json:"command"`
	Same    bool     `json:"same"`
	Plugin  []string `json:"plugin"`
	Bare    []string `json:"bare"`
}

// Step modes.
const (
	modeLive    = "live"
	modeBare    = "bare"
	modeOffline = "offline"
	modeStartup = "startup"
)

// The startup baselines' step names.
const (
	stepPluginStartup  = "plugin startup"
	stepMeshgenStartup = "meshgen startup"
)

type child struct {
	step Step
	argv []string
	// okExit are the exit codes besides 0 that are a normal end: check and istioctl analyze
	// exit 79 when they find something.
	okExit []int
	// capture keeps the child's standard output (run returns it).
	capture bool
}

// exitFindings is the exit code of check and of istioctl analyze when they find something.
const exitFindings = 79

// checkArgs is the check command the benchmark measures: every namespace.
var checkArgs = []string{"check", "-A"}

// stepName spells a step: `cluster live`, `cluster live -o json`, `cluster bare reads`.
func stepName(verb, mode, output string) string {
	name := verb + " " + mode
	if mode == modeBare {
		name += " reads"
	}
	if output != "" && output != "table" {
		name += " -o " + output
	}
	return name
}

func outputArgs(output string) []string {
	if output == "" || output == "table" {
		return nil
	}
	return []string{"-o", output}
}

func measure(args []string) error {
	fs := flag.NewFlagSet("measure", flag.ContinueOnError)
	var sf sizeFlags
	sf.register(fs)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the API server loaded with `meshgen load` (required)")
	plugin := fs.String("plugin", "bin/kubectl-mesh_explain", "the plugin binary")
	filesDir := fs.String("files", "", "the directory `meshgen files` wrote, for the offline runs (none: no offline runs)")
	repeat := fs.Int("repeat", 5, "runs of each command")
	auditLog := fs.String("audit-log", "", "the API server's audit log, to check that the bare reads issue the plugin's requests")
	out := fs.String("out", "", "write the results as JSON to this file")
	outputs := fs.String("outputs", "table,json", "the -o values of the live runs, comma-separated (table: the default output)")
	offlineOutputs := fs.String("offline-outputs", "table", "the -o values of the offline runs, comma-separated")
	offlineRepeat := fs.Int("offline-repeat", 0, "runs of each offline command (0: --repeat)")
	withCheck := fs.Bool("check", true, "measure `check -A` too: live, its bare reads, and offline on --files")
	istioctl := fs.String("istioctl", "", "istioctl binary (hack/istioctl.sh): measure `istioctl analyze --use-kube=false -A` on --files beside `check -A -f`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *kubeconfig == "" {
		return fmt.Errorf("--kubeconfig is required")
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cfg := sf.config()
	if err := cfg.Sizes.Validate(); err != nil {
		return err
	}
	q := meshgen.QueriesFor(cfg)
	if *repeat < 1 {
		return fmt.Errorf("--repeat must be at least 1")
	}
	res := &Results{Machine: machine(), Scale: sf.scale, Seed: sf.seed, Sizes: cfg.Sizes, Objects: cfg.Sizes.Total(), Repeat: *repeat}

	kc := []string{"--kubeconfig", *kubeconfig}
	var nodes []string
	for _, n := range q.ClusterNodes {
		nodes = append(nodes, "--node", n)
	}
	nearMiss, err := clusterNearMiss(cfg, q, *filesDir)
	if err != nil {
		return err
	}
	nodes = append(nodes, nearMiss...)
	commands := []struct {
		verb string
		args []string
		bare []string
	}{{"cluster", q.ClusterArgs(), nodes}, {"authz", q.AuthzArgs(), nil}, {"authz-sidecar", q.SidecarAuthzArgs(), nil},
		{"authz-waypoint", q.WaypointAuthzArgs(), nil}}
	var children []child
	add := func(verb, mode, output string, argv []string) {
		children = append(children, child{step: Step{Name: stepName(verb, mode, output), Verb: verb, Mode: mode, Output: output,
			Command: displayCommand(argv, *filesDir)}, argv: argv})
		if verb == "check" || verb == "analyze" {
			children[len(children)-1].okExit = []int{exitFindings}
		}
	}
	for _, c := range commands {
		for _, o := range strings.Split(*outputs, ",") {
			add(c.verb, modeLive, o, concat([]string{*plugin}, c.args, outputArgs(o), kc))
		}
		add(c.verb, modeBare, "", concat([]string{self, "bare-reads"}, kc, c.bare, []string{"--"}, c.args))
	}
	if *withCheck {
		add("check", modeLive, "", concat([]string{*plugin}, checkArgs, kc))
		add("check", modeBare, "", concat([]string{self, "bare-reads"}, kc, []string{"--"}, checkArgs))
		commands = append(commands, struct {
			verb string
			args []string
			bare []string
		}{"check", checkArgs, nil})
	}
	if *filesDir != "" {
		n, err := dirBytes(*filesDir)
		if err != nil {
			return err
		}
		res.FilesBytes = n
		for _, c := range commands {
			for _, o := range strings.Split(*offlineOutputs, ",") {
				add(c.verb, modeOffline, o, concat([]string{*plugin}, c.args, outputArgs(o), []string{"-f", *filesDir, "-R"}))
			}
		}
		if *istioctl != "" {
			add("analyze", modeOffline, "", analyzeArgv(*istioctl, *filesDir))
		}
	}
	children = append(children,
		child{step: Step{Name: stepPluginStartup, Mode: modeStartup, Command: "kubectl-mesh_explain --version"}, argv: []string{*plugin, "--version"}},
		child{step: Step{Name: stepMeshgenStartup, Mode: modeStartup, Command: "meshgen noop"}, argv: []string{self, "noop"}})

	// Warm up (the API server's caches, the page cache) and check the requests on the way:
	// the audit log between the start of a command's first live run and the end of its bare
	// run holds both.
	offsets := map[string]int64{}
	for _, c := range children {
		if _, ok := offsets[c.step.Verb]; *auditLog != "" && c.step.Mode == modeLive && !ok {
			if offsets[c.step.Verb], err = fileSize(*auditLog); err != nil {
				return err
			}
		}
		if _, _, err := run(c); err != nil {
			return err
		}
		if *auditLog == "" || c.step.Mode != modeBare {
			continue
		}
		live := 0
		for _, o := range children {
			if o.step.Verb == c.step.Verb && o.step.Mode == modeLive {
				live++
			}
		}
		check, err := auditCompare(*auditLog, offsets[c.step.Verb], c.argv[slices.Index(c.argv, "--")+1:], live)
		if err != nil {
			return err
		}
		res.Audit = append(res.Audit, check)
		if !check.Same {
			fmt.Fprintf(os.Stderr, "meshgen: warning: the bare reads of %q differ from the plugin's:\n  plugin: %s\n  bare:   %s\n",
				check.Command, strings.Join(check.Plugin, " "), strings.Join(check.Bare, " "))
		}
	}
	if *istioctl != "" && *filesDir != "" && *withCheck {
		// What each finds, from one more run of each with -o json (not timed).
		if res.Analyze, err = compareOnFiles(*plugin, *istioctl, *filesDir); err != nil {
			return err
		}
		if n := len(res.Analyze.Missing); n > 0 {
			fmt.Fprintf(os.Stderr, "meshgen: warning: check does not report %d of the %d undefined subsets istioctl analyze reports (IST0101)\n",
				n, len(res.Analyze.SubsetRefs))
		}
	}
	for _, c := range children {
		res.Steps = append(res.Steps, c.step)
	}
	if *offlineRepeat <= 0 {
		*offlineRepeat = *repeat
	}
	for r := range max(*repeat, *offlineRepeat) {
		for i, c := range children {
			if (c.step.Mode == modeOffline && r >= *offlineRepeat) || (c.step.Mode != modeOffline && r >= *repeat) {
				continue
			}
			s, _, err := run(c)
			if err != nil {
				return err
			}
			res.Steps[i].Samples = append(res.Steps[i].Samples, s)
		}
		fmt.Fprintf(os.Stderr, "meshgen: round %d/%d done\n", r+1, max(*repeat, *offlineRepeat))
	}
	printMeasure(os.Stdout, res)
	if *out != "" {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(*out, append(b, '\n'), 0o644)
	}
	return nil
}

func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// displayCommand spells a child's command line with the binaries, the kubeconfig and the
// files directory by base name.
func displayCommand(argv []string, filesDir string) string {
	out := slices.Clone(argv)
	out[0] = filepath.Base(out[0])
	for i := range out {
		if i > 0 && (out[i-1] == "--kubeconfig" || out[i-1] == "-f" || (filesDir != "" && out[i] == filesDir)) {
			out[i] = filepath.Base(out[i])
		}
	}
	return strings.Join(out, " ")
}

// analyzeArgv is istioctl analyze of the files alone, every namespace.
func analyzeArgv(istioctl string, paths ...string) []string {
	return concat([]string{istioctl, "analyze", "--use-kube=false", "-A"}, paths)
}

// compareOnFiles runs `check -A -f DIR -R -o json` and `istioctl analyze -o json` on the files
// once each and compares what they found.
func compareOnFiles(plugin, istioctl, dir string) (*AnalyzeComparison, error) {
	checkOut, err := output(child{argv: concat([]string{plugin}, checkArgs, []string{"-f", dir, "-R", "-o", "json"}), okExit: []int{exitFindings}})
	if err != nil {
		return nil, err
	}
	analyzeOut, err := output(child{argv: concat(analyzeArgv(istioctl, dir), []string{"-o", "json"}), okExit: []int{exitFindings}})
	if err != nil {
		return nil, err
	}
	return compareAnalyze(checkOut, analyzeOut)
}

// output runs a child under GNU time and returns its standard output.
func output(c child) ([]byte, error) {
	c.capture = true
	_, out, err := run(c)
	return out, err
}

// timeBin is GNU time. It forks, so the peak RSS it reports is the child's own; a child started
// by Go's os/exec (clone with CLONE_VM) would inherit this process's peak RSS as its floor.
const timeBin = "/usr/bin/time"

// run starts a child process under GNU time and reports its wall time, from start to exit,
// its CPU time and its peak RSS; with c.capture, it returns the child's standard output (else
// it goes to /dev/null).
func run(c child) (Sample, []byte, error) {
	rf, err := os.CreateTemp("", "meshgen-time-")
	if err != nil {
		return Sample{}, nil, err
	}
	rf.Close()
	defer os.Remove(rf.Name())
	argv := append([]string{timeBin, "-f", "%M %U %S", "-o", rf.Name()}, c.argv...)
	cmd := exec.Command(argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	if c.capture || c.step.Mode == modeBare {
		cmd.Stdout = &stdout
	}
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Sample{}, nil, err
	}
	err = cmd.Wait()
	wall := time.Since(start)
	var exit *exec.ExitError
	if errors.As(err, &exit) && slices.Contains(c.okExit, exit.ExitCode()) {
		err = nil
	}
	if err != nil {
		return Sample{}, nil, fmt.Errorf("%s: %v\n%s", displayCommand(c.argv, ""), err, stderr.String())
	}
	s := Sample{WallNanos: wall.Nanoseconds()}
	report, err := os.ReadFile(rf.Name())
	if err != nil {
		return Sample{}, nil, err
	}
	var user, sys float64
	// GNU time writes "Command exited with non-zero status N" before its report.
	line := strings.TrimSpace(string(report))
	if i := strings.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	if _, err := fmt.Sscanf(line, "%d %f %f", &s.MaxRSSKiB, &user, &sys); err != nil {
		return Sample{}, nil, fmt.Errorf("reading %s's report %q: %v", timeBin, report, err)
	}
	s.CPUNanos = int64((user + sys) * 1e9)
	if c.step.Mode == modeBare {
		s.Bare = &BareResult{}
		if err := json.Unmarshal(stdout.Bytes(), s.Bare); err != nil {
			return Sample{}, nil, fmt.Errorf("reading the bare reads' result: %v", err)
		}
	}
	return s, stdout.Bytes(), nil
}

func fileSize(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	return n, err
}

// auditEvent is the part of an audit.k8s.io/v1 Event the check reads.
type auditEvent struct {
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	UserAgent  string `json:"userAgent"`
}

// auditCompare reads the audit log from offset on and compares the requests of the plugin's
// liveRuns runs with those of one bare run, as sorted lists of `verb URI` with continue tokens
// elided: the plugin's list must be the bare list liveRuns times over.
func auditCompare(path string, offset int64, command []string, liveRuns int) (AuditCheck, error) {
	check := AuditCheck{Command: strings.Join(command, " ")}
	// The log backend writes ResponseComplete after the response; give it a moment.
	time.Sleep(500 * time.Millisecond)
	f, err := os.Open(path)
	if err != nil {
		return check, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return check, err
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Stage != "ResponseComplete" {
			continue
		}
		line := e.Verb + " " + normalizeURI(e.RequestURI)
		switch {
		case strings.HasPrefix(e.UserAgent, "kubectl-mesh_explain/"):
			check.Plugin = append(check.Plugin, line)
		case strings.HasPrefix(e.UserAgent, BareUserAgent):
			check.Bare = append(check.Bare, line)
		}
	}
	if err := sc.Err(); err != nil {
		return check, err
	}
	slices.Sort(check.Plugin)
	slices.Sort(check.Bare)
	var want []string
	for range liveRuns {
		want = append(want, check.Bare...)
	}
	slices.Sort(want)
	check.Same = len(check.Plugin) > 0 && slices.Equal(check.Plugin, want)
	check.Plugin = slices.Compact(check.Plugin)
	return check, nil
}

func normalizeURI(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return uri
	}
	q := u.Query()
	if q.Has("continue") {
		q.Set("continue", "*")
	}
	// The plugin's default per-request timeout rides along as ?timeout=; it reads the same.
	q.Del("timeout")
	if len(q) == 0 {
		return u.Path
	}
	return u.Path + "?" + q.Encode()
}

func machine() Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil {
			m.MemoryGiB = int((kb + 1<<19) >> 20)
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	return m
}

// clusterNearMiss are the --service, --services and --pods flags of the bare reads of
// `cluster`: the Services and Pods the plugin reads in its second phase (pkg/plan
// Cluster.NearMissReads and SelectorPodReads), found as the plugin finds them, in the mesh's
// objects filtered by the plan's first reads. Without the files of the mesh, they are written
// to a temporary directory.
func clusterNearMiss(cfg meshgen.Config, q meshgen.Queries, filesDir string) ([]string, error) {
	if filesDir == "" {
		dir, err := os.MkdirTemp("", "meshgen-nearmiss-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		m, err := meshgen.Generate(cfg)
		if err != nil {
			return nil, err
		}
		if err := m.WriteFiles(dir, meshgen.YAML); err != nil {
			return nil, err
		}
		filesDir = dir
	}
	cq := plan.ClusterQuery{Host: q.Host, Namespace: q.ClientNamespace, ClientNamespace: q.ClientNamespace, ClientPod: q.ClientPod}
	c := plan.NewCluster(cq, source.Spec{}, "istio-system", true, false)
	snap, err := source.Load(context.Background(), source.Spec{Files: []string{filesDir}, Recursive: true, FilterFiles: true, Reads: c.Reads()})
	if err != nil {
		return nil, err
	}
	var flags []string
	for _, r := range c.NearMissReads(snap) {
		if r.Names == nil {
			flags = append(flags, "--services", r.Namespaces[0])
			continue
		}
		for _, name := range r.Names {
			flags = append(flags, "--service", r.Namespaces[0]+"/"+name)
		}
	}
	for _, r := range c.SelectorPodReads(snap) {
		flags = append(flags, "--pods", r.Namespaces[0])
	}
	return flags, nil
}
