package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
)

// proxyPodsYAML are the pods of namespace app whose istio-proxy is not a sidecar: an instance
// of the waypoint of testdata/scenarios/waypoint/bind-service (as istiod's deployment controller
// makes them, waypoint.yaml), an injected ingress gateway (the gateway injection template: the
// sidecar.istio.io/status annotation, istio-proxy running as a router), and the pod of a
// Gateway of class istio (kube-gateway.yaml: a router without the annotation, which ztunnel
// captures in the ambient namespace app).
const proxyPodsYAML = `apiVersion: v1
kind: Pod
metadata:
  name: waypoint-5d8f7c6b9-x2x7k
  namespace: app
  labels:
    gateway.networking.k8s.io/gateway-name: waypoint
    gateway.istio.io/managed: istio.io-mesh-controller
    istio.io/dataplane-mode: none
spec:
  serviceAccountName: waypoint
  containers:
  - name: istio-proxy
    image: docker.io/istio/proxyv2
    args: [proxy, waypoint, --domain, $(POD_NAMESPACE).svc.cluster.local]
status:
  podIP: 10.1.0.90
---
apiVersion: v1
kind: Pod
metadata:
  name: ingress-7c9d8b5f4-abcde
  namespace: app
  labels:
    app: ingress
    istio: ingressgateway
  annotations:
    inject.istio.io/templates: gateway
    sidecar.istio.io/status: '{"containers":["istio-proxy"],"revision":"default"}'
spec:
  serviceAccountName: ingress
  containers:
  - name: istio-proxy
    image: auto
    args: [proxy, router, --domain, $(POD_NAMESPACE).svc.cluster.local]
status:
  podIP: 10.1.0.91
---
apiVersion: v1
kind: Pod
metadata:
  name: edge-istio-6b9c7d5f8-k2m4q
  namespace: app
  labels:
    gateway.networking.k8s.io/gateway-name: edge
    gateway.networking.k8s.io/gateway-class-name: istio
    gateway.istio.io/managed: istio.io-gateway-controller
spec:
  serviceAccountName: edge-istio
  containers:
  - name: istio-proxy
    image: auto
    args: [proxy, router, --domain, $(POD_NAMESPACE).svc.cluster.local]
status:
  podIP: 10.1.0.92
`

// proxyPodsDir is the bind-service scenario with the proxy pods added.
func proxyPodsDir(t *testing.T) string {
	t.Helper()
	t.Chdir(repoRoot(t))
	return scenarioWith(t, "testdata/scenarios/waypoint/bind-service", "proxies.yaml", proxyPodsYAML)
}

// scenarioWith is a copy of the YAML files of the scenario folder src (relative to the
// working directory) in a temporary directory, with the file name holding extra added.
func scenarioWith(t *testing.T, src, name, extra string) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(extra), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A waypoint's pod is answered as the waypoint: the same output as authz waypoint/NAME, with a
// note on stderr.
func TestAuthzWaypointPodAnswersTheWaypoint(t *testing.T) {
	dir := proxyPodsDir(t)
	for _, format := range []string{"table", "json", "envoy"} {
		want := runMain(t, "", "authz", "waypoint/waypoint", "-n", "app", "-f", dir, "-o", format, "--color", "never")
		if want.code != ExitOK {
			t.Fatalf("authz waypoint/waypoint: %s", want)
		}
		got := runMain(t, "", "authz", "pod/waypoint-5d8f7c6b9-x2x7k", "-n", "app", "-f", dir, "-o", format, "--color", "never")
		if got.code != ExitOK || got.stdout != want.stdout {
			t.Errorf("-o %s: authz pod/<waypoint pod> is not the waypoint's answer:\n%s\nwant stdout\n%s", format, got, want.stdout)
		}
		if !strings.Contains(got.stderr, "pod app/waypoint-5d8f7c6b9-x2x7k is an instance of waypoint app/waypoint (spec.containers[0].args[1]): answering authz waypoint/waypoint -n app") {
			t.Errorf("-o %s: no note that the waypoint answers: %q", format, got.stderr)
		}
	}
	// -o ztunnel is not an answer a waypoint has: the error says what the pod is.
	r := runMain(t, "", "authz", "pod/waypoint-5d8f7c6b9-x2x7k", "-n", "app", "-f", dir, "-o", "ztunnel")
	if r.code != ExitError || !strings.Contains(r.stderr, "is an instance of waypoint app/waypoint (spec.containers[0].args[1]; label gateway.networking.k8s.io/gateway-name): explain it with authz waypoint/waypoint -n app") {
		t.Errorf("authz pod/<waypoint pod> -o ztunnel: %s", r)
	}
}

