package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// enableEnv is the variable that switches the suite on.
const enableEnv = "MESH_EXPLAIN_E2E"

// env is the running test environment, set up once by TestMain.
var env struct {
	root    string // repository root
	work    string // temporary work directory
	kubeDir string // hack/kube-env.sh state: kubeconfigs, pids, logs, audit.log
	binDir  string // holds the freshly built kubectl-mesh_explain
	kubectl string // the real kubectl the plugin is run through
	home    string // HOME for kubectl runs, so no user config or cache leaks in

	// noCRD is the plugin run against the apiserver before the Istio CRDs were installed.
	noCRD result
}

func TestMain(m *testing.M) {
	if os.Getenv(enableEnv) != "1" {
		fmt.Printf("e2e: not run (set %s=1 to run the end-to-end suite against a real kube-apiserver; `make test` does)\n", enableEnv)
		os.Exit(0)
	}
	os.Exit(runMain(m))
}

// runMain sets the environment up, runs the tests and always tears the apiserver down: on
// return, on a signal, and (through a reaper process) when this process dies on a panic or a
// test timeout.
func runMain(m *testing.M) (code int) {
	if err := setup(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: setup: %v\n", err)
		return 1
	}
	keep := os.Getenv("MESH_EXPLAIN_E2E_KEEP") == "1"

	var once sync.Once
	teardown := func() {
		once.Do(func() {
			if err := kubeEnv("down", env.kubeDir); err != nil {
				fmt.Fprintf(os.Stderr, "e2e: stopping the apiserver: %v\n", err)
			}
		})
	}

	reaper, err := startReaper()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	defer func() {
		teardown()
		// The reaper is ours; stop it by PID now that nothing is left to reap.
		_ = reaper.Process.Kill()
		_, _ = reaper.Process.Wait()
		if keep || code != 0 {
			fmt.Fprintf(os.Stderr, "e2e: work directory kept: %s\n", env.work)
		} else {
			_ = os.RemoveAll(env.work)
		}
	}()

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s := <-sigs
		fmt.Fprintf(os.Stderr, "e2e: %v: stopping the apiserver\n", s)
		teardown()
		_ = reaper.Process.Kill()
		fmt.Fprintf(os.Stderr, "e2e: work directory kept: %s\n", env.work)
		os.Exit(130)
	}()

	if err := kubeEnv("up", env.kubeDir); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: starting the apiserver: %v\n", err)
		return 1
	}
	// One probe before the CRDs exist: the same apiserver stands in for a cluster without
	// Istio (TestNoIstioCRDs checks the answer).
	env.noCRD = runPlugin(kubeconfig("admin"), "cluster", "kubernetes", "-n", "default", "-o", "envoy")
	if err := kubeEnv("crds", env.kubeDir); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: installing the Istio CRDs: %v\n", err)
		return 1
	}
	code = m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "e2e: apiserver log: %s\n", filepath.Join(env.kubeDir, "kube-apiserver.log"))
	}
	return code
}

// setup finds the repository, builds the plugin and prepares PATH and HOME.
func setup() error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	env.root = filepath.Dir(wd)
	if _, err := os.Stat(filepath.Join(env.root, "hack", "kube-env.sh")); err != nil {
		return fmt.Errorf("run from the e2e directory of the repository: %w", err)
	}
	if env.work, err = os.MkdirTemp("", "mesh-explain-e2e-"); err != nil {
		return err
	}
	env.kubeDir = filepath.Join(env.work, "kube")
	env.binDir = filepath.Join(env.work, "bin")
	env.home = filepath.Join(env.work, "home")
	for _, d := range []string{env.kubeDir, env.binDir, env.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}

	plugin := filepath.Join(env.binDir, "kubectl-mesh_explain")
	if prebuilt := os.Getenv("MESH_EXPLAIN_E2E_PLUGIN"); prebuilt != "" {
		// Test a given binary (a release build, say) instead of the work tree.
		if err := os.Symlink(prebuilt, plugin); err != nil {
			return err
		}
	} else {
		build := exec.Command("go", "build", "-o", plugin, "./cmd/kubectl-mesh_explain")
		build.Dir = env.root
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("building the plugin: %v\n%s", err, out)
		}
	}
	// The plugin directory goes first on PATH: kubectl finds `mesh-explain` there.
	if err := os.Setenv("PATH", env.binDir+string(os.PathListSeparator)+os.Getenv("PATH")); err != nil {
		return err
	}
	env.kubectl = os.Getenv("KUBECTL")
	if env.kubectl == "" {
		if env.kubectl, err = exec.LookPath("kubectl"); err != nil {
			return errors.New("kubectl is not on PATH (set KUBECTL to its path)")
		}
	}
	return nil
}

