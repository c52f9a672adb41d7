package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// complete runs `__complete args...` as the shells and kubectl's plugin completion do, and
// returns the candidates and the directive line.
func complete(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	r := runMain(t, "", append([]string{"__complete"}, args...)...)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != ExitOK || len(lines) == 0 {
		t.Fatalf("__complete %v: %s", args, r)
	}
	return lines[:len(lines)-1], lines[len(lines)-1]
}

func TestCompletionFromFiles(t *testing.T) {
	t.Chdir(repoRoot(t))
	files := []string{"-f", "testdata/examples/bookinfo", "-f", "testdata/examples/ambient"}
	for _, tc := range []struct {
		args      []string
		want      string
		directive string
	}{
		{[]string{"-n", "bookinfo", "cluster", ""}, "a.foo productpage ratings reviews", ":4"},
		{[]string{"-n", "bookinfo", "cluster", "re"}, "reviews", ":4"},
		{[]string{"-n", "bookinfo", "cluster", "svc/r"}, "svc/ratings svc/reviews", ":4"},
		{[]string{"-n", "bookinfo", "cluster", "reviews", "--subset", ""}, "v1 v2 v3", ":4"},
		{[]string{"-n", "bookinfo", "cluster", "reviews.bookinfo:9080", "--subset", "v"}, "v1 v2 v3", ":4"},
		{[]string{"-n", "bookinfo", "cluster", "reviews", "--port", ""}, "9080", ":4"},
		{[]string{"-n", "bookinfo", "cluster", "reviews", "--from", ""}, "deployment/ namespace/ pod/", ":6"},
		{[]string{"-n", "bookinfo", "cluster", "reviews", "--from", "pod/rev"}, "pod/reviews-v1 pod/reviews-v2 pod/reviews-v3", ":4"},
		{[]string{"-n", "bookinfo", "cluster", "reviews", "--from", "namespace/"}, "namespace/bookinfo namespace/foo namespace/istio-system", ":4"},
		{[]string{"-n", "foo", "authz", ""}, "deployment/ pod/ service/ waypoint/", ":6"},
		{[]string{"-n", "foo", "authz", "pod/"}, "pod/a", ":4"},
		{[]string{"-n", "bookinfo", "authz", "service/r"}, "service/ratings service/reviews", ":4"},
		{[]string{"authz", "pod/a", "-n", ""}, "bookinfo foo istio-system", ":4"},
		{[]string{"cluster", "reviews", "-o", ""}, "table wide json yaml envoy name jsonpath= jsonpath-file= go-template= go-template-file=", ":4"},
		{[]string{"authz", "pod/a", "-o", ""}, "table wide json yaml ztunnel envoy name jsonpath= jsonpath-file= go-template= go-template-file=", ":4"},
		{[]string{"check", "--fail-on", ""}, "error warning info never", ":4"},
		{[]string{"check", "-o", ""}, "table wide json yaml sarif", ":4"},
		{[]string{"version", "-o", ""}, "json yaml", ":4"},
		{[]string{"cluster", "reviews", "--color", ""}, "auto always never", ":4"},
	} {
		args := append(append([]string{}, files...), tc.args...)
		got, directive := complete(t, args...)
		if strings.Join(got, " ") != tc.want || directive != tc.directive {
			t.Errorf("__complete %s: got %q %s, want %q %s", strings.Join(tc.args, " "), got, directive, tc.want, tc.directive)
		}
	}
	// Waypoints: the Gateways of class istio-waypoint in -n.
	if got, _ := complete(t, "-f", "testdata/examples/waypoint", "-n", "bookinfo", "authz", "waypoint/"); strings.Join(got, " ") != "waypoint/waypoint" {
		t.Errorf("__complete authz waypoint/: got %q, want waypoint/waypoint", got)
	}
}

// Only __complete registers flag completions: cobra keeps them, with the flags and the options
// behind them, in a package-level map for the life of the process, so every in-process run that
// registered them would keep its options and input.
func TestOnlyCompletionRegistersFlagCompletions(t *testing.T) {
	t.Chdir(repoRoot(t))
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"version", "--client"}, false},
		{[]string{"cluster", "reviews", "-n", "bookinfo", "-f", "testdata/examples/bookinfo"}, false},
		{[]string{"__complete", "version", "-o", ""}, true},
		{[]string{"__completeNoDesc", "version", "-o", ""}, true},
	} {
		var root *cobra.Command
		streams, _, _, _ := genericiooptions.NewTestIOStreams()
		if code := run(tc.args, streams, func(s genericiooptions.IOStreams) *cobra.Command {
			root = NewRootCmd(s)
			return root
		}); code != ExitOK {
			t.Fatalf("%v: exit %d", tc.args, code)
		}
		for _, c := range append([]*cobra.Command{root}, root.Commands()...) {
			for _, name := range []string{"output", "color", "namespace"} {
				if c.Flags().Lookup(name) == nil {
					continue
				}
				if _, got := c.GetFlagCompletionFunc(name); got != tc.want {
					t.Errorf("%v: %s --%s has a completion function: %v, want %v", tc.args, c.Name(), name, got, tc.want)
				}
			}
		}
	}
}

// Without a reachable cluster completion offers nothing and says nothing.
func TestCompletionWithoutCluster(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent/kubeconfig")
	for _, args := range [][]string{{"cluster", ""}, {"authz", "pod/"}, {"cluster", "x", "--subset", ""}, {"cluster", "x", "-n", ""}} {
		r := runMain(t, "", append([]string{"__complete"}, args...)...)
		if r.code != ExitOK || r.stdout != ":4\n" {
			t.Errorf("__complete %v: %s", args, r)
		}
	}
}

func TestCompletionScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		r := runMain(t, "", "completion", shell)
		if r.code != ExitOK || !strings.Contains(r.stdout, "kubectl-mesh_explain") || r.stderr != "" {
			t.Errorf("completion %s: %s", shell, r)
		}
	}
}
