package index

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
)

func node(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// withNodes adds Nodes to a snapshot built by snapshot().
func withNodes(s *model.Snapshot, nodes ...*corev1.Node) *model.Snapshot {
	s.Nodes = append(s.Nodes, nodes...)
	s.Sort()
	return s
}

var (
	nodeGA = map[string]string{
		"topology.kubernetes.io/region": "us-east1", "topology.kubernetes.io/zone": "us-east1-b",
		"topology.istio.io/subzone": "rack7",
	}
	nodeBeta = map[string]string{
		"failure-domain.beta.kubernetes.io/region": "eu-west1", "failure-domain.beta.kubernetes.io/zone": "eu-west1-c",
	}
)

// TestEndpointLocalityFromNode: a pod endpoint's locality is its locality label, else its Node's
// topology labels (getPodLocality); the pod's own topology.kubernetes.io labels do not count,
// and the endpoint labels carry the locality istiod adds.
func TestEndpointLocalityFromNode(t *testing.T) {
	tests := []struct {
		name       string
		podLabels  map[string]string
		nodeName   string
		nodes      []*corev1.Node
		want       string
		wantLabels map[string]string
	}{
		{
			name: "GA labels and subzone", nodeName: "n1", nodes: []*corev1.Node{node("n1", nodeGA)},
			want: "us-east1/us-east1-b/rack7",
			wantLabels: map[string]string{"topology.kubernetes.io/region": "us-east1", "topology.kubernetes.io/zone": "us-east1-b",
				"topology.istio.io/subzone": "rack7", "kubernetes.io/hostname": "n1"},
		},
		{
			name: "beta failure-domain labels when the GA ones are missing", nodeName: "n1", nodes: []*corev1.Node{node("n1", nodeBeta)},
			want:       "eu-west1/eu-west1-c/",
			wantLabels: map[string]string{"topology.kubernetes.io/region": "eu-west1", "topology.kubernetes.io/zone": "eu-west1-c"},
		},
		{
			name: "GA labels win over beta ones", nodeName: "n1",
			nodes: []*corev1.Node{node("n1", map[string]string{
				"topology.kubernetes.io/region": "ga", "failure-domain.beta.kubernetes.io/region": "beta",
				"failure-domain.beta.kubernetes.io/zone": "z-beta",
			})},
			want: "ga/z-beta/",
		},
		{
			name: "the pod's locality label wins over its node", nodeName: "n1", nodes: []*corev1.Node{node("n1", nodeGA)},
			podLabels: map[string]string{"istio-locality": "r9.z9"},
			want:      "r9/z9",
		},
		{
			name: "node not in the snapshot", nodeName: "gone", nodes: []*corev1.Node{node("n1", nodeGA)},
			podLabels: map[string]string{"topology.kubernetes.io/region": "pod-region"},
			want:      "",
			// The pod's own label stays, but it is not the endpoint's locality.
			wantLabels: map[string]string{"topology.kubernetes.io/region": "pod-region"},
		},
		{
			name: "node without topology labels", nodeName: "n1", nodes: []*corev1.Node{node("n1", map[string]string{"kubernetes.io/os": "linux"})},
			want: "",
		},
		{
			name: "pod not scheduled", nodeName: "", nodes: []*corev1.Node{node("", nodeGA)},
			want: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lbls := map[string]string{"app": "reviews"}
			for k, v := range tt.podLabels {
				lbls[k] = v
			}
			p := withPod(pod("reviews-1", "bookinfo", "10.1.0.1", lbls), func(p *corev1.Pod) { p.Spec.NodeName = tt.nodeName })
			ix := Build(withNodes(snapshot(kubeSvc("reviews", "bookinfo", "http:9080"), p), tt.nodes...))
			var eps []Endpoint
			for _, s := range ix.Services() {
				if s.Hostname == "reviews.bookinfo.svc.cluster.local" {
					eps = s.Endpoints[9080]
				}
			}
			if len(eps) != 1 {
				t.Fatalf("endpoints = %+v, want one", eps)
			}
			if eps[0].Locality != tt.want {
				t.Errorf("locality = %q, want %q", eps[0].Locality, tt.want)
			}
			for k, v := range tt.wantLabels {
				if got := eps[0].Labels[k]; got != v {
					t.Errorf("endpoint label %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

// TestProxyLocalityFromNode: the sidecar's locality is what istiod reads back from the pod's
// labels augmented with the pod's locality: each part known from the Node (or the locality
// label) replaces the pod's own topology label, the others stay.
func TestProxyLocalityFromNode(t *testing.T) {
	tests := []struct {
		name      string
		podLabels map[string]string
		nodes     []*corev1.Node
		want      string
	}{
		{
			name:      "the node's labels, subzone included, over the pod's region and zone",
			podLabels: map[string]string{"topology.kubernetes.io/region": "region1", "topology.kubernetes.io/zone": "zone1"},
			nodes: []*corev1.Node{node("node-1", map[string]string{
				"topology.kubernetes.io/region": "region1", "topology.kubernetes.io/zone": "zone1", "topology.istio.io/subzone": "subzone1",
			})},
			want: "region1/zone1/subzone1",
		},
		{
			name:  "beta labels",
			nodes: []*corev1.Node{node("node-1", nodeBeta)},
			want:  "eu-west1/eu-west1-c",
		},
		{
			name:      "without a node the pod's own topology labels",
			podLabels: map[string]string{"topology.kubernetes.io/region": "ra", "topology.kubernetes.io/zone": "za"},
			want:      "ra/za",
		},
		{
			name:      "a part the node lacks comes from the pod",
			podLabels: map[string]string{"topology.kubernetes.io/zone": "pod-zone", "topology.istio.io/subzone": "pod-sub"},
			nodes:     []*corev1.Node{node("node-1", map[string]string{"topology.kubernetes.io/region": "node-region"})},
			want:      "node-region/pod-zone/pod-sub",
		},
		{
			name:  "only a subzone",
			nodes: []*corev1.Node{node("node-1", map[string]string{"topology.istio.io/subzone": "s1"})},
			want:  "//s1",
		},
		{
			name:      "the locality label wins over the node",
			podLabels: map[string]string{"topology.istio.io/locality": "r1.z1.s1"},
			nodes:     []*corev1.Node{node("node-1", nodeGA)},
			want:      "r1/z1/s1",
		},
		{
			name:  "node without topology labels",
			nodes: []*corev1.Node{node("node-1", map[string]string{"kubernetes.io/os": "linux"})},
			want:  "",
		},
		{
			name: "nothing known",
			want: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := Build(withNodes(snapshot(pod("sleep", "default", "10.0.0.9", tt.podLabels)), tt.nodes...))
			p, err := ix.Proxy("pod", "default", "sleep")
			if err != nil {
				t.Fatal(err)
			}
			if p.Locality != tt.want {
				t.Errorf("proxy locality = %q, want %q", p.Locality, tt.want)
			}
		})
	}
}

// TestNamespaceProxyHasNoLocality: a sidecar named by namespace has no pod, hence no node and no
// locality, whatever the namespace's pods run on.
func TestNamespaceProxyHasNoLocality(t *testing.T) {
	ix := Build(withNodes(snapshot(pod("sleep", "default", "10.0.0.9", nil)), node("node-1", nodeGA)))
	for _, kind := range []string{"namespace", ""} {
		p, err := ix.Proxy(kind, "default", "sleep")
		if err != nil {
			t.Fatal(err)
		}
		if p.Locality != "" {
			t.Errorf("%q proxy locality = %q, want empty", kind, p.Locality)
		}
	}
}

// TestPodNetworkFromIstioNamespace: a pod endpoint's network is its topology.istio.io/network
// label, else that of the namespace istiod runs in (the kube controller's Network and
// networkFromSystemNamespace), never that of the pod's own namespace.
func TestPodNetworkFromIstioNamespace(t *testing.T) {
	ns := func(name, network string) *corev1.Namespace {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if network != "" {
			n.Labels = map[string]string{"topology.istio.io/network": network}
		}
		return n
	}
	tests := []struct {
		name           string
		podNetwork     string
		istioNamespace string
		namespaces     []*corev1.Namespace
		want           string
	}{
		{name: "istio-system's label", namespaces: []*corev1.Namespace{ns("istio-system", "net-system"), ns("bookinfo", "")}, want: "net-system"},
		{name: "not the pod's namespace's", namespaces: []*corev1.Namespace{ns("istio-system", ""), ns("bookinfo", "net-bookinfo")}, want: ""},
		{name: "the pod's own label first", podNetwork: "net-pod", namespaces: []*corev1.Namespace{ns("istio-system", "net-system")}, want: "net-pod"},
		{name: "--istio-namespace", istioNamespace: "istio-control", namespaces: []*corev1.Namespace{ns("istio-system", "net-system"), ns("istio-control", "net-control")}, want: "net-control"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lbls := map[string]string{"app": "reviews"}
			if tt.podNetwork != "" {
				lbls["topology.istio.io/network"] = tt.podNetwork
			}
			objs := []any{kubeSvc("reviews", "bookinfo", "http:9080"), pod("reviews-1", "bookinfo", "10.1.0.1", lbls)}
			for _, n := range tt.namespaces {
				objs = append(objs, n)
			}
			s := snapshot(objs...)
			s.IstioNamespace = tt.istioNamespace
			var eps []Endpoint
			for _, svc := range Build(s).Services() {
				if svc.Hostname == "reviews.bookinfo.svc.cluster.local" {
					eps = svc.Endpoints[9080]
				}
			}
			if len(eps) != 1 {
				t.Fatalf("endpoints = %+v, want one", eps)
			}
			if got := eps[0].Labels["topology.istio.io/network"]; got != tt.want {
				t.Errorf("network label = %q, want %q", got, tt.want)
			}
		})
	}
}