// A gateway's pod has neither a ztunnel nor a sidecar answer: naming it alone is an error that
// says what it is; beside workloads it is left out with a warning.
func TestAuthzGatewayPodIsNotAWorkload(t *testing.T) {
	dir := proxyPodsDir(t)
	r := runMain(t, "", "authz", "pod/ingress-7c9d8b5f4-abcde", "-n", "app", "-f", dir)
	if r.code != ExitError || r.stdout != "" ||
		!strings.Contains(r.stderr, "cannot explain 1 pod with authz: pod app/ingress-7c9d8b5f4-abcde is an Istio gateway: its istio-proxy runs as a router (spec.containers[0].args[1])") {
		t.Errorf("authz pod/<gateway pod>: %s", r)
	}
	// Every pod of the namespace: the workloads are answered, the gateway and the waypoint
	// left out, each named.
	r = runMain(t, "", "authz", "-l", "!none", "-n", "app", "-f", dir, "-o", "json")
	if r.code != ExitOK {
		t.Fatalf("authz -l '!none': %s", r)
	}
	for _, s := range []string{"left out: pod app/ingress-7c9d8b5f4-abcde is an Istio gateway", "left out: pod app/waypoint-5d8f7c6b9-x2x7k is an instance of waypoint app/waypoint", `"workload": "pod/reviews-v1`} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("authz -l '!none': no %q in\n%s", s, r.stdout)
		}
	}
	for _, s := range []string{`"workload": "pod/ingress-7c9d8b5f4-abcde"`, `"workload": "pod/waypoint-5d8f7c6b9-x2x7k"`} {
		if strings.Contains(r.stdout, s) {
			t.Errorf("authz -l '!none': %s answered", s)
		}
	}
}

// A gateway ztunnel captures (a Gateway of class istio deployed in an ambient namespace) keeps
// the ztunnel answer, what ztunnel enforces on its inbound traffic, with a warning that its
// listeners' own RBAC is not explained, and without the advice to inject a sidecar that a bare
// istio-proxy container gets.
func TestAuthzCapturedGatewayPodGetsZtunnelsAnswer(t *testing.T) {
	dir := proxyPodsDir(t)
	r := runMain(t, "", "authz", "pod/edge-istio-6b9c7d5f8-k2m4q", "-n", "app", "-f", dir, "-o", "json")
	if r.code != ExitOK {
		t.Fatalf("authz pod/<captured gateway pod>: %s", r)
	}
	var res explain.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if res.Subject.Workload != "pod/edge-istio-6b9c7d5f8-k2m4q" || !strings.Contains(r.stdout, "captured by ztunnel") {
		t.Errorf("not the ztunnel answer of the pod:\n%s", r.stdout)
	}
	if !slices.ContainsFunc(res.Warnings, func(w string) bool {
		return strings.Contains(w, "is an Istio gateway (its istio-proxy runs as a router: spec.containers[0].args[1]): this is what ztunnel enforces")
	}) {
		t.Errorf("no warning that only ztunnel's part is answered: %q", res.Warnings)
	}
	for _, d := range res.Diagnostics {
		if strings.Contains(d.Message, "no sidecar.istio.io/status annotation") {
			t.Errorf("a gateway's pod told to inject its sidecar: %+v", d)
		}
	}
}

// check explains the hosts from a gateway's pods as `cluster --from` does (clients of their
// own kind), answers a captured gateway as an ambient workload too, and a waypoint's pod
// through its Gateway. cluster --from answers for the gateway and refuses the waypoint's pod.
func TestCheckProxyPods(t *testing.T) {
	dir := proxyPodsDir(t)
	r := runMain(t, "", "check", "-f", dir, "-o", "json", "--fail-on", "never")
	if r.code != ExitOK {
		t.Fatalf("check: %s", r)
	}
	var rep explain.CheckReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	// The clients: the namespace default and the two gateways' pods, one class of routers.
	if rep.Scope.Gateways != 2 || rep.Scope.Clients != 3 || rep.Scope.ClientClasses != 2 || rep.Scope.Waypoints != 1 || rep.Scope.DataPlanes["ambient"] != 3 {
		t.Errorf("scope = %+v, want 2 gateway pods among 3 clients in 2 classes (the captured one also answered with the 2 ambient workloads) and 1 waypoint", rep.Scope)
	}
	if strings.Contains(r.stdout, "waypoint-5d8f7c6b9-x2x7k") {
		t.Errorf("check answered for the waypoint's pod:\n%s", r.stdout)
	}
	if r := runMain(t, "", "check", "-f", dir, "--fail-on", "never"); !strings.Contains(r.stdout, "from 3 clients (1 sidecar, 2 gateway pods; 2 classes), 3 workloads (3 ambient) and 1 waypoint: ") {
		t.Errorf("the summary does not count the gateway pods among the clients:\n%s", r)
	}
	// cluster --from a gateway's pod answers for the gateway; a waypoint's is refused.
	if r := runMain(t, "", "cluster", "reviews", "-n", "app", "--from", "pod/ingress-7c9d8b5f4-abcde", "-f", dir); r.code != ExitOK ||
		!strings.Contains(r.stdout, "client proxy:   gateway (router) of pod app/ingress-7c9d8b5f4-abcde") {
		t.Errorf("cluster --from the gateway's pod: %s", r)
	}
	if r := runMain(t, "", "cluster", "reviews", "-n", "app", "--from", "pod/waypoint-5d8f7c6b9-x2x7k", "-f", dir); r.code != ExitError ||
		!strings.Contains(r.stderr, "whose clusters istiod builds otherwise than a client's") {
		t.Errorf("cluster --from the waypoint's pod: %s", r)
	}
}
