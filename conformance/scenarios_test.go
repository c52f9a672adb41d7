package conformance

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/conformance/compare"
	"github.com/mesh-explain/kubectl-mesh-explain/conformance/istiorun"
)

var update = flag.Bool("update", false, "rewrite the want files of the scenario folders from Istio's output")

// scenarioRoots are the scenario trees conformance runs: the project's, and the few kept here
// to exercise the runners themselves.
var scenarioRoots = []string{
	filepath.Join("..", "testdata", "scenarios"),
	filepath.Join("testdata", "scenarios"),
}

// excluded names, as KIND/FOLDER, the scenarios conformance does not run, each with the reason.
// A scenario lands here only when the engines deliberately do not reproduce Istio on it, or
// when Istio cannot take its input: an object Istio cannot decode, or one its validation
// rejects outside a bad-input-* folder (those run as istiod does with validation off, see
// istiorun.BadInput); comparisons are never loosened instead.
var excluded = map[string]string{
	"authz/capture-sidecar-not-captured":         "the pod has a sidecar: the plugin answers -o ztunnel with a usage error naming -o envoy (pinned in pkg/cli); its sidecar answer is compared in the sidecar scenarios",
	"authz/bad-input-mixed":                      "bad input: Istio's validation rejects the AuthorizationPolicy (malformed principal, port out of range, named port, unknown action)",
	"authz/c4-bad-input-ipblocks":                "bad input: Istio's validation rejects the ipBlock \"bogus\"",
	"authz/c4-bad-input-ports-and-trust-domains": "bad input: Istio's validation rejects the ports \"http\" and 99999",
	"authz/c1-dry-run-yes-enforced":              "bad input: Istio's validation rejects the annotation istio.io/dry-run: \"yes\" (not a boolean)",
	"sidecar/bad-input-unknown-action":           "bad input: the AuthorizationPolicy action REJECT is not a value of the Action enum; the apiserver's schema rejects it",
}

type scenarioDir struct {
	Kind string // cluster, authz, sidecar or waypoint
	Name string
	Dir  string
}

func (s scenarioDir) ID() string { return s.Kind + "/" + s.Name }

func listScenarios(t *testing.T) []scenarioDir {
	t.Helper()
	var out []scenarioDir
	for _, root := range scenarioRoots {
		for _, kind := range istiorun.Kinds {
			entries, err := os.ReadDir(filepath.Join(root, kind))
			if os.IsNotExist(err) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.IsDir() {
					out = append(out, scenarioDir{Kind: kind, Name: e.Name(), Dir: filepath.Join(root, kind, e.Name())})
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID() < out[j].ID() })
	return out
}

// compareOutput compares two outputs of a scenario kind and returns the differing paths.
func compareOutput(kind string, got, want []byte) ([]string, error) {
	switch kind {
	case "authz":
		return compare.ZtunnelYAML(got, want)
	case "sidecar":
		return compare.SidecarEnvoyJSON(got, want)
	case "waypoint":
		return compare.WaypointEnvoyJSON(got, want)
	}
	return compare.EnvoyJSON(got, want)
}

// TestScenarios regenerates every scenario's expected output with Istio's own code and
// compares it with the committed want file; -update rewrites the want files.
func TestScenarios(t *testing.T) {
	dirs := listScenarios(t)
	if len(dirs) == 0 {
		t.Fatal("no scenario folders found")
	}
	seen := map[string]bool{}
	for _, sd := range dirs {
		seen[sd.ID()] = true
		t.Run(sd.ID(), func(t *testing.T) {
			if reason, ok := excluded[sd.ID()]; ok {
				t.Logf("excluded from conformance: %s", reason)
				return
			}
			sc, err := istiorun.LoadScenario(sd.Dir)
			if err != nil {
				t.Fatal(err)
			}
			got, wantName, err := istiorun.RunKind(sc, sd.Kind)
			if err != nil {
				t.Fatalf("istio: %v", err)
			}
			path := filepath.Join(sd.Dir, wantName)
			if *update {
				if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, got) {
					return
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("wrote %s", path)
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run `make conformance-update` to generate it from Istio)", err)
			}
			diffs, err := compareOutput(sd.Kind, got, want)
			if err != nil {
				t.Fatal(err)
			}
			if len(diffs) > 0 {
				t.Errorf("Istio's output differs from %s (run `make conformance-update` and review the diff):\n  %s",
					path, strings.Join(diffs, "\n  "))
			}
		})
	}
	for id := range excluded {
		if !seen[id] {
			t.Errorf("exclusion list names %s, which is not a scenario folder", id)
		}
	}
}
