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
	}
	if got != s {
		t.Errorf("generated %+v, want %+v", got, s)
	}
	if len(m.Objects()) != s.Total() {
		t.Errorf("%d objects, Total says %d", len(m.Objects()), s.Total())
	}
	if err := (Sizes{Namespaces: 2, Services: 10, Pods: 20}).Validate(); err == nil {
		t.Errorf("two namespaces are accepted, but the queries need three")
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
