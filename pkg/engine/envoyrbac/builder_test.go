package envoyrbac

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	rbacpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	rbachttp "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	rbactcp "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	"sigs.k8s.io/yaml"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

func policy(t *testing.T, y string) *securityv1.AuthorizationPolicy {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	ap := &securityv1.AuthorizationPolicy{}
	if err := json.Unmarshal(js, ap); err != nil {
		t.Fatalf("decoding policy: %v", err)
	}
	return ap
}

func rulesOf(t *testing.T, f Filter) (*rbacpb.RBAC, *rbacpb.RBAC) {
	t.Helper()
	switch c := f.Config.(type) {
	case *rbachttp.RBAC:
		return c.Rules, c.ShadowRules
	case *rbactcp.RBAC:
		return c.Rules, c.ShadowRules
	}
	t.Fatalf("%s is not an RBAC filter", f.Name)
	return nil, nil
}

func jsonOf(t *testing.T, p *rbacpb.Policy) string {
	t.Helper()
	b, err := protojson.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	_ = json.Unmarshal(b, &v)
	out, _ := json.Marshal(v)
	return string(out)
}

const denyDelete = `
metadata: {name: deny-delete, namespace: foo}
spec:
  action: DENY
  rules:
  - to:
    - operation: {methods: ["DELETE"]}
`

const allowGet = `
metadata: {name: allow-get, namespace: foo}
spec:
  rules:
  - from:
    - source: {principals: ["cluster.local/ns/bar/sa/client"]}
    to:
    - operation: {methods: ["GET"], ports: ["8080"]}
`

