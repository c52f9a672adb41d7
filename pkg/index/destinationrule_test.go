package index

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/testing/protocmp"
	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

func drref(ns, name string) provenance.Ref {
	return provenance.Ref{Kind: "DestinationRule", Namespace: ns, Name: name}
}

// a25Rules are the DestinationRules of istio/istio push_context_test.go
// TestSetDestinationRuleWithExportTo (testdata/scenarios/cluster/a25*).
func a25Rules() []any {
	return []any{
		dr("rule1", "test1", "httpbin.org", exportTo(".", "ns1"), subsets("subset1", "subset2")),
		dr("rule2", "test2", "httpbin.org", exportTo("test2", "ns1", "test1", "newNS"), subsets("subset3", "subset4")),
		// Invalid under validation (validateExportTo: "*" together with other namespaces); the
		// upstream test bypasses validation and istiod indexes it as written.
		dr("rule3", "test3", "httpbin.org", exportTo("test1", "test2", "*"), subsets("subset5", "subset6")),
		dr("rule4-local", "test4", "httpbin.org", exportTo("test4"), subsets("subset15", "subset16")),
		dr("rule4", "istio-system", "httpbin.org", subsets("subset7", "subset8")),
		dr("rule1", "istio-system", "httpbin.org", exportTo("."), subsets("subset9", "subset10")),
		dr("rule2", "istio-system", "*.org", exportTo("."), subsets("subset11", "subset12")),
		dr("rule3", "istio-system", "*.app.org", exportTo("."), subsets("subset13", "subset14")),
		dr("rule5", "test5", "api.test.com", exportTo("istio-system"), subsets("subset5-0", "subset5-1")),
		dr("rule6", "test6", "api.test.com", exportTo("istio-system"), subsets("subset6-0", "subset6-1")),
	}
}

func TestSetDestinationRuleWithExportTo(t *testing.T) {
	ix := Build(snapshot(a25Rules()...))
	cases := []struct {
		name      string
		proxyNs   string
		serviceNs string
		host      string
		want      []string
		wantStep  string
	}{
		{"client namespace rule exported to . applies in its own namespace", "test1", "test1", "httpbin.org", []string{"subset1", "subset2"}, StepClientNamespace},
		{"client namespace rule wins over the service namespace", "test1", "test2", "httpbin.org", []string{"subset1", "subset2"}, StepClientNamespace},
		{"rule exporting to its own namespace by name applies there", "test2", "test1", "httpbin.org", []string{"subset3", "subset4"}, StepClientNamespace},
		{"service namespace rule exported to the client namespace by name", "newNS", "test2", "httpbin.org", []string{"subset3", "subset4"}, StepServiceNamespace},
		{"rule with * among other namespaces is local to its namespace (invalid upstream rule)", "test3", "test1", "httpbin.org", []string{"subset5", "subset6"}, StepClientNamespace},
		{"service namespace rule private to it falls through to the root namespace", "test5", "test4", "httpbin.org", []string{"subset7", "subset8"}, StepRootNamespace},
		{"service namespace rule exported to the client", "ns1", "test1", "httpbin.org", []string{"subset1", "subset2"}, StepServiceNamespace},
		{"no rule in client or service namespace: root namespace public rule", "ns1", "random", "httpbin.org", []string{"subset7", "subset8"}, StepRootNamespace},
		{"unrelated namespaces get the root namespace public rule", "random", "random", "httpbin.org", []string{"subset7", "subset8"}, StepRootNamespace},
		{"client namespace rule applies to any service namespace", "test3", "random", "httpbin.org", []string{"subset5", "subset6"}, StepClientNamespace},
		{"root namespace client: private root rule ranks first", "istio-system", "random", "httpbin.org", []string{"subset9", "subset10"}, StepClientNamespace},
		{"root namespace client and service: private root rule", "istio-system", "istio-system", "httpbin.org", []string{"subset9", "subset10"}, StepClientNamespace},
		{"root namespace client: most specific private wildcard", "istio-system", "istio-system", "foo.app.org", []string{"subset13", "subset14"}, StepClientNamespace},
		{"root namespace client: service namespace rule exported to the root namespace (test5)", "istio-system", "test5", "api.test.com", []string{"subset5-0", "subset5-1"}, StepServiceNamespace},
		{"root namespace client: service namespace rule exported to the root namespace (test6)", "istio-system", "test6", "api.test.com", []string{"subset6-0", "subset6-1"}, StepServiceNamespace},
		{"rule in neither client nor service namespace never applies, even exported to the client", "istio-system", "test7", "api.test.com", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sel := ix.DestinationRule(nsProxy(tc.proxyNs), svcFor(tc.host, tc.serviceNs))
			if diff := cmp.Diff(tc.want, subsetNames(sel.Rule)); diff != "" {
				t.Errorf("subsets (-want +got):\n%s", diff)
			}
			if sel.Step != tc.wantStep {
				t.Errorf("step = %q, want %q", sel.Step, tc.wantStep)
			}
		})
	}
}

