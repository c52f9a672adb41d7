package index

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

func TestHostDiagnostics(t *testing.T) {
	const host = "reviews.bookinfo.svc.cluster.local"
	svc := kubeSvc("reviews", "bookinfo", "http:9080")
	v1 := pod("reviews-v1", "bookinfo", "10.1.0.1", map[string]string{"app": "reviews", "version": "v1"})
	legacy := withSvc(kubeSvc("legacy", "bookinfo", "http:80"), func(s *corev1.Service) {
		s.Spec.Type, s.Spec.ExternalName, s.Spec.ClusterIP, s.Spec.Selector = corev1.ServiceTypeExternalName, host, "", nil
	})
	apiNone := withSE(serviceEntry("api", "ext", networking.ServiceEntry_DNS, "api.example.com"), func(s *networking.ServiceEntry) {
		s.WorkloadSelector = &networking.WorkloadSelector{Labels: map[string]string{"app": "none"}}
	})
	cases := []struct {
		name  string
		objs  []any
		host  string
		proxy *Proxy
		want  []explain.Diagnostic
	}{
		{
			name: "D1 hosts with a dot are taken literally, short names resolve in the rule's namespace",
			objs: []any{svc,
				dr("a", "bookinfo", "reviews.bookinfo"), dr("b", "bookinfo", "reviews.bookinfo.svc"),
				dr("c", "istio-system", "reviews"), dr("d", "bookinfo", "reveiws.bookinfo.svc.cluster.local"),
				dr("ok", "bookinfo", "reviews"), dr("unrelated", "bookinfo", "payments.example.com"),
			},
			host: host, proxy: nsProxy("bookinfo"),
			want: []explain.Diagnostic{
				{
					ID: "D1", Severity: explain.SeverityError, Resources: []provenance.Ref{drref("bookinfo", "a")},
					Message: "DestinationRule bookinfo/a host \"reviews.bookinfo\" matches no service: a host with a dot is taken literally (only a name without dots is expanded to <name>.<namespace>.svc.cluster.local), so it does not apply to reviews.bookinfo.svc.cluster.local",
					Fix:     "set spec.host of DestinationRule bookinfo/a to reviews.bookinfo.svc.cluster.local",
				},
				{
					ID: "D1", Severity: explain.SeverityError, Resources: []provenance.Ref{drref("bookinfo", "b")},
					Message: "DestinationRule bookinfo/b host \"reviews.bookinfo.svc\" matches no service: a host with a dot is taken literally (only a name without dots is expanded to <name>.<namespace>.svc.cluster.local), so it does not apply to reviews.bookinfo.svc.cluster.local",
					Fix:     "set spec.host of DestinationRule bookinfo/b to reviews.bookinfo.svc.cluster.local",
				},
				{
					ID: "D1", Severity: explain.SeverityError, Resources: []provenance.Ref{drref("bookinfo", "d")},
					Message: "DestinationRule bookinfo/d host \"reveiws.bookinfo.svc.cluster.local\" matches no service: it differs from the service's host by a few characters, so it does not apply to reviews.bookinfo.svc.cluster.local",
					Fix:     "set spec.host of DestinationRule bookinfo/d to reviews.bookinfo.svc.cluster.local",
				},
				{
					ID: "D1", Severity: explain.SeverityError, Resources: []provenance.Ref{drref("istio-system", "c")},
					Message: "DestinationRule istio-system/c host \"reviews\" matches no service: a short name is expanded in the rule's own namespace, to reviews.istio-system.svc.cluster.local, so it does not apply to reviews.bookinfo.svc.cluster.local",
					Fix:     "set spec.host of DestinationRule istio-system/c to reviews.bookinfo.svc.cluster.local",
				},
			},
		},
		{
			name: "D17 subset labels that select no endpoint of an EDS service",
			objs: []any{svc, v1, dr("r", "bookinfo", host, subsetLabels("v1", map[string]string{"version": "v1"}), subsetLabels("v2", map[string]string{"version": "v2"}))},
			host: host, proxy: nsProxy("bookinfo"),
			want: []explain.Diagnostic{{
				ID: "D17", Severity: explain.SeverityError, Resources: []provenance.Ref{drref("bookinfo", "r")},
				Message: "subset \"v2\" of DestinationRule bookinfo/r (labels version=v2) selects no endpoint of reviews.bookinfo.svc.cluster.local: its clusters have no endpoints and requests routed to it fail with 503 UH",
				Fix:     "change the labels of subset \"v2\" in DestinationRule bookinfo/r to labels the endpoints of reviews.bookinfo.svc.cluster.local have",
			}},
		},
		{
			name: "D17 subset labels on a DNS ServiceEntry whose endpoints have no labels",
			objs: []any{serviceEntry("api2", "ext", networking.ServiceEntry_DNS, "api2.example.com"), dr("api2", "ext", "api2.example.com", subsetLabels("v1", map[string]string{"version": "v1"}))},
			host: "api2.example.com", proxy: nsProxy("ext"),
			want: []explain.Diagnostic{{
				ID: "D17", Severity: explain.SeverityError, Resources: []provenance.Ref{drref("ext", "api2")},
				Message: "subset \"v1\" of DestinationRule ext/api2 (labels version=v1) selects no endpoint of api2.example.com: istiod does not generate its clusters at all (a DNS subset cluster is filtered by the subset labels); the endpoints of a DNS ServiceEntry without endpoints or workloadSelector have no labels",
				Fix:     "change the labels of subset \"v1\" in DestinationRule ext/api2 to labels the endpoints of api2.example.com have",
			}},
		},
		{
			name: "D17 is not guessed for a Service without selector",
			objs: []any{withSvc(kubeSvc("reviews", "bookinfo", "http:9080"), func(s *corev1.Service) { s.Spec.Selector = nil }),
				dr("r", "bookinfo", host, subsetLabels("v2", map[string]string{"version": "v2"}))},
			host: host, proxy: nsProxy("bookinfo"),
		},
		{
			name: "D18 DNS ServiceEntry whose workloadSelector selects nothing",
			objs: []any{apiNone},
			host: "api.example.com", proxy: nsProxy("ext"),
			want: []explain.Diagnostic{{
				ID: "D18", Severity: explain.SeverityError, Resources: []provenance.Ref{{Kind: "ServiceEntry", Namespace: "ext", Name: "api"}},
				Message: "ServiceEntry ext/api is resolved by DNS and its workloadSelector (app=none) selects no pod or WorkloadEntry in namespace ext: istiod drops cluster outbound|443||api.example.com (a DNS cluster without endpoints is not sent)",
				Fix:     "change spec.workloadSelector of ServiceEntry ext/api to labels of existing workloads, or remove it so the host itself is resolved",
			}},
		},
		{
			name: "D28 DestinationRule on an ExternalName alias",
			objs: []any{svc, legacy, dr("legacy", "bookinfo", "legacy")},
			host: "legacy.bookinfo.svc.cluster.local", proxy: nsProxy("bookinfo"),
			want: []explain.Diagnostic{{
				ID: "D28", Severity: explain.SeverityWarning, Resources: []provenance.Ref{drref("bookinfo", "legacy"), {Kind: "Service", Namespace: "bookinfo", Name: "legacy"}},
				Message: "DestinationRule bookinfo/legacy is for legacy.bookinfo.svc.cluster.local, an ExternalName alias of reviews.bookinfo.svc.cluster.local: istiod builds no cluster for an alias, so the rule has no effect; traffic uses the clusters and DestinationRule of reviews.bookinfo.svc.cluster.local",
				Fix:     "set spec.host of DestinationRule bookinfo/legacy to reviews.bookinfo.svc.cluster.local",
			}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ix := Build(snapshot(tc.objs...))
			svcs, err := ix.ResolveHost(tc.host, "")
			if err != nil {
				t.Fatal(err)
			}
			got := ix.HostDiagnostics(tc.proxy, svcs[0], ix.DestinationRule(tc.proxy, svcs[0]))
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnmatchedDestinationRules(t *testing.T) {
	ix := Build(snapshot(kubeSvc("reviews", "bookinfo", "http:9080"),
		dr("c", "istio-system", "reviews"), dr("ok", "bookinfo", "reviews"), dr("wild", "bookinfo", "*.svc.cluster.local"), dr("none", "bookinfo", "*.example.com")))
	want := []explain.Diagnostic{
		{
			ID: "D1", Severity: explain.SeverityError, Resources: []provenance.Ref{drref("bookinfo", "none")},
			Message: "DestinationRule bookinfo/none host \"*.example.com\" matches no service",
			Fix:     "set spec.host of DestinationRule bookinfo/none to the full hostname of an existing Service or ServiceEntry",
		},
		{
			ID: "D1", Severity: explain.SeverityError, Resources: []provenance.Ref{drref("istio-system", "c")},
			Message: "DestinationRule istio-system/c host \"reviews\" matches no service (a short name is expanded in the rule's own namespace, to reviews.istio-system.svc.cluster.local)",
			Fix:     "set spec.host of DestinationRule istio-system/c to the full hostname of an existing Service or ServiceEntry (did you mean reviews.bookinfo.svc.cluster.local?)",
		},
	}
	if diff := cmp.Diff(want, ix.UnmatchedDestinationRules()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