// kubeEnv runs hack/kube-env.sh with its output on our stderr. Its processes get their own
// process group, so a terminal ^C reaches this process (which stops them in order) and not
// the apiserver and etcd directly.
func kubeEnv(args ...string) error {
	cmd := exec.Command(filepath.Join(env.root, "hack", "kube-env.sh"), args...)
	cmd.Dir = env.root
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd.Run()
}

// startReaper starts a small watcher in its own session that runs `kube-env.sh down` once this
// test process is gone, whatever the way it went (panic, test timeout, SIGKILL).
func startReaper() (*exec.Cmd, error) {
	script := `while kill -0 "$1" 2>/dev/null; do sleep 1; done; exec "$2" down "$3"`
	cmd := exec.Command("bash", "-c", script, "reaper",
		strconv.Itoa(os.Getpid()), filepath.Join(env.root, "hack", "kube-env.sh"), env.kubeDir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the reaper: %w", err)
	}
	return cmd, nil
}

// kubeconfig returns the kubeconfig of a kube-env.sh user: admin, reader, nopa, nobody.
func kubeconfig(user string) string {
	return filepath.Join(env.kubeDir, user+".kubeconfig")
}

// offline is the KUBECONFIG of offline runs: a path that does not exist, so an `-f` run cannot
// reach the cluster even by accident.
func offline() string { return filepath.Join(env.work, "no-cluster.kubeconfig") }

// result is one plugin run.
type result struct {
	args     []string
	stdout   string
	stderr   string
	code     int
	elapsed  time.Duration
	err      error // set when the command could not run at all
	timedOut bool
	// maxRSS is the peak resident set of the run in KiB (kubectl execs the plugin, so it is the
	// plugin's when the plugin ran), 0 when unknown.
	maxRSS int64
}

func (r result) String() string {
	return fmt.Sprintf("kubectl mesh-explain %s: exit %d after %v\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.elapsed.Round(time.Millisecond), r.stderr)
}

// runPlugin runs `kubectl mesh-explain ARGS` with KUBECONFIG=kc.
func runPlugin(kc string, args ...string) result {
	return runPluginTimeout(2*time.Minute, kc, args...)
}

func runPluginTimeout(timeout time.Duration, kc string, args ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	full := append([]string{"mesh-explain"}, args...)
	cmd := exec.CommandContext(ctx, env.kubectl, full...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kc, "HOME="+env.home, "NO_COLOR=1")
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	start := time.Now()
	err := cmd.Run()
	r := result{args: args, stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start)}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.maxRSS = int64(ru.Maxrss)
		}
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	default:
		r.code = -1
		r.err = err
	}
	if ctx.Err() != nil {
		r.timedOut = true
	}
	return r
}

// runKubectl runs plain kubectl (not the plugin) with KUBECONFIG=kc, to learn how kubectl itself
// reports a failure.
func runKubectl(timeout time.Duration, kc string, args ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.kubectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kc, "HOME="+filepath.Join(env.work, "home-kubectl"))
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	start := time.Now()
	err := cmd.Run()
	r := result{args: args, stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start)}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		r.code = exit.ExitCode()
	} else if err != nil {
		r.code, r.err = -1, err
	}
	return r
}

// mustExitZero fails the test unless r ran and exited 0.
func mustExitZero(t *testing.T, r result) {
	t.Helper()
	if r.err != nil || r.code != 0 || r.timedOut {
		t.Fatalf("%v\n(error: %v, timed out: %v)", r, r.err, r.timedOut)
	}
}

// mustSucceed fails the test unless r exited 0 with some output.
func mustSucceed(t *testing.T, r result) {
	t.Helper()
	mustExitZero(t, r)
	if strings.TrimSpace(r.stdout) == "" {
		t.Fatalf("%v\nno output on stdout", r)
	}
}
