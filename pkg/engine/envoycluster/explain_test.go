package envoycluster

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	networking "istio.io/api/networking/v1alpha3"
	securitybeta "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	networkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/internal/explaintest"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

func meta(name, ns string, created int) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, created, 0, time.UTC))}
}

func bookinfoPod(name, app, version, ip string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "bookinfo", Labels: map[string]string{"app": app, "version": version, "security.istio.io/tlsMode": "istio"}},
		Spec:       corev1.PodSpec{ServiceAccountName: "bookinfo-" + app},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}},
	}
}

// bookinfo is reviews (9080 http, 9090 unnamed) with two versions, a productpage client, and a
// DestinationRule with a connection pool and subsets v1, v2.
func bookinfo(extra ...func(*model.Snapshot)) *model.Snapshot {
	s := &model.Snapshot{MeshConfig: DefaultMeshConfig()}
	s.Namespaces = []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "bookinfo"}}, {ObjectMeta: metav1.ObjectMeta{Name: "istio-system"}}}
	s.Services = []*corev1.Service{{ObjectMeta: meta("reviews", "bookinfo", 0), Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "reviews"}, ClusterIP: "10.0.0.10",
		Ports: []corev1.ServicePort{
			{Name: "http", Port: 9080, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(9080)},
			{Port: 9090, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(9090)},
		}}}}
	s.Pods = []*corev1.Pod{
		bookinfoPod("productpage-v1", "productpage", "v1", "10.1.0.1"),
		bookinfoPod("reviews-v1", "reviews", "v1", "10.1.0.2"),
		bookinfoPod("reviews-v2", "reviews", "v2", "10.1.0.3"),
	}
	s.DestinationRules = []*networkingv1.DestinationRule{{ObjectMeta: meta("reviews", "bookinfo", 1), Spec: networking.DestinationRule{
		Host: "reviews.bookinfo.svc.cluster.local",
		TrafficPolicy: &networking.TrafficPolicy{ConnectionPool: &networking.ConnectionPoolSettings{
			Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 100}}},
		Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}}, {Name: "v2", Labels: map[string]string{"version": "v2"}}},
	}}}
	for _, f := range extra {
		f(s)
	}
	s.Sort()
	return s
}

var fromProductpage = ProxyRef{Kind: ProxyPod, Namespace: "bookinfo", Name: "productpage-v1"}

func TestExplainBuildsEveryPortAndSubsetSortedByName(t *testing.T) {
	res, err := Explain(bookinfo(), Query{Host: "reviews", Namespace: "bookinfo", From: fromProductpage})
	if err != nil {
		t.Fatal(err)
	}
	explaintest.RequireEveryFieldTraced(t, res)
	var got []string
	for _, o := range res.Objects {
		got = append(got, o.Name)
		if o.Kind != ClusterKind {
			t.Errorf("%s: kind %q", o.Name, o.Kind)
		}
		if c, ok := o.Message.(*clusterv3.Cluster); !ok || c.GetName() != o.Name || len(o.Value) != 0 {
			t.Errorf("%s: message %T named %q, value %q: want the cluster, its value left to the renderers", o.Name, o.Message, c.GetName(), o.Value)
		}
		if o.Summary[0] != (explain.Summary{Name: "discovery type", Value: "EDS"}) {
			t.Errorf("%s: summary %v", o.Name, o.Summary)
		}
		if !strings.Contains(o.Summary[2].Value, "DestinationRule bookinfo/reviews") {
			t.Errorf("%s: rules applied %q", o.Name, o.Summary[2].Value)
		}
	}
	const h = "reviews.bookinfo.svc.cluster.local"
	want := []string{"outbound|9080|v1|" + h, "outbound|9080|v2|" + h, "outbound|9080||" + h, "outbound|9090|v1|" + h, "outbound|9090|v2|" + h, "outbound|9090||" + h}
	if !slices.Equal(got, want) {
		t.Fatalf("objects %v, want %v", got, want)
	}
	if res.Kind != explain.KindClusterExplanation || res.APIVersion != explain.APIVersion || res.Subject.Host != h || res.Subject.Resource == nil {
		t.Errorf("result header %+v %+v", res.Kind, res.Subject)
	}
	if res.Proxy == nil || res.Proxy.Pod != "productpage-v1" || res.Proxy.Namespace != "bookinfo" {
		t.Errorf("proxy %+v", res.Proxy)
	}
	cs := Clusters(res)
	if len(cs) != len(want) || cs[0].GetName() != want[0] {
		t.Fatalf("Clusters() = %d clusters", len(cs))
	}
	// The DestinationRule's maxConnections is traced to the rule, and auto-mTLS is on.
	c := cs[2]
	if c.GetCircuitBreakers().GetThresholds()[0].GetMaxConnections().GetValue() != 100 || len(c.GetTransportSocketMatches()) != 2 {
		t.Errorf("default cluster %v", c)
	}
	tr := res.Objects[2].Origins
	i := slices.IndexFunc(tr, func(f provenance.FieldTrace) bool { return f.Path == pCB+".maxConnections" })
	if i < 0 || tr[i].Origin.Resource == nil || tr[i].Origin.Resource.String() != "DestinationRule bookinfo/reviews" {
		t.Errorf("maxConnections origin %+v", tr)
	}
	// Diagnostics are sorted by severity, then ID: no route uses the subsets (D9).
	if !slices.ContainsFunc(res.Diagnostics, func(d explain.Diagnostic) bool { return d.ID == "D9" }) {
		t.Errorf("diagnostics %v", res.Diagnostics)
	}
	if !slices.IsSortedFunc(res.Diagnostics, func(a, b explain.Diagnostic) int {
		if a.Severity.Rank() != b.Severity.Rank() {
			return a.Severity.Rank() - b.Severity.Rank()
		}
		return diag.CompareIDs(a.ID, b.ID)
	}) {
		t.Errorf("diagnostics not sorted: %v", res.Diagnostics)
	}
}

