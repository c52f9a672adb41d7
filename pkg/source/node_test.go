package source

import (
	"errors"
	"fmt"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
)

const nodeFiles = `apiVersion: v1
kind: Node
metadata:
  name: node-a
  namespace: ignored
  labels:
    topology.kubernetes.io/region: region1
    topology.kubernetes.io/zone: zone1
    topology.istio.io/subzone: subzone1
---
apiVersion: v1
kind: Node
metadata:
  name: node-b
  labels:
    failure-domain.beta.kubernetes.io/region: region2
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  nodeName: node-a
`

// TestNodesFromFiles: Nodes are cluster-scoped (a namespace in the file is dropped) and keep
// their labels and position; with FilterFiles, only the Nodes read by name are kept, as a
// cluster read would return them.
func TestNodesFromFiles(t *testing.T) {
	t.Chdir(t.TempDir())
	write(t, "nodes.yaml", nodeFiles)

	snap, err := load(t.Context(), Spec{Files: []string{"nodes.yaml"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Node node-a", "Node node-b", "Pod default/p"}, keys(snap)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]issue(nil), issues(snap)); diff != "" {
		t.Errorf("issues (-want +got):\n%s", diff)
	}
	if len(snap.Nodes) != 2 || snap.Nodes[0].Name != "node-a" || snap.Nodes[1].Name != "node-b" {
		t.Fatalf("nodes = %v, want node-a and node-b", snap.Nodes)
	}
	a := snap.Node("node-a")
	if a.Namespace != "" || a.Labels["topology.istio.io/subzone"] != "subzone1" || a.Kind != "Node" || a.APIVersion != "v1" {
		t.Errorf("node-a = %s/%s %q labels %v", a.APIVersion, a.Kind, a.Namespace, a.Labels)
	}
	if pos := snap.Position(key("Node", "", "node-b")); pos == nil || pos.String() != "nodes.yaml:11:1" {
		t.Errorf("node-b position = %v, want nodes.yaml:11:1", pos)
	}

	for _, tt := range []struct {
		name  string
		reads []Read
		want  []string
	}{
		{"named", []Read{{Kind: KindNode, Namespaces: []string{"node-b", "node-c"}}}, []string{"Node node-b"}},
		{"a Node read without names reads none", []Read{{Kind: KindNode}, {Kind: KindPod}}, []string{"Pod default/p"}},
		{"names of merged reads count", []Read{{Kind: KindNode}, {Kind: KindNode, Namespaces: []string{"node-a"}}}, []string{"Node node-a"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			snap, err := load(t.Context(), Spec{Files: []string{"nodes.yaml"}, FilterFiles: true, Reads: tt.reads}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, keys(snap)); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}
}

func liveNode(name, region string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: objMeta("", name, "21")}
	n.Labels = map[string]string{"topology.kubernetes.io/region": region}
	return n
}

// requests lists the fake cluster's requests as `verb resource ns/name`, sorted.
func requests(f *fakeCluster) []string {
	var out []string
	for _, a := range f.actions() {
		switch a := a.(type) {
		case k8stesting.GetAction:
			out = append(out, fmt.Sprintf("get %s %s/%s", a.GetResource().Resource, a.GetNamespace(), a.GetName()))
		default:
			out = append(out, fmt.Sprintf("%s %s %s", a.GetVerb(), a.GetResource().Resource, a.GetNamespace()))
		}
	}
	sort.Strings(out)
	return out
}

// TestLiveNodesAreGotByName: Nodes are read with one get per name, never listed; a missing node
// is simply absent; a load of Nodes only does not read the mesh ConfigMap again.
func TestLiveNodesAreGotByName(t *testing.T) {
	f := newFakeCluster([]runtime.Object{
		liveNode("node-a", "region1"), liveNode("node-b", "region2"), liveNode("node-c", "region3"),
		meshConfigMap("connectTimeout: 3s\n"),
	}, nil)
	snap, err := load(t.Context(), Spec{Reads: []Read{{Kind: KindNode, Namespaces: []string{"node-b", "node-a", "missing", "node-a"}}}}, f.clients())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Node node-a", "Node node-b"}, keys(snap)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]issue(nil), issues(snap)); diff != "" {
		t.Errorf("issues (-want +got):\n%s", diff)
	}
	if n := snap.Node("node-b"); n == nil || n.Labels["topology.kubernetes.io/region"] != "region2" || n.Kind != "Node" {
		t.Errorf("node-b = %+v", n)
	}
	if src := snap.Sources[key("Node", "", "node-a")]; !src.Live || src.ResourceVersion != "21" {
		t.Errorf("node-a source = %+v, want live at resourceVersion 21", src)
	}
	want := []string{"get nodes /missing", "get nodes /node-a", "get nodes /node-b"}
	if diff := cmp.Diff(want, requests(f)); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}

	// With other kinds the mesh ConfigMap is read as always; a Node read without names reads
	// nothing.
	f = newFakeCluster([]runtime.Object{liveNode("node-a", "region1"), meshConfigMap("connectTimeout: 3s\n")}, nil)
	snap, err = load(t.Context(), Spec{Reads: []Read{{Kind: KindNode}, {Kind: KindPod, Namespaces: []string{"default"}}}}, f.clients())
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Nodes) != 0 {
		t.Errorf("nodes = %v, want none", snap.Nodes)
	}
	want = []string{"get configmaps istio-system/istio", "list pods default"}
	if diff := cmp.Diff(want, requests(f)); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// TestDeniedNodeReadsLeaveLocalityUnknown: refused Node gets are one warning per user saying the
// locality is unknown, never an error; other failures are reported per node.
func TestDeniedNodeReadsLeaveLocalityUnknown(t *testing.T) {
	denied := func(name string) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, name,
			fmt.Errorf(`User "alice" cannot get resource "nodes" in API group "" at the cluster scope`))
	}
	tests := []struct {
		name           string
		names          []string
		fail           func(name string) error
		wantIssues     []issue
		wantIncomplete string
	}{
		{
			name: "forbidden, one node", names: []string{"node-a"}, fail: denied,
			wantIssues: []issue{{Severity: "warning", Incomplete: []string{"Node"},
				Message: "forbidden: alice cannot get nodes/node-a; locality unknown for the pods on that node"}},
			wantIncomplete: "forbidden: alice cannot get nodes/node-a; locality unknown for the pods on that node",
		},
		{
			name: "forbidden, several nodes", names: []string{"node-b", "node-a"}, fail: denied,
			wantIssues: []issue{{Severity: "warning", Incomplete: []string{"Node"},
				Message: "forbidden: alice cannot get nodes/node-a, nodes/node-b; locality unknown for the pods on those nodes"}},
			wantIncomplete: "forbidden: alice cannot get nodes/node-a, nodes/node-b; locality unknown for the pods on those nodes",
		},
		{
			name: "another server error", names: []string{"node-a", "node-b"},
			fail: func(string) error { return apierrors.NewInternalError(errors.New("etcd is sad")) },
			wantIssues: []issue{
				{Severity: "warning", Incomplete: []string{"Node"},
					Message: "server error (500): cannot get nodes/node-a: Internal error occurred: etcd is sad; locality unknown for the pods on that node"},
				{Severity: "warning", Incomplete: []string{"Node"},
					Message: "server error (500): cannot get nodes/node-b: Internal error occurred: etcd is sad; locality unknown for the pods on that node"},
			},
			wantIncomplete: "server error (500): cannot get nodes/node-a: Internal error occurred: etcd is sad; locality unknown for the pods on that node; " +
				"server error (500): cannot get nodes/node-b: Internal error occurred: etcd is sad; locality unknown for the pods on that node",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeCluster([]runtime.Object{liveNode("node-a", "region1"), liveNode("node-b", "region2")}, nil)
			f.kube.PrependReactor("get", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, tt.fail(a.(k8stesting.GetAction).GetName())
			})
			snap, err := load(t.Context(), Spec{Reads: []Read{{Kind: KindNode, Namespaces: tt.names}}}, f.clients())
			if err != nil {
				t.Fatalf("a refused node read must not fail the load: %v", err)
			}
			if len(snap.Nodes) != 0 {
				t.Errorf("nodes = %v, want none", snap.Nodes)
			}
			if diff := cmp.Diff(tt.wantIssues, issues(snap)); diff != "" {
				t.Errorf("issues (-want +got):\n%s", diff)
			}
			if got := snap.Incomplete["Node"]; got != tt.wantIncomplete {
				t.Errorf("incomplete = %q, want %q", got, tt.wantIncomplete)
			}
		})
	}
}
