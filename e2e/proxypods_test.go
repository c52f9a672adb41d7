package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// proxyPodsYAML are a waypoint's pod and an injected ingress gateway's pod, as istiod's
// deployment controller and the gateway injection template make them: the proxy's type is the
// second argument of its istio-proxy container, which the plugin keeps when it lists or gets
// Pods (it drops the other containers' arguments).
const proxyPodsYAML = `apiVersion: v1
kind: Pod
metadata:
  name: waypoint-5d8f7c6b9-x2x7k
  namespace: gwpods
  labels:
    gateway.networking.k8s.io/gateway-name: waypoint
    istio.io/dataplane-mode: none
spec:
  serviceAccountName: waypoint
  containers:
  - name: istio-proxy
    image: docker.io/istio/proxyv2
    args: [proxy, waypoint, --domain, $(POD_NAMESPACE).svc.cluster.local]
status:
  podIP: 10.1.7.90
---
apiVersion: v1
kind: Pod
metadata:
  name: ingress-7c9d8b5f4-abcde
  namespace: gwpods
  labels:
    app: ingress
  annotations:
    inject.istio.io/templates: gateway
    sidecar.istio.io/status: '{"containers":["istio-proxy"],"revision":"default"}'
spec:
  serviceAccountName: ingress
  containers:
  - name: app-helper
    image: example.com/helper
    args: [proxy, router]
  - name: istio-proxy
    image: auto
    args: [proxy, router, --domain, $(POD_NAMESPACE).svc.cluster.local]
status:
  podIP: 10.1.7.91
`

// TestProxyPods runs authz and check through kubectl against the API server on the pods of a
// waypoint and of a gateway, read live (a get for pod/NAME, a protobuf list for -l and check):
// the waypoint's pod is answered by its waypoint, as offline; the gateway's is refused by
// authz, and check explains the hosts from it as a client. The scenario is waypoint/bind-service moved to namespace gwpods, its
// waypoint's address moved off the other tests' 10.96.0.100.
func TestProxyPods(t *testing.T) {
	dir := filepath.Join(env.root, "testdata", "scenarios", "waypoint", "bind-service")
	objs, err := readObjects(dir)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := decodeObjects([]byte(proxyPodsYAML))
	if err != nil {
		t.Fatal(err)
	}
	objs = append(objs, pods...)
	for _, o := range objs {
		moveObject(t, o)
	}
	admin(t).apply(t, objs)
	kc := kubeconfig("admin")

	want := runPlugin(kc, "authz", "waypoint/waypoint", "-n", "gwpods")
	mustSucceed(t, want)
	got := runPlugin(kc, "authz", "pod/waypoint-5d8f7c6b9-x2x7k", "-n", "gwpods")
	mustSucceed(t, got)
	if got.stdout != want.stdout || !strings.Contains(got.stderr, "is an instance of waypoint gwpods/waypoint") {
		t.Errorf("authz pod/<waypoint pod> is not the waypoint's answer:\n%s\n%s", got, diff(want.stdout, got.stdout))
	}

	gw := runPlugin(kc, "authz", "pod/ingress-7c9d8b5f4-abcde", "-n", "gwpods")
	if gw.code != 1 || !strings.Contains(gw.stderr, "pod gwpods/ingress-7c9d8b5f4-abcde is an Istio gateway: its istio-proxy runs as a router (spec.containers[1].args[1])") {
		t.Errorf("authz pod/<gateway pod>: want exit 1 naming the router\n%s", gw)
	}
	// Listed in protobuf: the workloads answered, the two proxies left out.
	all := runPlugin(kc, "authz", "-l", "!none", "-n", "gwpods", "-o", "json")
	mustSucceed(t, all)
	for _, s := range []string{"left out: pod gwpods/ingress-7c9d8b5f4-abcde is an Istio gateway", "left out: pod gwpods/waypoint-5d8f7c6b9-x2x7k is an instance of waypoint gwpods/waypoint", `"workload": "pod/reviews-v1"`} {
		if !strings.Contains(all.stdout, s) {
			t.Errorf("authz -l '!none' -n gwpods: no %q\n%s", s, all)
		}
	}

	// cluster --from the gateway's pod answers for the gateway (its type read from the live
	// pod's istio-proxy arguments); from the waypoint's pod it is refused.
	if c := runPlugin(kc, "cluster", "reviews", "-n", "gwpods", "--from", "pod/ingress-7c9d8b5f4-abcde"); c.code != 0 ||
		!strings.Contains(c.stdout, "client proxy:   gateway (router) of pod gwpods/ingress-7c9d8b5f4-abcde") {
		t.Errorf("cluster --from <gateway pod>: want the gateway's clusters\n%s", c)
	}
	if c := runPlugin(kc, "cluster", "reviews", "-n", "gwpods", "--from", "pod/waypoint-5d8f7c6b9-x2x7k"); c.code != 1 ||
		!strings.Contains(c.stderr, "is a waypoint's instance") {
		t.Errorf("cluster --from <waypoint pod>: want exit 1 naming the waypoint\n%s", c)
	}

	live := runPlugin(kc, "check", "-n", "gwpods", "-o", "json", "--fail-on", "never")
	mustSucceed(t, live)
	rep := checkReport(t, live)
	if rep.Scope.Gateways != 1 || rep.Scope.Clients != 2 || rep.Scope.Waypoints != 1 {
		t.Errorf("check -n gwpods: scope %+v, want the gateway's pod among 2 clients, and 1 waypoint", rep.Scope)
	}
	if strings.Contains(live.stdout, "waypoint-5d8f7c6b9-x2x7k") {
		t.Errorf("check -n gwpods answered for the waypoint's pod:\n%s", live.stdout)
	}
}

// moveObject moves a bind-service object to namespace gwpods and its waypoint to 10.96.7.100.
func moveObject(t *testing.T, o *unstructured.Unstructured) {
	t.Helper()
	if o.GetKind() == "Namespace" {
		if o.GetName() == "app" {
			o.SetName("gwpods")
		}
		return
	}
	if o.GetNamespace() == "app" {
		o.SetNamespace("gwpods")
	}
	if ip, ok, _ := unstructured.NestedString(o.Object, "spec", "clusterIP"); ok && ip == "10.96.0.100" {
		if err := unstructured.SetNestedField(o.Object, "10.96.7.100", "spec", "clusterIP"); err != nil {
			t.Fatal(err)
		}
	}
	if addrs, ok, _ := unstructured.NestedSlice(o.Object, "status", "addresses"); ok {
		for _, a := range addrs {
			if m, ok := a.(map[string]any); ok && m["value"] == "10.96.0.100" {
				m["value"] = "10.96.7.100"
			}
		}
		if err := unstructured.SetNestedSlice(o.Object, addrs, "status", "addresses"); err != nil {
			t.Fatal(err)
		}
	}
}
