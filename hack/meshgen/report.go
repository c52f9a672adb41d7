package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// stats are the median and the range of a set of samples.
type stats struct {
	median, min, max float64
	n                int
}

func statsOf(xs []float64) stats {
	if len(xs) == 0 {
		return stats{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stats{median: m, min: s[0], max: s[len(s)-1], n: len(s)}
}

// spread is the range relative to the median.
func (s stats) spread() float64 {
	if s.median == 0 {
		return 0
	}
	return (s.max - s.min) / s.median
}

func fmtDur(ns float64) string {
	switch {
	case ns >= 1e9:
		return trim3(ns/1e9) + " s"
	case ns >= 1e6:
		return trim3(ns/1e6) + " ms"
	case ns >= 1e3:
		return trim3(ns/1e3) + " µs"
	}
	return trim3(ns) + " ns"
}

// trim3 prints three significant digits.
func trim3(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func fmtBytes(b float64) string {
	if b < 0 {
		return "−" + fmtBytes(-b)
	}
	switch {
	case b >= 1<<30:
		return trim3(b/(1<<30)) + " GiB"
	case b >= 1<<20:
		return trim3(b/(1<<20)) + " MiB"
	case b >= 1<<10:
		return trim3(b/(1<<10)) + " KiB"
	}
	return strconv.FormatFloat(b, 'f', 0, 64) + " B"
}

// durCell is `median (min–max)`.
func durCell(s stats) string {
	return fmt.Sprintf("%s (%s–%s)", fmtDur(s.median), fmtDur(s.min), fmtDur(s.max))
}

func (r *Results) step(name string) *Step {
	for i := range r.Steps {
		if r.Steps[i].Name == name {
			return &r.Steps[i]
		}
	}
	return nil
}

func (s *Step) wall() stats {
	var xs []float64
	for _, x := range s.Samples {
		xs = append(xs, float64(x.WallNanos))
	}
	return statsOf(xs)
}

func (s *Step) rss() stats {
	var xs []float64
	for _, x := range s.Samples {
		xs = append(xs, float64(x.MaxRSSKiB)*1024)
	}
	return statsOf(xs)
}

func (s *Step) readTime() stats {
	var xs []float64
	for _, x := range s.Samples {
		if x.Bare != nil {
			xs = append(xs, float64(x.Bare.ReadNanos))
		}
	}
	return statsOf(xs)
}

func (s *Step) bare() *BareResult {
	for _, x := range s.Samples {
		if x.Bare != nil {
			return x.Bare
		}
	}
	return nil
}

// ratioStats is the distribution of the per-round ratio a/b.
func ratioStats(a, b *Step) stats {
	var xs []float64
	for i := range min(len(a.Samples), len(b.Samples)) {
		if b.Samples[i].WallNanos > 0 {
			xs = append(xs, float64(a.Samples[i].WallNanos)/float64(b.Samples[i].WallNanos))
		}
	}
	return statsOf(xs)
}

// steps returns the steps of a mode, in measure order.
func (r *Results) steps(mode string) []*Step {
	var out []*Step
	for i := range r.Steps {
		if r.Steps[i].Mode == mode {
			out = append(out, &r.Steps[i])
		}
	}
	return out
}

// bareFor returns the bare reads of a verb.
func (r *Results) bareFor(verb string) *Step {
	for _, s := range r.steps(modeBare) {
		if s.Verb == verb {
			return s
		}
	}
	return nil
}

func (s *Step) cpu() stats {
	var xs []float64
	for _, x := range s.Samples {
		xs = append(xs, float64(x.CPUNanos))
	}
	return statsOf(xs)
}

// printMeasure prints the summary of one measure run.
func printMeasure(w io.Writer, r *Results) {
	fmt.Fprintf(w, "\nmesh: %s (%d objects)\n\n", r.Sizes, r.Objects)
	fmt.Fprintf(w, "%-28s %-30s %-12s %-12s %s\n", "STEP", "WALL median (min-max)", "CPU", "PEAK RSS", "READS")
	for _, s := range r.Steps {
		reads := ""
		if b := s.bare(); b != nil {
			reads = fmt.Sprintf("%d requests, %s, reads alone %s", b.Requests, fmtBytes(float64(b.Bytes)), fmtDur(s.readTime().median))
		}
		fmt.Fprintf(w, "%-28s %-30s %-12s %-12s %s\n", s.Name, durCell(s.wall()), fmtDur(s.cpu().median), fmtBytes(s.rss().median), reads)
	}
	for _, s := range r.steps(modeLive) {
		if b := r.bareFor(s.Verb); b != nil {
			fmt.Fprintf(w, "ratio %s / %s: %.2f\n", s.Name, b.Name, ratioStats(s, b).median)
		}
	}
	for _, c := range r.Audit {
		fmt.Fprintf(w, "same requests as the plugin (%s): %v (%d requests)\n", c.Command, c.Same, len(c.Plugin))
	}
	if ratio, ok := r.checkVsAnalyze(); ok {
		fmt.Fprintf(w, "ratio check offline / analyze offline: %.2f\n", ratio.median)
	}
	if a := r.Analyze; a != nil {
		fmt.Fprintf(w, "undefined subsets (IST0101) check reports as D10: %d of %d\n", len(a.SubsetRefs)-len(a.Missing), len(a.SubsetRefs))
	}
}

// benchResult is one `go test -bench` line.
type benchResult struct {
	name     string
	services int
	metrics  map[string]float64
}

// parseBench reads `go test -bench` output. Benchmarks are named NAME/services=N.
func parseBench(r io.Reader) ([]benchResult, error) {
	var out []benchResult
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := f[0]
		if i := strings.LastIndex(name, "-"); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		br := benchResult{name: strings.TrimPrefix(name, "Benchmark"), metrics: map[string]float64{}}
		if base, size, ok := strings.Cut(br.name, "/services="); ok {
			// NAME/services=N, or NAME/services=N/SIDE for the sides of a paired benchmark,
			// whose later rounds go test names SIDE#01, SIDE#02...
			size, side, paired := strings.Cut(size, "/")
			br.name = base
			br.services, _ = strconv.Atoi(size)
			if paired {
				side, _, _ = strings.Cut(side, "#")
				br.name = base + "/" + side
			}
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			br.metrics[f[i+1]] = v
		}
		out = append(out, br)
	}
	return out, sc.Err()
}

// benchKey groups benchmark results.
type benchKey struct {
	name     string
	services int
}

type benchSet map[benchKey][]benchResult

func (bs benchSet) stats(name string, services int, metric string) (stats, bool) {
	rs := bs[benchKey{name, services}]
	var xs []float64
	for _, r := range rs {
		if v, ok := r.metrics[metric]; ok {
			xs = append(xs, v)
		}
	}
	return statsOf(xs), len(xs) > 0
}

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// engineBenches are the engine benchmarks, in table order, with what they measure.
var engineBenches = []struct{ name, what string }{
	{"ClusterExplainHost", "`cluster`, one host: index build and explain, as `envoycluster.Explain` does per command"},
	{"ClusterIndexBuild", "the index alone (Services, DestinationRules, VirtualServices, PeerAuthentications)"},
	{"ClusterEveryClusterOfProxy", "every cluster of one proxy: every host it can see, explained with the origin of every field"},
	{"IstioBuildClusters", "Istio's `ConfigGeneratorImpl.BuildClusters` for the same proxy and mesh (conformance module)"},
	{pairedIstio, "Istio's `ConfigGeneratorImpl.BuildClusters` for the same proxy and mesh (conformance module), by turns with the next row in one process that holds both"},
	{pairedOurs, "ClusterEveryClusterOfProxy's loop in that process, its turn after each of Istio's"},
	{"AuthzExplainWorkload", "`authz`, one ambient workload"},
	{"WaypointExplain", "`authz waypoint/NAME`, one waypoint: its bound services, filter chains and authorization filters"},
}

// The two sides of conformance/istiorun BenchmarkEveryClusterPaired.
const (
	pairedIstio = "EveryClusterPaired/istio"
	pairedOurs  = "EveryClusterPaired/mesh-explain"
)

// pairedRatio is the distribution of ours ÷ Istio's over the rounds of the paired benchmark at n
// Services: each round's two results are next to each other in time.
func (bs benchSet) pairedRatio(n int) (stats, bool) {
	istio, ours := bs[benchKey{pairedIstio, n}], bs[benchKey{pairedOurs, n}]
	var xs []float64
	for i := 0; i < len(istio) && i < len(ours); i++ {
		a, ok1 := ours[i].metrics["ns/op"]
		b, ok2 := istio[i].metrics["ns/op"]
		if ok1 && ok2 && b > 0 {
			xs = append(xs, a/b)
		}
	}
	return statsOf(xs), len(xs) > 0
}

func report(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	var benchFiles stringList
	fs.Var(&benchFiles, "bench", "`go test -bench` output to include (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var runs []*Results
	for _, p := range fs.Args() {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		r := &Results{}
		if err := json.Unmarshal(b, r); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		runs = append(runs, r)
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].Sizes.Services < runs[j].Sizes.Services })
	benches := benchSet{}
	for _, p := range benchFiles {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		rs, err := parseBench(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		for _, r := range rs {
			k := benchKey{r.name, r.services}
			benches[k] = append(benches[k], r)
		}
	}
	writeReport(os.Stdout, runs, benches)
	return nil
}

func writeReport(w io.Writer, runs []*Results, benches benchSet) {
	if len(runs) > 0 {
		m := runs[len(runs)-1].Machine
		fmt.Fprintf(w, "Machine: %s, %d cores, %d GiB, %s, %s.\n\n", m.CPU, m.Cores, m.MemoryGiB, m.Kernel, m.Go)
	}
	for _, r := range runs {
		writeLive(w, r)
	}
	sizes := map[int]bool{}
	for k := range benches {
		sizes[k.services] = true
	}
	for _, r := range runs {
		sizes[r.Sizes.Services] = true
	}
	all := slices.Sorted(func(yield func(int) bool) {
		for s := range sizes {
			if !yield(s) {
				return
			}
		}
	})
	if len(benches) > 0 {
		writeEngine(w, benches, all)
	}
	if len(all) > 1 {
		writeGrowth(w, runs, benches, all)
	}
}

func writeLive(w io.Writer, r *Results) {
	fmt.Fprintf(w, "#### %d Services (scale %g): %s; %d objects", r.Sizes.Services, r.Scale, r.Sizes, r.Objects)
	if r.FilesBytes > 0 {
		fmt.Fprintf(w, ", %s of YAML", fmtBytes(float64(r.FilesBytes)))
	}
	fmt.Fprintf(w, "\n\nMedian (min–max) of %d runs; the ratio is taken per round.\n\n", r.Repeat)
	startRSS := 0.0
	if s := r.step(stepPluginStartup); s != nil {
		startRSS = s.rss().median
	}
	fmt.Fprintln(w, "| Command | 1. Live explain | 2. Bare reads | Ratio 1/2 | Requests | Bytes listed | Live peak RSS | RSS above startup ÷ bytes listed |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, live := range r.steps(modeLive) {
		bare := r.bareFor(live.Verb)
		if bare == nil || bare.bare() == nil {
			continue
		}
		b := bare.bare()
		ratio := ratioStats(live, bare)
		rss := live.rss().median
		fmt.Fprintf(w, "| `%s%s` | %s | %s | %.2f (%.2f–%.2f) | %d | %s | %s | %.1f |\n",
			verbText(live.Verb), strings.Join(append([]string{""}, outputArgs(live.Output)...), " "), durCell(live.wall()), durCell(bare.wall()),
			ratio.median, ratio.min, ratio.max, b.Requests, fmtBytes(float64(b.Bytes)), fmtBytes(rss), (rss-startRSS)/float64(b.Bytes))
	}
	fmt.Fprintln(w)
	var notes []string
	for _, s := range r.steps(modeBare) {
		notes = append(notes, fmt.Sprintf("%s alone (in process, without the process start): %s", s.Name, durCell(s.readTime())))
	}
	for _, s := range r.steps(modeStartup) {
		notes = append(notes, fmt.Sprintf("%s: %s, peak RSS %s", s.Name, durCell(s.wall()), fmtBytes(s.rss().median)))
	}
	for _, a := range r.Audit {
		same := "the same requests as the plugin"
		if !a.Same {
			same = "DIFFERENT requests from the plugin's"
		}
		notes = append(notes, fmt.Sprintf("audit log: the bare reads of `%s` issued %s (%d)", a.Command, same, len(a.Plugin)))
	}
	for _, n := range notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
	fmt.Fprintln(w)
	if off := r.steps(modeOffline); len(off) > 0 {
		fmt.Fprintf(w, "| Offline (`-f DIR -R`), %d runs | Wall | CPU | Peak RSS |\n", len(off[0].Samples))
		fmt.Fprintln(w, "|---|---|---|---|")
		for _, s := range off {
			fmt.Fprintf(w, "| `%s%s` | %s | %s | %s |\n", verbText(s.Verb), strings.Join(append([]string{""}, outputArgs(s.Output)...), " "),
				durCell(s.wall()), fmtDur(s.cpu().median), fmtBytes(s.rss().median))
		}
		fmt.Fprintln(w)
	}
	writeAnalyze(w, r)
}

// verbText spells a step's command in the tables.
func verbText(verb string) string {
	switch verb {
	case "check":
		return strings.Join(checkArgs, " ")
	case "analyze":
		return "istioctl analyze --use-kube=false -A"
	case "authz-sidecar":
		return "authz (sidecar pod)"
	case "authz-waypoint":
		return "authz waypoint/NAME"
	}
	return verb
}

// checkVsAnalyze is the per-round ratio of the offline check to istioctl analyze, if both ran.
func (r *Results) checkVsAnalyze() (stats, bool) {
	var chk, an *Step
	for _, s := range r.steps(modeOffline) {
		switch {
		case s.Verb == "check" && (s.Output == "" || s.Output == "table"):
			chk = s
		case s.Verb == "analyze":
			an = s
		}
	}
	if chk == nil || an == nil {
		return stats{}, false
	}
	return ratioStats(chk, an), true
}

// writeAnalyze says how the offline check compares with istioctl analyze on the same files.
func writeAnalyze(w io.Writer, r *Results) {
	ratio, ok := r.checkVsAnalyze()
	if !ok && r.Analyze == nil {
		return
	}
	if ok {
		fmt.Fprintf(w, "- `check -A -f DIR -R` ÷ `istioctl analyze --use-kube=false -A DIR`, per round: %.2f (%.2f–%.2f)\n", ratio.median, ratio.min, ratio.max)
	}
	if a := r.Analyze; a != nil {
		fmt.Fprintf(w, "- istioctl analyze: %s; check: %s\n", countsText(a.AnalyzeCodes), countsText(a.CheckIDs))
		fmt.Fprintf(w, "- routes to an undefined subset (IST0101) that check reports as D10: %d of %d\n",
			len(a.SubsetRefs)-len(a.Missing), len(a.SubsetRefs))
		for _, m := range a.Missing {
			fmt.Fprintf(w, "  - not reported by check: %s\n", m)
		}
	}
	fmt.Fprintln(w)
}

func writeEngine(w io.Writer, benches benchSet, sizes []int) {
	// have: the sizes some benchmark ran at; rows: the benchmarks that ran at some size.
	var have, rows []int
	ran := map[int]bool{}
	for _, n := range sizes {
		any := false
		for i, b := range engineBenches {
			if _, ok := benches.stats(b.name, n, "ns/op"); ok {
				any, ran[i] = true, true
			}
		}
		if any {
			have = append(have, n)
		}
	}
	for i := range engineBenches {
		if ran[i] {
			rows = append(rows, i)
		}
	}
	if len(have) == 0 {
		return
	}
	fmt.Fprintln(w, "#### Engines alone (`go test -bench`, snapshot loaded)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Time per op, median (min–max) over the `-count` runs; allocations and clusters at the largest size.")
	fmt.Fprintln(w)
	fmt.Fprint(w, "| Benchmark |")
	for _, n := range have {
		fmt.Fprintf(w, " %d Services |", n)
	}
	fmt.Fprintln(w, " Slope | Allocated/op | Clusters/op |")
	fmt.Fprint(w, "|---|")
	for range have {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w, "---|---|---|")
	for _, i := range rows {
		b := engineBenches[i]
		points := map[int]float64{}
		fmt.Fprintf(w, "| %s |", b.name)
		last := 0
		for _, n := range have {
			t, ok := benches.stats(b.name, n, "ns/op")
			if !ok {
				fmt.Fprint(w, " – |")
				continue
			}
			points[n], last = t.median, n
			if t.n > 1 {
				fmt.Fprintf(w, " %s |", durCell(t))
			} else {
				fmt.Fprintf(w, " %s |", fmtDur(t.median))
			}
		}
		if last == 0 {
			fmt.Fprintln(w, " – | – | – |")
			continue
		}
		mem, _ := benches.stats(b.name, last, "B/op")
		cl := "–"
		if c, ok := benches.stats(b.name, last, "clusters/op"); ok {
			cl = strconv.FormatFloat(c.median, 'f', 0, 64)
		}
		fmt.Fprintf(w, " %.2f | %s | %s |\n", slope(points), fmtBytes(mem.median), cl)
	}
	fmt.Fprintln(w)
	for _, i := range rows {
		fmt.Fprintf(w, "- %s: %s\n", engineBenches[i].name, engineBenches[i].what)
	}
	for _, n := range have {
		if r, ok := benches.pairedRatio(n); ok {
			fmt.Fprintf(w, "- %d Services: every cluster of one proxy, ours ÷ Istio's in the paired run = %.2f (%.2f–%.2f over %d rounds)\n",
				n, r.median, r.min, r.max, r.n)
			continue
		}
		ours, ok1 := benches.stats("ClusterEveryClusterOfProxy", n, "ns/op")
		istio, ok2 := benches.stats("IstioBuildClusters", n, "ns/op")
		if ok1 && ok2 {
			fmt.Fprintf(w, "- %d Services: every cluster of one proxy, ours ÷ Istio's = %.1f (separate runs)\n", n, ours.median/istio.median)
		}
	}
	fmt.Fprintln(w)
}

// series is one measure across sizes.
type series struct {
	name   string
	points map[int]float64
	format func(float64) string
}

func writeGrowth(w io.Writer, runs []*Results, benches benchSet, sizes []int) {
	var ss []series
	add := func(name string, format func(float64) string, f func(n int) (float64, bool)) {
		s := series{name: name, points: map[int]float64{}, format: format}
		for _, n := range sizes {
			if v, ok := f(n); ok {
				s.points[n] = v
			}
		}
		if len(s.points) > 1 {
			ss = append(ss, s)
		}
	}
	runAt := func(n int) *Results {
		for _, r := range runs {
			if r.Sizes.Services == n {
				return r
			}
		}
		return nil
	}
	var names []string
	for _, r := range runs {
		for _, s := range r.Steps {
			if s.Mode != modeStartup && !slices.Contains(names, s.Name) {
				names = append(names, s.Name)
			}
		}
	}
	for _, st := range names {
		add(st+" (wall)", fmtDur, func(n int) (float64, bool) {
			if r := runAt(n); r != nil {
				if s := r.step(st); s != nil {
					return s.wall().median, true
				}
			}
			return 0, false
		})
	}
	for _, st := range names {
		if !strings.Contains(st, " live") {
			continue
		}
		add(st+" (peak RSS)", fmtBytes, func(n int) (float64, bool) {
			if r := runAt(n); r != nil {
				if s := r.step(st); s != nil {
					return s.rss().median, true
				}
			}
			return 0, false
		})
	}
	for _, verb := range []string{"cluster", "authz", "authz-sidecar", "authz-waypoint", "check"} {
		add(verb+" bytes listed", fmtBytes, func(n int) (float64, bool) {
			if r := runAt(n); r != nil {
				if s := r.bareFor(verb); s != nil && s.bare() != nil {
					return float64(s.bare().Bytes), true
				}
			}
			return 0, false
		})
	}
	if len(ss) == 0 {
		return
	}
	fmt.Fprintln(w, "#### Growth of the live and offline runs with mesh size")
	fmt.Fprintln(w)
	fmt.Fprint(w, "| Measure |")
	for _, n := range sizes {
		fmt.Fprintf(w, " %d Services |", n)
	}
	fmt.Fprintln(w, " Slope (log-log) |")
	fmt.Fprint(w, "|---|")
	for range sizes {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w, "---|")
	for _, s := range ss {
		fmt.Fprintf(w, "| %s |", s.name)
		for _, n := range sizes {
			if v, ok := s.points[n]; ok {
				fmt.Fprintf(w, " %s |", s.format(v))
			} else {
				fmt.Fprint(w, " – |")
			}
		}
		fmt.Fprintf(w, " %.2f |\n", slope(s.points))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "The slope is the least-squares exponent k of value ∝ size^k: 1 is linear, 0 constant.")
	fmt.Fprintln(w)
	// The fixed cost of a process (runtime, clients) hides in a single RSS figure; between the
	// smallest and the largest mesh it cancels out.
	if len(runs) > 1 {
		lo, hi := runs[0], runs[len(runs)-1]
		for _, live := range hi.steps(modeLive) {
			l0, b0, b1 := lo.step(live.Name), lo.bareFor(live.Verb), hi.bareFor(live.Verb)
			if l0 == nil || b0 == nil || b1 == nil || b0.bare() == nil || b1.bare() == nil {
				continue
			}
			dBytes := float64(b1.bare().Bytes - b0.bare().Bytes)
			if dBytes <= 0 {
				continue
			}
			fmt.Fprintf(w, "- `%s`: from %d to %d Services the peak RSS grows by %s while the bytes listed grow by %s: %.1f bytes of RSS per byte listed\n",
				live.Name, lo.Sizes.Services, hi.Sizes.Services, fmtBytes(live.rss().median-l0.rss().median), fmtBytes(dBytes),
				(live.rss().median-l0.rss().median)/dBytes)
		}
		fmt.Fprintln(w)
	}
}

// slope fits log(time) = k·log(size) + c and returns k.
func slope(points map[int]float64) float64 {
	var xs, ys []float64
	for n, v := range points {
		if n > 0 && v > 0 {
			xs = append(xs, math.Log(float64(n)))
			ys = append(ys, math.Log(v))
		}
	}
	if len(xs) < 2 {
		return math.NaN()
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(len(xs))
	my /= float64(len(xs))
	var num, den float64
	for i := range xs {
		num += (xs[i] - mx) * (ys[i] - my)
		den += (xs[i] - mx) * (xs[i] - mx)
	}
	return num / den
}
