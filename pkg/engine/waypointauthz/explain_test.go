package waypointauthz

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/proto"

	"github.com/mesh-explain/kubectl-mesh-explain/internal/testkit"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// loadQueried loads a scenario folder with the waypoint its args name.
func loadQueried(t *testing.T, name string) (*model.Snapshot, Query) {
	t.Helper()
	dir := filepath.Join(testkit.RepoRoot(t), "testdata", "scenarios", "waypoint", name)
	a, err := testkit.ReadArgs(dir)
	if err != nil {
		t.Fatal(err)
	}
	q := Query{Protos: true}
	for i, f := range a.Command {
		switch {
		case f == "-n" && i+1 < len(a.Command):
			q.Namespace = a.Command[i+1]
		case strings.HasPrefix(f, "waypoint/"):
			q.Name = strings.TrimPrefix(f, "waypoint/")
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".yaml") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	snap, err := source.LoadFiles(files, q.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	return snap, q
}

// explainScenario explains the waypoint of a scenario folder (its args name it).
func explainScenario(t *testing.T, name string) *explain.Result {
	t.Helper()
	snap, q := loadQueried(t, name)
	res, err := Explain(snap, q)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func chainNames(r *explain.Result) []string {
	var out []string
	for _, o := range r.Objects {
		if o.Kind == ChainKind {
			out = append(out, o.Name)
		}
	}
	return out
}

func ids(r *explain.Result) []string {
	var out []string
	for _, d := range r.Diagnostics {
		out = append(out, d.ID)
	}
	return out
}

func section(t *testing.T, r *explain.Result, title string) explain.Section {
	t.Helper()
	for _, s := range r.Sections {
		if s.Title == title {
			return s
		}
	}
	t.Fatalf("no section %q", title)
	return explain.Section{}
}

// A namespace label binds every Service of the namespace: chains per port, oldest service
// first (then by name), then the direct chains.
func TestNamespaceLabelBindsEveryService(t *testing.T) {
	r := explainScenario(t, "bind-namespace")
	want := []string{"inbound-vip|3306|tcp|ratings.app.svc.cluster.local", "inbound-vip|9080|http|reviews.app.svc.cluster.local", "direct-tcp", "direct-http"}
	if got := chainNames(r); !slices.Equal(got, want) {
		t.Errorf("chains = %v, want %v", got, want)
	}
	b := section(t, r, "Binding")
	if len(b.Rows) != 2 || b.Rows[0][1] != "yes" || !strings.Contains(b.Rows[0][2], "on Namespace app") {
		t.Errorf("binding rows = %v", b.Rows)
	}
	if len(r.Assumptions) != 0 {
		t.Errorf("a Gateway with addresses needs no assumption: %v", r.Assumptions)
	}
}

// Every permission and principal names the targetRef that attached its policy.
func TestOriginsNameTheTargetRef(t *testing.T) {
	r := explainScenario(t, "bind-namespace")
	n := 0
	for _, o := range r.Objects {
		for _, tr := range o.Origins {
			if strings.Contains(tr.Path, ".permissions[") || strings.Contains(tr.Path, ".principals[") {
				n++
				if !strings.Contains(tr.Origin.Note, "attached by spec.targetRefs[0] (Gateway waypoint)") {
					t.Errorf("%s %s: note %q does not name the targetRef", o.Name, tr.Path, tr.Origin.Note)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no permission or principal traced")
	}
}

// A Gateway without addresses is answered as once programmed, and says so.
func TestGatewayWithoutAddressesIsAnAssumption(t *testing.T) {
	r := explainScenario(t, "gateway-without-addresses")
	if len(r.Assumptions) != 1 || r.Assumptions[0] != NotDeployedAssumption {
		t.Errorf("assumptions = %v", r.Assumptions)
	}
	if !slices.Contains(ids(r), "W05") {
		t.Errorf("diagnostics %v lack W05", ids(r))
	}
	if got := chainNames(r); len(got) <= 2 {
		t.Errorf("chains = %v, want the bound services' chains too", got)
	}
}

// A deployed waypoint whose address is not its Service's serves nothing: W11 once, the
// Service that names it listed as not bound (without a W08 of its own), only the direct chains.
func TestWaypointWithoutItsServiceServesNothing(t *testing.T) {
	for _, name := range []string{"waypoint-service-missing", "waypoint-address-not-its-service"} {
		t.Run(name, func(t *testing.T) {
			r := explainScenario(t, name)
			if got := ids(r); !slices.Equal(got, []string{"W11"}) {
				t.Errorf("diagnostics %v, want W11 alone", got)
			}
			if got := chainNames(r); !slices.Equal(got, []string{"direct-tcp", "direct-http"}) {
				t.Errorf("chains = %v, want the direct chains only", got)
			}
			binding := r.Sections[1]
			if len(binding.Rows) != 1 || binding.Rows[0][0] != "Service app/reviews" || binding.Rows[0][1] != "no" ||
				!strings.Contains(binding.Rows[0][2], "istiod binds nothing to this waypoint: its address 10.96.0.100 (status.addresses) is the cluster IP of no Service of namespace app") {
				t.Errorf("binding rows = %q", binding.Rows)
			}
		})
	}
	// Not deployed yet, answered as istiod will program it: through the Service named as the
	// Gateway, which here selects no instance.
	r := explainScenario(t, "gateway-without-addresses-service-selects-nothing")
	if got := ids(r); !slices.Contains(got, "W11") || !slices.Contains(got, "W05") {
		t.Errorf("not deployed, its Service selecting nothing: diagnostics %v, want W05 and W11", got)
	}
	if got := chainNames(r); !slices.Equal(got, []string{"direct-tcp", "direct-http"}) {
		t.Errorf("not deployed, its Service selecting nothing: chains = %v", got)
	}
	// With its Service, the same waypoint serves reviews.
	if got := chainNames(explainScenario(t, "bind-service")); len(got) <= 2 || slices.Contains(ids(explainScenario(t, "bind-service")), "W11") {
		t.Errorf("bind-service: chains %v, diagnostics %v", got, ids(explainScenario(t, "bind-service")))
	}
}

func TestDiagnosticsOfScenarios(t *testing.T) {
	for _, tt := range []struct{ scenario, id string }{
		{"selector-and-namespace-wide-ignored", "W01"},
		{"targetref-service-not-bound", "W02"},
		{"targetref-service-missing", "W03"},
		{"targetref-gatewayclass-outside-root", "W04"},
		{"http-fields-on-tcp-allow", "W06"},
		{"http-fields-on-tcp-deny", "W06"},
		{"action-custom-provider-missing", "W07"},
		{"use-waypoint-namespace-same-only", "W08"},
	} {
		t.Run(tt.scenario, func(t *testing.T) {
			r := explainScenario(t, tt.scenario)
			if !slices.Contains(ids(r), tt.id) {
				t.Errorf("diagnostics %v lack %s", ids(r), tt.id)
			}
		})
	}
	// A clean case reports nothing.
	if got := ids(explainScenario(t, "targetref-service")); len(got) != 0 {
		t.Errorf("targetref-service: diagnostics %v, want none", got)
	}
}

// The direct chains carry only traffic addressed to a workload bound to the waypoint: a Gateway
// policy whose HTTP-only rule is left out of the direct-tcp chain is worth W06 only when one is.
func TestDirectChainW06OnlyWithBoundWorkloads(t *testing.T) {
	direct := func(r *explain.Result) bool {
		return slices.ContainsFunc(r.Diagnostics, func(d explain.Diagnostic) bool {
			return d.ID == "W06" && strings.Contains(d.Message, "direct-tcp chain")
		})
	}
	if r := explainScenario(t, "bind-service"); direct(r) {
		t.Errorf("bind-service (no workload bound): W06 on the direct-tcp chain: %v", r.Diagnostics)
	}
	for _, s := range []string{"bind-pod-workload-waypoint", "bind-pod-all-traffic-waypoint"} {
		if r := explainScenario(t, s); !direct(r) {
			t.Errorf("%s (a pod bound): no W06 on the direct-tcp chain: %v", s, r.Diagnostics)
		}
	}
}

// A missing Gateway and one of another class are errors naming what was asked.
func TestFind(t *testing.T) {
	dir := filepath.Join(testkit.RepoRoot(t), "testdata", "scenarios", "waypoint", "bind-namespace")
	snap, err := source.LoadFiles([]string{filepath.Join(dir, "waypoint.yaml")}, "app")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Explain(snap, Query{Namespace: "app", Name: "nope"})
	var nf *explain.NotFoundError
	if !errors.As(err, &nf) || !strings.Contains(err.Error(), "waypoint/waypoint") {
		t.Errorf("err = %v, want not found listing waypoint/waypoint", err)
	}
	snap.Gateways[0].Spec.GatewayClassName = "istio"
	_, err = Explain(snap, Query{Namespace: "app", Name: "waypoint"})
	var iq *explain.InvalidQueryError
	if !errors.As(err, &iq) {
		t.Errorf("err = %v, want an invalid query for another class", err)
	}
}

// An ambient pod's answer gets the waypoint's chains for the services that select it.
func TestPodSection(t *testing.T) {
	dir := filepath.Join(testkit.RepoRoot(t), "testdata", "scenarios", "waypoint", "bind-namespace")
	var files []string
	for _, n := range []string{"namespaces.yaml", "policies.yaml", "waypoint.yaml", "workloads.yaml"} {
		files = append(files, filepath.Join(dir, n))
	}
	snap, err := source.LoadFiles(files, "app")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range snap.Pods {
		if p.Name != "reviews-v1" {
			continue
		}
		s := PodSection(snap, p)
		if s == nil || len(s.Rows) != 2 {
			t.Fatalf("section = %+v, want the reviews chain and the pointer to authz waypoint/NAME", s)
		}
		if got := s.Rows[0]; got[0] != "Service reviews" || got[1] != "waypoint/waypoint -n app" ||
			got[2] != "inbound-vip|9080|http|reviews.app.svc.cluster.local" || got[3] != "http.rbac (ALLOW)" {
			t.Errorf("row = %q", got)
		}
		return
	}
	t.Fatal("no pod reviews-v1")
}

// Filter objects of the same content share one message, which the printers marshal once, and
// only those do: builds whose policies differ only in the targetRefs that attached them have
// different objects (their origins differ) for the same filter.
func TestFiltersOfTheSameContentShareAMessage(t *testing.T) {
	dirs, err := os.ReadDir(filepath.Join(testkit.RepoRoot(t), "testdata", "scenarios", "waypoint"))
	if err != nil {
		t.Fatal(err)
	}
	shared := 0
	for _, d := range dirs {
		r := explainScenario(t, d.Name())
		var filters []explain.Object
		for _, o := range r.Objects {
			if o.Kind != ChainKind {
				filters = append(filters, o)
			}
		}
		for i, a := range filters {
			for _, b := range filters[i+1:] {
				same := proto.Equal(a.Message, b.Message)
				if same != (a.Message == b.Message) {
					t.Errorf("%s: objects %q and %q: the same filter %v, one message %v", d.Name(), a.Name, b.Name, same, a.Message == b.Message)
				}
				if a.Message == b.Message {
					shared++
				}
			}
		}
	}
	if shared == 0 {
		t.Error("no two filter objects share a message: the scenarios no longer test it")
	}
}

// Builds with the same policies, attached by the same targetRefs, share their filters, and
// only those; a shared filter is one object, named after the first build that has it, and each
// chain names either its own service's (or "direct") object or one whose "also for" lists it.
func TestBuildsWithTheSameInputsShareTheirFilters(t *testing.T) {
	dirs, err := os.ReadDir(filepath.Join(testkit.RepoRoot(t), "testdata", "scenarios", "waypoint"))
	if err != nil {
		t.Fatal(err)
	}
	shared, named := 0, 0
	for _, d := range dirs {
		r := explainScenario(t, d.Name())
		objects := map[string]explain.Object{}
		for _, o := range r.Objects {
			if o.Kind == ChainKind {
				continue
			}
			// Two objects for one filter of one build would have the same origins.
			for _, other := range objects {
				if reflect.DeepEqual(other.Origins, o.Origins) && other.Message == o.Message {
					t.Errorf("%s: objects %q and %q are the same filter", d.Name(), other.Name, o.Name)
				}
			}
			objects[o.Name] = o
		}
		for _, o := range r.Objects {
			if o.Kind != ChainKind {
				continue
			}
			build, label := "direct", "the direct chains"
			if _, rest, ok := strings.Cut(o.Name, "|"); ok {
				_, rest, _ = strings.Cut(rest, "|")
				_, build, _ = strings.Cut(rest, "|")
				label = build
			}
			for _, tr := range o.Origins {
				_, name, ok := strings.Cut(tr.Origin.Note, "every permission and principal: object ")
				if !ok {
					continue
				}
				obj, found := objects[name]
				switch {
				case !found:
					t.Errorf("%s: chain %s names the filter object %q, which is not in the answer", d.Name(), o.Name, name)
				case strings.HasPrefix(name, build+" "):
				case slices.ContainsFunc(obj.Summary, func(s explain.Summary) bool {
					return s.Name == "also for" && slices.Contains(strings.Split(s.Value, ", "), label)
				}):
					named++
				default:
					t.Errorf("%s: chain %s names the filter object %q, which is not for %s", d.Name(), o.Name, name, label)
				}
			}
		}
		snap, q := loadQueried(t, d.Name())
		gw, err := Find(snap, q)
		if err != nil {
			t.Fatal(err)
		}
		e := newExplanation(snap, gw)
		builds := append(slices.Clone(e.builds), e.direct)
		for i, a := range builds {
			for _, b := range builds[i+1:] {
				same := buildKey(a) == buildKey(b)
				if same != (a.rbac == b.rbac) {
					t.Errorf("%s: builds %s and %s: same inputs %v, shared filters %v", d.Name(), a.name(), b.name(), same, a.rbac == b.rbac)
				}
				if same {
					shared++
				}
			}
		}
	}
	if shared == 0 || named == 0 {
		t.Fatalf("builds with the same inputs: %d; chains naming another build's object: %d", shared, named)
	}
}

// Services that share a host are resolved to one per namespace before the waypoint binds them:
// the Kubernetes Service reviews wins over ServiceEntry api's second host, and the older
// ServiceEntry api over api-copy, which is then not bound at all.
func TestServicesSharingAHost(t *testing.T) {
	r := explainScenario(t, "serviceentry-host-of-a-service")
	want := []string{"inbound-vip|80|http|api.example.com", "inbound-vip|8080|http|api.example.com", "direct-tcp", "direct-http"}
	if got := chainNames(r); !slices.Equal(got, want) {
		t.Errorf("chains = %v, want %v", got, want)
	}
	b := section(t, r, "Binding")
	if len(b.Rows) != 2 || b.Rows[0][1] != "yes" || b.Rows[1][1] != "no" ||
		!strings.Contains(b.Rows[1][2], "api.example.com is also ServiceEntry app/api's, older") {
		t.Errorf("binding rows = %v", b.Rows)
	}
	// api keeps api.example.com and loses reviews.app.svc.cluster.local to the Service: bound,
	// with the host it is not bound for named.
	if len(b.Rows) > 0 && !strings.Contains(b.Rows[0][2], "bound for its other hosts only: host reviews.app.svc.cluster.local is also Service app/reviews's") {
		t.Errorf("the bound ServiceEntry does not name the host it lost: %q", b.Rows[0][2])
	}
	i := slices.IndexFunc(r.Diagnostics, func(d explain.Diagnostic) bool { return d.ID == "W08" })
	if i < 0 || !strings.Contains(r.Diagnostics[i].Message, "ServiceEntry app/api-copy") || !strings.Contains(r.Diagnostics[i].Fix, "hosts no other service of its namespace holds") {
		t.Errorf("W08 for api-copy with the fix for a shared host: %v", r.Diagnostics)
	}
}

// A rule that loses its HTTP-only fields on the TCP chains of several services, and on the
// direct-tcp chain, is one W06 naming every place, not one per service.
func TestW06OncePerRule(t *testing.T) {
	snap, q := loadQueried(t, "selector-and-namespace-wide-ignored")
	for _, s := range snap.Services {
		if s.Name == "ratings" {
			ledger := s.DeepCopy()
			ledger.Name, ledger.Spec.ClusterIP = "ledger", "10.96.0.12"
			snap.Services = append(snap.Services, ledger)
			break
		}
	}
	for _, p := range snap.Pods {
		if p.Name == "ratings-v1" {
			p.Labels["istio.io/use-waypoint"] = "waypoint"
		}
	}
	// A waypoint for all traffic: the pod is bound, so traffic reaches the direct chains.
	snap.Gateways[0].Labels = map[string]string{"istio.io/waypoint-for": "all"}
	res, err := Explain(snap, q)
	if err != nil {
		t.Fatal(err)
	}
	var w06 []string
	for _, d := range res.Diagnostics {
		if d.ID == "W06" {
			w06 = append(w06, d.Message)
		}
	}
	want := "AuthorizationPolicy app/gateway-allow rule 0 (ALLOW) is left out of the TCP chains of " +
		"ledger.app.svc.cluster.local and ratings.app.svc.cluster.local, and the direct-tcp chain: "
	if len(w06) != 1 || !strings.HasPrefix(w06[0], want) {
		t.Errorf("W06 = %q, want one starting %q", w06, want)
	}
}

func TestTCPChains(t *testing.T) {
	for _, c := range []struct {
		where []string
		want  string
	}{
		{[]string{directTCP}, "the direct-tcp chain"},
		{[]string{"a"}, "the TCP chains of a"},
		{[]string{"a", "b", "c"}, "the TCP chains of a, b and c"},
		{[]string{"a", directTCP}, "the TCP chains of a, and the direct-tcp chain"},
	} {
		if got := tcpChains(c.where); got != c.want {
			t.Errorf("tcpChains(%q) = %q, want %q", c.where, got, c.want)
		}
	}
}

// A CUSTOM provider the waypoint cannot use is one W07 naming every build whose filters name
// it, not one per service.
func TestW07OncePerProvider(t *testing.T) {
	res := explainScenario(t, "action-custom-provider-missing")
	var w07 []explain.Diagnostic
	for _, d := range res.Diagnostics {
		if d.ID == "W07" {
			w07 = append(w07, d)
		}
	}
	want := `CUSTOM provider "not-configured" cannot be used by waypoint app/waypoint for ratings.app.svc.cluster.local, reviews.app.svc.cluster.local and the direct chains: `
	if len(w07) != 1 || !strings.HasPrefix(w07[0].Message, want) || len(w07[0].Resources) != 1 || w07[0].Resources[0].Name != "ext-missing" {
		t.Errorf("W07 = %+v, want one starting %q for AuthorizationPolicy app/ext-missing", w07, want)
	}
}

// Without Protos the answer is the same but for the generated protos: no object carries a
// Message, and every other field (origins, summaries, diagnostics) is as with them. With
// Protos every chain and filter carries one, and a chain holds the very filters of its objects.
func TestProtosOnlyAddTheMessages(t *testing.T) {
	dirs, err := os.ReadDir(filepath.Join(testkit.RepoRoot(t), "testdata", "scenarios", "waypoint"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		snap, q := loadQueried(t, d.Name())
		with, err := Explain(snap, q)
		if err != nil {
			t.Fatal(err)
		}
		q.Protos = false
		without, err := Explain(snap, q)
		if err != nil {
			t.Fatal(err)
		}
		filters := map[proto.Message]bool{}
		for _, o := range with.Objects {
			if o.Message == nil {
				t.Errorf("%s: object %q has no Message with Protos", d.Name(), o.Name)
			}
			if o.Kind != ChainKind {
				filters[o.Message] = true
			}
		}
		for _, o := range with.Objects {
			if fc, ok := o.Message.(*listenerv3.FilterChain); ok {
				for _, f := range fc.GetFilters() {
					if !filters[f] {
						t.Errorf("%s: chain %q holds a filter no object has", d.Name(), o.Name)
					}
				}
			}
		}
		stripped := *with
		stripped.Objects = nil
		for _, o := range with.Objects {
			o.Message = nil
			stripped.Objects = append(stripped.Objects, o)
		}
		if !reflect.DeepEqual(&stripped, without) {
			t.Errorf("%s: the answer without Protos differs from the one with them, Messages aside", d.Name())
		}
	}
}
