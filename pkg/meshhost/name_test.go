package meshhost

import (
	"fmt"
	"slices"
	"testing"
)

// The cases of TestNameMatches and TestNameSubsetOf in istio.io/istio
// pkg/config/host/name_test.go, as they are at the Istio version the conformance module pins.
func TestNameMatches(t *testing.T) {
	tests := []struct {
		name string
		a, b Name
		out  bool
	}{
		{"empty", "", "", true},
		{"mixed case", "a.facebook.com", "*.facebook.COM", false},
		{"first empty", "", "foo.com", false},
		{"second empty", "foo.com", "", false},
		{"non-wildcard domain", "foo.com", "foo.com", true},
		{"non-wildcard domain", "bar.com", "foo.com", false},
		{"non-wildcard domain - order doesn't matter", "foo.com", "bar.com", false},
		{"domain does not match subdomain", "bar.foo.com", "foo.com", false},
		{"domain does not match subdomain - order doesn't matter", "foo.com", "bar.foo.com", false},
		{"wildcard matches subdomains", "*.com", "foo.com", true},
		{"wildcard matches subdomains", "*.com", "bar.com", true},
		{"wildcard matches subdomains", "*.foo.com", "bar.foo.com", true},
		{"wildcard matches anything", "*", "foo.com", true},
		{"wildcard matches anything", "*", "*.com", true},
		{"wildcard matches anything", "*", "com", true},
		{"wildcard matches anything", "*", "*", true},
		{"wildcard matches anything", "*", "", true},
		{"wildcarded domain matches wildcarded subdomain", "*.com", "*.foo.com", true},
		{"wildcarded sub-domain does not match domain", "foo.com", "*.foo.com", false},
		{"wildcarded sub-domain does not match domain - order doesn't matter", "*.foo.com", "foo.com", false},
		{"long wildcard does not match short host", "*.foo.bar.baz", "baz", false},
		{"long wildcard does not match short host - order doesn't matter", "baz", "*.foo.bar.baz", false},
		{"long wildcard matches short wildcard", "*.foo.bar.baz", "*.baz", true},
		{"long name matches short wildcard", "foo.bar.baz", "*.baz", true},
	}
	for idx, tt := range tests {
		t.Run(fmt.Sprintf("[%d] %s", idx, tt.name), func(t *testing.T) {
			if tt.out != tt.a.Matches(tt.b) {
				t.Fatalf("%q.Matches(%q) = %t wanted %t", tt.a, tt.b, !tt.out, tt.out)
			}
		})
	}
}

func TestNameSubsetOf(t *testing.T) {
	tests := []struct {
		name string
		a, b Name
		out  bool
	}{
		{"empty", "", "", true},
		{"first empty", "", "foo.com", false},
		{"second empty", "foo.com", "", false},
		{"non-wildcard domain", "foo.com", "foo.com", true},
		{"non-wildcard domain", "bar.com", "foo.com", false},
		{"non-wildcard domain - order doesn't matter", "foo.com", "bar.com", false},
		{"domain does not match subdomain", "bar.foo.com", "foo.com", false},
		{"domain does not match subdomain - order doesn't matter", "foo.com", "bar.foo.com", false},
		{"wildcard matches subdomains", "foo.com", "*.com", true},
		{"wildcard matches subdomains", "bar.com", "*.com", true},
		{"wildcard matches subdomains", "bar.foo.com", "*.foo.com", true},
		{"wildcard matches anything", "foo.com", "*", true},
		{"wildcard matches anything", "*.com", "*", true},
		{"wildcard matches anything", "com", "*", true},
		{"wildcard matches anything", "*", "*", true},
		{"wildcard matches anything", "", "*", true},
		{"wildcarded domain matches wildcarded subdomain", "*.foo.com", "*.com", true},
		{"wildcarded sub-domain does not match domain", "*.foo.com", "foo.com", false},
		{"long wildcard does not match short host", "*.foo.bar.baz", "baz", false},
		{"long name matches short wildcard", "foo.bar.baz", "*.baz", true},
	}
	for idx, tt := range tests {
		t.Run(fmt.Sprintf("[%d] %s", idx, tt.name), func(t *testing.T) {
			if tt.out != tt.a.SubsetOf(tt.b) {
				t.Fatalf("%q.SubsetOf(%q) = %t wanted %t", tt.a, tt.b, !tt.out, tt.out)
			}
		})
	}
}

