package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/check"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/sidecarauthz"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/waypointauthz"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/ztunnelauthz"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/internal/checktest"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// answersUnion asks `cluster HOST -A` for every host from every client (the default sidecar of
// every namespace, `--from pod/NAME` for every injected pod and gateway pod), and `authz pod/NAME`
// for every pod with a sidecar and every ambient pod but the pods of waypoints and injected
// gateways, `authz waypoint/NAME` for every waypoint,
// each through Main as a user would, and returns the union of their diagnostics. Hosts outside a client's scope are not asked about.
func answersUnion(t *testing.T, dir string) checktest.Union {
	t.Helper()
	snap, err := source.LoadFiles([]string{dir}, "default")
	if err != nil {
		t.Fatal(err)
	}
	ix := index.Build(snap)
	var hosts []string
	for _, s := range ix.Services() {
		hosts = append(hosts, s.Hostname)
	}
	hosts = slices.Compact(hosts)
	out := checktest.Union{}
	for _, c := range check.Clients(snap, nil) {
		for _, h := range hosts {
			// --allow-partial: a scenario's object skipped as malformed is part of the answer.
			args := []string{"cluster", h, "-n", c.Namespace, "-A", "-f", dir, "-o", "json", "--allow-partial"}
			if c.Ref.Kind == "Pod" {
				args = append(args, "--from", "pod/"+c.Ref.Name)
			}
			r := runMain(t, "", args...)
			if r.code != ExitOK {
				t.Fatalf("%s: %v\n%s", dir, args, r)
			}
			var res explain.Result
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
				t.Fatalf("%s: %v: %v", dir, args, err)
			}
			if res.Subject.Resource == nil {
				continue // outside the client's scope
			}
			for _, d := range res.Diagnostics {
				out.Add(d, res.Subject.Host, c.Ref.String(), "")
			}
		}
	}
	for _, pod := range snap.Pods {
		if !sidecarauthz.HasSidecar(pod) && !ztunnelauthz.Ambient(snap, pod) {
			continue
		}
		if typ, _ := model.ProxyType(pod); typ == model.ProxyWaypoint || typ == model.ProxyRouter && sidecarauthz.HasSidecar(pod) {
			continue // authz answers a waypoint's pod with its Gateway's, an injected gateway's with an error
		}
		args := []string{"authz", "pod/" + pod.Name, "-n", pod.Namespace, "-f", dir, "-o", "json", "--allow-partial"}
		r := runMain(t, "", args...)
		if r.code != ExitOK {
			t.Fatalf("%s: %v\n%s", dir, args, r)
		}
		var res explain.Result
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
			t.Fatalf("%s: %v: %v", dir, args, err)
		}
		for _, d := range res.Diagnostics {
			out.Add(d, "", "", "Pod "+pod.Namespace+"/"+pod.Name)
		}
	}
	for _, gw := range snap.Gateways {
		if string(gw.Spec.GatewayClassName) != waypointauthz.ClassName {
			continue
		}
		args := []string{"authz", "waypoint/" + gw.Name, "-n", gw.Namespace, "-f", dir, "-o", "json", "--allow-partial"}
		r := runMain(t, "", args...)
		if r.code != ExitOK {
			t.Fatalf("%s: %v\n%s", dir, args, r)
		}
		var res explain.Result
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
			t.Fatalf("%s: %v: %v", dir, args, err)
		}
		for _, d := range res.Diagnostics {
			out.AddWaypoint(d, "Gateway "+gw.Namespace+"/"+gw.Name)
		}
	}
	return out
}

