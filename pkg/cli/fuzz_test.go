package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/mesh-explain/kubectl-mesh-explain/internal/testkit"
)

// FuzzArgs runs the command tree with random arguments in files-only mode (the bookinfo
// example is always given with -f): whatever the arguments, the command never panics (exit
// code 70). The fuzzer separates arguments with NUL bytes. Arguments that could read
// elsewhere than the example, block on a file or reach a cluster are left out: other -f and
// -R, --overlay, --kubeconfig, *-file= formats, and the version command (it lists istiods).
func FuzzArgs(f *testing.F) {
	for _, s := range []string{
		"cluster\x00reviews\x00-n\x00bookinfo\x00--from\x00pod/productpage-v1",
		"cluster\x00reviews:9080\x00-n\x00bookinfo\x00-o\x00wide\x00--subset\x00v2",
		"cluster\x00reviews\x00-o\x00envoy\x00-A",
		"authz\x00pod/productpage-v1\x00-n\x00bookinfo\x00-o\x00ztunnel",
		"authz\x00-l\x00app=reviews\x00-n\x00bookinfo\x00-o\x00jsonpath={.subject}",
		"check\x00-A\x00-o\x00sarif\x00--fail-on\x00warning\x00--ignore\x00D10",
		"check\x00-n\x00bookinfo\x00-o\x00go-template={{.kind}}",
		"authz\x00svc/reviews\x00-n\x00bookinfo\x00-o\x00yaml",
		"cluster\x00service/reviews:9080\x00-n\x00bookinfo",
		"authz\x00gtw/waypoint\x00-n\x00bookinfo",
		"__complete\x00cluster\x00rev",
		"__complete\x00-n\x00bookinfo\x00authz\x00service/",
		"cluster\x00--port\x0070000\x00--color\x00always\x00reviews",
		"completion\x00bash",
		"--help",
	} {
		f.Add(s)
	}
	example := filepath.Join(testkit.RepoRoot(f), "testdata", "examples", "bookinfo")
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Split(line, "\x00")
		for _, a := range args {
			if !allowedFuzzArg(a) {
				return
			}
		}
		t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
		streams, _, out, errOut := genericiooptions.NewTestIOStreams()
		code := run(append(args, "-f", example), streams, NewRootCmd)
		if code == ExitInternal {
			t.Fatalf("kubectl mesh-explain %q: internal error\nstdout:\n%s\nstderr:\n%s", args, out, errOut)
		}
	})
}

// allowedFuzzArg says whether FuzzArgs may pass a.
func allowedFuzzArg(a string) bool {
	switch {
	case a == "version":
		return false
	case strings.HasPrefix(a, "--"):
		for _, name := range []string{"--filename", "--recursive", "--overlay", "--kubeconfig", "--version"} {
			if strings.HasPrefix(a, name) {
				return false
			}
		}
	case strings.HasPrefix(a, "-"):
		// Shorthands combine (-Rf): none of them may be -f or -R.
		if strings.ContainsAny(a, "fR") {
			return false
		}
	}
	return !strings.Contains(a, "-file")
}
