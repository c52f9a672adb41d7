package ztunnelauthz

import (
	"slices"
	"strings"
	"testing"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"
)

const rootNs = "istio-system"

// Expected converted-PeerAuthentication bodies (YAML of the groups only).
const (
	presence      = "  - matches:\n    - notPrincipals:\n      - presence: {}\n"
	wlHeader      = "action: DENY\ngroups:\n"
	wlFooter      = "name: converted_peer_authentication_workload\nnamespace: foo\nscope: WORKLOAD_SELECTOR\n"
	staticKey     = "istio-system/istio_converted_static_strict"
	portKeyWanted = "foo/converted_peer_authentication_workload"
)

func exempt(p string) string { return "  - matches:\n    - notDestinationPorts:\n      - " + p + "\n" }
func strictPortGroup(p string) string {
	return "- rules:\n  - matches:\n    - destinationPorts:\n      - " + p + "\n      notPrincipals:\n      - presence: {}\n"
}

// TestPeerAuthenticationAppendix pins the worked cases E1-E8 and the selection cases of
// docs/semantics/authz.md#worked-cases: the converted policy (convertPeerAuthentication) and
// the workload's keys (convertedSelectorPeerAuthentications), computed independently as istiod
// does.
func TestPeerAuthenticationAppendix(t *testing.T) {
	wl := func() paB { return peerAuth("foo", "workload").selector("app", "a").created(20) }
	ns := func() paB { return peerAuth("foo", "ns-policy").created(10) }
	root := func() paB { return peerAuth(rootNs, "default") }
	cases := []struct {
		name             string
		wl, ns, root     paB
		wantConverted    string // "" for nil
		wantKeys         []string
		wantPortKeyDangl bool
	}{
		{name: "E1 workload PERMISSIVE with a STRICT port under a STRICT root: nil, dangling key",
			wl: wl().mode(permissive).port(9090, strict), root: root().mode(strict),
			wantKeys: []string{portKeyWanted}},
		{name: "E2 workload UNSET with a PERMISSIVE port, namespace UNSET, root STRICT: nil, STRICT lost",
			wl: wl().port(9090, permissive), ns: ns(), root: root().mode(strict),
			wantKeys: []string{portKeyWanted}},
		{name: "E3 workload UNSET with a DISABLE port under a STRICT namespace: converted but static listed",
			wl: wl().port(9090, disable), ns: ns().mode(strict),
			wantConverted: wlHeader + "- rules:\n" + exempt("9090") + presence + wlFooter,
			wantKeys:      []string{staticKey}},
		{name: "E4 workload STRICT with a PERMISSIVE port under a STRICT namespace: presence twice",
			wl: wl().mode(strict).port(9090, permissive), ns: ns().mode(strict),
			wantConverted: wlHeader + "- rules:\n" + presence + exempt("9090") + presence + wlFooter,
			wantKeys:      []string{portKeyWanted}},
		{name: "E5 workload UNSET with DISABLE, STRICT and PERMISSIVE ports, no parents",
			wl:            wl().port(7070, disable).port(8080, strict).port(9090, permissive),
			wantConverted: wlHeader + strictPortGroup("8080") + wlFooter,
			wantKeys:      []string{portKeyWanted}},
		{name: "E6 workload STRICT with DISABLE and PERMISSIVE ports under a STRICT root",
			wl: wl().mode(strict).port(8080, disable).port(9090, permissive), root: root().mode(strict),
			wantConverted: wlHeader + "- rules:\n" + presence + exempt("8080") + exempt("9090") + presence + wlFooter,
			wantKeys:      []string{portKeyWanted}},
		{name: "E7 workload DISABLE with a STRICT port, namespace UNSET, root STRICT: nil, dangling key",
			wl: wl().mode(disable).port(9090, strict), ns: ns(), root: root().mode(strict),
			wantKeys: []string{portKeyWanted}},
		{name: "E8 workload UNSET with PERMISSIVE and STRICT ports, namespace PERMISSIVE, root STRICT",
			wl: wl().port(8080, permissive).port(9090, strict), ns: ns().mode(permissive), root: root().mode(strict),
			wantConverted: wlHeader + strictPortGroup("9090") + wlFooter,
			wantKeys:      []string{portKeyWanted}},
		{name: "a workload STRICT policy without ports gives the static key and no conversion",
			wl: wl().mode(strict), wantKeys: []string{staticKey}},
		{name: "a namespace DISABLE over a mesh STRICT gives no key",
			ns: ns().mode(disable), root: root().mode(strict), wantKeys: nil},
		{name: "a namespace UNSET keeps the mesh STRICT",
			ns: ns(), root: root().mode(strict), wantKeys: []string{staticKey}},
		{name: "UNSET under STRICT with only a DISABLE port keeps the static key (DISABLE does not count)",
			wl: wl().port(9090, disable), root: root().mode(strict),
			wantConverted: wlHeader + "- rules:\n" + exempt("9090") + presence + wlFooter,
			wantKeys:      []string{staticKey}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var cands []*securityv1.PeerAuthentication
			for _, b := range []paB{tc.root, tc.ns, tc.wl} {
				if b.PeerAuthentication != nil {
					cands = append(cands, b.PeerAuthentication)
				}
			}
			if keys := ConvertedSelectorPeerAuthentications(rootNs, cands); !slices.Equal(keys, tc.wantKeys) {
				t.Errorf("keys = %v, want %v", keys, tc.wantKeys)
			}
			if tc.wl.PeerAuthentication == nil {
				return
			}
			got := ConvertPeerAuthentication(rootNs, tc.wl.PeerAuthentication, tc.ns.PeerAuthentication, tc.root.PeerAuthentication)
			gotYAML := ""
			if got != nil {
				y, err := got.YAML()
				if err != nil {
					t.Fatal(err)
				}
				gotYAML = string(y)
			}
			if gotYAML != tc.wantConverted {
				t.Errorf("converted:\n%s\nwant:\n%s", gotYAML, tc.wantConverted)
			}
		})
	}
}

