package meshgen

import (
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func objectsByKey(t *testing.T, c Config) map[string]string {
	t.Helper()
	m, err := Generate(c)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, o := range m.Objects() {
		js, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := out[Key(o)]; dup {
			t.Fatalf("%s is generated twice", Key(o))
		}
		out[Key(o)] = string(js)
	}
	return out
}

func TestSameSeedSameMesh(t *testing.T) {
	a := objectsByKey(t, Config{Seed: 7, Sizes: Scaled(0.02)})
	b := objectsByKey(t, Config{Seed: 7, Sizes: Scaled(0.02)})
	if len(a) != len(b) {
		t.Fatalf("%d objects, then %d", len(a), len(b))
	}
	for k, v := range a {
		if b[k] != v {
			t.Errorf("%s differs between two runs with the same seed", k)
		}
	}
	c := objectsByKey(t, Config{Seed: 8, Sizes: Scaled(0.02)})
	same := 0
	for k, v := range a {
		if c[k] == v {
			same++
		}
	}
	if same == len(a) {
		t.Errorf("another seed gives the same mesh")
	}
}

// Growing a cluster from one scale to the next (meshgen load --since-scale) only creates
// objects: every object of the smaller mesh is in the larger one, unchanged.
func TestSmallerMeshIsAPrefix(t *testing.T) {
	small := objectsByKey(t, Config{Seed: 1, Sizes: Scaled(0.025)})
	large := objectsByKey(t, Config{Seed: 1, Sizes: Scaled(0.05)})
	for k, v := range small {
		w, ok := large[k]
		switch {
		case !ok:
			t.Errorf("%s is in the smaller mesh only", k)
		case w != v:
			t.Errorf("%s changes when the mesh grows", k)
		}
	}
	if len(large) <= len(small) {
		t.Errorf("the larger mesh has %d objects, the smaller %d", len(large), len(small))
	}
}

func TestSizes(t *testing.T) {
	m, err := Generate(Config{Seed: 1, Sizes: Scaled(0.01)})
	if err != nil {
		t.Fatal(err)
	}
	s := m.Config.Sizes
	if len(m.Nodes) != s.Nodes() {
		t.Errorf("%d Nodes, want %d", len(m.Nodes), s.Nodes())
	}
	got := Sizes{
		Namespaces: len(m.Namespaces) - 1, Services: len(m.Services), Pods: len(m.Pods),
		DestinationRules: len(m.DestinationRules), VirtualServices: len(m.VirtualServices),
		PeerAuthentications: len(m.PeerAuthentications), AuthorizationPolicies: len(m.AuthorizationPolicies),
		Waypoints: len(m.Waypoints), WaypointPolicies: len(m.WaypointPolicies),
	}
	if len(m.WaypointServices) != s.Waypoints || len(m.WaypointPods) != s.Waypoints {
		t.Errorf("%d waypoint Services and %d waypoint pods for %d waypoints", len(m.WaypointServices), len(m.WaypointPods), s.Waypoints)
	}
	if got != s {
		t.Errorf("generated %+v, want %+v", got, s)
	}
	if len(m.Objects()) != s.Total() {
		t.Errorf("%d objects, Total says %d", len(m.Objects()), s.Total())
	}
	if err := (Sizes{Namespaces: 2, Services: 10, Pods: 20, Waypoints: 1}).Validate(); err == nil {
		t.Errorf("two namespaces are accepted, but the queries need three")
	}
	if err := (Sizes{Namespaces: 3, Services: 10, Pods: 20}).Validate(); err == nil {
		t.Errorf("no waypoint is accepted, but the queries need one")
	}
	if err := (Sizes{Namespaces: 5, Services: 10, Pods: 20, Waypoints: 2}).Validate(); err == nil {
		t.Errorf("two waypoints in five namespaces are accepted, but only one of them is ambient")
	}
	if err := (Sizes{Namespaces: 7, Services: 10, Pods: 20, Waypoints: 2}).Validate(); err != nil {
		t.Errorf("two waypoints in seven namespaces (two ambient): %v", err)
	}
}

// The queries name objects of the mesh: the host's Service, the client pod in the client
// namespace, and an ambient pod for authz.
func TestQueriesNameGeneratedObjects(t *testing.T) {
	m, err := Generate(Config{Seed: 3, Sizes: Scaled(0.01)})
	if err != nil {
		t.Fatal(err)
	}
	q := m.Queries()
	pods := map[string]*corev1.Pod{}
	for _, p := range m.Pods {
		pods[p.Namespace+"/"+p.Name] = p
	}
	if pods[q.ClientNamespace+"/"+q.ClientPod] == nil {
		t.Errorf("no client pod %s/%s", q.ClientNamespace, q.ClientPod)
	}
	if pods[q.AuthzNamespace+"/"+q.AuthzPod] == nil {
		t.Errorf("no authz pod %s/%s", q.AuthzNamespace, q.AuthzPod)
	}
	for _, ns := range m.Namespaces {
		if ns.Name == q.AuthzNamespace && ns.Labels["istio.io/dataplane-mode"] != "ambient" {
			t.Errorf("the authz pod's namespace %s is not ambient", ns.Name)
		}
	}
	host := false
	for _, s := range m.Services {
		if s.Name+"."+s.Namespace+".svc."+DomainSuffix == q.Host {
			host = true
		}
	}
	if !host {
		t.Errorf("no Service for host %s", q.Host)
	}
	if !reflect.DeepEqual(QueriesFor(m.Config), q) {
		t.Errorf("QueriesFor differs from the generated mesh's queries")
	}
	nodes := map[string]bool{}
	for _, n := range m.Nodes {
		nodes[n.Name] = true
	}
	for _, p := range m.Pods {
		if !nodes[p.Spec.NodeName] {
			t.Fatalf("pod %s/%s runs on node %q, which is not generated", p.Namespace, p.Name, p.Spec.NodeName)
		}
	}
	for _, n := range q.ClusterNodes {
		if !nodes[n] {
			t.Errorf("the cluster query's node %s is not generated", n)
		}
	}
}

// Every waypoint is a programmed Gateway of class istio-waypoint in an ambient namespace, with
// its Service and pod; every Service a waypoint policy targets exists and binds to that
// namespace's waypoint, at every scale; and the waypoint of the query serves several Services
// and has several policies attached at the benchmark's small scale.
func TestWaypoints(t *testing.T) {
	for _, f := range []float64{0.004, 0.01, 0.025, 0.051, 0.1, 0.137, 0.25} {
		m, err := Generate(Config{Seed: 1, Sizes: Scaled(f)})
		if err != nil {
			t.Fatal(err)
		}
		namespaces := map[string]*corev1.Namespace{}
		for _, ns := range m.Namespaces {
			namespaces[ns.Name] = ns
		}
		services := map[string]*corev1.Service{}
		for _, s := range m.Services {
			services[s.Namespace+"/"+s.Name] = s
		}
		for i, gw := range m.Waypoints {
			ns := namespaces[gw.Namespace]
			if ns == nil || ns.Labels["istio.io/dataplane-mode"] != "ambient" {
				t.Errorf("scale %g: waypoint %s/%s is not in an ambient namespace", f, gw.Namespace, gw.Name)
			}
			if gw.Spec.GatewayClassName != WaypointClass || len(gw.Status.Addresses) != 1 {
				t.Errorf("scale %g: waypoint %s/%s: class %q, %d addresses", f, gw.Namespace, gw.Name, gw.Spec.GatewayClassName, len(gw.Status.Addresses))
			}
			svc, pod := m.WaypointServices[i], m.WaypointPods[i]
			if svc.Namespace != gw.Namespace || svc.Name != gw.Name || svc.Spec.ClusterIP != gw.Status.Addresses[0].Value {
				t.Errorf("scale %g: waypoint %s/%s has Service %s/%s at %s", f, gw.Namespace, gw.Name, svc.Namespace, svc.Name, svc.Spec.ClusterIP)
			}
			if pod.Namespace != gw.Namespace || pod.Labels[labelGatewayName] != gw.Name {
				t.Errorf("scale %g: waypoint %s/%s has pod %s/%s with gateway-name %q", f, gw.Namespace, gw.Name, pod.Namespace, pod.Name, pod.Labels[labelGatewayName])
			}
		}
		for _, ap := range m.WaypointPolicies {
			if len(ap.Spec.TargetRefs) == 0 {
				t.Errorf("scale %g: policy %s/%s has no targetRefs", f, ap.Namespace, ap.Name)
			}
			for _, ref := range ap.Spec.TargetRefs {
				if ref.Kind != "Service" {
					continue
				}
				s := services[ap.Namespace+"/"+ref.Name]
				switch {
				case s == nil:
					t.Errorf("scale %g: policy %s/%s targets Service %s, which is not generated", f, ap.Namespace, ap.Name, ref.Name)
				case s.Labels[LabelUseWaypoint] != WaypointName:
					t.Errorf("scale %g: policy %s/%s targets Service %s, which does not bind to the waypoint", f, ap.Namespace, ap.Name, ref.Name)
				}
			}
		}
		q := m.Queries()
		if len(m.Waypoints) == 0 || m.Waypoints[0].Namespace != q.WaypointNamespace || m.Waypoints[0].Name != q.WaypointName {
			t.Errorf("scale %g: the query's waypoint %s/%s is not the first one generated", f, q.WaypointNamespace, q.WaypointName)
		}
		if s := services[q.AuthzNamespace+"/"+ServiceName(2)]; s == nil || s.Labels[LabelUseWaypoint] != "" {
			t.Errorf("scale %g: the authz pod's Service is bound to a waypoint, or missing", f)
		}
		if f != 0.1 {
			continue
		}
		bound, attached := 0, 0
		for _, s := range m.Services {
			if s.Namespace == q.WaypointNamespace && s.Labels[LabelUseWaypoint] == q.WaypointName {
				bound++
			}
		}
		for _, ap := range m.WaypointPolicies {
			if ap.Namespace == q.WaypointNamespace {
				attached++
			}
		}
		if bound < 3 || attached < 4 {
			t.Errorf("scale 0.1: the query's waypoint serves %d Services and has %d policies; want several of each", bound, attached)
		}
	}
}
