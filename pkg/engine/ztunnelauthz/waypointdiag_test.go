package ztunnelauthz

import (
	"strings"
	"testing"

	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// waypointGateway is a waypoint Gateway foo/waypoint (or ns/name), deployed unless told.
func waypointGateway(ns, name string, deployed bool, annotations ...string) *gatewayv1.Gateway {
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: labelsOf(annotations...)},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "istio-waypoint", Listeners: []gatewayv1.Listener{{Name: "mesh", Port: 15008, Protocol: "HBONE"}}}}
	if deployed {
		gw.Status.Addresses = []gatewayv1.GatewayStatusAddress{{Value: "10.96.0.100"}}
	}
	return gw
}

// waypointPod is a pod of the waypoint ns/name with service account sa.
func waypointPod(ns, name, sa string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-7d9f8c6b5-abcde",
		Labels: map[string]string{"gateway.networking.k8s.io/gateway-name": name}}}
	p.Spec.ServiceAccountName = sa
	return p
}

// usesWaypoint is Service foo/a (ports 80->8080, 9090) labelled to use waypoint name.
func usesWaypoint(name string, kv ...string) *corev1.Service {
	s := service("foo", "a", 80, 8080, "app", "a")
	s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "metrics", Port: 9090})
	s.Labels = labelsOf(append([]string{"istio.io/use-waypoint", name}, kv...)...)
	return s
}

func diagsOf(r *explain.Result, id string) []explain.Diagnostic {
	var out []explain.Diagnostic
	for _, d := range r.Diagnostics {
		if d.ID == id {
			out = append(out, d)
		}
	}
	return out
}

