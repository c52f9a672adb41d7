package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCompletion completes through kubectl's own plugin completion (kubectl 1.26 and later run
// kubectl_complete-mesh_explain from PATH for `kubectl __complete mesh-explain ...`, the call a
// shell's TAB makes): host names and pod names from the live apiserver, and from -f files with no
// cluster at all.
func TestCompletion(t *testing.T) {
	script, err := os.ReadFile(filepath.Join(env.root, "kubectl_complete-mesh_explain"))
	if err != nil {
		t.Fatal(err)
	}
	// As the release archive ships it: next to the plugin, on PATH.
	if err := os.WriteFile(filepath.Join(env.binDir, "kubectl_complete-mesh_explain"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(env.root, "e2e", "testdata", "overlay")
	admin(t).apply(t, mustDecodeFile(t, filepath.Join(dir, "base.yaml")))
	files := filepath.Join(dir, "base.yaml")

	for _, tc := range []struct {
		name string
		kc   string
		args []string
		want []string
	}{
		{"live hosts", kubeconfig("admin"), []string{"cluster", "-n", "bookinfo", ""}, []string{"reviews"}},
		{"live pods", kubeconfig("admin"), []string{"authz", "-n", "bookinfo", "pod/"}, []string{"pod/reviews-v1", "pod/reviews-v2"}},
		{"live namespaces", kubeconfig("admin"), []string{"cluster", "-n", "book"}, []string{"bookinfo"}},
		{"file hosts", offline(), []string{"cluster", "-n", "bookinfo", "-f", files, ""}, []string{"reviews"}},
		{"file pods", offline(), []string{"authz", "-n", "frontend", "-f", files, "pod/"}, []string{"pod/productpage-v1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runKubectl(30*time.Second, tc.kc, append([]string{"__complete", "mesh-explain"}, tc.args...)...)
			if r.code != 0 || r.err != nil {
				t.Fatalf("kubectl __complete mesh-explain %s: exit %d, %v\n%s", strings.Join(tc.args, " "), r.code, r.err, r.stderr)
			}
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				if line == "" || strings.HasPrefix(line, ":") {
					continue // the directive line
				}
				got = append(got, strings.SplitN(line, "\t", 2)[0])
			}
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("completion of %q lacks %q; got %q", tc.args, w, got)
				}
			}
		})
	}
}