// TestSelectionChecks pins the selection cases of docs/semantics/authz.md#worked-cases through
// the whole workload
// computation (candidates, levels, oldest-wins).
func TestSelectionChecks(t *testing.T) {
	pod := newPod("foo", "a", "app", "a")
	cases := []struct {
		name string
		pas  []any
		pod  podB
		want []string
	}{
		{name: "a root-namespace PeerAuthentication with a selector on its own gives no keys",
			pas: []any{peerAuth(rootNs, "sel").mode(strict).selector("app", "a")}, pod: pod, want: nil},
		{name: "a root-namespace PeerAuthentication with matchLabels {} is mesh-level inside the root namespace",
			pas: []any{peerAuth(rootNs, "empty").mode(strict).selector()}, pod: newPod(rootNs, "a", "app", "a"), want: []string{staticKey}},
		{name: "in the root namespace, matchLabels {} competes at mesh level: the older selector-less STRICT wins",
			pas: []any{peerAuth(rootNs, "default").mode(strict), peerAuth(rootNs, "empty").mode(permissive).selector().created(10)},
			pod: newPod(rootNs, "a", "app", "a"), want: []string{staticKey}},
		{name: "a root-namespace PeerAuthentication with matchLabels {} is not a candidate for other namespaces",
			pas: []any{peerAuth(rootNs, "empty").mode(strict).selector()}, pod: pod, want: nil},
		{name: "of two workload PeerAuthentications the older one's key is listed",
			pas: []any{
				peerAuth(rootNs, "default").mode(strict),
				peerAuth("foo", "new").selector("app", "a").mode(permissive).port(8080, strict).created(30),
				peerAuth("foo", "old").selector("app", "a").mode(strict).port(9090, permissive).created(20),
			}, pod: pod, want: []string{"foo/converted_peer_authentication_old"}},
		{name: "an empty workload matchLabels counts as a namespace policy",
			pas: []any{peerAuth("foo", "empty").mode(strict).selector()}, pod: pod, want: []string{staticKey}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapshot(append(tc.pas, tc.pod)...)
			p := buildPool(snap, "")
			c := buildChain(p, tc.pod.Pod)
			if got := c.keys.keys(); !slices.Equal(got, tc.want) {
				t.Errorf("keys = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestAuthorizationPolicyChecks pins the AuthorizationPolicy cases of
// docs/semantics/authz.md#worked-cases and the status
// texts of authorization.go.
func TestAuthorizationPolicyChecks(t *testing.T) {
	cases := []struct {
		name       string
		policy     string
		wantYAML   string // "" for nil
		wantStatus *Status
		wantFields []string // fields named by findings
	}{
		{name: "ALLOW without rules in a namespace: NAMESPACE scope, no groups, no action key",
			policy:     "metadata: {name: allow-nothing, namespace: foo}\nspec: {}\n",
			wantYAML:   "name: allow-nothing\nnamespace: foo\nscope: NAMESPACE\n",
			wantStatus: &Status{Type: ConditionZtunnelAccepted, Status: true, Reason: "Accepted", Message: "attached to ztunnel"}},
		{name: "rules [{}] in the root namespace: GLOBAL (no scope key), groups [{}]",
			policy:     "metadata: {name: all, namespace: istio-system}\nspec:\n  rules: [{}]\n",
			wantYAML:   "groups:\n- {}\nname: all\nnamespace: istio-system\n",
			wantStatus: &Status{Type: ConditionZtunnelAccepted, Status: true, Reason: "Accepted", Message: "attached to ztunnel"}},
		{name: "named and out-of-range ports, trustDomains dropped silently",
			policy: `metadata: {name: p, namespace: foo}
spec:
  selector: {matchLabels: {app: a}}
  rules:
  - to: [{operation: {ports: ["http", "99999", "8080"]}}]
  - from: [{source: {trustDomains: ["td"]}}]
  - from: [{source: {principals: ["*mid*", "spiffe://cluster.local/ns/a/sa/b"], trustDomains: ["td"]}}]
`,
			wantYAML:   "groups:\n- rules:\n  - matches:\n    - destinationPorts:\n      - 8080\n- rules:\n  - matches:\n    - {}\n- rules:\n  - matches:\n    - principals:\n      - suffix: mid*\n      - exact: spiffe://cluster.local/ns/a/sa/b\nname: p\nnamespace: foo\nscope: WORKLOAD_SELECTOR\n",
			wantStatus: &Status{Type: ConditionZtunnelAccepted, Status: true, Reason: "Accepted", Message: "attached to ztunnel"},
			wantFields: []string{"spec.rules[0].to[0].operation.ports[0]", "spec.rules[0].to[0].operation.ports[1]",
				"spec.rules[1].from[0].source.trustDomains", "spec.rules[2].from[0].source.principals[1]"}},
		{name: "when source.serviceAccount in an ALLOW rule drops the rule, with the ALLOW text",
			policy:   "metadata: {name: w, namespace: foo}\nspec:\n  rules:\n  - when: [{key: source.serviceAccount, values: [bar/sa]}]\n",
			wantYAML: "name: w\nnamespace: foo\nscope: NAMESPACE\n",
			wantStatus: &Status{Type: ConditionZtunnelAccepted, Status: true, Reason: "UnsupportedValue",
				Message: "ztunnel does not support HTTP attributes (found: source.serviceAccount). In ambient mode you must use a waypoint proxy to enforce HTTP rules. Within an ALLOW policy, rules matching HTTP attributes are omitted. This will be more restrictive than requested."},
			wantFields: []string{"spec.rules[0]"}},
		{name: "ipBlocks keep the address as written; bogus is dropped",
			policy:     "metadata: {name: ip, namespace: foo}\nspec:\n  rules:\n  - from: [{source: {ipBlocks: [10.0.0.5/24, bogus, \"::1\"]}}]\n",
			wantYAML:   "groups:\n- rules:\n  - matches:\n    - sourceIps:\n      - address: CgAABQ==\n        length: 24\n      - address: AAAAAAAAAAAAAAAAAAAAAQ==\n        length: 128\nname: ip\nnamespace: foo\nscope: NAMESPACE\n",
			wantStatus: &Status{Type: ConditionZtunnelAccepted, Status: true, Reason: "Accepted", Message: "attached to ztunnel"},
			wantFields: []string{"spec.rules[0].from[0].source.ipBlocks[1]"}},
		{name: "dry-run true with the feature off: nil and the dry-run status, even with targetRefs",
			policy: "metadata: {name: d, namespace: foo, annotations: {istio.io/dry-run: \"true\"}}\nspec:\n  targetRefs: [{kind: Service, group: \"\", name: a}]\n",
			wantStatus: &Status{Type: ConditionZtunnelAccepted, Status: false, Reason: "UnsupportedValue",
				Message: "found policy \"foo/d\" using dry-run annotation, but support for ambient dry-run authorizationPolicies isn't enabled"},
			wantFields: []string{"metadata.annotations[istio.io/dry-run]"}},
		{name: "dry-run yes does not parse: enforced, no status problem",
			policy:     "metadata: {name: d, namespace: foo, annotations: {istio.io/dry-run: \"yes\"}}\nspec: {}\n",
			wantYAML:   "name: d\nnamespace: foo\nscope: NAMESPACE\n",
			wantStatus: &Status{Type: ConditionZtunnelAccepted, Status: true, Reason: "Accepted", Message: "attached to ztunnel"},
			wantFields: []string{"metadata.annotations[istio.io/dry-run]"}},
		{name: "targetRefs: no Authorization and no ztunnel condition",
			policy: "metadata: {name: wp, namespace: foo}\nspec:\n  targetRefs: [{kind: Service, group: \"\", name: a}]\n  rules: [{to: [{operation: {methods: [GET]}}]}]\n"},
		{name: "AUDIT is not supported",
			policy:     "metadata: {name: au, namespace: foo}\nspec:\n  action: AUDIT\n  rules: [{}]\n",
			wantStatus: &Status{Type: ConditionZtunnelAccepted, Status: false, Reason: "UnsupportedValue", Message: "ztunnel does not support the AUDIT action"},
			wantFields: []string{"spec.action"}},
		{name: "CUSTOM is not supported",
			policy:     "metadata: {name: cu, namespace: foo}\nspec:\n  action: CUSTOM\n  provider: {name: ext}\n  rules: [{}]\n",
			wantStatus: &Status{Type: ConditionZtunnelAccepted, Status: false, Reason: "UnsupportedValue", Message: "ztunnel does not support the CUSTOM action"},
			wantFields: []string{"spec.action"}},
		{name: "DENY with an HTTP-only alternative keeps [{}, namespaces] and the DENY text",
			policy:   "metadata: {name: dn, namespace: foo}\nspec:\n  action: DENY\n  rules:\n  - from: [{source: {requestPrincipals: [x]}}, {source: {namespaces: [bar]}}]\n",
			wantYAML: "action: DENY\ngroups:\n- rules:\n  - matches:\n    - {}\n    - namespaces:\n      - exact: bar\nname: dn\nnamespace: foo\nscope: NAMESPACE\n",
			wantStatus: &Status{Type: ConditionZtunnelAccepted, Status: true, Reason: "UnsupportedValue",
				Message: "ztunnel does not support HTTP attributes (found: requestPrincipals). In ambient mode you must use a waypoint proxy to enforce HTTP rules. DENY policy with HTTP attributes is enforced without the HTTP rules. This will be more restrictive than requested."},
			wantFields: []string{"spec.rules[0]"}},
		{name: "an empty selector is WORKLOAD_SELECTOR even in the root namespace, and flagged",
			policy:     "metadata: {name: e, namespace: istio-system}\nspec:\n  selector: {}\n  rules: [{}]\n",
			wantYAML:   "groups:\n- {}\nname: e\nnamespace: istio-system\nscope: WORKLOAD_SELECTOR\n",
			wantStatus: &Status{Type: ConditionZtunnelAccepted, Status: true, Reason: "Accepted", Message: "attached to ztunnel"},
			wantFields: []string{"spec.selector"}},
		{name: "invalid input (null rule, missing source and operation) does not panic",
			policy:     "metadata: {name: bad, namespace: foo}\nspec:\n  action: DENY\n  rules:\n  - from: [{}]\n    to: [{}]\n",
			wantYAML:   "action: DENY\ngroups:\n- rules:\n  - matches:\n    - {}\n  - matches:\n    - {}\nname: bad\nnamespace: foo\nscope: NAMESPACE\n",
			wantStatus: &Status{Type: ConditionZtunnelAccepted, Status: true, Reason: "Accepted", Message: "attached to ztunnel"},
			wantFields: []string{"spec.rules[0].from[0].source", "spec.rules[0].to[0].operation"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ap := authzPolicy(t, tc.policy)
			got, st := ConvertAuthorizationPolicy(rootNs, ap)
			gotYAML := ""
			if got != nil {
				y, err := got.YAML()
				if err != nil {
					t.Fatal(err)
				}
				gotYAML = string(y)
			}
			if gotYAML != tc.wantYAML {
				t.Errorf("converted:\n%s\nwant:\n%s", gotYAML, tc.wantYAML)
			}
			switch {
			case (st == nil) != (tc.wantStatus == nil):
				t.Errorf("status = %v, want %v", st, tc.wantStatus)
			case st != nil && *st != *tc.wantStatus:
				t.Errorf("status = %+v\nwant     %+v", *st, *tc.wantStatus)
			}
			c := convertAuthorizationPolicy(nil, rootNs, ap)
			var fields []string
			for _, f := range c.findings {
				fields = append(fields, f.field)
			}
			for _, want := range tc.wantFields {
				if !slices.Contains(fields, want) {
					t.Errorf("no finding names %s (findings: %s)", want, strings.Join(fields, ", "))
				}
			}
		})
	}
}

// TestConversionOrigins checks that conversion records the input field of every group,
// clause, match and value.
func TestConversionOrigins(t *testing.T) {
	ap := authzPolicy(t, `metadata: {name: deny-delete, namespace: foo}
spec:
  selector: {matchLabels: {app: a}}
  action: DENY
  rules:
  - from: [{source: {namespaces: [bar]}}]
  - to: [{operation: {methods: [DELETE], ports: ["http", "8080"]}}]
`)
	c := convertAuthorizationPolicy(nil, rootNs, ap)
	want := map[string]string{
		"groups[1]":                     "AuthorizationPolicy foo/deny-delete · spec.rules[1]",
		"groups[1].rules[0]":            "AuthorizationPolicy foo/deny-delete · spec.rules[1].to",
		"groups[1].rules[0].matches[0]": "AuthorizationPolicy foo/deny-delete · spec.rules[1].to[0].operation",
		"groups[1].rules[0].matches[0].destinationPorts[0]": "AuthorizationPolicy foo/deny-delete · spec.rules[1].to[0].operation.ports[1]",
		"groups[0].rules[0].matches[0].namespaces[0]":       "AuthorizationPolicy foo/deny-delete · spec.rules[0].from[0].source.namespaces[0]",
		"scope":  "AuthorizationPolicy foo/deny-delete · spec.selector",
		"action": "AuthorizationPolicy foo/deny-delete · spec.action",
	}
	for path, origin := range want {
		tr, ok := c.rec.Get(path)
		if !ok {
			t.Errorf("no trace at %s", path)
			continue
		}
		if got := tr.Origin.String(); got != origin {
			t.Errorf("%s: origin %q, want %q", path, got, origin)
		}
	}

	pa := peerAuth("foo", "workload").selector("app", "a").port(9090, permissive)
	root := peerAuth(rootNs, "default").mode(strict)
	_, rec := convertPeerAuthentication(nil, rootNs, pa.PeerAuthentication, nil, root.PeerAuthentication)
	for path, origin := range map[string]string{
		"groups[0].rules[0].matches[0].notDestinationPorts[0]": "PeerAuthentication foo/workload · spec.portLevelMtls[9090].mode",
		"groups[0].rules[1].matches[0].notPrincipals[0]":       "PeerAuthentication istio-system/default · spec.mtls.mode",
		"name": "PeerAuthentication foo/workload · metadata.name",
	} {
		tr, ok := rec.Get(path)
		if !ok {
			t.Errorf("no trace at %s", path)
			continue
		}
		if got := tr.Origin.String(); got != origin {
			t.Errorf("%s: origin %q, want %q", path, got, origin)
		}
	}
}