func TestExplainNarrowsByPortAndSubset(t *testing.T) {
	res, err := Explain(bookinfo(), Query{Host: "reviews.bookinfo.svc.cluster.local", Namespace: "default", Port: 9080, Subset: "v2", From: fromProductpage})
	if err != nil {
		t.Fatal(err)
	}
	explaintest.RequireEveryFieldTraced(t, res)
	if len(res.Objects) != 1 || res.Objects[0].Name != "outbound|9080|v2|reviews.bookinfo.svc.cluster.local" {
		t.Fatalf("objects %v", res.Objects)
	}
	if res.Subject.Port != 9080 || res.Subject.Subset != "v2" {
		t.Errorf("subject %+v", res.Subject)
	}
}

func TestExplainRejectsUnknownPortsAndSubsets(t *testing.T) {
	_, err := Explain(bookinfo(), Query{Host: "reviews", Namespace: "bookinfo", Port: 8080, From: fromProductpage})
	var iq *explain.InvalidQueryError
	if !errors.As(err, &iq) || !strings.Contains(iq.Message, "9080, 9090") {
		t.Fatalf("unknown port: %v", err)
	}
	_, err = Explain(bookinfo(), Query{Host: "reviews", Namespace: "bookinfo", Subset: "v3", From: fromProductpage})
	if !errors.As(err, &iq) || !strings.Contains(iq.Message, "v1, v2") {
		t.Fatalf("unknown subset: %v", err)
	}
	_, err = Explain(bookinfo(), Query{Host: "ratings", Namespace: "bookinfo", From: fromProductpage})
	var nf *explain.NotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("unknown host: %v", err)
	}
}

func TestExplainWarnsWhenPeerAuthenticationsAreUnreadable(t *testing.T) {
	snap := bookinfo(func(s *model.Snapshot) { s.Incomplete = map[string]string{"PeerAuthentication": "forbidden"} })
	res, err := Explain(snap, Query{Host: "reviews", Namespace: "bookinfo", Port: 9080, From: fromProductpage})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 || !strings.HasPrefix(res.Warnings[0], "mTLS inference is incomplete: ") {
		t.Errorf("warnings %v", res.Warnings)
	}
}

