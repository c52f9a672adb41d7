package envoycluster

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/internal/explaintest"
	loader "github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// scenarioQuery reads a scenario's `args` file (docs/scenarios.md): `#` lines describe it, the
// first other line is the command, e.g. `cluster reviews:9080 -n bookinfo --from pod/productpage-v1`.
func scenarioQuery(t *testing.T, dir string) Query {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "args"))
	if err != nil {
		t.Fatal(err)
	}
	var cmdline string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			cmdline = l
			break
		}
	}
	f := strings.Fields(cmdline)
	if len(f) < 2 || f[0] != "cluster" {
		t.Fatalf("%s: %q is not a cluster command", dir, cmdline)
	}
	q := Query{Namespace: "default"}
	var from string
	for i := 1; i < len(f); i++ {
		a := f[i]
		val := func() string {
			if i+1 >= len(f) {
				t.Fatalf("%s: %s needs a value", dir, a)
			}
			i++
			return f[i]
		}
		switch a {
		case "-n", "--namespace":
			q.Namespace = val()
		case "--from":
			from = val()
		case "--subset":
			q.Subset = val()
		case "-A", "--all-namespaces":
			// The CLI reads DestinationRules in every namespace; the engine gets the whole
			// folder either way, and the Clusters do not depend on it.
		case "--port":
			p, err := strconv.ParseUint(val(), 10, 32)
			if err != nil {
				t.Fatal(err)
			}
			q.Port = uint32(p)
		default:
			if strings.HasPrefix(a, "-") || q.Host != "" {
				t.Fatalf("%s: unexpected argument %q", dir, a)
			}
			host, port, ok := strings.Cut(a, ":")
			q.Host = host
			if ok {
				p, err := strconv.ParseUint(port, 10, 32)
				if err != nil {
					t.Fatal(err)
				}
				q.Port = uint32(p)
			}
		}
	}
	switch kind, name, _ := strings.Cut(from, "/"); kind {
	case "":
		q.From = ProxyRef{Namespace: q.Namespace}
	case "pod":
		q.From = ProxyRef{Kind: ProxyPod, Namespace: q.Namespace, Name: name}
	case "namespace":
		q.From = ProxyRef{Kind: ProxyNamespace, Namespace: name}
	default:
		t.Fatalf("%s: bad --from %q", dir, from)
	}
	return q
}

func scenarioFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() && !strings.HasPrefix(n, "want.") && (strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) {
			out = append(out, filepath.Join(dir, n))
		}
	}
	return out
}

func scenarioRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "scenarios", "cluster")
}

// knownGaps are the scenarios whose output is known to differ from Istio's, with the reason.
// The test requires them to still differ, so a fix shows up as a failure asking to remove the
// entry; comparisons are never loosened.
var knownGaps = map[string]string{}

// TestScenarios runs Explain over every testdata/scenarios/cluster folder and compares the
// clusters with want.envoy.json, which conformance generates from Istio's own code.
func TestScenarios(t *testing.T) {
	root := scenarioRoot(t)
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	n, compared := 0, 0
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		wantJSON, err := os.ReadFile(filepath.Join(dir, "want.envoy.json"))
		if !e.IsDir() || os.IsNotExist(err) {
			continue
		}
		n++
		t.Run(e.Name(), func(t *testing.T) {
			q := scenarioQuery(t, dir)
			snap, err := loader.LoadFiles(scenarioFiles(t, dir), q.Namespace)
			if err != nil {
				t.Fatalf("loading: %v", err)
			}
			res, err := Explain(snap, q)
			if err != nil {
				t.Fatalf("explain: %v", err)
			}
			explaintest.RequireEveryFieldTraced(t, res)
			compared += explaintest.RequireTracesMatch(t, res)
			got := []any{}
			for _, c := range Clusters(res) {
				js, err := protojson.Marshal(c)
				if err != nil {
					t.Fatal(err)
				}
				var v any
				if err := json.Unmarshal(js, &v); err != nil {
					t.Fatal(err)
				}
				got = append(got, v)
			}
			var want []any
			if err := json.Unmarshal(wantJSON, &want); err != nil {
				t.Fatal(err)
			}
			diff := cmp.Diff(want, got)
			if gap, known := knownGaps[e.Name()]; known {
				if diff == "" {
					t.Errorf("the known gap (%s) is fixed: remove the scenario from knownGaps", gap)
				}
				return
			}
			if diff != "" {
				t.Errorf("clusters differ from Istio's (-istio +ours):\n%s", diff)
			}
		})
	}
	if n == 0 {
		t.Fatal("no cluster scenarios found")
	}
	// Every traced value that is a number, a boolean, a duration, a percentage or an enum is
	// the value of the field it names (the typed setters write both at once).
	if compared < 20*n {
		t.Errorf("%d traced values compared with their fields over %d scenarios: the check misses the traces", compared, n)
	}
	t.Logf("%d traced values equal their fields", compared)
}
