package index

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

func TestServiceForProxy(t *testing.T) {
	const reviews = "reviews.bookinfo.svc.cluster.local"
	reviewsSvc := kubeSvc("reviews", "bookinfo", "http:9080", "grpc:9090")
	reviewsRef := provenance.Ref{Kind: "Service", Namespace: "bookinfo", Name: "reviews"}
	scRef := func(ns, name string) *provenance.Ref {
		return &provenance.Ref{Kind: "Sidecar", Namespace: ns, Name: name}
	}
	seAt := func(name, ns string, sec int, f func(*networking.ServiceEntry)) *networkingv1.ServiceEntry {
		se := withSEMeta(serviceEntry(name, ns, networking.ServiceEntry_DNS, "shared.example.com"), func(m *metav1.ObjectMeta) { m.CreationTimestamp = at(sec) })
		if f != nil {
			f(&se.Spec)
		}
		return se
	}
	cases := []struct {
		name      string
		objs      []any
		proxy     *Proxy
		host      string
		wantRef   *provenance.Ref
		wantPorts []uint32
		wantScope *Scope
		wantDiags []explain.Diagnostic
	}{
		{
			name: "default scope imports every visible service", objs: []any{reviewsSvc},
			proxy: nsProxy("frontend"), host: reviews, wantRef: &reviewsRef, wantPorts: []uint32{9080, 9090},
			wantScope: &Scope{ImportedBy: "egress hosts"},
		},
		{
			name: "Service exportTo . hides it from other namespaces",
			objs: []any{withSvc(kubeSvc("reviews", "bookinfo", "http:9080"), func(s *corev1.Service) {
				s.Annotations = map[string]string{"networking.istio.io/exportTo": "."}
			})},
			proxy: nsProxy("frontend"), host: reviews,
			wantDiags: []explain.Diagnostic{{
				ID: "D7", Severity: explain.SeverityError, Resources: []provenance.Ref{reviewsRef},
				Message: "Service bookinfo/reviews is not visible from namespace frontend (exportTo: .), so the proxy has no cluster for reviews.bookinfo.svc.cluster.local and no DestinationRule applies",
				Fix:     "add frontend to the networking.istio.io/exportTo annotation of Service bookinfo/reviews",
			}},
		},
		{
			name:  "MeshConfig defaultServiceExportTo . hides services without exportTo",
			objs:  []any{withMesh(func(m *meshConfig) { m.DefaultServiceExportTo = []string{"."} }), reviewsSvc},
			proxy: nsProxy("frontend"), host: reviews,
			wantDiags: []explain.Diagnostic{{
				ID: "D7", Severity: explain.SeverityError, Resources: []provenance.Ref{reviewsRef},
				Message: "Service bookinfo/reviews is not visible from namespace frontend (exportTo: . from MeshConfig defaultServiceExportTo), so the proxy has no cluster for reviews.bookinfo.svc.cluster.local and no DestinationRule applies",
				Fix:     "add frontend to the networking.istio.io/exportTo annotation of Service bookinfo/reviews",
			}},
		},
		{
			name:  "MeshConfig serviceEntryVisibility NAMESPACE caps a ServiceEntry for sidecars",
			objs:  []any{withMesh(seVisibilityNamespaceFor("team", "x")), namespace("egress", map[string]string{"team": "x"}), seAt("ext", "egress", 0, nil)},
			proxy: nsProxy("frontend"), host: "shared.example.com",
			wantDiags: []explain.Diagnostic{{
				ID: "D7", Severity: explain.SeverityError, Resources: []provenance.Ref{{Kind: "ServiceEntry", Namespace: "egress", Name: "ext"}},
				Message: "ServiceEntry egress/ext is not visible from namespace frontend (exportTo: ., capped by MeshConfig serviceEntryVisibility), so the proxy has no cluster for shared.example.com and no DestinationRule applies",
				Fix:     "add frontend to spec.exportTo of ServiceEntry egress/ext",
			}},
		},
		{
			name:  "Sidecar egress ./* does not import another namespace's service",
			objs:  []any{reviewsSvc, sidecar("default", "frontend", nil, egress(0, "./*", "istio-system/*"))},
			proxy: nsProxy("frontend"), host: reviews,
			wantDiags: []explain.Diagnostic{{
				ID: "D7", Severity: explain.SeverityError, Resources: []provenance.Ref{*scRef("frontend", "default"), reviewsRef},
				Message: "Sidecar frontend/default of namespace frontend does not import reviews.bookinfo.svc.cluster.local (none of its spec.egress[].hosts imports it): the proxy has no cluster for it and no DestinationRule applies",
				Fix:     "add bookinfo/reviews.bookinfo.svc.cluster.local to spec.egress[].hosts of Sidecar frontend/default",
			}},
		},
		{
			name:  "Sidecar egress ~ entry excludes a host",
			objs:  []any{reviewsSvc, sidecar("default", "frontend", nil, egress(0, "*/*", "~bookinfo/reviews.bookinfo.svc.cluster.local"))},
			proxy: nsProxy("frontend"), host: reviews,
			wantDiags: []explain.Diagnostic{{
				ID: "D7", Severity: explain.SeverityError, Resources: []provenance.Ref{*scRef("frontend", "default"), reviewsRef},
				Message: "Sidecar frontend/default of namespace frontend does not import reviews.bookinfo.svc.cluster.local (spec.egress[0].hosts excludes it with a ~ entry): the proxy has no cluster for it and no DestinationRule applies",
				Fix:     "add bookinfo/reviews.bookinfo.svc.cluster.local to spec.egress[].hosts of Sidecar frontend/default",
			}},
		},
		{
			name:  "egress listener with a port imports only that port",
			objs:  []any{reviewsSvc, sidecar("default", "frontend", nil, egress(9080, "bookinfo/*"))},
			proxy: nsProxy("frontend"), host: reviews, wantRef: &reviewsRef, wantPorts: []uint32{9080},
			wantScope: &Scope{Sidecar: scRef("frontend", "default"), ImportedBy: "egress hosts", EgressPorts: []uint32{9080}, Ports: []uint32{9080}},
			wantDiags: []explain.Diagnostic{{
				ID: "D8", Severity: explain.SeverityWarning, Resources: []provenance.Ref{reviewsRef, *scRef("frontend", "default")},
				Message: "Sidecar frontend/default imports reviews.bookinfo.svc.cluster.local through an egress listener on port 9080: there are no clusters for port 9090, and DestinationRule settings for those ports have no effect",
				Fix:     "add an egress listener without port (or one per port) importing bookinfo/reviews.bookinfo.svc.cluster.local to Sidecar frontend/default if the other ports are needed",
			}},
		},
		{
			name:  "listeners on two ports add up",
			objs:  []any{reviewsSvc, sidecar("default", "frontend", nil, egress(9080, "bookinfo/*"), egress(9090, "bookinfo/*"))},
			proxy: nsProxy("frontend"), host: reviews, wantRef: &reviewsRef, wantPorts: []uint32{9080, 9090},
			wantScope: &Scope{Sidecar: scRef("frontend", "default"), ImportedBy: "egress hosts", EgressPorts: []uint32{9080, 9090}},
		},
		{
			name:  "egress listener on a port the service lacks",
			objs:  []any{reviewsSvc, sidecar("default", "frontend", nil, egress(8080, "bookinfo/*"))},
			proxy: nsProxy("frontend"), host: reviews,
			wantDiags: []explain.Diagnostic{{
				ID: "D7", Severity: explain.SeverityError, Resources: []provenance.Ref{*scRef("frontend", "default"), reviewsRef},
				Message: "Sidecar frontend/default of namespace frontend does not import reviews.bookinfo.svc.cluster.local (spec.egress[0] imports it only on port 8080, which the service does not have): the proxy has no cluster for it and no DestinationRule applies",
				Fix:     "add bookinfo/reviews.bookinfo.svc.cluster.local to spec.egress[].hosts of Sidecar frontend/default",
			}},
		},
		{
			name: "workloadSelector Sidecar is chosen over the namespace's default one",
			objs: []any{reviewsSvc,
				sidecar("default", "frontend", nil, egress(0, "./*")),
				sidecar("web", "frontend", map[string]string{"app": "web"}, egress(0, "bookinfo/*")),
			},
			proxy: labelledProxy("frontend", map[string]string{"app": "web"}), host: reviews, wantRef: &reviewsRef, wantPorts: []uint32{9080, 9090},
			wantScope: &Scope{Sidecar: scRef("frontend", "web"), ImportedBy: "egress hosts"},
		},
		{
			name:  "root namespace Sidecar applies to namespaces without one, . meaning the proxy's namespace",
			objs:  []any{reviewsSvc, kubeSvc("web", "frontend", "http:80"), sidecar("default", "istio-system", nil, egress(0, "./*"))},
			proxy: nsProxy("frontend"), host: "web.frontend.svc.cluster.local",
			wantRef: &provenance.Ref{Kind: "Service", Namespace: "frontend", Name: "web"}, wantPorts: []uint32{80},
			wantScope: &Scope{Sidecar: scRef("istio-system", "default"), ImportedBy: "egress hosts"},
		},
		{
			name: "VirtualService destination imports a host the egress hosts do not, on the routed port",
			objs: []any{reviewsSvc, kubeSvc("web", "frontend", "http:80"),
				sidecar("default", "frontend", nil, egress(0, "./*")),
				vs("web", "frontend", []string{"web"}, httpRoute("reviews.bookinfo.svc.cluster.local", "", 9080)),
			},
			proxy: nsProxy("frontend"), host: reviews, wantRef: &reviewsRef, wantPorts: []uint32{9080},
			wantScope: &Scope{
				Sidecar: scRef("frontend", "default"), ImportedBy: "VirtualService destination",
				VirtualService: &provenance.Ref{Kind: "VirtualService", Namespace: "frontend", Name: "web"}, Ports: []uint32{9080},
			},
			wantDiags: []explain.Diagnostic{{
				ID: "D8", Severity: explain.SeverityWarning,
				Resources: []provenance.Ref{reviewsRef, *scRef("frontend", "default"), {Kind: "VirtualService", Namespace: "frontend", Name: "web"}},
				Message:   "Sidecar frontend/default imports reviews.bookinfo.svc.cluster.local only through the routes of VirtualService frontend/web, which name port 9080: there are no clusters for port 9090, and DestinationRule settings for those ports have no effect",
				Fix:       "add bookinfo/reviews.bookinfo.svc.cluster.local to spec.egress[].hosts of Sidecar frontend/default to import every port",
			}},
		},
		{
			name:  "duplicate hostname: the proxy's own namespace wins",
			objs:  []any{seAt("a", "team-a", 1, nil), seAt("b", "frontend", 2, nil)},
			proxy: nsProxy("frontend"), host: "shared.example.com",
			wantRef: &provenance.Ref{Kind: "ServiceEntry", Namespace: "frontend", Name: "b"}, wantPorts: []uint32{443},
			wantScope: &Scope{ImportedBy: "egress hosts", Others: []provenance.Ref{{Kind: "ServiceEntry", Namespace: "team-a", Name: "a"}}},
		},
		{
			name:  "duplicate hostname: the first visible (oldest) definition wins",
			objs:  []any{seAt("a", "team-a", 2, nil), seAt("b", "team-b", 1, nil)},
			proxy: nsProxy("frontend"), host: "shared.example.com",
			wantRef: &provenance.Ref{Kind: "ServiceEntry", Namespace: "team-b", Name: "b"}, wantPorts: []uint32{443},
			wantScope: &Scope{ImportedBy: "egress hosts", Others: []provenance.Ref{{Kind: "ServiceEntry", Namespace: "team-a", Name: "a"}}},
		},
		{
			name: "duplicate hostname: a Kubernetes Service wins over an older ServiceEntry in another namespace",
			objs: []any{withSEMeta(serviceEntry("squat", "egress", networking.ServiceEntry_DNS, reviews), func(m *metav1.ObjectMeta) { m.CreationTimestamp = at(-10) }),
				reviewsSvc},
			proxy: nsProxy("frontend"), host: reviews, wantRef: &reviewsRef, wantPorts: []uint32{9080, 9090},
			wantScope: &Scope{ImportedBy: "egress hosts", Others: []provenance.Ref{{Kind: "ServiceEntry", Namespace: "egress", Name: "squat"}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ix := Build(snapshot(tc.objs...))
			svc, diags, scope := ix.ServiceForProxy(tc.proxy, tc.host)
			if diff := cmp.Diff(tc.wantDiags, diags, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
			if tc.wantRef == nil {
				if svc != nil || scope != nil {
					t.Errorf("service = %v, scope = %v, want none", svc, scope)
				}
				return
			}
			if svc == nil {
				t.Fatal("service not in scope")
			}
			var ports []uint32
			for _, p := range svc.Ports {
				ports = append(ports, p.Number)
			}
			if svc.Ref != *tc.wantRef {
				t.Errorf("ref = %v, want %v", svc.Ref, *tc.wantRef)
			}
			if diff := cmp.Diff(tc.wantPorts, ports); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantScope, scope, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(Scope{}, "Full")); diff != "" {
				t.Errorf("scope (-want +got):\n%s", diff)
			}
			if scope.Full == nil || scope.Full.Hostname != tc.host {
				t.Errorf("scope.Full = %v", scope.Full)
			}
		})
	}
}

func seVisibilityNamespaceFor(key, value string) func(*meshConfig) {
	return func(m *meshConfig) {
		m.ServiceEntryVisibility = &meshv1alpha1.ServiceEntryVisibility{
			ApplyToSidecars: true,
			Policies: []*meshv1alpha1.ServiceEntryVisibility_Policy{{
				Visibility: meshv1alpha1.ServiceEntryVisibility_NAMESPACE,
				MatchingRules: []*meshv1alpha1.ServiceEntryVisibility_MatchRule{{
					Matcher: &meshv1alpha1.ServiceEntryVisibility_MatchRule_NamespaceSelector{
						NamespaceSelector: &meshv1alpha1.LabelSelector{MatchLabels: map[string]string{key: value}},
					},
				}},
			}},
		}
	}
}