// TestWaypointIdentityRejected pins W09: behind a bound waypoint, the destination's ztunnel sees
// the waypoint's identity, so its policies must admit it
// (docs/semantics/authz.md#permissive-strict-and-waypoints).
func TestWaypointIdentityRejected(t *testing.T) {
	pod := newPod("foo", "a", "app", "a")
	rootStrict := peerAuth(rootNs, "default").mode(strict)
	allowClients := func(t *testing.T) any {
		return authzPolicy(t, `
metadata: {name: allow-clients, namespace: foo}
spec:
  selector: {matchLabels: {app: a}}
  rules:
  - from:
    - source: {principals: ["cluster.local/ns/foo/sa/client"]}`)
	}
	cases := []struct {
		name string
		objs func(t *testing.T) []any
		mesh *meshv1alpha1.MeshConfig
		// want are substrings of the one W09 message (none: no W09); wantFix of its fix.
		want, wantFix []string
		wantRefs      []string
		// assumption is a substring of the answer's assumptions (none: the waypoint's pods are known)
		assumption string
	}{
		{name: "ALLOW with client principals only: every request through the waypoint is denied",
			objs: func(t *testing.T) []any {
				return []any{rootStrict, pod, usesWaypoint("waypoint"), waypointGateway("foo", "waypoint", true), waypointPod("foo", "waypoint", "waypoint"), allowClients(t)}
			},
			want: []string{"no ALLOW rule ztunnel applies to pod foo/a matches waypoint foo/waypoint's identity cluster.local/ns/foo/sa/waypoint",
				"traffic to Service foo/a", "on ports 8080, 9090", "the ALLOW rules name other peers (foo/allow-clients spec.rules[0]: principal cluster.local/ns/foo/sa/client)"},
			wantFix:  []string{"add an ALLOW rule for principal cluster.local/ns/foo/sa/waypoint", "targetRefs on Gateway foo/waypoint", "PILOT_AUTO_ALLOW_WAYPOINT_POLICY=true"},
			wantRefs: []string{"AuthorizationPolicy foo/allow-clients"}},
		{name: "ALLOW that includes the waypoint's service account: silent",
			objs: func(t *testing.T) []any {
				return []any{rootStrict, pod, usesWaypoint("waypoint"), waypointGateway("foo", "waypoint", true), waypointPod("foo", "waypoint", "waypoint"), authzPolicy(t, `
metadata: {name: allow-clients, namespace: foo}
spec:
  selector: {matchLabels: {app: a}}
  rules:
  - from:
    - source: {principals: ["cluster.local/ns/foo/sa/client", "cluster.local/ns/foo/sa/waypoint"]}`)}
			}},
		{name: "ALLOW of the waypoint's namespace: silent",
			objs: func(t *testing.T) []any {
				return []any{rootStrict, pod, usesWaypoint("waypoint"), waypointGateway("foo", "waypoint", true), authzPolicy(t, `
metadata: {name: allow-ns, namespace: foo}
spec:
  rules:
  - from:
    - source: {namespaces: ["foo"]}`)}
			}},
		{name: "the waypoint allowed on one port only: the other port is denied to it, not to clients",
			objs: func(t *testing.T) []any {
				return []any{rootStrict, pod, usesWaypoint("waypoint"), waypointGateway("foo", "waypoint", true), authzPolicy(t, `
metadata: {name: allow-wp-http, namespace: foo}
spec:
  selector: {matchLabels: {app: a}}
  rules:
  - from:
    - source: {principals: ["cluster.local/ns/foo/sa/waypoint"]}
    to:
    - operation: {ports: ["8080"]}
  - from:
    - source: {principals: ["cluster.local/ns/foo/sa/client"]}`)}
			},
			want:       []string{"on port 9090", "the ALLOW rules name other peers (foo/allow-wp-http spec.rules[1]: principal cluster.local/ns/foo/sa/client)"},
			assumption: "taken from the Gateway's name"},
		{name: "ALLOW on one port only: the other port is denied to everyone, silent",
			objs: func(t *testing.T) []any {
				return []any{rootStrict, pod, usesWaypoint("waypoint"), waypointGateway("foo", "waypoint", true), authzPolicy(t, `
metadata: {name: allow-wp-http, namespace: foo}
spec:
  selector: {matchLabels: {app: a}}
  rules:
  - from:
    - source: {principals: ["cluster.local/ns/foo/sa/waypoint"]}
    to:
    - operation: {ports: ["8080"]}`)}
			}},
		{name: "DENY on the waypoint's namespace rejects everything the waypoint forwards",
			objs: func(t *testing.T) []any {
				return []any{rootStrict, pod, usesWaypoint("waypoint"), waypointGateway("foo", "waypoint", true), waypointPod("foo", "waypoint", "waypoint"), authzPolicy(t, `
metadata: {name: deny-foo, namespace: foo}
spec:
  action: DENY
  rules:
  - to:
    - operation: {ports: ["9999"]}
  - from:
    - source: {namespaces: ["foo"]}`)}
			},
			want:     []string{"DENY policy foo/deny-foo (spec.rules[1]: namespace foo) matches waypoint foo/waypoint's identity cluster.local/ns/foo/sa/waypoint", "the ztunnel of pod foo/a rejects everything the waypoint forwards", "on ports 8080, 9090"},
			wantFix:  []string{"notPrincipals: [cluster.local/ns/foo/sa/waypoint]", "DENY is evaluated before ALLOW"},
			wantRefs: []string{"AuthorizationPolicy foo/deny-foo"}},
		{name: "DENY that excludes the waypoint: silent",
			objs: func(t *testing.T) []any {
				return []any{rootStrict, pod, usesWaypoint("waypoint"), waypointGateway("foo", "waypoint", true), authzPolicy(t, `
metadata: {name: deny-foo, namespace: foo}
spec:
  action: DENY
  rules:
  - from:
    - source:
        namespaces: ["foo"]
        notPrincipals: ["cluster.local/ns/foo/sa/waypoint"]`)}
			}},
		{name: "DENY with an IP condition may not fire: silent",
			objs: func(t *testing.T) []any {
				return []any{rootStrict, pod, usesWaypoint("waypoint"), waypointGateway("foo", "waypoint", true), authzPolicy(t, `
metadata: {name: deny-foo, namespace: foo}
spec:
  action: DENY
  rules:
  - from:
    - source: {namespaces: ["foo"], ipBlocks: ["10.0.0.0/8"]}`)}
			}},
		{name: "no waypoint: client principals are what ztunnel sees, silent",
			objs: func(t *testing.T) []any {
				return []any{rootStrict, pod, service("foo", "a", 80, 8080, "app", "a"), waypointGateway("foo", "waypoint", true), allowClients(t)}
			}},
		{name: "use-waypoint names a Gateway that does not exist: silent",
			objs: func(t *testing.T) []any {
				return []any{rootStrict, pod, usesWaypoint("waypoint"), allowClients(t)}
			}},
		{name: "waypoint in another namespace that does not allow foo: not bound, silent",
			objs: func(t *testing.T) []any {
				return []any{rootStrict, pod, namespace("foo", dataplaneModeLabel, dataplaneModeAmbient), namespace("wp"),
					usesWaypoint("waypoint", "istio.io/use-waypoint-namespace", "wp"), waypointGateway("wp", "waypoint", true), allowClients(t)}
			}},
		{name: "waypoint without addresses: reported as it will be once programmed",
			objs: func(t *testing.T) []any {
				return []any{rootStrict, pod, usesWaypoint("waypoint"), waypointGateway("foo", "waypoint", false), allowClients(t)}
			},
			want:       []string{"identity cluster.local/ns/foo/sa/waypoint,", "once istiod has programmed the waypoint (the Gateway has no status.addresses yet)"},
			assumption: "waypoint foo/waypoint's pods are not in the input: its service account is taken from the Gateway's name, as istiod's deployment controller names the service account (waypoint)"},
		{name: "the service-account annotation names the identity when no waypoint pod is known",
			objs: func(t *testing.T) []any {
				return []any{rootStrict, pod, usesWaypoint("waypoint"), waypointGateway("foo", "waypoint", true, "gateway.istio.io/service-account", "wp-sa"), allowClients(t)}
			},
			want:       []string{"identity cluster.local/ns/foo/sa/wp-sa,"},
			assumption: "its service account is taken from annotation gateway.istio.io/service-account on the Gateway (wp-sa)"},
		{name: "the waypoint pod's service account wins over the annotation; the trust domain is MeshConfig's",
			objs: func(t *testing.T) []any {
				return []any{rootStrict, pod, usesWaypoint("waypoint"), waypointGateway("foo", "waypoint", true, "gateway.istio.io/service-account", "wp-sa"),
					waypointPod("foo", "waypoint", "running-sa"), allowClients(t)}
			},
			mesh: &meshv1alpha1.MeshConfig{TrustDomain: "example.org", RootNamespace: rootNs},
			want: []string{"identity example.org/ns/foo/sa/running-sa, so"}},
		{name: "the pod's own waypoint (namespace label, waypoint for all traffic) serves every port",
			objs: func(t *testing.T) []any {
				gw := waypointGateway("foo", "waypoint", true)
				gw.Labels = map[string]string{"istio.io/waypoint-for": "all"}
				return []any{rootStrict, pod, namespace("foo", dataplaneModeLabel, dataplaneModeAmbient, "istio.io/use-waypoint", "waypoint"), gw, allowClients(t)}
			},
			want:       []string{"traffic to Pod foo/a", "on every port"},
			assumption: "taken from the Gateway's name"},
		{name: "a pod ztunnel does not capture: silent",
			objs: func(t *testing.T) []any {
				return []any{rootStrict, pod, namespace("foo"), usesWaypoint("waypoint"), waypointGateway("foo", "waypoint", true), allowClients(t)}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapshot(tc.objs(t)...)
			snap.MeshConfig = tc.mesh
			r := explainOne(t, snap, podA)
			ds := diagsOf(r, "W09")
			if len(tc.want) == 0 {
				if len(ds) > 0 {
					t.Fatalf("W09 reported: %+v", ds)
				}
				return
			}
			if len(ds) != 1 {
				t.Fatalf("%d W09 diagnostics, want 1: %+v (all: %v)", len(ds), ds, diagIDs(r))
			}
			d := ds[0]
			if got := strings.Join(r.Assumptions, "\n"); (tc.assumption == "") != !strings.Contains(got, "pods are not in the input") ||
				!strings.Contains(got, tc.assumption) {
				t.Errorf("assumptions %q, want one with %q", r.Assumptions, tc.assumption)
			}
			if d.Severity != explain.SeverityError {
				t.Errorf("severity %s, want error", d.Severity)
			}
			for _, w := range tc.want {
				if !strings.Contains(d.Message, w) {
					t.Errorf("message lacks %q:\n%s", w, d.Message)
				}
			}
			for _, w := range tc.wantFix {
				if !strings.Contains(d.Fix, w) {
					t.Errorf("fix lacks %q:\n%s", w, d.Fix)
				}
			}
			if tc.wantRefs != nil {
				var got []string
				for _, r := range d.Resources {
					got = append(got, r.String())
				}
				if strings.Join(got, ",") != strings.Join(tc.wantRefs, ",") {
					t.Errorf("resources %v, want %v", got, tc.wantRefs)
				}
			}
		})
	}
}

