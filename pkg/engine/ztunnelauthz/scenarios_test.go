package ztunnelauthz

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/internal/testkit"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/internal/golden"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/render"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// parseArgs reads a scenario's `args` file: `#` lines describe it, the first other line is
// the command, e.g. `authz pod/a -n foo` or `authz -l app=a -n foo`.
func parseArgs(t *testing.T, path string) (title string, q Query) {
	t.Helper()
	a, err := testkit.ReadArgs(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	title, cmd := a.Title, strings.Join(a.Command, " ")
	f := strings.Fields(cmd)
	if len(f) == 0 || f[0] != "authz" {
		t.Fatalf("%s: command %q is not an authz command", path, cmd)
	}
	for i := 1; i < len(f); i++ {
		switch a := f[i]; {
		case (a == "-n" || a == "--namespace" || a == "-l" || a == "--selector" || a == "--revision") && i+1 < len(f):
			switch a {
			case "-n", "--namespace":
				q.Namespace = f[i+1]
			case "-l", "--selector":
				q.Selector = f[i+1]
			default:
				q.Revision = f[i+1]
			}
			i++
		case strings.Contains(a, "/") && !strings.HasPrefix(a, "-"):
			kind, name, _ := strings.Cut(a, "/")
			q.Workload = WorkloadRef{Kind: kind, Name: name}
		default:
			t.Fatalf("%s: unexpected argument %q", path, a)
		}
	}
	return title, q
}

// scenarioInputs lists a scenario's input files: every YAML except the want files.
func scenarioInputs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, "want.") || !(strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) {
			continue
		}
		out = append(out, filepath.Join(dir, n))
	}
	return out
}

func runScenario(t *testing.T, dir string) ([]*explain.Result, string) {
	t.Helper()
	_, q := parseArgs(t, filepath.Join(dir, "args"))
	ns := q.Namespace
	if ns == "" {
		ns = "default"
	}
	snap, err := source.LoadFiles(scenarioInputs(t, dir), ns)
	if err != nil {
		t.Fatalf("loading %s: %v", dir, err)
	}
	results, err := Explain(snap, q)
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	requireDiagnosticsAlone(t, snap, q.Revision)
	return results, ztunnelStream(t, results...)
}

// requireDiagnosticsAlone fails when the diagnostics check asks for (Explainer.Diagnostics,
// no objects made) differ from those of the full answer, for any pod of snap.
func requireDiagnosticsAlone(t *testing.T, snap *model.Snapshot, revision string) {
	t.Helper()
	x := NewExplainer(snap, revision)
	for _, pod := range snap.Pods {
		full, alone := x.Pod(pod).Diagnostics, x.Diagnostics(pod)
		if len(alone) == 0 {
			alone = []explain.Diagnostic{}
		}
		if !reflect.DeepEqual(full, alone) {
			t.Errorf("pod %s/%s: diagnostics without the objects differ from the answer's:\n%v\n%v", pod.Namespace, pod.Name, alone, full)
		}
	}
}

// TestScenarios runs Explain over every testdata/scenarios/authz folder and compares the
// `-o ztunnel` output with want.ztunnel.yaml (-update or UPDATE_GOLDEN=1 rewrites it).
func TestScenarios(t *testing.T) {
	root := filepath.Join(testkit.RepoRoot(t), "testdata", "scenarios", "authz")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		n++
		dir := filepath.Join(root, e.Name())
		t.Run(e.Name(), func(t *testing.T) {
			results, out := runScenario(t, dir)
			golden.Assert(t, []byte(out), filepath.Join(dir, "want.ztunnel.yaml"))
			for _, r := range results {
				requireEveryFieldTraced(t, r)
				requireDiagnosticsWellFormed(t, r)
			}
		})
	}
	if n == 0 {
		t.Fatal("no authz scenarios found")
	}
}

// requireEveryFieldTraced fails when a populated leaf of a generated Authorization has no
// origin: every field an engine generates says where it came from (docs/origins.md).
func requireEveryFieldTraced(t *testing.T, r *explain.Result) {
	t.Helper()
	for _, o := range r.Objects {
		if o.Missing {
			if len(o.Origins) == 0 {
				t.Errorf("%s: missing object without an origin", o.Name)
			}
			continue
		}
		var v any
		if err := json.Unmarshal(o.Value, &v); err != nil {
			t.Fatalf("%s: %v", o.Name, err)
		}
		for _, leaf := range leafPaths("", v) {
			covered := slices.ContainsFunc(o.Origins, func(ft provenance.FieldTrace) bool { return provenance.Covers(ft.Path, leaf) })
			if !covered {
				t.Errorf("%s: field %s has no origin", o.Name, leaf)
			}
		}
		for _, ft := range o.Origins {
			if ft.Origin.Layer == provenance.LayerNone {
				t.Errorf("%s: trace %s has no layer", o.Name, ft.Path)
			}
		}
	}
}

func leafPaths(prefix string, v any) []string {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			return []string{prefix}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var out []string
		for _, k := range keys {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			out = append(out, leafPaths(p, x[k])...)
		}
		return out
	case []any:
		var out []string
		for i, e := range x {
			out = append(out, leafPaths(fmt.Sprintf("%s[%d]", prefix, i), e)...)
		}
		return out
	}
	return []string{prefix}
}

func requireDiagnosticsWellFormed(t *testing.T, r *explain.Result) {
	t.Helper()
	for _, d := range r.Diagnostics {
		if d.ID == "" || d.Severity == "" || d.Message == "" {
			t.Errorf("malformed diagnostic %+v", d)
		}
		if d.Severity != explain.SeverityInfo && (d.Fix == "" || len(d.Resources) == 0) {
			t.Errorf("%s diagnostic %s lacks a fix or a resource: %s", d.Severity, d.ID, d.Message)
		}
		if strings.HasSuffix(d.Message, ".") {
			t.Errorf("diagnostic message ends with a period: %q", d.Message)
		}
	}
	if !slices.IsSortedFunc(r.Diagnostics, func(a, b explain.Diagnostic) int {
		if c := a.Severity.Rank() - b.Severity.Rank(); c != 0 {
			return c
		}
		if c := strings.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	}) {
		t.Errorf("diagnostics are not sorted")
	}
}

// ztunnelStream is what -o ztunnel prints for the results (render's printer of the Listed
// objects).
func ztunnelStream(t *testing.T, results ...*explain.Result) string {
	t.Helper()
	p, err := render.For(render.FormatZtunnel, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := p.PrintList(&buf, results); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}
