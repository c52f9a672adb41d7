package index

import (
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
)

func TestMostSpecificHostMatch(t *testing.T) {
	specific := map[string]string{"a.foo.com": "exact"}
	wildcard := map[string]string{"*": "star", "*.com": "com", "*.foo.com": "foo", "*.bar.foo.com": "bar"}
	cases := []struct {
		name, needle, want string
		found              bool
	}{
		{"exact host first", "a.foo.com", "exact", true},
		{"most specific wildcard", "b.foo.com", "foo", true},
		{"longer wildcard wins", "x.bar.foo.com", "bar", true},
		{"* matches everything", "example.org", "star", true},
		{"wildcard needle matches the same wildcard", "*.foo.com", "foo", true},
		{"wildcard needle matches a covering wildcard only", "*.baz.foo.com", "foo", true},
		{"wildcard needle never matches exact keys", "*.a.foo.com", "foo", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, got, found := mostSpecificHostMatch(tc.needle, specific, wildcard)
			if got != tc.want || found != tc.found {
				t.Errorf("got %q, %v; want %q, %v", got, found, tc.want, tc.found)
			}
		})
	}
	if _, _, found := mostSpecificHostMatch("foo.com", specific, map[string]string{"*.foo.com": "foo"}); found {
		t.Error("*.foo.com must not match foo.com")
	}
}

func TestBuildEmptySnapshot(t *testing.T) {
	for _, snap := range []*model.Snapshot{nil, {}} {
		ix := Build(snap)
		p, err := ix.Proxy("", "", "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ix.ResolveHost("reviews", "default"); err == nil {
			t.Error("want not found")
		}
		if mode, _ := ix.NamespaceMTLSMode("default"); mode != MTLSPermissive {
			t.Errorf("mode = %s, want PERMISSIVE", mode)
		}
		if sel := ix.DestinationRule(p, svcFor("reviews.default.svc.cluster.local", "default")); sel.Rule != nil || len(sel.Diagnostics) != 0 {
			t.Errorf("selection = %+v", sel)
		}
		if ix.RootNamespace() != "istio-system" || ix.TrustDomain() != "cluster.local" {
			t.Errorf("root %q trust domain %q", ix.RootNamespace(), ix.TrustDomain())
		}
	}
}