// Each case pins one rule of istiod's builder (pilot/pkg/security/authz/builder, model).
func TestBuild(t *testing.T) {
	for _, tc := range []struct {
		name     string
		policies []string
		mesh     *meshv1alpha1.MeshConfig
		check    func(t *testing.T, r *Result)
	}{
		{
			name:     "DENY with an HTTP-only field is widened to any on TCP and kept on HTTP",
			policies: []string{denyDelete},
			check: func(t *testing.T, r *Result) {
				h, _ := rulesOf(t, r.HTTPLocal[0])
				c, _ := rulesOf(t, r.TCPLocal[0])
				name := "ns[foo]-policy[deny-delete]-rule[0]"
				if got := jsonOf(t, h.Policies[name]); !strings.Contains(got, `"exact":"DELETE"`) {
					t.Errorf("HTTP policy lost the method: %s", got)
				}
				if got, want := jsonOf(t, c.Policies[name]), `{"permissions":[{"andRules":{"rules":[{"any":true}]}}],"principals":[{"andIds":{"ids":[{"any":true}]}}]}`; got != want {
					t.Errorf("TCP policy = %s, want %s", got, want)
				}
				if d := r.Rules[0].TCP.Dropped; len(d) != 1 || d[0].Field != "spec.rules[0].to[0].operation.methods[0]" {
					t.Errorf("dropped = %+v", d)
				}
			},
		},
		{
			name:     "ALLOW with an HTTP-only field is dropped on TCP, leaving an ALLOW filter that allows nothing",
			policies: []string{allowGet},
			check: func(t *testing.T, r *Result) {
				c, _ := rulesOf(t, r.TCPLocal[0])
				if len(c.Policies) != 0 || c.Action != rbacpb.RBAC_ALLOW {
					t.Errorf("TCP rules = %v", c)
				}
				if r.Rules[0].TCP.SkippedField != "spec.rules[0].to[0].operation.methods[0]" || !strings.Contains(r.Rules[0].TCP.Skipped, "HTTP only") {
					t.Errorf("TCP build = %+v", r.Rules[0].TCP)
				}
				h, _ := rulesOf(t, r.HTTPLocal[0])
				if got := jsonOf(t, h.Policies["ns[foo]-policy[allow-get]-rule[0]"]); !strings.Contains(got, `"exact":"spiffe://cluster.local/ns/bar/sa/client"`) || !strings.Contains(got, `"destinationPort":8080`) {
					t.Errorf("HTTP policy = %s", got)
				}
			},
		},
		{
			name:     "filters are in the order AUDIT, DENY, ALLOW",
			policies: []string{allowGet, denyDelete, "metadata: {name: audit, namespace: foo}\nspec: {action: AUDIT, rules: [{}]}"},
			check: func(t *testing.T, r *Result) {
				var got []string
				for _, f := range r.HTTPLocal {
					got = append(got, f.Action)
				}
				if strings.Join(got, ",") != "AUDIT,DENY,ALLOW" {
					t.Errorf("order = %v", got)
				}
			},
		},
		{
			name:     "a dry-run policy becomes shadow rules with istiod's stat prefix",
			policies: []string{"metadata: {name: dry, namespace: foo, annotations: {istio.io/dry-run: \"true\"}}\nspec: {action: DENY, rules: [{}]}"},
			check: func(t *testing.T, r *Result) {
				rules, shadow := rulesOf(t, r.HTTPLocal[0])
				if rules != nil || shadow == nil || shadow.Policies["ns[foo]-policy[dry]-rule[0]"] == nil {
					t.Errorf("rules %v shadow %v", rules, shadow)
				}
				if p := r.HTTPLocal[0].Config.(*rbachttp.RBAC).ShadowRulesStatPrefix; p != "istio_dry_run_deny_" {
					t.Errorf("stat prefix %q", p)
				}
			},
		},
		{
			name:     "a dry-run value that does not parse as a bool is enforced",
			policies: []string{"metadata: {name: dry, namespace: foo, annotations: {istio.io/dry-run: \"yes\"}}\nspec: {action: DENY, rules: [{}]}"},
			check: func(t *testing.T, r *Result) {
				if rules, _ := rulesOf(t, r.HTTPLocal[0]); rules == nil {
					t.Error("not enforced")
				}
			},
		},
		{
			name:     "a policy without rules never matches",
			policies: []string{"metadata: {name: none, namespace: foo}\nspec: {}"},
			check: func(t *testing.T, r *Result) {
				h, _ := rulesOf(t, r.HTTPLocal[0])
				if got, want := jsonOf(t, h.Policies["ns[foo]-policy[none]-rule[0]"]), `{"permissions":[{"notRule":{"any":true}}],"principals":[{"notId":{"any":true}}]}`; got != want {
					t.Errorf("got %s", got)
				}
			},
		},
		{
			name:     "a CUSTOM policy whose provider is not in MeshConfig fails closed with a DENY",
			policies: []string{"metadata: {name: ext, namespace: foo}\nspec: {action: CUSTOM, provider: {name: missing}, rules: [{}]}"},
			check: func(t *testing.T, r *Result) {
				rules, _ := rulesOf(t, r.HTTPCustom[0])
				if rules.Action != rbacpb.RBAC_DENY || rules.Policies["istio-ext-authz-missing-ns[foo]-policy[ext]-rule[0]-deny-due-to-bad-CUSTOM-action"] == nil {
					t.Errorf("rules %v", rules)
				}
				if !strings.Contains(r.Providers["missing"], `available providers are [] but found "missing"`) {
					t.Errorf("providers %v", r.Providers)
				}
			},
		},
		{
			name:     "a CUSTOM policy with an HTTP provider adds nothing on TCP",
			policies: []string{"metadata: {name: ext, namespace: foo}\nspec: {action: CUSTOM, provider: {name: opa}, rules: [{}]}"},
			mesh: &meshv1alpha1.MeshConfig{ExtensionProviders: []*meshv1alpha1.MeshConfig_ExtensionProvider{{Name: "opa",
				Provider: &meshv1alpha1.MeshConfig_ExtensionProvider_EnvoyExtAuthzHttp{EnvoyExtAuthzHttp: &meshv1alpha1.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationHttpProvider{Service: "opa.auth.svc.cluster.local", Port: 8181}}}}},
			check: func(t *testing.T, r *Result) {
				if len(r.HTTPCustom) != 2 || r.HTTPCustom[1].Name != HTTPExtAuthz || len(r.TCPCustom) != 0 {
					t.Errorf("custom http %d tcp %d", len(r.HTTPCustom), len(r.TCPCustom))
				}
				if len(r.HTTPOnlyProviders) != 1 {
					t.Errorf("http-only providers %v", r.HTTPOnlyProviders)
				}
			},
		},
		{
			name:     "a principal in the local trust domain is rewritten to every alias",
			policies: []string{allowGet},
			mesh:     &meshv1alpha1.MeshConfig{TrustDomain: "new.td", TrustDomainAliases: []string{"old.td"}},
			check: func(t *testing.T, r *Result) {
				h, _ := rulesOf(t, r.HTTPLocal[0])
				got := jsonOf(t, h.Policies["ns[foo]-policy[allow-get]-rule[0]"])
				for _, want := range []string{"spiffe://new.td/ns/bar/sa/client", "spiffe://old.td/ns/bar/sa/client"} {
					if !strings.Contains(got, want) {
						t.Errorf("missing %s in %s", want, got)
					}
				}
			},
		},
		{
			name:     "a port out of range skips an ALLOW rule and is ignored in a DENY rule",
			policies: []string{"metadata: {name: a, namespace: foo}\nspec: {rules: [{to: [{operation: {ports: [\"70000\"]}}]}]}", "metadata: {name: d, namespace: foo}\nspec: {action: DENY, rules: [{to: [{operation: {ports: [\"70000\"]}}]}]}"},
			check: func(t *testing.T, r *Result) {
				for _, rr := range r.Rules {
					switch rr.Action {
					case "ALLOW":
						if rr.HTTP.SkippedField != "spec.rules[0].to[0].operation.ports[0]" {
							t.Errorf("ALLOW %+v", rr.HTTP)
						}
					case "DENY":
						if !rr.HTTP.Generated || len(rr.HTTP.Dropped) != 1 {
							t.Errorf("DENY %+v", rr.HTTP)
						}
					}
				}
			},
		},
		{
			name:     "an unknown when key skips the rule",
			policies: []string{"metadata: {name: a, namespace: foo}\nspec: {action: DENY, rules: [{when: [{key: foo.bar, values: [x]}]}]}"},
			check: func(t *testing.T, r *Result) {
				if b := r.Rules[0].HTTP; b.Generated || b.SkippedField != "spec.rules[0].when[0].key" {
					t.Errorf("%+v", b)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var aps []*securityv1.AuthorizationPolicy
			for _, y := range tc.policies {
				aps = append(aps, policy(t, y))
			}
			mesh := tc.mesh
			if mesh == nil {
				mesh = &meshv1alpha1.MeshConfig{TrustDomain: "cluster.local"}
			}
			in := Input{Policies: aps, TrustDomain: mesh.TrustDomain, TrustDomainAliases: mesh.TrustDomainAliases, ExtensionProviders: mesh.ExtensionProviders,
				LookupCluster: func(s string, port int) (string, string, error) {
					return s, "outbound|" + itoa(port) + "||" + s, nil
				}}
			r := Build(in)
			tc.check(t, r)
			everyLeafTraced(t, r)

			// A Cache shared with a Build of the last policy alone gives the same result.
			in.Cache = NewCache()
			first := in
			first.Policies = aps[len(aps)-1:]
			Build(first)
			sameResult(t, r, Build(in))
		})
	}
}

// The Builds that share a Cache share each rule's matchers; a Build with other trust domains
// does not use it.
func TestBuildCache(t *testing.T) {
	deny, allow := policy(t, denyDelete), policy(t, allowGet)
	c := NewCache()
	a := Build(Input{Policies: []*securityv1.AuthorizationPolicy{allow}, TrustDomain: "cluster.local", Cache: c})
	b := Build(Input{Policies: []*securityv1.AuthorizationPolicy{deny, allow}, TrustDomain: "cluster.local", Cache: c})
	other := Build(Input{Policies: []*securityv1.AuthorizationPolicy{allow}, TrustDomain: "example.com", Cache: c})
	alone := Build(Input{Policies: []*securityv1.AuthorizationPolicy{allow}, TrustDomain: "example.com"})
	name := PolicyName("foo", "allow-get", 0, "", false)
	allowOf := func(r *Result) *rbacpb.Policy {
		t.Helper()
		rules, _ := rulesOf(t, r.HTTPLocal[len(r.HTTPLocal)-1])
		return rules.GetPolicies()[name]
	}
	if allowOf(a) == nil || allowOf(a) != allowOf(b) {
		t.Errorf("the Builds sharing the Cache have different matchers for %s: %p, %p", name, allowOf(a), allowOf(b))
	}
	if allowOf(other) == allowOf(a) {
		t.Errorf("a Build with another trust domain used the Cache")
	}
	sameResult(t, alone, other)
}

// sameResult compares two Results field by field (filters as protos).
func sameResult(t *testing.T, want, got *Result) {
	t.Helper()
	for i, p := range [][2][]Filter{{want.HTTPCustom, got.HTTPCustom}, {want.HTTPLocal, got.HTTPLocal}, {want.TCPCustom, got.TCPCustom}, {want.TCPLocal, got.TCPLocal}} {
		if len(p[0]) != len(p[1]) {
			t.Fatalf("filter list %d: %d filters, want %d", i, len(p[1]), len(p[0]))
		}
		for j := range p[0] {
			w, g := p[0][j], p[1][j]
			if w.Name != g.Name || !proto.Equal(w.Config, g.Config) {
				t.Errorf("filter list %d, filter %d: got %s %v, want %s %v", i, j, g.Name, g.Config, w.Name, w.Config)
			}
			if !reflect.DeepEqual(w.Traces, g.Traces) || w.Action != g.Action || w.Provider != g.Provider || w.Broken != g.Broken {
				t.Errorf("filter list %d, filter %d: got %+v, want %+v", i, j, g, w)
			}
		}
	}
	if !reflect.DeepEqual(want.Rules, got.Rules) || !reflect.DeepEqual(want.Providers, got.Providers) || !reflect.DeepEqual(want.HTTPOnlyProviders, got.HTTPOnlyProviders) {
		t.Errorf("rules or providers: got %+v, want %+v", got, want)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// everyLeafTraced: every permission and principal the builder wrote has an origin in an
// AuthorizationPolicy.
func everyLeafTraced(t *testing.T, r *Result) {
	t.Helper()
	for _, fs := range [][]Filter{r.HTTPLocal, r.TCPLocal} {
		for _, f := range fs {
			for _, tr := range f.Traces {
				if tr.Origin.Layer != provenance.LayerAuthorizationPolicy || tr.Origin.Resource == nil {
					t.Errorf("%s %s: origin %v", f.Name, tr.Path, tr.Origin)
				}
			}
			rules, shadow := rulesOf(t, f)
			for _, rb := range []*rbacpb.RBAC{rules, shadow} {
				for name, p := range rb.GetPolicies() {
					n := len(p.Permissions) + len(p.Principals)
					found := 0
					for _, tr := range f.Traces {
						if strings.Contains(tr.Path, `["`+name+`"].p`) {
							found++
						}
					}
					if found < n {
						t.Errorf("%s: %d traces for %d permissions and principals", name, found, n)
					}
				}
			}
		}
	}
}