// TestCheckEqualsUnionOfAnswers proves on every scenario folder that `check` finds exactly
// what the cluster and authz commands report: every host from every client, every pod with a
// sidecar, every ambient pod, every waypoint.
func TestCheckEqualsUnionOfAnswers(t *testing.T) {
	t.Chdir(repoRoot(t))
	var dirs []string
	for _, kind := range []string{"cluster", "authz", "sidecar", "waypoint"} {
		dirs = append(dirs, scenarioDirs(t, kind)...)
	}
	dirs = append(dirs, "testdata/examples/bookinfo", "testdata/examples/ambient", "testdata/examples/sidecar", "testdata/examples/waypoint")
	findings, byPrefix := 0, map[string]int{}
	for _, dir := range dirs {
		r := runMain(t, "", "check", "-f", dir, "-o", "json", "--fail-on", "never", "--allow-partial")
		if r.code != ExitOK {
			t.Fatalf("%s: %s", dir, r)
		}
		var rep explain.CheckReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if rep.Kind != explain.KindCheckReport || rep.APIVersion != explain.APIVersion {
			t.Fatalf("%s: document %s %s", dir, rep.APIVersion, rep.Kind)
		}
		findings += len(rep.Findings)
		for _, f := range rep.Findings {
			byPrefix[f.ID[:1]]++
		}
		checktest.Compare(t, dir, &rep, answersUnion(t, dir))
	}
	for _, p := range []string{"D", "A", "S", "W"} {
		if byPrefix[p] == 0 {
			t.Errorf("no scenario has a %s finding: the comparison proves nothing for them", p)
		}
	}
	t.Logf("%d scenario folders, %d findings %v", len(dirs), findings, byPrefix)
}

// A gateway's pod is a client of its own kind: check explains the hosts from it as `cluster
// --from` does, as istiod builds a router's clusters. In the folder, a DestinationRule without
// a workloadSelector in the gateway's namespace sets tls.credentialName: sidecars ignore it
// (D20, for the namespace's default sidecar only), the gateway uses it; both originate TLS to
// in-mesh endpoints (D19, the gateway's pod listed apart since its answer differs).
func TestCheckExplainsHostsFromGateways(t *testing.T) {
	t.Chdir(repoRoot(t))
	const gateway = "Pod istio-ingress/istio-ingressgateway-7c9d8f6b5-x2k4p"
	rep := checkReport(t, "-f", "testdata/scenarios/cluster/gw04-gateway-credentialname")
	if rep.Scope.Gateways != 1 {
		t.Errorf("scope %+v: want the gateway's pod among the clients", rep.Scope)
	}
	clients := map[string][]string{}
	for _, f := range rep.Findings {
		clients[f.ID] = append(clients[f.ID], f.Clients...)
	}
	if !slices.Equal(clients["D20"], []string{"Namespace istio-ingress"}) {
		t.Errorf("D20 clients %q, want the namespace's default sidecar alone (a gateway uses credentialName)", clients["D20"])
	}
	if !slices.Contains(clients["D19"], gateway) || !slices.Contains(clients["D19"], "Namespace istio-ingress") {
		t.Errorf("D19 clients %q, want the default sidecar and the gateway's pod", clients["D19"])
	}
}

// gatewaysApartYAML adds to cluster/gw04 a second gateway (an egress gateway's pod, other
// labels), a workloadSelector DestinationRule that selects the ingress gateway only, and a
// sidecar in the gateways' namespace, so the namespace's clients are a sidecar class and two
// router classes set apart by the rule's labels.
const gatewaysApartYAML = `apiVersion: v1
kind: Pod
metadata:
  name: istio-egressgateway-5b8c9d7f4-q9w2e
  namespace: istio-ingress
  labels:
    app: istio-egressgateway
    istio: egressgateway
spec:
  serviceAccountName: istio-egressgateway
  containers:
  - name: istio-proxy
    image: docker.io/istio/proxyv2:1.28.0
    args: ["proxy", "router", "--domain", "$(POD_NAMESPACE).svc.cluster.local"]
status:
  podIP: 10.244.3.6
---
apiVersion: v1
kind: Pod
metadata:
  name: tools-6d5c4b3a2-z8x7c
  namespace: istio-ingress
  labels:
    app: tools
    istio: ingressgateway
  annotations:
    sidecar.istio.io/status: '{"containers":["istio-proxy"],"initContainers":["istio-init"]}'
spec:
  containers:
  - name: app
    image: registry.example.com/tools:1.0
  - name: istio-proxy
    image: docker.io/istio/proxyv2:1.28.0
status:
  podIP: 10.244.3.7
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata:
  name: reviews-ingress
  namespace: istio-ingress
  creationTimestamp: "2026-01-02T00:00:00Z"
spec:
  host: reviews.bookinfo.svc.cluster.local
  workloadSelector:
    matchLabels:
      istio: ingressgateway
  trafficPolicy:
    connectionPool:
      tcp:
        maxConnections: 10
`