// TestWaypointBypassedByPlaintext pins W10: where ztunnel accepts plaintext, clients outside the
// mesh skip the waypoint and the policies attached to it.
func TestWaypointBypassedByPlaintext(t *testing.T) {
	pod := newPod("foo", "a", "app", "a")
	l7 := func(t *testing.T) any {
		return authzPolicy(t, `
metadata: {name: waypoint-l7, namespace: foo}
spec:
  targetRefs:
  - {group: gateway.networking.k8s.io, kind: Gateway, name: waypoint}
  rules:
  - to:
    - operation: {methods: [GET]}`)
	}
	cases := []struct {
		name string
		objs func(t *testing.T) []any
		want []string // substrings of the W10 message; none: no W10
		refs []string
	}{
		{name: "PERMISSIVE by default and a policy on the waypoint",
			objs: func(t *testing.T) []any {
				return []any{pod, usesWaypoint("waypoint"), waypointGateway("foo", "waypoint", true), l7(t)}
			},
			want: []string{"the ztunnel of pod foo/a accepts plaintext on 8080, 9090 (mTLS mode PERMISSIVE, Istio's default: no PeerAuthentication sets a mode)", "skipping waypoint foo/waypoint (traffic to Service foo/a) and its policies foo/waypoint-l7 (ALLOW)"},
			refs: []string{"AuthorizationPolicy foo/waypoint-l7"}},
		{name: "PERMISSIVE from a PeerAuthentication; a policy on the Service",
			objs: func(t *testing.T) []any {
				return []any{pod, peerAuth("foo", "default").mode(permissive), usesWaypoint("waypoint"), waypointGateway("foo", "waypoint", true), authzPolicy(t, `
metadata: {name: svc-deny, namespace: foo}
spec:
  action: DENY
  targetRefs:
  - {kind: Service, name: a}
  rules:
  - to:
    - operation: {paths: [/admin]}`)}
			},
			want: []string{"policies foo/svc-deny (DENY)"},
			refs: []string{"PeerAuthentication foo/default", "AuthorizationPolicy foo/svc-deny"}},
		{name: "STRICT: silent",
			objs: func(t *testing.T) []any {
				return []any{pod, peerAuth(rootNs, "default").mode(strict), usesWaypoint("waypoint"), waypointGateway("foo", "waypoint", true), l7(t)}
			}},
		{name: "no policy on the waypoint: silent",
			objs: func(t *testing.T) []any {
				return []any{pod, usesWaypoint("waypoint"), waypointGateway("foo", "waypoint", true)}
			}},
		{name: "a policy on another waypoint: silent",
			objs: func(t *testing.T) []any {
				return []any{pod, usesWaypoint("waypoint"), waypointGateway("foo", "waypoint", true), waypointGateway("foo", "other", true), authzPolicy(t, `
metadata: {name: other-l7, namespace: foo}
spec:
  targetRefs:
  - {group: gateway.networking.k8s.io, kind: Gateway, name: other}
  rules:
  - to:
    - operation: {methods: [GET]}`)}
			}},
		{name: "no waypoint: silent",
			objs: func(t *testing.T) []any {
				return []any{pod, service("foo", "a", 80, 8080, "app", "a"), waypointGateway("foo", "waypoint", true), l7(t)}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := explainOne(t, snapshot(tc.objs(t)...), podA)
			ds := diagsOf(r, "W10")
			if len(tc.want) == 0 {
				if len(ds) > 0 {
					t.Fatalf("W10 reported: %+v", ds)
				}
				return
			}
			if len(ds) != 1 {
				t.Fatalf("%d W10 diagnostics, want 1 (all: %v)", len(ds), diagIDs(r))
			}
			if ds[0].Severity != explain.SeverityWarning {
				t.Errorf("severity %s, want warning", ds[0].Severity)
			}
			for _, w := range tc.want {
				if !strings.Contains(ds[0].Message, w) {
					t.Errorf("message lacks %q:\n%s", w, ds[0].Message)
				}
			}
			var got []string
			for _, r := range ds[0].Resources {
				got = append(got, r.String())
			}
			if strings.Join(got, ",") != strings.Join(tc.refs, ",") {
				t.Errorf("resources %v, want %v", got, tc.refs)
			}
		})
	}
}