func TestExplainUsesTheNamespacePeerAuthenticationAndReportsEnvoyFilters(t *testing.T) {
	snap := bookinfo(func(s *model.Snapshot) {
		s.PeerAuthentications = []*securityv1.PeerAuthentication{{ObjectMeta: meta("default", "bookinfo", 0),
			Spec: securitybeta.PeerAuthentication{Mtls: &securitybeta.PeerAuthentication_MutualTLS{Mode: securitybeta.PeerAuthentication_MutualTLS_DISABLE}}}}
		s.EnvoyFilters = []*networkingv1alpha3.EnvoyFilter{{ObjectMeta: meta("tune", "istio-system", 0), Spec: networking.EnvoyFilter{
			ConfigPatches: []*networking.EnvoyFilter_EnvoyConfigObjectPatch{{ApplyTo: networking.EnvoyFilter_CLUSTER,
				Match: &networking.EnvoyFilter_EnvoyConfigObjectMatch{Context: networking.EnvoyFilter_SIDECAR_OUTBOUND},
				Patch: &networking.EnvoyFilter_Patch{Operation: networking.EnvoyFilter_Patch_MERGE}}}}}}
	})
	res, err := Explain(snap, Query{Host: "reviews", Namespace: "bookinfo", Port: 9080, From: fromProductpage})
	if err != nil {
		t.Fatal(err)
	}
	explaintest.RequireEveryFieldTraced(t, res)
	for _, c := range Clusters(res) {
		if c.GetTransportSocket() != nil || len(c.GetTransportSocketMatches()) != 0 {
			t.Errorf("%s: a DISABLE namespace gets no auto-mTLS", c.GetName())
		}
	}
	if !slices.ContainsFunc(res.Diagnostics, func(d explain.Diagnostic) bool { return d.ID == "D30" }) {
		t.Errorf("want D30 for the EnvoyFilter: %v", res.Diagnostics)
	}

}