func TestSetDestinationRuleMerging(t *testing.T) {
	// push_context_test.go TestSetDestinationRuleMerging (testdata/scenarios/cluster/a26*).
	ix := Build(snapshot(
		dr("rule1", "test", "httpbin.org", subsets("subset1", "subset2")),
		dr("rule2", "test", "httpbin.org", subsets("subset3", "subset4")),
		dr("rule3", "test", "httpbin.org", exportTo("istio-system"), subsets("subset5", "subset6")),
	))
	entries := func(t *drTable) [][]string {
		var out [][]string
		for _, e := range t.specific["httpbin.org"] {
			var names []string
			for _, d := range e.from {
				names = append(names, d.obj.Name)
			}
			for _, s := range e.spec.GetSubsets() {
				names = append(names, s.GetName())
			}
			out = append(out, names)
		}
		return out
	}
	t.Run("namespace-local index holds one merged entry", func(t *testing.T) {
		want := [][]string{{"rule1", "rule2", "subset1", "subset2", "subset3", "subset4"}}
		if diff := cmp.Diff(want, entries(ix.drIx.local["test"])); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("exported index holds the merged entry and the rule with another exportTo", func(t *testing.T) {
		want := [][]string{{"rule1", "rule2", "subset1", "subset2", "subset3", "subset4"}, {"rule3", "subset5", "subset6"}}
		if diff := cmp.Diff(want, entries(ix.drIx.exported["test"])); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("a client that sees both exported entries uses the later one", func(t *testing.T) {
		sel := ix.DestinationRule(nsProxy("istio-system"), svcFor("httpbin.org", "test"))
		want := []*ConsolidatedRule{
			{
				Spec: &networking.DestinationRule{Host: "httpbin.org", Subsets: []*networking.Subset{
					{Name: "subset1"}, {Name: "subset2"}, {Name: "subset3"}, {Name: "subset4"},
				}},
				Primary:    drref("test", "rule1"),
				From:       []provenance.Ref{drref("test", "rule1"), drref("test", "rule2")},
				SubsetFrom: []provenance.Ref{drref("test", "rule1"), drref("test", "rule1"), drref("test", "rule2"), drref("test", "rule2")},
			},
			{
				Spec:       &networking.DestinationRule{Host: "httpbin.org", ExportTo: []string{"istio-system"}, Subsets: []*networking.Subset{{Name: "subset5"}, {Name: "subset6"}}},
				Primary:    drref("test", "rule3"),
				From:       []provenance.Ref{drref("test", "rule3")},
				SubsetFrom: []provenance.Ref{drref("test", "rule3"), drref("test", "rule3")},
				ExportTo:   []string{"istio-system"},
			},
		}
		if diff := cmp.Diff(want, sel.Candidates, protocmp.Transform(), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("candidates (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want[1], sel.Rule, protocmp.Transform(), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("rule (-want +got):\n%s", diff)
		}
	})
}

func TestSetDestinationRuleWithWorkloadSelector(t *testing.T) {
	// push_context_test.go TestSetDestinationRuleWithWorkloadSelector
	// (testdata/scenarios/cluster/a27*). The upstream selector rules carry exportTo [test2, .],
	// which validation rejects for a rule with a workloadSelector; istiod forces their exportTo
	// to "." either way.
	ix := Build(snapshot(
		dr("nsRule1", "test", "httpbin.org", created(10), exportTo("test2", "."), drSelector(map[string]string{"app": "app1"}), maxConnections(111)),
		dr("nsRule2", "test", "httpbin.org", created(11), exportTo("test2", "."), drSelector(map[string]string{"app": "app2"}), maxConnections(33)),
		dr("nsRule3", "test", "httpbin.org", created(11), exportTo("test2", "."), drSelector(map[string]string{"app": "app2"}), maxConnections(33)),
		dr("nsRule4", "test", "httpbin.org", created(9), exportTo(".", "test2"), maxConnections(33)),
	))
	from := func(rs []*ConsolidatedRule) [][]provenance.Ref {
		var out [][]provenance.Ref
		for _, r := range rs {
			out = append(out, r.From)
		}
		return out
	}
	allEntries := [][]provenance.Ref{
		{drref("test", "nsRule1"), drref("test", "nsRule4")},
		{drref("test", "nsRule2"), drref("test", "nsRule3"), drref("test", "nsRule4")},
		{drref("test", "nsRule4")},
	}
	cases := []struct {
		name        string
		proxy       *Proxy
		wantEntries [][]provenance.Ref
		wantRule    provenance.Ref
	}{
		{"workload matching app1 gets the app1 rule merged with the plain rule", labelledProxy("test", map[string]string{"app": "app1"}), allEntries, drref("test", "nsRule1")},
		{"rules with the same selector are merged", labelledProxy("test", map[string]string{"app": "app2"}), allEntries, drref("test", "nsRule2")},
		{"workload matching no selector gets the plain rule", nsProxy("test"), allEntries, drref("test", "nsRule4")},
		{"workloadSelector rules are never exported", labelledProxy("test2", map[string]string{"app": "app1"}), [][]provenance.Ref{{drref("test", "nsRule4")}}, drref("test", "nsRule4")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sel := ix.DestinationRule(tc.proxy, svcFor("httpbin.org", "test"))
			if diff := cmp.Diff(tc.wantEntries, from(sel.Candidates)); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
			if sel.Rule == nil || sel.Rule.Primary != tc.wantRule {
				t.Fatalf("rule = %v, want %v", sel.Rule, tc.wantRule)
			}
		})
	}
	t.Run("a selector rule inherits the plain rule's subsets but keeps its own trafficPolicy", func(t *testing.T) {
		sel := ix.DestinationRule(labelledProxy("test", map[string]string{"app": "app1"}), svcFor("httpbin.org", "test"))
		if got := sel.Rule.Spec.GetTrafficPolicy().GetConnectionPool().GetTcp().GetMaxConnections(); got != 111 {
			t.Errorf("maxConnections = %d, want 111", got)
		}
		if want := (&provenance.Ref{Kind: "DestinationRule", Namespace: "test", Name: "nsRule1"}); !cmp.Equal(sel.Rule.TrafficPolicyFrom, want) {
			t.Errorf("trafficPolicyFrom = %v, want %v", sel.Rule.TrafficPolicyFrom, want)
		}
	})
}

func TestMergeDestinationRule(t *testing.T) {
	host := "reviews.bookinfo.svc.cluster.local"
	svc := svcFor(host, "bookinfo")
	cases := []struct {
		name        string
		rules       []any
		proxy       *Proxy
		wantFrom    [][]provenance.Ref
		wantRule    []provenance.Ref
		wantSubsets []string
	}{
		{
			name: "first defined subset wins and the duplicate is dropped",
			rules: []any{
				dr("a", "bookinfo", host, created(1), subsetLabels("v1", map[string]string{"version": "v1"})),
				dr("b", "bookinfo", host, created(2), subsetLabels("v1", map[string]string{"version": "v9"}), subsets("v2")),
			},
			proxy:       nsProxy("bookinfo"),
			wantFrom:    [][]provenance.Ref{{drref("bookinfo", "a"), drref("bookinfo", "b")}},
			wantRule:    []provenance.Ref{drref("bookinfo", "a"), drref("bookinfo", "b")},
			wantSubsets: []string{"v1", "v2"},
		},
		{
			// No Istio test pins this; destination_rule.go: the superset branch sets appendSeparately,
			// but the "both without selector" branch right after resets it.
			name: "rule whose exportTo is a strict superset is merged and not kept apart",
			rules: []any{
				dr("a", "bookinfo", host, created(1), exportTo(".", "frontend"), subsets("v1")),
				dr("b", "bookinfo", host, created(2), exportTo(".", "frontend", "other"), subsets("v2")),
			},
			proxy:       nsProxy("bookinfo"),
			wantFrom:    [][]provenance.Ref{{drref("bookinfo", "a"), drref("bookinfo", "b")}},
			wantRule:    []provenance.Ref{drref("bookinfo", "a"), drref("bookinfo", "b")},
			wantSubsets: []string{"v1", "v2"},
		},
		{
			name: "rules with different exportTo are not merged and the later one wins",
			rules: []any{
				dr("a", "bookinfo", host, created(1), subsets("v1")),
				dr("b", "bookinfo", host, created(2), exportTo("*"), subsets("v2")),
			},
			proxy:       nsProxy("bookinfo"),
			wantFrom:    [][]provenance.Ref{{drref("bookinfo", "a")}, {drref("bookinfo", "b")}},
			wantRule:    []provenance.Ref{drref("bookinfo", "b")},
			wantSubsets: []string{"v2"},
		},
		{
			// No Istio test pins this (docs/semantics/cluster.md#merging): a plain rule whose
			// exportTo equals the selector rule's {"."} is merged into it and never appended on
			// its own.
			name: "plain rule with exportTo . is absorbed by a selector rule",
			rules: []any{
				dr("sel", "bookinfo", host, created(2), drSelector(map[string]string{"app": "a"}), subsets("v1")),
				dr("plain", "bookinfo", host, created(1), exportTo("."), subsets("v2")),
			},
			proxy:    nsProxy("bookinfo"),
			wantFrom: [][]provenance.Ref{{drref("bookinfo", "sel"), drref("bookinfo", "plain")}},
		},
		{
			name: "plain rule without exportTo is not merged into a selector rule",
			rules: []any{
				dr("sel", "bookinfo", host, created(2), drSelector(map[string]string{"app": "a"}), subsets("v1")),
				dr("plain", "bookinfo", host, created(1), subsets("v2")),
			},
			proxy:       labelledProxy("bookinfo", map[string]string{"app": "a"}),
			wantFrom:    [][]provenance.Ref{{drref("bookinfo", "sel")}, {drref("bookinfo", "plain")}},
			wantRule:    []provenance.Ref{drref("bookinfo", "sel")},
			wantSubsets: []string{"v1"},
		},
		{
			name: "short host is resolved in the rule's namespace",
			rules: []any{
				dr("short", "bookinfo", "reviews", subsets("v1")),
			},
			proxy:       nsProxy("frontend"),
			wantFrom:    [][]provenance.Ref{{drref("bookinfo", "short")}},
			wantRule:    []provenance.Ref{drref("bookinfo", "short")},
			wantSubsets: []string{"v1"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ix := Build(snapshot(tc.rules...))
			sel := ix.DestinationRule(tc.proxy, svc)
			var gotFrom [][]provenance.Ref
			for _, c := range sel.Candidates {
				gotFrom = append(gotFrom, c.From)
			}
			if diff := cmp.Diff(tc.wantFrom, gotFrom); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
			var gotRule []provenance.Ref
			if sel.Rule != nil {
				gotRule = sel.Rule.From
			}
			if diff := cmp.Diff(tc.wantRule, gotRule); diff != "" {
				t.Errorf("rule (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSubsets, subsetNames(sel.Rule)); diff != "" {
				t.Errorf("subsets (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDestinationRuleLookupPrecedence(t *testing.T) {
	host := "reviews.bookinfo.svc.cluster.local"
	cases := []struct {
		name     string
		objs     []any
		proxy    *Proxy
		svcNs    string
		want     []provenance.Ref
		wantStep string
	}{
		{
			name: "wildcard rule in the client namespace shadows the exact rule of the service namespace",
			objs: []any{
				dr("all-local", "frontend", "*.local", subsets("w")),
				dr("reviews", "bookinfo", host, subsets("v1")),
			},
			proxy: nsProxy("frontend"), svcNs: "bookinfo",
			want: []provenance.Ref{drref("frontend", "all-local")}, wantStep: StepClientNamespace,
		},
		{
			name: "most specific host within one namespace wins and less specific ones are not merged",
			objs: []any{
				dr("star", "bookinfo", "*", subsets("w")),
				dr("svc-domain", "bookinfo", "*.bookinfo.svc.cluster.local", subsets("x")),
			},
			proxy: nsProxy("frontend"), svcNs: "bookinfo",
			want: []provenance.Ref{drref("bookinfo", "svc-domain")}, wantStep: StepServiceNamespace,
		},
		{
			name: "most specific host not exported to the client hides the namespace",
			objs: []any{
				dr("exact", "bookinfo", host, exportTo("payments"), subsets("x")),
				dr("wild", "bookinfo", "*.svc.cluster.local", subsets("w")),
				dr("root", "istio-system", "*.svc.cluster.local", subsets("r")),
			},
			proxy: nsProxy("frontend"), svcNs: "bookinfo",
			want: []provenance.Ref{drref("istio-system", "root")}, wantStep: StepRootNamespace,
		},
		{
			name: "root namespace client: service namespace rule ranks above public root rule",
			objs: []any{
				dr("root-public", "istio-system", host, subsets("r")),
				dr("reviews", "bookinfo", host, subsets("v1")),
			},
			proxy: nsProxy("istio-system"), svcNs: "bookinfo",
			want: []provenance.Ref{drref("bookinfo", "reviews")}, wantStep: StepServiceNamespace,
		},
		{
			name: "root namespace client: private root rule ranks above service namespace rule",
			objs: []any{
				dr("root-private", "istio-system", host, exportTo("."), subsets("r")),
				dr("reviews", "bookinfo", host, subsets("v1")),
			},
			proxy: nsProxy("istio-system"), svcNs: "bookinfo",
			want: []provenance.Ref{drref("istio-system", "root-private")}, wantStep: StepClientNamespace,
		},
		{
			name: "MeshConfig defaultDestinationRuleExportTo . makes rules without exportTo private",
			objs: []any{
				func(m *meshv1alpha1.MeshConfig) { m.DefaultDestinationRuleExportTo = []string{"."} },
				dr("reviews", "bookinfo", host, subsets("v1")),
			},
			proxy: nsProxy("frontend"), svcNs: "bookinfo",
			want: nil, wantStep: "",
		},
		{
			name: "MeshConfig defaultDestinationRuleExportTo other than . behaves like *",
			objs: []any{
				func(m *meshv1alpha1.MeshConfig) { m.DefaultDestinationRuleExportTo = []string{"istio-system"} },
				dr("reviews", "bookinfo", host, subsets("v1")),
			},
			proxy: nsProxy("frontend"), svcNs: "bookinfo",
			want: []provenance.Ref{drref("bookinfo", "reviews")}, wantStep: StepServiceNamespace,
		},
		{
			name: "custom root namespace",
			objs: []any{
				func(m *meshv1alpha1.MeshConfig) { m.RootNamespace = "mesh-root" },
				dr("root", "mesh-root", host, subsets("r")),
				dr("old-root", "istio-system", host, subsets("o")),
			},
			proxy: nsProxy("frontend"), svcNs: "bookinfo",
			want: []provenance.Ref{drref("mesh-root", "root")}, wantStep: StepRootNamespace,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sel := Build(snapshot(tc.objs...)).DestinationRule(tc.proxy, svcFor(host, tc.svcNs))
			var got []provenance.Ref
			if sel.Rule != nil {
				got = sel.Rule.From
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("rule (-want +got):\n%s", diff)
			}
			if sel.Step != tc.wantStep {
				t.Errorf("step = %q, want %q", sel.Step, tc.wantStep)
			}
		})
	}
}

// TestConsolidatedRuleIsTheIndexCopy checks that a selection never hands out the input object
// (the index resolves the host in its own copy), and that selections of one rule share it.
func TestConsolidatedRuleIsTheIndexCopy(t *testing.T) {
	host := "reviews.bookinfo.svc.cluster.local"
	in := dr("reviews", "bookinfo", "reviews", subsets("v1"))
	ix := Build(snapshot(in))
	sel := ix.DestinationRule(nsProxy("bookinfo"), svcFor(host, "bookinfo"))
	if sel.Rule == nil {
		t.Fatal("no rule")
	}
	if sel.Rule.Spec == &in.Spec {
		t.Fatal("the selection holds the input object")
	}
	if in.Spec.Host != "reviews" {
		t.Errorf("input object changed: %v", &in.Spec)
	}
	if sel.Rule.Spec.GetHost() != host {
		t.Errorf("host = %q, want the resolved %q", sel.Rule.Spec.GetHost(), host)
	}
	again := ix.DestinationRule(nsProxy("bookinfo"), svcFor(host, "bookinfo"))
	if again.Rule.Spec != sel.Rule.Spec {
		t.Error("two selections of one rule hold different copies of it")
	}
	if diff := cmp.Diff([]string{"v1"}, subsetNames(again.Rule)); diff != "" {
		t.Errorf("subsets (-want +got):\n%s", diff)
	}
}
