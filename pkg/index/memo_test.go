package index

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	securitybeta "istio.io/api/security/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/meshhost"
)

// memoMesh has services in two namespaces, a Sidecar that only selects app=narrow, routes with
// subsets, and DestinationRules on exact, wildcard and unmatched hosts.
func memoMesh() []any {
	return []any{
		kubeSvc("reviews", "bookinfo", "http:9080", "grpc:9090"),
		kubeSvc("ratings", "bookinfo", "http:9080"),
		kubeSvc("reviews", "frontend", "http:9080"),
		serviceEntry("ext", "frontend", 1, "api.example.com"),
		sidecar("narrow", "frontend", map[string]string{"app": "narrow"}, egress(9080, "bookinfo/*")),
		vs("reviews", "bookinfo", []string{"reviews"}, httpRoute("reviews", "v1", 9080), tcpRoute("ratings.bookinfo.svc.cluster.local", "v9")),
		dr("reviews", "bookinfo", "reviews", subsets("v1", "v2")),
		dr("ratings", "bookinfo", "ratings.bookinfo", subsets("v1")),
		dr("wild", "istio-system", "*.bookinfo.svc.cluster.local", subsets("v9")),
		dr("ext", "frontend", "*.example.com"),
		dr("typo", "bookinfo", "reveiws.bookinfo.svc.cluster.local"),
	}
}

// TestScopeMemoizedEqualsFresh asks a shared index, whose sidecar scopes are built once per
// proxy namespace and labels, the questions a fresh index answers, for proxies that share a
// scope and proxies that do not, in an order that reuses every scope.
func TestScopeMemoizedEqualsFresh(t *testing.T) {
	objs := memoMesh()
	shared := Build(snapshot(objs...))
	proxies := []*Proxy{
		nsProxy("frontend"),
		labelledProxy("frontend", map[string]string{"app": "narrow"}),
		labelledProxy("frontend", map[string]string{"app": "other"}),
		nsProxy("bookinfo"),
		labelledProxy("frontend", map[string]string{"app": "narrow"}),
		nsProxy("frontend"),
	}
	var hosts []string
	for _, s := range shared.Services() {
		hosts = append(hosts, s.Hostname)
	}
	hosts = append(hosts, "missing.bookinfo.svc.cluster.local")
	for round := 0; round < 2; round++ {
		for _, p := range proxies {
			for _, h := range hosts {
				fresh := Build(snapshot(objs...))
				wantSvc, wantDiags, wantScope := fresh.ServiceForProxy(p, h)
				gotSvc, gotDiags, gotScope := shared.ServiceForProxy(p, h)
				if d := cmp.Diff(wantSvc, gotSvc); d != "" {
					t.Errorf("%s %s: service (-fresh +memoized):\n%s", p.Description, h, d)
				}
				if d := cmp.Diff(wantDiags, gotDiags); d != "" {
					t.Errorf("%s %s: scope diagnostics (-fresh +memoized):\n%s", p.Description, h, d)
				}
				if d := cmp.Diff(wantScope, gotScope); d != "" {
					t.Errorf("%s %s: scope (-fresh +memoized):\n%s", p.Description, h, d)
				}
				if d := cmp.Diff(fresh.SubsetReferences(p, h), shared.SubsetReferences(p, h)); d != "" {
					t.Errorf("%s %s: subset references (-fresh +memoized):\n%s", p.Description, h, d)
				}
				if wantSvc == nil {
					continue
				}
				wantSel, gotSel := fresh.DestinationRule(p, wantSvc), shared.DestinationRule(p, gotSvc)
				if d := cmp.Diff(wantSel.Diagnostics, gotSel.Diagnostics); d != "" {
					t.Errorf("%s %s: selection diagnostics (-fresh +memoized):\n%s", p.Description, h, d)
				}
				if d := cmp.Diff(fresh.HostDiagnostics(p, wantSvc, wantSel), shared.HostDiagnostics(p, gotSvc, gotSel)); d != "" {
					t.Errorf("%s %s: host diagnostics (-fresh +memoized):\n%s", p.Description, h, d)
				}
				if d := cmp.Diff(fresh.RouteDiagnostics(p, wantSvc, wantSel), shared.RouteDiagnostics(p, gotSvc, gotSel)); d != "" {
					t.Errorf("%s %s: route diagnostics (-fresh +memoized):\n%s", p.Description, h, d)
				}
			}
		}
	}
	if shared.scopeFor(proxies[1]) != shared.scopeFor(proxies[4]) {
		t.Error("two proxies with the same namespace and labels got different scopes")
	}
	if shared.scopeFor(proxies[1]) == shared.scopeFor(proxies[2]) {
		t.Error("proxies with different labels share a scope")
	}
	// The narrow Sidecar imports only port 9080 of bookinfo services.
	if svc, _, _ := shared.ServiceForProxy(proxies[1], "reviews.bookinfo.svc.cluster.local"); svc == nil || len(svc.Ports) != 1 {
		t.Errorf("narrow proxy: service %+v, want reviews with port 9080 only", svc)
	}
}

