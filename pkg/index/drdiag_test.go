package index

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

func refs(rs ...provenance.Ref) []provenance.Ref { return rs }

func TestSelectionDiagnostics(t *testing.T) {
	const host = "reviews.bookinfo.svc.cluster.local"
	web := labelledProxy("frontend", map[string]string{"app": "web"})
	cases := []struct {
		name     string
		objs     []any
		proxy    *Proxy
		wantRule []provenance.Ref
		want     []explain.Diagnostic
	}{
		{
			name:     "D2 rule outside the client, service and root namespaces is never consulted",
			objs:     []any{dr("elsewhere", "payments", host, subsets("v1")), dr("reviews", "bookinfo", host)},
			proxy:    web,
			wantRule: refs(drref("bookinfo", "reviews")),
			want: []explain.Diagnostic{{
				ID: "D2", Severity: explain.SeverityError, Resources: refs(drref("payments", "elsewhere")),
				Message: "DestinationRule payments/elsewhere (host reviews.bookinfo.svc.cluster.local) is never consulted for proxies outside namespace payments, this one included: istiod looks for DestinationRules of reviews.bookinfo.svc.cluster.local only in the proxy's own namespace, the service namespace bookinfo and the root namespace istio-system",
				Fix:     "move DestinationRule payments/elsewhere to namespace bookinfo (with exportTo including the namespaces of its clients) or to istio-system",
			}},
		},
		{
			name:  "D3 client namespace rule whose exportTo leaves out its own namespace",
			objs:  []any{dr("reviews", "frontend", host, exportTo("bookinfo"))},
			proxy: web,
			want: []explain.Diagnostic{{
				ID: "D3", Severity: explain.SeverityError, Resources: refs(drref("frontend", "reviews")),
				Message: "DestinationRule frontend/reviews exports only to bookinfo, which does not include its own namespace (. or frontend), so it does not apply to proxies in frontend",
				Fix:     "add . to spec.exportTo of DestinationRule frontend/reviews",
			}},
		},
		{
			name:  "D3 service namespace rule private to its namespace",
			objs:  []any{dr("reviews", "bookinfo", host, exportTo("."))},
			proxy: web,
			want: []explain.Diagnostic{{
				ID: "D3", Severity: explain.SeverityError, Resources: refs(drref("bookinfo", "reviews")),
				Message: "DestinationRule bookinfo/reviews is private to namespace bookinfo (exportTo: .), so it does not apply to proxies in frontend",
				Fix:     "add frontend to spec.exportTo of DestinationRule bookinfo/reviews",
			}},
		},
		{
			name:  "D3 service namespace rule exported to other namespaces only",
			objs:  []any{dr("reviews", "bookinfo", host, exportTo("payments"))},
			proxy: web,
			want: []explain.Diagnostic{{
				ID: "D3", Severity: explain.SeverityError, Resources: refs(drref("bookinfo", "reviews")),
				Message: "DestinationRule bookinfo/reviews is not visible from namespace frontend (exportTo: payments)",
				Fix:     "add frontend to spec.exportTo of DestinationRule bookinfo/reviews",
			}},
		},
		{
			name:  "D3 root namespace rule with exportTo . only applies to root namespace proxies",
			objs:  []any{dr("reviews", "istio-system", host, exportTo("."))},
			proxy: web,
			want: []explain.Diagnostic{{
				ID: "D3", Severity: explain.SeverityError, Resources: refs(drref("istio-system", "reviews")),
				Message: "DestinationRule istio-system/reviews is private to the root namespace istio-system (exportTo: .): such rules apply only to proxies in istio-system, not to proxies in frontend",
				Fix:     "set spec.exportTo of DestinationRule istio-system/reviews to * or add frontend to it",
			}},
		},
		{
			name:  "D3 MeshConfig defaultDestinationRuleExportTo . makes a rule without exportTo private",
			objs:  []any{withMesh(func(m *meshConfig) { m.DefaultDestinationRuleExportTo = []string{"."} }), dr("reviews", "bookinfo", host)},
			proxy: web,
			want: []explain.Diagnostic{{
				ID: "D3", Severity: explain.SeverityError, Resources: refs(drref("bookinfo", "reviews")),
				Message: "DestinationRule bookinfo/reviews is private to namespace bookinfo (no exportTo, and MeshConfig defaultDestinationRuleExportTo contains .), so it does not apply to proxies in frontend",
				Fix:     "add frontend to spec.exportTo of DestinationRule bookinfo/reviews",
			}},
		},
		{
			name: "D4 rules of later lookup steps are shadowed by the client namespace rule",
			objs: []any{
				dr("local", "frontend", host, subsets("a")),
				dr("reviews", "bookinfo", host, subsets("b")),
				dr("root", "istio-system", host),
			},
			proxy:    web,
			wantRule: refs(drref("frontend", "local")),
			want: []explain.Diagnostic{
				{
					ID: "D4", Severity: explain.SeverityError, Resources: refs(drref("bookinfo", "reviews"), drref("frontend", "local")),
					Message: "DestinationRule bookinfo/reviews (in the service namespace) is shadowed by DestinationRule frontend/local, found first in the client namespace: istiod stops at the first namespace that has a rule for reviews.bookinfo.svc.cluster.local and nothing is inherited from later ones",
					Fix:     "move the settings of DestinationRule bookinfo/reviews into DestinationRule frontend/local, or remove that rule if DestinationRule bookinfo/reviews should apply",
				},
				{
					ID: "D4", Severity: explain.SeverityError, Resources: refs(drref("istio-system", "root"), drref("frontend", "local")),
					Message: "DestinationRule istio-system/root (in the root namespace) is shadowed by DestinationRule frontend/local, found first in the client namespace: istiod stops at the first namespace that has a rule for reviews.bookinfo.svc.cluster.local and nothing is inherited from later ones",
					Fix:     "move the settings of DestinationRule istio-system/root into DestinationRule frontend/local, or remove that rule if DestinationRule istio-system/root should apply",
				},
			},
		},
		{
			name: "D4 wildcard rule in the client namespace shadows the exact rule of the service namespace",
			objs: []any{
				dr("all", "frontend", "*.cluster.local"),
				dr("reviews", "bookinfo", host, subsets("v1")),
			},
			proxy:    web,
			wantRule: refs(drref("frontend", "all")),
			want: []explain.Diagnostic{{
				ID: "D4", Severity: explain.SeverityError, Resources: refs(drref("bookinfo", "reviews"), drref("frontend", "all")),
				Message: "DestinationRule bookinfo/reviews (in the service namespace) is shadowed by DestinationRule frontend/all, found first in the client namespace: istiod stops at the first namespace that has a rule for reviews.bookinfo.svc.cluster.local and nothing is inherited from later ones",
				Fix:     "move the settings of DestinationRule bookinfo/reviews into DestinationRule frontend/all, or remove that rule if DestinationRule bookinfo/reviews should apply",
			}},
		},
		{
			name: "D4 less specific host in the same namespace is not a fallback",
			objs: []any{
				dr("wild", "bookinfo", "*.bookinfo.svc.cluster.local", subsets("a")),
				dr("reviews", "bookinfo", host, subsets("b")),
			},
			proxy:    web,
			wantRule: refs(drref("bookinfo", "reviews")),
			want: []explain.Diagnostic{{
				ID: "D4", Severity: explain.SeverityError, Resources: refs(drref("bookinfo", "wild"), drref("bookinfo", "reviews")),
				Message: "DestinationRule bookinfo/wild (host *.bookinfo.svc.cluster.local) is shadowed by DestinationRule bookinfo/reviews (host reviews.bookinfo.svc.cluster.local) in namespace bookinfo: istiod uses only the most specific host within a namespace and does not fall back to less specific ones",
				Fix:     "move the settings of DestinationRule bookinfo/wild into DestinationRule bookinfo/reviews, or remove the more specific rule",
			}},
		},
		{
			name: "D4 the older of two matching workloadSelector rules wins",
			objs: []any{
				dr("first", "frontend", host, created(1), drSelector(map[string]string{"app": "web"})),
				dr("second", "frontend", host, created(2), drSelector(map[string]string{"tier": "front"})),
			},
			proxy:    labelledProxy("frontend", map[string]string{"app": "web", "tier": "front"}),
			wantRule: refs(drref("frontend", "first")),
			want: []explain.Diagnostic{{
				ID: "D4", Severity: explain.SeverityError, Resources: refs(drref("frontend", "second"), drref("frontend", "first")),
				Message: "DestinationRule frontend/second selects this proxy too, but DestinationRule frontend/first comes first (workloadSelector rules are ordered by creation time) and is used",
				Fix:     "merge DestinationRule frontend/second into DestinationRule frontend/first, or narrow its spec.workloadSelector",
			}},
		},
		{
			name: "D5 only workloadSelector rules in the client namespace and none selects the proxy",
			objs: []any{
				dr("sel", "frontend", host, drSelector(map[string]string{"app": "x"})),
				dr("reviews", "bookinfo", host, subsets("b")),
				pod("x-1", "frontend", "10.1.0.1", map[string]string{"app": "x"}),
			},
			proxy: web,
			want: []explain.Diagnostic{{
				ID: "D5", Severity: explain.SeverityError, Resources: refs(drref("frontend", "sel"), drref("bookinfo", "reviews")),
				Message: "DestinationRule frontend/sel for reviews.bookinfo.svc.cluster.local in namespace frontend only applies to workloads its workloadSelector selects, and this proxy (labels app=web) is not one of them: because the namespace has DestinationRules for the host, istiod does not look in the service or root namespace, and the proxy gets no DestinationRule (DestinationRule bookinfo/reviews in the service namespace would apply otherwise)",
				Fix:     "add a DestinationRule without workloadSelector for reviews.bookinfo.svc.cluster.local in namespace frontend (it applies when no selector matches), or make a workloadSelector match the proxy",
			}},
		},
		{
			name: "D5 plain rule with exportTo . absorbed by a workloadSelector rule",
			objs: []any{
				dr("sel", "frontend", host, created(2), drSelector(map[string]string{"app": "x"})),
				dr("plain", "frontend", host, created(1), exportTo(".")),
			},
			proxy: web,
			want: []explain.Diagnostic{{
				ID: "D5", Severity: explain.SeverityError, Resources: refs(drref("frontend", "sel"), drref("frontend", "plain")),
				Message: "DestinationRule frontend/sel + frontend/plain for reviews.bookinfo.svc.cluster.local in namespace frontend only applies to workloads its workloadSelector selects, and this proxy (labels app=web) is not one of them: because the namespace has DestinationRules for the host, istiod does not look in the service or root namespace, and the proxy gets no DestinationRule; DestinationRule frontend/plain has no workloadSelector but was merged only into the workloadSelector rule, because both have exportTo \".\"",
				Fix:     "remove spec.exportTo from DestinationRule frontend/plain (or list the namespace by name) so istiod keeps it as a rule of its own, or make a workloadSelector match the proxy",
			}},
		},
		{
			name: "D6 workloadSelector rule in another namespace is never exported",
			objs: []any{
				dr("sel", "bookinfo", host, drSelector(map[string]string{"app": "web"})),
				dr("reviews", "bookinfo", host, subsets("b")),
			},
			proxy:    web,
			wantRule: refs(drref("bookinfo", "reviews")),
			want: []explain.Diagnostic{{
				ID: "D6", Severity: explain.SeverityWarning, Resources: refs(drref("bookinfo", "sel")),
				Message: "DestinationRule bookinfo/sel has a workloadSelector (app=web), so it is never exported: it applies only to proxies in namespace bookinfo, not to this one",
				Fix:     "create the rule in the namespace of the clients it is meant for, or remove spec.workloadSelector from DestinationRule bookinfo/sel",
			}},
		},
		{
			name: "D6 workloadSelector that matches neither the proxy nor any workload",
			objs: []any{
				dr("sel", "frontend", host, created(2), drSelector(map[string]string{"app": "x"})),
				dr("plain", "frontend", host, created(1)),
			},
			proxy:    web,
			wantRule: refs(drref("frontend", "plain")),
			want: []explain.Diagnostic{{
				ID: "D6", Severity: explain.SeverityWarning, Resources: refs(drref("frontend", "sel")),
				Message: "DestinationRule frontend/sel selects workloads with app=x, which does not match this proxy's labels (app=web); it selects no workload in namespace frontend",
				Fix:     "change spec.workloadSelector.matchLabels of DestinationRule frontend/sel to labels the intended workloads have",
			}},
		},
		{
			name: "D11 duplicate subset dropped and D12 trafficPolicy of the merged rule ignored",
			objs: []any{
				dr("a", "bookinfo", host, created(1), subsets("v1"), maxConnections(1)),
				dr("b", "bookinfo", host, created(2), subsets("v1", "v2"), maxConnections(2)),
			},
			proxy:    web,
			wantRule: refs(drref("bookinfo", "a"), drref("bookinfo", "b")),
			want: []explain.Diagnostic{
				{
					ID: "D11", Severity: explain.SeverityWarning, Resources: refs(drref("bookinfo", "b"), drref("bookinfo", "a")),
					Message: "subset \"v1\" of DestinationRule bookinfo/b is dropped: DestinationRule bookinfo/a, merged before it, already defines a subset with that name",
					Fix:     "rename or remove subset \"v1\" in DestinationRule bookinfo/b or DestinationRule bookinfo/a",
				},
				{
					ID: "D12", Severity: explain.SeverityWarning, Resources: refs(drref("bookinfo", "b"), drref("bookinfo", "a")),
					Message: "spec.trafficPolicy of DestinationRule bookinfo/b is ignored: the rule is merged into DestinationRule bookinfo/a, and istiod keeps the trafficPolicy of DestinationRule bookinfo/a whole (top-level policies are never merged field by field)",
					Fix:     "move the settings of DestinationRule bookinfo/b into spec.trafficPolicy of DestinationRule bookinfo/a, or into subsets",
				},
			},
		},
		{
			name: "D13 rules with different exportTo are kept apart and the later one wins",
			objs: []any{
				dr("a", "bookinfo", host, created(1), subsets("v1")),
				dr("b", "bookinfo", host, created(2), exportTo("*"), subsets("v2")),
			},
			proxy:    web,
			wantRule: refs(drref("bookinfo", "b")),
			want: []explain.Diagnostic{{
				ID: "D13", Severity: explain.SeverityWarning, Resources: refs(drref("bookinfo", "a"), drref("bookinfo", "b")),
				Message: "DestinationRule bookinfo/a and DestinationRule bookinfo/b for host reviews.bookinfo.svc.cluster.local are not merged because their exportTo differ (none vs *): this proxy sees both and uses only the later one, DestinationRule bookinfo/b",
				Fix:     "give DestinationRule bookinfo/a and DestinationRule bookinfo/b the same spec.exportTo so istiod merges them, or combine them into one DestinationRule",
			}},
		},
		{
			name: "D31 workloadSelector rule does not inherit a plain rule whose exportTo lacks .",
			objs: []any{
				dr("sel", "frontend", host, created(2), drSelector(map[string]string{"app": "web"})),
				dr("plain", "frontend", host, created(1), exportTo("*"), subsets("v1")),
			},
			proxy:    web,
			wantRule: refs(drref("frontend", "sel")),
			want: []explain.Diagnostic{{
				ID: "D31", Severity: explain.SeverityWarning, Resources: refs(drref("frontend", "sel"), drref("frontend", "plain")),
				Message: "DestinationRule frontend/sel has a workloadSelector that matches this proxy and does not inherit DestinationRule frontend/plain (no workloadSelector, exportTo: *): istiod merges a plain rule into workloadSelector rules only when its exportTo contains \".\", so this proxy gets none of its subsets or trafficPolicy",
				Fix:     "add . to spec.exportTo of DestinationRule frontend/plain, or copy the subsets and trafficPolicy it needs into DestinationRule frontend/sel",
			}},
		},
		{
			name:     "no diagnostics when the only rule applies",
			objs:     []any{dr("reviews", "bookinfo", host, subsets("v1"))},
			proxy:    web,
			wantRule: refs(drref("bookinfo", "reviews")),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sel := Build(snapshot(tc.objs...)).DestinationRule(tc.proxy, svcFor(host, "bookinfo"))
			var gotRule []provenance.Ref
			if sel.Rule != nil {
				gotRule = sel.Rule.From
			}
			if diff := cmp.Diff(tc.wantRule, gotRule); diff != "" {
				t.Errorf("rule (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, sel.Diagnostics, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
		})
	}
}