// The cases of TestNamesSortOrder in istio.io/istio pkg/config/host/names_test.go, whose sort
// is MoreSpecific.
func TestMoreSpecific(t *testing.T) {
	for _, tc := range []struct {
		in, want []Name
	}{
		{[]Name{"b", "a"}, []Name{"a", "b"}},
		{[]Name{"bb", "cc", "aa"}, []Name{"aa", "bb", "cc"}},
		{[]Name{"b", "a", "aa"}, []Name{"aa", "a", "b"}},
		{[]Name{"foo.com", "bar.com", "foo.bar.com"}, []Name{"foo.bar.com", "bar.com", "foo.com"}},
		{[]Name{"a", "*", "z"}, []Name{"a", "z", "*"}},
		{[]Name{"foo.com", "bar.com", "*.com"}, []Name{"bar.com", "foo.com", "*.com"}},
		{[]Name{"foo.com", "bar.com", "*.com", "*.foo.com", "*", "baz.bar.com"},
			[]Name{"baz.bar.com", "bar.com", "foo.com", "*.foo.com", "*.com", "*"}},
	} {
		got := slices.Clone(tc.in)
		slices.SortFunc(got, func(a, b Name) int {
			switch {
			case MoreSpecific(a, b):
				return -1
			case MoreSpecific(b, a):
				return 1
			}
			return 0
		})
		if !slices.Equal(got, tc.want) {
			t.Errorf("sorted %v: %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestResolveShortnameToFQDN(t *testing.T) {
	cases := []struct {
		name, host, ns, want string
	}{
		{"name without dots is expanded in the object's namespace", "reviews", "bookinfo", "reviews.bookinfo.svc.cluster.local"},
		{"name.namespace is taken literally", "reviews.bookinfo", "other", "reviews.bookinfo"},
		{"full hostname is kept", "reviews.bookinfo.svc.cluster.local", "other", "reviews.bookinfo.svc.cluster.local"},
		{"* is kept", "*", "bookinfo", "*"},
		{"wildcard is kept", "*.example.com", "bookinfo", "*.example.com"},
		{"IPv4 address is kept", "10.0.0.1", "bookinfo", "10.0.0.1"},
		{"IPv6 address is kept", "fd00::1", "bookinfo", "fd00::1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ResolveShortname(tc.host, tc.ns); got != tc.want {
				t.Errorf("ResolveShortname(%q, %q) = %q, want %q", tc.host, tc.ns, got, tc.want)
			}
		})
	}
}

// TestCandidates pins the forms a sidecar's DNS proxy resolves (generateAltHosts in
// istio.io/istio pkg/dns/client/dns.go): `name.svc` is the Service name of namespace svc, and
// `name.ns.svc.cluster` stands only for itself.
func TestCandidates(t *testing.T) {
	for _, tc := range []struct {
		host, ns string
		want     []string
		wantNs   string
	}{
		{"reviews", "bookinfo", []string{"reviews", "reviews.bookinfo.svc.cluster.local"}, "bookinfo"},
		{"reviews", "", []string{"reviews", "reviews.default.svc.cluster.local"}, ""},
		{"reviews.bookinfo", "default", []string{"reviews.bookinfo", "reviews.bookinfo.svc.cluster.local"}, "bookinfo"},
		{"reviews.bookinfo.svc", "default", []string{"reviews.bookinfo.svc", "reviews.bookinfo.svc.cluster.local"}, "bookinfo"},
		{"reviews.svc", "default", []string{"reviews.svc", "reviews.svc.svc.cluster.local"}, "svc"},
		{"reviews.bookinfo.svc.cluster", "default", []string{"reviews.bookinfo.svc.cluster"}, "bookinfo"},
		{"reviews.bookinfo.svc.cluster.local", "default", []string{"reviews.bookinfo.svc.cluster.local"}, "bookinfo"},
		{"api.example.com", "default", []string{"api.example.com"}, ""},
		{"*.example.com", "default", []string{"*.example.com"}, ""},
	} {
		if got := Candidates(tc.host, tc.ns); !slices.Equal(got, tc.want) {
			t.Errorf("Candidates(%q, %q) = %q, want %q", tc.host, tc.ns, got, tc.want)
		}
		if got := ServiceNamespace(tc.host, tc.ns); got != tc.wantNs {
			t.Errorf("ServiceNamespace(%q, %q) = %q, want %q", tc.host, tc.ns, got, tc.wantNs)
		}
	}
}

// The SubsetOf cases of TestInstance in istio.io/istio pkg/config/labels/instance_test.go.
func TestLabelsSubsetOf(t *testing.T) {
	for _, tc := range []struct {
		left, right map[string]string
		want        bool
	}{
		{nil, map[string]string{"app": "a"}, true},
		{map[string]string{}, map[string]string{"app": "a"}, true},
		{map[string]string{"app": "a"}, nil, false},
		{map[string]string{"app": "a"}, map[string]string{"app": "a", "prod": "env"}, true},
		{map[string]string{"app": "a", "prod": "env"}, map[string]string{"app": "a"}, false},
		{map[string]string{"app": "a"}, map[string]string{"app": "b", "prod": "env"}, false},
		{map[string]string{"foo": ""}, map[string]string{"app": "a"}, false},
		{map[string]string{"foo": ""}, map[string]string{"app": "a", "foo": ""}, true},
		{map[string]string{"app": "a", "foo": ""}, map[string]string{"foo": ""}, false},
	} {
		if got := LabelsSubsetOf(tc.left, tc.right); got != tc.want {
			t.Errorf("LabelsSubsetOf(%v, %v) = %v, want %v", tc.left, tc.right, got, tc.want)
		}
	}
}
