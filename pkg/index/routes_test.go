package index

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	networking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

func vsref(ns, name string) provenance.Ref {
	return provenance.Ref{Kind: "VirtualService", Namespace: ns, Name: name}
}

func TestSubsetReferences(t *testing.T) {
	const host = "reviews.bookinfo.svc.cluster.local"
	svc := kubeSvc("reviews", "bookinfo", "http:9080")
	cases := []struct {
		name  string
		objs  []any
		proxy *Proxy
		want  []SubsetRef
	}{
		{
			name:  "short destination host is resolved in the VirtualService's namespace",
			objs:  []any{vs("reviews", "bookinfo", []string{"reviews"}, httpRoute("reviews", "v1", 0))},
			proxy: nsProxy("frontend"),
			want:  []SubsetRef{{VirtualService: vsref("bookinfo", "reviews"), Field: "spec.http[0].route[0].destination", Subset: "v1"}},
		},
		{
			name:  "short destination host in another namespace names another service",
			objs:  []any{vs("reviews", "frontend", []string{"reviews.bookinfo.svc.cluster.local"}, httpRoute("reviews", "v1", 0))},
			proxy: nsProxy("frontend"),
		},
		{
			name:  "http, tcp and tls routes, mirrors and ports",
			objs:  []any{vs("reviews", "bookinfo", []string{"reviews"}, httpRoute(host, "v1", 9080), tcpRoute(host, "v2"), withTLSAndMirror(host))},
			proxy: nsProxy("frontend"),
			want: []SubsetRef{
				{VirtualService: vsref("bookinfo", "reviews"), Field: "spec.http[0].route[0].destination", Subset: "v1", Port: 9080},
				{VirtualService: vsref("bookinfo", "reviews"), Field: "spec.http[1].mirror", Subset: "mirror"},
				{VirtualService: vsref("bookinfo", "reviews"), Field: "spec.http[1].mirrors[1].destination", Subset: "mirrors"},
				{VirtualService: vsref("bookinfo", "reviews"), Field: "spec.tcp[0].route[0].destination", Subset: "v2"},
				{VirtualService: vsref("bookinfo", "reviews"), Field: "spec.tls[0].route[0].destination", Subset: "v3"},
			},
		},
		{
			name:  "VirtualService exported to its own namespace only is not visible elsewhere",
			objs:  []any{vs("reviews", "bookinfo", []string{"reviews"}, httpRoute(host, "v1", 0), vsExportTo("."))},
			proxy: nsProxy("frontend"),
		},
		{
			name:  "MeshConfig defaultVirtualServiceExportTo . applies to VirtualServices without exportTo",
			objs:  []any{withMesh(func(m *meshConfig) { m.DefaultVirtualServiceExportTo = []string{"."} }), vs("reviews", "bookinfo", []string{"reviews"}, httpRoute(host, "v1", 0))},
			proxy: nsProxy("frontend"),
		},
		{
			name:  "VirtualService bound only to a gateway does not route sidecar traffic",
			objs:  []any{vs("reviews", "bookinfo", []string{"reviews"}, httpRoute(host, "v1", 0), onGateway("istio-system/ingress"))},
			proxy: nsProxy("frontend"),
		},
		{
			name:  "HTTP route matching another source namespace does not apply",
			objs:  []any{vs("reviews", "bookinfo", []string{"reviews"}, httpRoute(host, "v1", 0), fromNamespace("payments"))},
			proxy: nsProxy("frontend"),
		},
		{
			name:  "VirtualService not imported by the Sidecar egress hosts",
			objs:  []any{vs("reviews", "bookinfo", []string{"reviews"}, httpRoute(host, "v1", 0)), sidecar("default", "frontend", nil, egress(0, "./*"))},
			proxy: nsProxy("frontend"),
		},
		{
			name: "delegate VirtualService routes count through their root",
			objs: []any{
				vs("root", "bookinfo", []string{"reviews"}, delegateTo("reviews-delegate", "team")),
				vs("reviews-delegate", "team", nil, httpRoute(host, "v2", 0)),
			},
			proxy: nsProxy("frontend"),
			want:  []SubsetRef{{VirtualService: vsref("team", "reviews-delegate"), Field: "spec.http[0].route[0].destination", Subset: "v2"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ix := Build(snapshot(append([]any{svc}, tc.objs...)...))
			if diff := cmp.Diff(tc.want, ix.SubsetReferences(tc.proxy, host), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRouteDiagnostics(t *testing.T) {
	const host = "reviews.bookinfo.svc.cluster.local"
	svc := kubeSvc("reviews", "bookinfo", "http:9080")
	cases := []struct {
		name string
		objs []any
		want []explain.Diagnostic
	}{
		{
			name: "D9 subset no route uses",
			objs: []any{
				dr("reviews", "bookinfo", host, subsets("v1", "v2")),
				vs("reviews", "bookinfo", []string{"reviews"}, httpRoute(host, "v1", 0)),
			},
			want: []explain.Diagnostic{{
				ID: "D9", Severity: explain.SeverityWarning, Resources: []provenance.Ref{drref("bookinfo", "reviews")},
				Message: "subset \"v2\" of DestinationRule bookinfo/reviews is not the destination of any route this proxy has: its clusters exist but receive no traffic, so its policy never applies",
				Fix:     "route to subset \"v2\" from a VirtualService for reviews.bookinfo.svc.cluster.local exported to the client's namespace, or remove spec.subsets[name=v2]",
			}},
		},
		{
			name: "D10 route to a subset the selected rule lacks, defined by a rule the proxy does not use",
			objs: []any{
				dr("local", "frontend", host, subsets("v1")),
				dr("reviews", "bookinfo", host, subsets("v1", "v3")),
				vs("reviews", "bookinfo", []string{"reviews"}, httpRoute(host, "v1", 9080), httpRoute(host, "v3", 9080)),
			},
			want: []explain.Diagnostic{{
				ID: "D10", Severity: explain.SeverityError, Resources: []provenance.Ref{vsref("bookinfo", "reviews"), drref("frontend", "local"), drref("bookinfo", "reviews")},
				Message: "VirtualService bookinfo/reviews spec.http[1].route[0].destination routes to subset \"v3\" of reviews.bookinfo.svc.cluster.local, but DestinationRule frontend/local (the rule this proxy uses) does not define it: cluster outbound|9080|v3|reviews.bookinfo.svc.cluster.local does not exist and requests fail with 503 NC (DestinationRule bookinfo/reviews defines it but is not the rule this proxy uses)",
				Fix:     "add subset \"v3\" to DestinationRule frontend/local, or route to a subset it defines",
			}},
		},
		{
			name: "D10 route to a subset when no rule applies",
			objs: []any{vs("reviews", "bookinfo", []string{"reviews"}, httpRoute(host, "v1", 0))},
			want: []explain.Diagnostic{{
				ID: "D10", Severity: explain.SeverityError, Resources: []provenance.Ref{vsref("bookinfo", "reviews")},
				Message: "VirtualService bookinfo/reviews spec.http[0].route[0].destination routes to subset \"v1\" of reviews.bookinfo.svc.cluster.local, but no DestinationRule applies to this proxy for the host: cluster outbound|<port>|v1|reviews.bookinfo.svc.cluster.local does not exist and requests fail with 503 NC",
				Fix:     "define subset \"v1\" in a DestinationRule for reviews.bookinfo.svc.cluster.local that this proxy uses",
			}},
		},
		{
			name: "every subset routed: nothing to say",
			objs: []any{
				dr("reviews", "bookinfo", host, subsets("v1")),
				vs("reviews", "bookinfo", []string{"reviews"}, httpRoute(host, "v1", 0)),
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ix := Build(snapshot(append([]any{svc}, tc.objs...)...))
			p := nsProxy("frontend")
			s := svcFor(host, "bookinfo")
			got := ix.RouteDiagnostics(p, s, ix.DestinationRule(p, s))
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func withTLSAndMirror(host string) vsOpt {
	return func(v *networkingv1.VirtualService) {
		v.Spec.Http = append(v.Spec.Http, &networking.HTTPRoute{Mirror: &networking.Destination{Host: host, Subset: "mirror"},
			Mirrors: []*networking.HTTPMirrorPolicy{{}, {Destination: &networking.Destination{Host: host, Subset: "mirrors"}}}})
		v.Spec.Tls = append(v.Spec.Tls, &networking.TLSRoute{Route: []*networking.RouteDestination{{Destination: &networking.Destination{Host: host, Subset: "v3"}}}})
	}
}

func onGateway(gw string) vsOpt {
	return func(v *networkingv1.VirtualService) { v.Spec.Gateways = []string{gw} }
}

func fromNamespace(ns string) vsOpt {
	return func(v *networkingv1.VirtualService) {
		for _, h := range v.Spec.Http {
			h.Match = append(h.Match, &networking.HTTPMatchRequest{SourceNamespace: ns})
		}
	}
}

func delegateTo(name, ns string) vsOpt {
	return func(v *networkingv1.VirtualService) {
		v.Spec.Http = append(v.Spec.Http, &networking.HTTPRoute{Delegate: &networking.Delegate{Name: name, Namespace: ns}})
	}
}

func TestVirtualServiceFilter(t *testing.T) {
	for _, tc := range []struct {
		host, listed string
		want         bool
	}{
		{"reviews.bookinfo.svc.cluster.local", `{"spec":{"http":[{"route":[{"destination":{"host":"reviews"}}]}]}}`, true},
		{"reviews", `{"spec":{"http":[{"route":[{"destination":{"host":"REVIEWS.bookinfo"}}]}]}}`, false},
		{"Reviews.Bookinfo.", `{"spec":{"tcp":[{"route":[{"destination":{"host":"reviews.bookinfo.svc.cluster.local"}}]}]}}`, true},
		{"reviews", `{"spec":{"http":[{"route":[{"destination":{"host":"ratings"}}]}]}}`, false},
		{"a.example.com", `{"spec":{"http":[{"route":[{"destination":{"host":"*.example.com"}}]}]}}`, true},
		{"reviews", `{"spec":{"hosts":["x"],"http":[{"delegate":{"name":"d"}}]}}`, true},
		{"", `{}`, true},
		{"reviews.bookinfo.svc.cluster.local", `{"spec":{"exportTo":["*"],"hosts":["*.x.svc.cluster.local"],"http":[{"route":[{"destination":{"host":"ratings"}}]}]}}`, false},
		{"reviews.bookinfo.svc.cluster.local", `{"spec":{"http":[{"route":[{"destination":{"host":"*.bookinfo.svc.cluster.local"}}]}]}}`, true},
		{"reviews.bookinfo.svc.cluster.local", `{"spec":{"http":[{"route":[{"destination":{"host":"*.Bookinfo.svc.cluster.local"}}]}]}}`, false},
		{"reviews.bookinfo.svc.cluster.local", `{"spec":{"http":[{"route":[{"destination":{"host":"*.local"}}]}]}}`, true},
		{"zz.example.com", `{"spec":{"exportTo":["*"],"http":[{"route":[{"destination":{"host" :` + "\n" + ` "*"}}]}]}}`, true},
		{"zz.example.com", `{"spec":{"http":[{"route":[{"destination":{"host":"*"}}]}]}}`, true},
		{"zz.example.com", `{"spec":{"http":[{"route":[{"destination":{"subset":"*","host":"q"}}]}],"exportTo":["*"]}}`, false},
		{"zz.example.com", `{"spec":{"exportTo":["*"],"http":[{"route":[{"destination":{"host":"*.example.org"}}]}]}}`, false},
		{"*.example.com", `{"spec":{"exportTo":["*"],"http":[{"route":[{"destination":{"host":"b"}}]}]}}`, true},
	} {
		if got := VirtualServiceFilter(tc.host)([]byte(tc.listed)); got != tc.want {
			t.Errorf("VirtualServiceFilter(%q)(%s) = %v, want %v", tc.host, tc.listed, got, tc.want)
		}
	}
}
