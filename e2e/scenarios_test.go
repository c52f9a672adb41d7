package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/mesh-explain/kubectl-mesh-explain/internal/testkit"
)

// liveExclusions names scenarios whose live answer may legitimately differ from the offline
// one, with the reason. Keep it empty unless a scenario states something a live apiserver
// cannot reproduce.
var liveExclusions = map[string]string{}

// TestScenariosLiveEqualsOffline applies every scenario folder to the apiserver and requires
// `kubectl mesh-explain` to give the same answer live as offline with -f on the same folder:
// the -o envoy / -o ztunnel output byte for byte, and the -o json document after
// normaliseJSON.
func TestScenariosLiveEqualsOffline(t *testing.T) {
	var dirs []string
	for _, kind := range []string{"cluster", "authz", "sidecar", "waypoint"} {
		found, err := filepath.Glob(filepath.Join(env.root, "testdata", "scenarios", kind, "*", "args"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range found {
			dirs = append(dirs, filepath.Dir(f))
		}
	}
	sort.Strings(dirs)
	if len(dirs) == 0 {
		t.Fatal("no scenario folders under testdata/scenarios")
	}
	for _, dir := range dirs {
		name := filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			if why, ok := liveExclusions[name]; ok {
				t.Logf("not compared live: %s", why)
				return
			}
			liveEqualsOffline(t, dir)
		})
	}
}

func liveEqualsOffline(t *testing.T, dir string) {
	sc, err := readScenario(dir)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := readObjects(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin(t).tryApply(t, objs); err != nil {
		// A scenario about bad input may hold objects the apiserver's CRD schema rejects
		// (istiod's validating webhook is not installed here, so only schema errors count).
		// No cluster can hold such input, so there is nothing to compare live.
		if apierrors.IsInvalid(err) && strings.HasPrefix(strings.ToLower(sc.title), "bad input") {
			t.Logf("not compared live: the apiserver rejects this bad input: %v", err)
			return
		}
		t.Fatal(err)
	}

	native := sc.format()
	if probe := runPlugin(offline(), sc.with("-f", dir, "-o", native)...); native == "ztunnel" && probe.code == 64 && strings.Contains(probe.stderr, "use -o envoy") {
		// A pod with a sidecar: ztunnel does not serve it, and the command says -o envoy fits.
		native = "envoy"
	}
	for _, format := range []string{native, "json"} {
		// An empty -o ztunnel answer is legitimate (istiod sends the workload no Authorization),
		// so only the exit code is required there; -o json is always a document.
		check := mustExitZero
		if format == "json" {
			check = mustSucceed
		}
		off := runPlugin(offline(), sc.with("-f", dir, "-o", format)...)
		check(t, off)
		live := runPlugin(kubeconfig("admin"), sc.with("-o", format)...)
		check(t, live)
		want, got := off.stdout, live.stdout
		if format == "json" {
			want, got = normaliseJSON(t, want), normaliseJSON(t, got)
		}
		if want != got {
			t.Errorf("%s: -o %s differs live (+) from offline (-):\n%s", sc.title, format, diff(want, got))
		}
	}
}

// scenario is a parsed args file.
type scenario struct {
	title string
	args  []string
}

func readScenario(dir string) (scenario, error) {
	a, err := testkit.ReadArgs(dir)
	if err != nil {
		return scenario{}, err
	}
	return scenario{title: a.Title, args: a.Command}, nil
}

// format is the native output of the scenario's command: envoy for cluster, ztunnel for authz
// (envoy for a sidecar pod, decided from the offline answer).
func (s scenario) format() string {
	if s.args[0] == "authz" {
		return "ztunnel"
	}
	return "envoy"
}

// with returns the scenario's arguments followed by extra.
func (s scenario) with(extra ...string) []string {
	return append(append([]string{}, s.args...), extra...)
}

// normaliseJSON removes, at any depth, what legitimately differs between an offline and a
// live explanation of the same objects, and re-indents the rest:
//
//   - "position" fields: where an object or field was read in a file. Live objects have none.
//     The same position rendered into a table cell, a trailing " (FILE:LINE:COL)" after an
//     origin, is cut from strings too.
//   - "resourceVersion" fields: the apiserver's version of a live object. Files have none.
//   - creation times: a string that is exactly an RFC 3339 time becomes "<time>". The apiserver
//     stamps its own creationTimestamp; the scenario's order is kept (see applyGroups), the
//     instants are not.
//
// Everything else (objects, origins, diagnostics, warnings, sections) must be equal.
func normaliseJSON(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("-o json is not JSON: %v\n%s", err, s)
	}
	v = normalise(v)
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(out) + "\n"
}

// positionInText is a file position as origins render it: ` (dir/file.yaml:12:5)`.
var positionInText = regexp.MustCompile(` \([^()\s]+\.(?:ya?ml|json)(?::\d+){1,2}\)`)

func normalise(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "position" || k == "resourceVersion" {
				delete(x, k)
				continue
			}
			x[k] = normalise(e)
		}
		return x
	case []any:
		for i := range x {
			x[i] = normalise(x[i])
		}
		return x
	case string:
		if _, err := time.Parse(time.RFC3339, x); err == nil {
			return "<time>"
		}
		return positionInText.ReplaceAllString(x, "")
	default:
		return v
	}
}

// diff shows where two texts differ: a line diff around the first and the following
// mismatches, enough to see what changed without a diff library.
func diff(want, got string) string {
	a, b := strings.Split(want, "\n"), strings.Split(got, "\n")
	// Longest common subsequence over lines; outputs are small enough (a few thousand lines).
	n, m := len(a), len(b)
	if n*m > 25_000_000 {
		return fmt.Sprintf("(outputs too large to diff: %d vs %d lines)", n, m)
	}
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			out = append(out, "  "+a[i])
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			out = append(out, "+ "+b[j])
			j++
		default:
			out = append(out, "- "+a[i])
			i++
		}
	}
	// Keep three lines of context around changes.
	keep := make([]bool, len(out))
	for k, l := range out {
		if !strings.HasPrefix(l, "  ") {
			for d := -3; d <= 3; d++ {
				if k+d >= 0 && k+d < len(out) {
					keep[k+d] = true
				}
			}
		}
	}
	var b2 strings.Builder
	skipped := false
	lines := 0
	for k, l := range out {
		if !keep[k] {
			skipped = true
			continue
		}
		if skipped {
			b2.WriteString("  ...\n")
			skipped = false
		}
		b2.WriteString(l + "\n")
		if lines++; lines > 200 {
			b2.WriteString("  ... (diff truncated)\n")
			break
		}
	}
	return b2.String()
}