// TestWaypointDiagnosticsThroughExplainer: check reads the pod answer through Explainer.Pod, so
// it reports W09 too.
func TestWaypointDiagnosticsThroughExplainer(t *testing.T) {
	snap := snapshot(peerAuth(rootNs, "default").mode(strict), newPod("foo", "a", "app", "a"), usesWaypoint("waypoint"), waypointGateway("foo", "waypoint", true),
		authzPolicy(t, `
metadata: {name: allow-clients, namespace: foo}
spec:
  rules:
  - from:
    - source: {principals: ["cluster.local/ns/foo/sa/client"]}`))
	var pod *corev1.Pod
	for _, p := range snap.Pods {
		if p.Name == "a" {
			pod = p
		}
	}
	r := NewExplainer(snap, "").Pod(pod)
	ds := diagsOf(r, "W09")
	if len(ds) != 1 || len(ds[0].Resources) != 1 || ds[0].Resources[0] != (provenance.Ref{Kind: "AuthorizationPolicy", Namespace: "foo", Name: "allow-clients"}) {
		t.Fatalf("W09 through Explainer.Pod: %+v", ds)
	}
}

// TestWaypointAllowNothingSilent: an ALLOW policy without rules denies every client alike
// (A19); W09 has nothing to add about the waypoint.
func TestWaypointAllowNothingSilent(t *testing.T) {
	snap := snapshot(peerAuth(rootNs, "default").mode(strict), newPod("foo", "a", "app", "a"), usesWaypoint("waypoint"), waypointGateway("foo", "waypoint", true),
		authzPolicy(t, `
metadata: {name: allow-nothing, namespace: foo}
spec: {}`))
	r := explainOne(t, snap, podA)
	if ds := diagsOf(r, "W09"); len(ds) > 0 {
		t.Fatalf("W09 for allow-nothing: %+v", ds)
	}
	if len(diagsOf(r, "A19")) == 0 {
		t.Fatalf("no A19: the policy is not in effect, the case proves nothing (%v)", diagIDs(r))
	}
}
