package render

import (
	"io"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
)

// -o ztunnel prints the Listed objects in order (a Missing one as a comment), skips the
// others, and makes one `---`-separated stream of several workloads, a workload with an empty
// list adding no separator.
func TestZtunnel(t *testing.T) {
	const policy = "action: ALLOW\nname: allow-get\nnamespace: foo\nscope: WORKLOAD_SELECTOR\n"
	const missing = "# missing: istio-system/istio_converted_static_strict\n"
	byScope := authzResult("a")
	byScope.Objects = append(byScope.Objects, explain.Object{Kind: "istio.security.Authorization", Name: "istio-system/global",
		Value: []byte(`{"name":"global","namespace":"istio-system","scope":"GLOBAL","action":"DENY"}`)})
	if got, want := printResults(t, FormatZtunnel, noColor, byScope), policy+"---\n"+missing; got != want {
		t.Errorf("one workload:\n%s\nwant:\n%s", got, want)
	}
	empty := emptyResult()
	got := printResults(t, FormatZtunnel, noColor, authzResult("a"), empty, authzResult("b"), empty)
	if want := policy + "---\n" + missing + "---\n" + policy + "---\n" + missing; got != want {
		t.Errorf("several workloads:\n%s\nwant:\n%s", got, want)
	}
	if got := printResults(t, FormatZtunnel, noColor, empty); got != "" {
		t.Errorf("an empty list printed %q", got)
	}
	bad := authzResult("a")
	bad.Objects[0].Value = nil
	p, _ := For(FormatZtunnel, Options{})
	if err := p.Print(io.Discard, bad); err == nil || err.Error() != "policy foo/allow-get has no value to print" {
		t.Errorf("a listed policy without a value: %v", err)
	}
}