// TestRuleIndexesMatchScan compares the DestinationRules indexed by host with a scan of every
// rule, as the diagnostics did before the indexes.
func TestRuleIndexesMatchScan(t *testing.T) {
	ix := Build(snapshot(memoMesh()...))
	hosts := []string{"reviews.bookinfo.svc.cluster.local", "ratings.bookinfo.svc.cluster.local", "ratings.bookinfo",
		"api.example.com", "*.example.com", "*.bookinfo.svc.cluster.local", "nothing.local", ""}
	name := func(d *drInfo) string { return d.ref.String() }
	for _, h := range hosts {
		var want []string
		for _, d := range ix.drs {
			if meshhost.Name(h).SubsetOf(meshhost.Name(d.host)) {
				want = append(want, name(d))
			}
		}
		var got []string
		for _, d := range ix.drsCovering(h) {
			got = append(got, name(d))
		}
		if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("rules covering %q (-scan +index):\n%s", h, d)
		}
	}
	var want, got []string
	for _, d := range ix.drs {
		if !ix.hostHasService(d.host) {
			want = append(want, name(d))
		}
	}
	for _, d := range ix.unmatchedDRs() {
		got = append(got, name(d))
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("unmatched rules (-scan +index):\n%s", d)
	}
	if !slices.Contains(got, "DestinationRule bookinfo/typo") || !slices.Contains(got, "DestinationRule bookinfo/ratings") {
		t.Errorf("unmatched rules %v, want the typo and ratings.bookinfo rules among them", got)
	}
}

// TestWorkloadPolicyMatchesScan compares the PeerAuthentications indexed by selector label
// with a scan of every workload policy, oldest first.
func TestWorkloadPolicyMatchesScan(t *testing.T) {
	strict := securitybeta.PeerAuthentication_MutualTLS_STRICT
	pas := []*securityv1.PeerAuthentication{
		peerAuthn("young-app", "bookinfo", strict, map[string]string{"app": "reviews"}, 30),
		peerAuthn("old-version", "bookinfo", strict, map[string]string{"version": "v1"}, 10),
		peerAuthn("both", "bookinfo", strict, map[string]string{"app": "reviews", "version": "v2"}, 5),
		peerAuthn("other-ns", "frontend", strict, map[string]string{"app": "reviews"}, 1),
		peerAuthn("root", "istio-system", strict, map[string]string{"app": "reviews"}, 0),
		peerAuthn("ns-level", "bookinfo", strict, nil, 0),
	}
	var objs []any
	for _, pa := range pas {
		objs = append(objs, pa)
	}
	ix := Build(snapshot(objs...))
	scan := func(ns string, lbls map[string]string) string {
		sorted := slices.Clone(pas)
		slices.SortStableFunc(sorted, func(a, b *securityv1.PeerAuthentication) int {
			return a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time)
		})
		for _, pa := range sorted {
			sel := pa.Spec.GetSelector().GetMatchLabels()
			if len(sel) == 0 || pa.Namespace != ns || pa.Namespace == ix.root {
				continue
			}
			if meshhost.LabelsSubsetOf(sel, lbls) {
				return pa.Name
			}
		}
		return ""
	}
	for _, ns := range []string{"bookinfo", "frontend", "istio-system", "empty"} {
		for _, lbls := range []map[string]string{
			{"app": "reviews"}, {"app": "reviews", "version": "v1"}, {"app": "reviews", "version": "v2"},
			{"version": "v1"}, {"app": "ratings"}, nil,
		} {
			got := ""
			if pa := ix.workloadPolicy(ns, lbls); pa != nil {
				got = pa.Name
			}
			if want := scan(ns, lbls); got != want {
				t.Errorf("workloadPolicy(%s, %v) = %q, want %q", ns, lbls, got, want)
			}
		}
	}
}