// Gateways in one namespace with a workloadSelector DestinationRule that selects only some of
// its proxies: check splits the routers by the rule's labels, keeps them apart from the
// sidecar the rule also selects, and finds exactly what `cluster --from` reports for each.
func TestCheckGatewaysSetApartBySelectors(t *testing.T) {
	t.Chdir(repoRoot(t))
	dir := scenarioWith(t, "testdata/scenarios/cluster/gw04-gateway-credentialname", "gateways-apart.yaml", gatewaysApartYAML)
	rep := checkReport(t, "-f", dir)
	// bookinfo's default and pod; istio-ingress's default (with the sidecar pod its labels
	// set apart: 2 classes) and its two gateways (2 classes).
	if rep.Scope.Gateways != 2 || rep.Scope.ClientClasses < 4 {
		t.Errorf("scope %+v: want 2 gateway pods in classes of their own", rep.Scope)
	}
	checktest.Compare(t, dir, &rep, answersUnion(t, dir))
	named := map[string]bool{}
	for _, f := range rep.Findings {
		for _, c := range f.Clients {
			named[c] = true
		}
	}
	for _, c := range []string{"Pod istio-ingress/istio-ingressgateway-7c9d8f6b5-x2k4p", "Pod istio-ingress/istio-egressgateway-5b8c9d7f4-q9w2e"} {
		if !named[c] {
			t.Errorf("no finding names gateway %s (the selected one gets D5/D6, both D19 without D20)", c)
		}
	}
}

