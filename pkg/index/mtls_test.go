package index

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	networking "istio.io/api/networking/v1alpha3"
	securitybeta "istio.io/api/security/v1beta1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

const (
	paStrict     = securitybeta.PeerAuthentication_MutualTLS_STRICT
	paPermissive = securitybeta.PeerAuthentication_MutualTLS_PERMISSIVE
	paDisable    = securitybeta.PeerAuthentication_MutualTLS_DISABLE
	paUnset      = securitybeta.PeerAuthentication_MutualTLS_UNSET
)

func paref(ns, name string) *provenance.Ref {
	return &provenance.Ref{Kind: "PeerAuthentication", Namespace: ns, Name: name}
}

func headless(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone }

func TestBestEffortInferServiceMTLSMode(t *testing.T) {
	// push_context_test.go TestBestEffortInferServiceMTLSMode (testdata/scenarios/cluster/a19*),
	// plus the inheritance rules of authentication.go addPeerAuthentication.
	strictWhole := peerAuthn("default", "whole", paStrict, nil, 0)
	workloadDisable := peerAuthn("workload-beta-policy", "partial", paDisable, map[string]string{"app": "httpbin", "version": "v1"}, 0)
	cases := []struct {
		name     string
		objs     []any
		svc      string
		ns       string
		port     uint32
		tp       drOpt
		want     MTLSMode
		wantFrom *provenance.Ref
	}{
		{
			name: "from namespace policy", objs: []any{strictWhole, workloadDisable, kubeSvc("some-service", "whole", "http:80")},
			svc: "some-service", ns: "whole", port: 80, want: MTLSStrict, wantFrom: paref("whole", "default"),
		},
		{
			name: "from mesh default: a workload policy is ignored", objs: []any{strictWhole, workloadDisable, kubeSvc("some-service", "partial", "http:80")},
			svc: "some-service", ns: "partial", port: 80, want: MTLSPermissive,
		},
		{
			name: "headless service with no instances found yet", objs: []any{strictWhole, workloadDisable, withSvc(kubeSvc("some-service", "partial", "http:80"), headless)},
			svc: "some-service", ns: "partial", port: 80, want: MTLSDisable,
		},
		{
			name: "headless service with a plaintext instance",
			objs: []any{strictWhole, workloadDisable, withSvc(kubeSvc("some-service", "partial", "http:80"), headless),
				pod("p1", "partial", "192.168.1.2", map[string]string{"app": "some-service", "security.istio.io/tlsMode": ""})},
			svc: "some-service", ns: "partial", port: 80, want: MTLSDisable,
		},
		{
			name: "headless service whose instances all have sidecars uses the namespace mode",
			objs: []any{strictWhole, withSvc(kubeSvc("some-service", "whole", "http:80"), headless),
				pod("p1", "whole", "192.168.1.2", map[string]string{"app": "some-service"})},
			svc: "some-service", ns: "whole", port: 80, want: MTLSStrict, wantFrom: paref("whole", "default"),
		},
		{
			name: "loadBalancer PASSTHROUGH behaves like a headless service",
			objs: []any{strictWhole, kubeSvc("some-service", "whole", "http:80")},
			svc:  "some-service", ns: "whole", port: 80, tp: passthroughLB(), want: MTLSDisable,
		},
		{
			name: "MESH_EXTERNAL service has no inferred mode",
			objs: []any{strictWhole, serviceEntry("ext", "whole", networking.ServiceEntry_STATIC, "api.example.com")},
			svc:  "api.example.com", ns: "whole", port: 443, want: MTLSUnknown,
		},
		{
			name: "namespace policy with mode UNSET inherits the mesh-wide policy",
			objs: []any{peerAuthn("mesh", "istio-system", paStrict, nil, 0), peerAuthn("ns", "bookinfo", paUnset, nil, 0), kubeSvc("reviews", "bookinfo", "http:9080")},
			svc:  "reviews", ns: "bookinfo", port: 9080, want: MTLSStrict, wantFrom: paref("bookinfo", "ns"),
		},
		{
			name: "namespace policy with mode UNSET and no mesh-wide policy is PERMISSIVE",
			objs: []any{peerAuthn("ns", "bookinfo", paUnset, nil, 0), kubeSvc("reviews", "bookinfo", "http:9080")},
			svc:  "reviews", ns: "bookinfo", port: 9080, want: MTLSPermissive, wantFrom: paref("bookinfo", "ns"),
		},
		{
			name: "mesh-wide policy with mode UNSET is PERMISSIVE",
			objs: []any{peerAuthn("mesh", "istio-system", paUnset, nil, 0), kubeSvc("reviews", "bookinfo", "http:9080")},
			svc:  "reviews", ns: "bookinfo", port: 9080, want: MTLSPermissive, wantFrom: paref("istio-system", "mesh"),
		},
		{
			name: "namespace policy overrides the mesh-wide one",
			objs: []any{peerAuthn("mesh", "istio-system", paStrict, nil, 0), peerAuthn("ns", "bookinfo", paDisable, nil, 0), kubeSvc("reviews", "bookinfo", "http:9080")},
			svc:  "reviews", ns: "bookinfo", port: 9080, want: MTLSDisable, wantFrom: paref("bookinfo", "ns"),
		},
		{
			name: "the oldest namespace-level policy wins",
			objs: []any{peerAuthn("newer", "bookinfo", paDisable, nil, 5), peerAuthn("older", "bookinfo", paStrict, nil, 1), kubeSvc("reviews", "bookinfo", "http:9080")},
			svc:  "reviews", ns: "bookinfo", port: 9080, want: MTLSStrict, wantFrom: paref("bookinfo", "older"),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ix := Build(snapshot(tc.objs...))
			svcs, err := ix.ResolveHost(tc.svc, tc.ns)
			if err != nil {
				t.Fatal(err)
			}
			rule := dr("r", tc.ns, tc.svc)
			if tc.tp != nil {
				tc.tp(rule)
			}
			got, origin := ix.InferServiceMTLSMode(svcs[0], tc.port, rule.Spec.GetTrafficPolicy())
			if got != tc.want {
				t.Errorf("mode = %s, want %s (origin %+v)", got, tc.want, origin)
			}
			if diff := cmp.Diff(tc.wantFrom, origin.Resource, cmpopts.EquateEmpty()); tc.wantFrom != nil && diff != "" {
				t.Errorf("origin resource (-want +got):\n%s", diff)
			}
			if tc.wantFrom == nil && origin.Resource != nil && origin.Resource.Kind == "PeerAuthentication" {
				t.Errorf("origin = %v, want no PeerAuthentication", origin.Resource)
			}
		})
	}
}

