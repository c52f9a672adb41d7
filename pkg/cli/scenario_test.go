package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/internal/golden"
)

// repoRoot is the module root (where go.mod is); scenario and golden paths are relative to it.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// scenarioArgs reads a scenario's `args` file (docs/scenarios.md): `#` lines describe it, the
// first other line is the command line after `kubectl mesh-explain`.
func scenarioArgs(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "args"))
	if err != nil {
		t.Fatalf("scenario without an args file: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		return strings.Fields(line)
	}
	t.Fatalf("%s/args has no command line", dir)
	return nil
}

// scenarioDirs lists the scenario folders of a kind, relative to the module root.
func scenarioDirs(t *testing.T, kind string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("testdata", "scenarios", kind))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.ToSlash(filepath.Join("testdata", "scenarios", kind, e.Name())))
		}
	}
	return out
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
	} {
		dirs := scenarioDirs(t, kind.dir)
		if len(dirs) == 0 {
			t.Errorf("no scenarios under testdata/scenarios/%s", kind.dir)
		}
		for _, dir := range dirs {
			t.Run(kind.dir+"/"+filepath.Base(dir), func(t *testing.T) {
				args := append(scenarioArgs(t, dir), "-f", dir, "-o", kind.format)
				r := runMain(t, "", args...)
				if r.code != ExitOK {
					t.Fatalf("kubectl mesh-explain %s\n%s", strings.Join(args, " "), r)
				}
				want := filepath.Join(dir, kind.want)
				_, err := os.Stat(want)
				switch {
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