// TestCheckWaypointScope checks that a check of a waypoint's namespace reports for the waypoint
// what a check of every namespace reports for it, in every waypoint scenario folder: the
// policies of the namespaces it serves (read only once a first read shows them) included.
func TestCheckWaypointScope(t *testing.T) {
	t.Chdir(repoRoot(t))
	dirs := append(scenarioDirs(t, "waypoint"), "testdata/examples/waypoint", crossNamespaceWaypoint(t))
	checked := 0
	for _, dir := range dirs {
		all := checkReport(t, "-f", dir)
		byNS := map[string][]string{}
		for _, f := range all.Findings {
			for _, w := range f.Waypoints {
				ns, _, _ := strings.Cut(strings.TrimPrefix(w, "Gateway "), "/")
				byNS[ns] = append(byNS[ns], f.ID+" "+f.Message+" "+w)
			}
		}
		for ns, want := range byNS {
			var got []string
			for _, f := range checkReport(t, "-f", dir, "-n", ns).Findings {
				for _, w := range f.Waypoints {
					got = append(got, f.ID+" "+f.Message+" "+w)
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s: check -n %s reports for its waypoints\n  %q\nwant (check of every namespace)\n  %q", dir, ns, got, want)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no waypoint finding in any waypoint scenario: the comparison proves nothing")
	}
}

// crossNamespaceWaypoint is a folder where the waypoint app/waypoint serves the Service
// other/details, and a selector policy of namespace other is one the waypoint ignores (W01): a
// check of namespace app must read the policies of namespace other to report it.
func crossNamespaceWaypoint(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := "testdata/scenarios/waypoint/use-waypoint-namespace-allowed"
	files, err := filepath.Glob(filepath.Join(src, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: %v", src, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const policy = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata:
  name: details-by-selector
  namespace: other
spec:
  selector:
    matchLabels:
      app: details
  action: DENY
  rules:
  - from:
    - source:
        namespaces: ["untrusted"]
`
	if err := os.WriteFile(filepath.Join(dir, "other-policies.yaml"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := checkReport(t, "-f", dir, "-n", "app")
	if !slices.ContainsFunc(rep.Findings, func(f explain.Finding) bool {
		return f.ID == "W01" && f.Resource != nil && f.Resource.Namespace == "other" && slices.Contains(f.Waypoints, "Gateway app/waypoint")
	}) {
		t.Errorf("check -n app does not report W01 for the selector policy of namespace other that waypoint app/waypoint ignores: %+v", rep.Findings)
	}
	return dir
}

// checkReport runs check -o json with args and returns its report.
func checkReport(t *testing.T, args ...string) explain.CheckReport {
	t.Helper()
	r := runMain(t, "", append([]string{"check", "-o", "json", "--fail-on", "never", "--allow-partial"}, args...)...)
	if r.code != ExitOK {
		t.Fatalf("check %v: %s", args, r)
	}
	var rep explain.CheckReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("check %v: %v", args, err)
	}
	return rep
}

// TestCheckExitCodes runs check through Main: 79 when a finding at or above --fail-on is
// found, 0 when none is (or all are silenced), 64 for a wrong command line.
func TestCheckExitCodes(t *testing.T) {
	t.Chdir(repoRoot(t))
	bookinfo, ambient := "testdata/examples/bookinfo", "testdata/examples/ambient"
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"-f", bookinfo}, ExitFindings},                                            // D19 is an error
		{[]string{"-f", bookinfo, "--fail-on", "never"}, ExitOK},                            // never fails
		{[]string{"-f", bookinfo, "--ignore", "D19"}, ExitOK},                               // the error silenced, warnings left
		{[]string{"-f", bookinfo, "--ignore", "d19", "--fail-on", "warning"}, ExitFindings}, // the warnings fail
		{[]string{"-f", ambient}, ExitOK},                                                   // warnings only
		{[]string{"-f", ambient, "--fail-on", "warning"}, ExitFindings},
		{[]string{"-f", ambient, "--fail-on", "info"}, ExitFindings},
		{[]string{"-f", ambient, "--fail-on", "warning", "--ignore", "A07,A08"}, ExitOK},
		{[]string{"-f", ambient, "-n", "bar"}, ExitOK}, // nothing in that namespace
		{[]string{"-f", bookinfo, "--fail-on", "fatal"}, ExitUsage},
		{[]string{"-f", bookinfo, "--diff"}, ExitUsage},
		{[]string{"-f", bookinfo, "-A", "-n", "bookinfo"}, ExitUsage},
		{[]string{"-f", bookinfo, "-o", "envoy"}, ExitUsage},
		{[]string{"-f", bookinfo, "extra"}, ExitUsage},
		{[]string{"-f", bookinfo, "--ignore", "D99"}, ExitUsage}, // not in the catalogue
	} {
		r := runMain(t, "", append([]string{"check"}, c.args...)...)
		if r.code != c.want {
			t.Errorf("check %v: exit %d, want %d\n%s", c.args, r.code, c.want, r)
		}
		if c.want == ExitFindings && !strings.Contains(r.stderr, "check found") {
			t.Errorf("check %v: stderr does not say why it failed:\n%s", c.args, r.stderr)
		}
	}
}

// TestCheckIgnoreAnnotation silences a finding with the annotation on the object it names;
// -o wide shows the reason with the annotation's file and line.
func TestCheckIgnoreAnnotation(t *testing.T) {
	t.Chdir(repoRoot(t))
	dir := t.TempDir()
	for _, name := range []string{"destinationrules.yaml", "mesh.yaml", "namespace.yaml", "peerauthentication.yaml", "pods.yaml", "services.yaml", "virtualservices.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata/examples/bookinfo", name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "destinationrules.yaml" {
			data = []byte(strings.Replace(string(data), "  name: ratings\n", "  name: ratings\n  annotations:\n    mesh-explain.io/ignore: \"D19\"\n", 1))
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := runMain(t, "", "check", "-f", dir)
	if r.code != ExitOK || !strings.Contains(strings.Join(strings.Fields(r.stdout), " "), "(1 silenced; -o wide lists them)") {
		t.Fatalf("the annotated D19 still fails the check:\n%s", r)
	}
	r = runMain(t, "", "check", "-f", dir, "-o", "json")
	var rep explain.CheckReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	want := "annotation mesh-explain.io/ignore: D19 on DestinationRule bookinfo/ratings (" + filepath.Join(dir, "destinationrules.yaml") + ":40:5)"
	found := false
	for _, f := range rep.Findings {
		if f.ID == "D19" {
			found = true
			if f.Ignored != want || len(f.Hosts) != 1 {
				t.Errorf("D19 silenced as %q with hosts %v, want %q", f.Ignored, f.Hosts, want)
			}
		}
	}
	if !found {
		t.Error("the silenced D19 is not in the document")
	}
	r = runMain(t, "", "check", "-f", dir, "-o", "wide")
	if !strings.Contains(r.stdout, "silenced: annotation mesh-explain.io/ignore: D19") {
		t.Errorf("-o wide does not give the reason:\n%s", r)
	}
}

// TestCheckSARIFFromFiles validates the SARIF of the bookinfo example against the SARIF 2.1.0
// schema and checks the result is at the file and line of the DestinationRule to change.
func TestCheckSARIFFromFiles(t *testing.T) {
	t.Chdir(repoRoot(t))
	r := runMain(t, "", "check", "-f", "testdata/examples/bookinfo", "-o", "sarif")
	if r.code != ExitFindings {
		t.Fatalf("want exit %d:\n%s", ExitFindings, r)
	}
	checktest.ValidateSARIF(t, checktest.SARIFSchema(t), []byte(r.stdout))
	for _, want := range []string{`"ruleId": "D19"`, `"uri": "testdata/examples/bookinfo/destinationrules.yaml"`, `"startLine": 45`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("SARIF lacks %s:\n%s", want, r.stdout)
		}
	}
}

// TestCheckLocatesFields checks that the findings of the bookinfo example point at the field to
// change, not at the start of the DestinationRule: the tls.mode of ratings (D19), the subset no
// route uses (D9) and the portLevelSettings entry that drops the top-level blocks (D14).
func TestCheckLocatesFields(t *testing.T) {
	t.Chdir(repoRoot(t))
	r := runMain(t, "", "check", "-f", "testdata/examples/bookinfo", "-o", "json", "--fail-on", "never")
	if r.code != ExitOK {
		t.Fatal(r)
	}
	var rep explain.CheckReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		field string
		line  int
	}{
		"D19": {"spec.trafficPolicy.tls.mode", 45},
		"D9":  {"spec.subsets[name=v3]", 32},
		"D14": {"spec.trafficPolicy.portLevelSettings[port=9080]", 19},
	}
	for _, f := range rep.Findings {
		w, ok := want[f.ID]
		if !ok {
			continue
		}
		delete(want, f.ID)
		if f.Field != w.field || f.Position == nil || f.Position.Line != w.line ||
			f.Position.File != filepath.Join("testdata/examples/bookinfo", "destinationrules.yaml") {
			t.Errorf("%s at %s %+v, want %s at destinationrules.yaml:%d", f.ID, f.Field, f.Position, w.field, w.line)
		}
	}
	for id := range want {
		t.Errorf("no %s finding:\n%s", id, r.stdout)
	}
}