func TestNamespaceMTLSModeOrigin(t *testing.T) {
	ix := Build(snapshot(peerAuthn("mesh", "istio-system", paStrict, nil, 0), peerAuthn("ns", "bookinfo", paUnset, nil, 0)))
	_, got := ix.NamespaceMTLSMode("bookinfo")
	want := provenance.Origin{
		Layer: provenance.LayerPeerAuthentication, Resource: paref("bookinfo", "ns"), Field: "spec.mtls.mode",
		Note: "mode UNSET inherits the mesh-wide PeerAuthentication istio-system/mesh (STRICT)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	_, def := Build(snapshot()).NamespaceMTLSMode("bookinfo")
	wantDefault := provenance.Origin{Layer: provenance.LayerIstioDefault, Note: "no PeerAuthentication in namespace bookinfo or mesh-wide in istio-system: istiod assumes PERMISSIVE"}
	if diff := cmp.Diff(wantDefault, def); diff != "" {
		t.Errorf("default (-want +got):\n%s", diff)
	}
}

func TestComposePeerAuthenticationForEndpoints(t *testing.T) {
	svc := kubeSvc("reviews", "bookinfo", "http:9080")
	v1 := pod("reviews-v1", "bookinfo", "10.1.0.1", map[string]string{"app": "reviews", "version": "v1"})
	v2 := pod("reviews-v2", "bookinfo", "10.1.0.2", map[string]string{"app": "reviews", "version": "v2"})
	cases := []struct {
		name string
		objs []any
		want []WorkloadMTLS
	}{
		{
			name: "workload policy STRICT under a DISABLE namespace selects one version",
			objs: []any{peerAuthn("ns", "bookinfo", paDisable, nil, 0), peerAuthn("v1-strict", "bookinfo", paStrict, map[string]string{"version": "v1"}, 0)},
			want: []WorkloadMTLS{{PeerAuthentication: *paref("bookinfo", "v1-strict"), Mode: MTLSStrict, Endpoints: []Endpoint{podEndpoint(v1, 9080)}}},
		},
		{
			name: "workload policy with mode UNSET and a port-level DISABLE inherits the namespace mode",
			objs: []any{peerAuthn("ns", "bookinfo", paStrict, nil, 0), withPortLevel(peerAuthn("v2-port", "bookinfo", paUnset, map[string]string{"version": "v2"}, 0), 9080, paDisable)},
			want: []WorkloadMTLS{{PeerAuthentication: *paref("bookinfo", "v2-port"), Mode: MTLSStrict, PortLevel: map[uint32]MTLSMode{9080: MTLSDisable}, Endpoints: []Endpoint{podEndpoint(v2, 9080)}}},
		},
		{
			name: "workload policy PERMISSIVE is not decisive",
			objs: []any{peerAuthn("v1-permissive", "bookinfo", paPermissive, map[string]string{"version": "v1"}, 0)},
		},
		{
			name: "selector policies in the root namespace are not workload policies",
			objs: []any{peerAuthn("root-selector", "istio-system", paStrict, map[string]string{"app": "reviews"}, 0)},
		},
		{
			name: "the oldest matching workload policy wins",
			objs: []any{peerAuthn("newer", "bookinfo", paDisable, map[string]string{"app": "reviews"}, 9), peerAuthn("older", "bookinfo", paStrict, map[string]string{"app": "reviews"}, 1)},
			want: []WorkloadMTLS{{PeerAuthentication: *paref("bookinfo", "older"), Mode: MTLSStrict, Endpoints: []Endpoint{podEndpoint(v1, 9080), podEndpoint(v2, 9080)}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ix := Build(snapshot(append([]any{svc, v1, v2}, tc.objs...)...))
			svcs, err := ix.ResolveHost("reviews", "bookinfo")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, ix.WorkloadPeerAuthentications(svcs[0]), cmpopts.EquateEmpty(), ignoreWorkload); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// The policy of an endpoint is reused from the previous port only when the endpoint at the same
// place names the same workload: ports whose endpoint lists differ still get each workload's own.
func TestWorkloadPeerAuthenticationsPortsListDifferentWorkloads(t *testing.T) {
	v1 := pod("reviews-v1", "bookinfo", "10.1.0.1", map[string]string{"app": "reviews", "version": "v1"})
	v2 := pod("reviews-v2", "bookinfo", "10.1.0.2", map[string]string{"app": "reviews", "version": "v2"})
	v3 := pod("reviews-v3", "bookinfo", "10.1.0.3", map[string]string{"app": "reviews", "version": "v3"})
	ix := Build(snapshot(kubeSvc("reviews", "bookinfo", "http:9080"), v1, v2, v3,
		peerAuthn("v1-strict", "bookinfo", paStrict, map[string]string{"version": "v1"}, 0),
		peerAuthn("v3-disable", "bookinfo", paDisable, map[string]string{"version": "v3"}, 0)))
	svcs, err := ix.ResolveHost("reviews", "bookinfo")
	if err != nil {
		t.Fatal(err)
	}
	svc := *svcs[0]
	svc.Endpoints = map[uint32][]Endpoint{
		9080: {podEndpoint(v1, 9080), podEndpoint(v2, 9080), podEndpoint(v3, 9080)},
		9443: {podEndpoint(v2, 9443), podEndpoint(v1, 9443)},
		9500: {podEndpoint(v2, 9500), podEndpoint(v3, 9500), podEndpoint(v1, 9500)},
	}
	want := []WorkloadMTLS{
		{PeerAuthentication: *paref("bookinfo", "v1-strict"), Mode: MTLSStrict,
			Endpoints: []Endpoint{podEndpoint(v1, 9080), podEndpoint(v1, 9443), podEndpoint(v1, 9500)}},
		{PeerAuthentication: *paref("bookinfo", "v3-disable"), Mode: MTLSDisable,
			Endpoints: []Endpoint{podEndpoint(v3, 9080), podEndpoint(v3, 9500)}},
	}
	if diff := cmp.Diff(want, ix.WorkloadPeerAuthentications(&svc), cmpopts.EquateEmpty(), ignoreWorkload); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