// TestExplainReportsWorkloadStrictPolicies: a workload PeerAuthentication STRICT for
// reviews-v1 contradicts a DestinationRule tls DISABLE, and a namespace DISABLE without client
// TLS, on the clusters that reach reviews-v1 (D19 naming the policy and the endpoints of the
// cluster it makes STRICT): not on subset v2's, and on no cluster of a port the policy leaves
// PERMISSIVE. A PERMISSIVE namespace with auto-mTLS contradicts nothing.
func TestExplainReportsWorkloadStrictPolicies(t *testing.T) {
	pa := func(mode securitybeta.PeerAuthentication_MutualTLS_Mode, ports map[uint32]securitybeta.PeerAuthentication_MutualTLS_Mode) *securityv1.PeerAuthentication {
		p := &securityv1.PeerAuthentication{ObjectMeta: meta("strict-v1", "bookinfo", 0), Spec: securitybeta.PeerAuthentication{
			Selector: &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "reviews", "version": "v1"}},
			Mtls:     &securitybeta.PeerAuthentication_MutualTLS{Mode: mode}}}
		for port, m := range ports {
			if p.Spec.PortLevelMtls == nil {
				p.Spec.PortLevelMtls = map[uint32]*securitybeta.PeerAuthentication_MutualTLS{}
			}
			p.Spec.PortLevelMtls[port] = &securitybeta.PeerAuthentication_MutualTLS{Mode: m}
		}
		return p
	}
	strictV1 := pa(securitybeta.PeerAuthentication_MutualTLS_STRICT, nil)
	strict9090 := pa(securitybeta.PeerAuthentication_MutualTLS_PERMISSIVE, map[uint32]securitybeta.PeerAuthentication_MutualTLS_Mode{9090: securitybeta.PeerAuthentication_MutualTLS_STRICT})
	nsDisable := &securityv1.PeerAuthentication{ObjectMeta: meta("default", "bookinfo", 0), Spec: securitybeta.PeerAuthentication{
		Mtls: &securitybeta.PeerAuthentication_MutualTLS{Mode: securitybeta.PeerAuthentication_MutualTLS_DISABLE}}}
	drDisable := func(s *model.Snapshot) {
		s.DestinationRules[0].Spec.TrafficPolicy.Tls = &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_DISABLE}
	}
	policies := func(ps ...*securityv1.PeerAuthentication) func(*model.Snapshot) {
		return func(s *model.Snapshot) { s.PeerAuthentications = ps }
	}
	const host = "reviews.bookinfo.svc.cluster.local"
	for _, tc := range []struct {
		name string
		snap *model.Snapshot
		// want is the start of the D19 message for each cluster that gets one.
		want map[string]string
	}{
		{"tls DISABLE", bookinfo(drDisable, policies(strictV1)), map[string]string{
			"outbound|9080||" + host:   "DestinationRule bookinfo/reviews trafficPolicy sets tls.mode DISABLE, but PeerAuthentication bookinfo/strict-v1 requires mTLS (STRICT) for 1 endpoint(s) of " + host,
			"outbound|9080|v1|" + host: "DestinationRule bookinfo/reviews trafficPolicy sets tls.mode DISABLE, but PeerAuthentication bookinfo/strict-v1 requires mTLS (STRICT) for 1 endpoint(s) of " + host,
			"outbound|9090||" + host:   "DestinationRule bookinfo/reviews trafficPolicy sets tls.mode DISABLE, but PeerAuthentication bookinfo/strict-v1 requires mTLS (STRICT) for 1 endpoint(s) of " + host,
			"outbound|9090|v1|" + host: "DestinationRule bookinfo/reviews trafficPolicy sets tls.mode DISABLE, but PeerAuthentication bookinfo/strict-v1 requires mTLS (STRICT) for 1 endpoint(s) of " + host,
		}},
		{"tls DISABLE, STRICT on 9090 only", bookinfo(drDisable, policies(strict9090)), map[string]string{
			"outbound|9090||" + host:   "DestinationRule bookinfo/reviews trafficPolicy sets tls.mode DISABLE, but PeerAuthentication bookinfo/strict-v1 requires mTLS (STRICT) for 1 endpoint(s) of " + host,
			"outbound|9090|v1|" + host: "DestinationRule bookinfo/reviews trafficPolicy sets tls.mode DISABLE, but PeerAuthentication bookinfo/strict-v1 requires mTLS (STRICT) for 1 endpoint(s) of " + host,
		}},
		{"namespace DISABLE", bookinfo(policies(nsDisable, strictV1)), map[string]string{
			"outbound|9080||" + host:   "the namespace mTLS mode of bookinfo is DISABLE, so cluster outbound|9080||" + host + " has no auto-mTLS, but PeerAuthentication bookinfo/strict-v1 requires mTLS (STRICT) for 1 endpoint(s)",
			"outbound|9080|v1|" + host: "the namespace mTLS mode of bookinfo is DISABLE, so cluster outbound|9080|v1|" + host + " has no auto-mTLS, but PeerAuthentication bookinfo/strict-v1 requires mTLS (STRICT) for 1 endpoint(s)",
			"outbound|9090||" + host:   "the namespace mTLS mode of bookinfo is DISABLE, so cluster outbound|9090||" + host + " has no auto-mTLS, but PeerAuthentication bookinfo/strict-v1 requires mTLS (STRICT) for 1 endpoint(s)",
			"outbound|9090|v1|" + host: "the namespace mTLS mode of bookinfo is DISABLE, so cluster outbound|9090|v1|" + host + " has no auto-mTLS, but PeerAuthentication bookinfo/strict-v1 requires mTLS (STRICT) for 1 endpoint(s)",
		}},
		{"PERMISSIVE namespace", bookinfo(policies(strictV1)), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Explain(tc.snap, Query{Host: "reviews", Namespace: "bookinfo", From: fromProductpage})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Objects) != 6 {
				t.Fatalf("%d clusters, want 6 (two ports, default and two subsets)", len(res.Objects))
			}
			got := map[string]string{}
			for _, d := range res.Diagnostics {
				if d.ID != "D19" || !slices.Contains(d.Resources, provenance.Ref{Kind: "PeerAuthentication", Namespace: "bookinfo", Name: "strict-v1"}) {
					continue
				}
				for _, o := range res.Objects {
					if strings.Contains(d.Message, "cluster "+o.Name+" ") || strings.HasSuffix(d.Message, "cluster "+o.Name) {
						got[o.Name] = d.Message
					}
				}
			}
			for name, prefix := range tc.want {
				if !strings.HasPrefix(got[name], prefix) {
					t.Errorf("%s: D19 %q, want one starting %q", name, got[name], prefix)
				}
			}
			for name, msg := range got {
				if _, ok := tc.want[name]; !ok {
					t.Errorf("%s: unexpected D19 %q", name, msg)
				}
			}
		})
	}
}
