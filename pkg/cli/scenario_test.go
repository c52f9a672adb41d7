package cli

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/internal/testkit"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/internal/golden"
)

// repoRoot, scenarioArgs and scenarioDirs are testkit's, scenario folders relative to the
// module root (the tests chdir there).
func repoRoot(t *testing.T) string                   { return testkit.RepoRoot(t) }
func scenarioArgs(t *testing.T, dir string) []string { return testkit.ScenarioArgs(t, dir) }
func scenarioDirs(t *testing.T, kind string) []string {
	return testkit.ScenarioDirs(t, ".", kind)
}

// TestScenarios is the fast fidelity suite: every scenario folder runs through Main in-process
// with `-f <folder> -o envoy|ztunnel`, and stdout must equal the folder's want file byte for
// byte. The want files are generated from Istio's own code (make conformance-update), so a
// mismatch is never accepted from here: -update only creates a want file that is missing.
func TestScenarios(t *testing.T) {
	t.Chdir(repoRoot(t))
	for _, kind := range []struct{ dir, format, want string }{
		{"cluster", "envoy", "want.envoy.json"},
		{"authz", FormatZtunnel, "want.ztunnel.yaml"},
		{"sidecar", "envoy", "want.envoy.json"},
		{"waypoint", "envoy", "want.envoy.json"},
	} {
		dirs := scenarioDirs(t, kind.dir)
		if len(dirs) == 0 && kind.dir != "sidecar" && kind.dir != "waypoint" {
			t.Errorf("no scenarios under testdata/scenarios/%s", kind.dir)
		}
		for _, dir := range dirs {
			t.Run(kind.dir+"/"+filepath.Base(dir), func(t *testing.T) {
				// --allow-partial: the bad-input scenarios skip malformed objects, which makes
				// the answer incomplete (exit 3, TestSkippedObjectsMakeTheAnswerIncomplete).
				args := append(scenarioArgs(t, dir), "-f", dir, "-o", kind.format, "--allow-partial")
				r := runMain(t, "", args...)
				if kind.dir == "authz" && r.code == ExitUsage && strings.Contains(r.stderr, "has a sidecar") {
					// istiod still sends ztunnel a policy list for a sidecar pod (the want file,
					// generated from Istio), but ztunnel never enforces it: the command answers
					// with the sidecar and refuses -o ztunnel, naming -o envoy.
					if !strings.Contains(r.stderr, "use -o envoy") {
						t.Errorf("the usage error does not name -o envoy:\n%s", r)
					}
					return
				}
				if r.code != ExitOK {
					t.Fatalf("kubectl mesh-explain %s\n%s", strings.Join(args, " "), r)
				}
				want := filepath.Join(dir, kind.want)
				_, err := os.Stat(want)
				switch {
				case errors.Is(err, fs.ErrNotExist) && kind.dir == "sidecar" && !golden.Update():
					// A sidecar scenario whose want file the conformance module has not generated
					// yet: the answer must at least be a JSON array of filter chains.
					var chains []map[string]any
					if err := json.Unmarshal([]byte(r.stdout), &chains); err != nil || len(chains) == 0 {
						t.Errorf("-o envoy is not a JSON array of filter chains (%v):\n%s", err, r.stdout)
					}
				case errors.Is(err, fs.ErrNotExist) && golden.Update():
					if err := golden.Write(want, []byte(r.stdout)); err != nil {
						t.Fatal(err)
					}
					t.Logf("created %s; regenerate it from Istio's code before relying on it", want)
				case errors.Is(err, fs.ErrNotExist):
					t.Fatalf("%s is missing (generate it from Istio's code, or run with -update to create it from ours)", want)
				default:
					wantBytes, err := os.ReadFile(want)
					if err != nil {
						t.Fatal(err)
					}
					if r.stdout != string(wantBytes) {
						t.Errorf("output differs from %s (the engine or the want file is wrong; want files are regenerated from Istio's code):\n%s",
							want, golden.Diff("want "+want, "got", string(wantBytes), r.stdout))
					}
				}
			})
		}
	}
}
