package cli

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	networkingapi "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/envoycluster"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// nodeFakes answers the planned loads with world, and a load of Nodes only with nodes (or
// nodeErr); it keeps the snapshot the engine is given.
type nodeFakes struct {
	world, nodes *model.Snapshot
	nodeErr      error
	specs        []source.Spec
	explained    *model.Snapshot
}

func (f *nodeFakes) load(_ context.Context, s source.Spec) (*model.Snapshot, error) {
	f.specs = append(f.specs, s)
	if len(s.Reads) == 1 && s.Reads[0].Kind == source.KindNode {
		return f.nodes, f.nodeErr
	}
	return f.world, nil
}

func (f *nodeFakes) run(t *testing.T, args ...string) result {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	code := run(args, streams, func(streams genericiooptions.IOStreams) *cobra.Command {
		o := NewCommonOptions(streams)
		o.Getenv = func(string) string { return "" }
		return newRootCmd(o, func(ctx context.Context, co *ClusterOptions) error {
			co.Load = f.load
			co.Explain = func(s *model.Snapshot, q envoycluster.Query) (*explain.Result, error) {
				f.explained = s
				return &explain.Result{APIVersion: explain.APIVersion, Kind: explain.KindClusterExplanation,
					Subject: explain.Subject{Kind: "Host", Host: q.Host}}, nil
			}
			return co.Run(ctx)
		}, nil, nil)
	})
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// nodeReads returns the node names of the loads that read Nodes.
func (f *nodeFakes) nodeReads() [][]string {
	var out [][]string
	for _, s := range f.specs {
		for _, r := range s.Reads {
			if r.Kind == source.KindNode {
				out = append(out, r.Namespaces)
			}
		}
	}
	return out
}

func scheduledPod(ns, name, node string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Spec: corev1.PodSpec{NodeName: node}}
}

func nodeObj(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"topology.kubernetes.io/region": "r-" + name}}}
}

// bookinfoWorld: the client pod on node-1, reviews pods on node-2 (twice) and one not yet
// scheduled, a ratings pod on node-3 that reviews does not select.
func bookinfoWorld() *model.Snapshot {
	return &model.Snapshot{
		Services: []*corev1.Service{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "bookinfo", Name: "reviews"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "reviews"}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "bookinfo", Name: "ratings"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "ratings"}}},
		},
		Pods: []*corev1.Pod{
			scheduledPod("bookinfo", "productpage-v1", "node-1", map[string]string{"app": "productpage"}),
			scheduledPod("bookinfo", "ratings-v1", "node-3", map[string]string{"app": "ratings"}),
			scheduledPod("bookinfo", "reviews-v1", "node-2", map[string]string{"app": "reviews", "version": "v1"}),
			scheduledPod("bookinfo", "reviews-v2", "node-2", map[string]string{"app": "reviews", "version": "v2"}),
			scheduledPod("bookinfo", "reviews-v3", "", map[string]string{"app": "reviews", "version": "v3"}),
		},
		Sources: map[model.ObjectKey]model.Source{},
	}
}

// TestClusterReadsTheNodesOfTheClientAndServicePods: once the pods are read, a second load gets
// the Nodes of the client pod and of the pods the host selects, and nothing else; the engine
// sees them in the snapshot.
func TestClusterReadsTheNodesOfTheClientAndServicePods(t *testing.T) {
	f := &nodeFakes{world: bookinfoWorld(), nodes: &model.Snapshot{
		Nodes: []*corev1.Node{nodeObj("node-2"), nodeObj("node-1")},
		Sources: map[model.ObjectKey]model.Source{
			{Kind: "Node", Name: "node-1"}: {Live: true, ResourceVersion: "5"},
			{Kind: "Node", Name: "node-2"}: {Live: true, ResourceVersion: "6"},
		},
	}}
	r := f.run(t, "cluster", "reviews", "-n", "bookinfo", "--from", "pod/productpage-v1")
	if r.code != ExitOK {
		t.Fatal(r)
	}
	if len(f.specs) != 2 {
		t.Fatalf("%d loads, want the planned one and one of Nodes: %+v", len(f.specs), f.specs)
	}
	last := f.specs[1]
	if want := []source.Read{{Kind: source.KindNode, Namespaces: []string{"node-1", "node-2"}}}; !reflect.DeepEqual(last.Reads, want) {
		t.Errorf("node load reads %+v, want %+v", last.Reads, want)
	}
	if last.Getter == nil {
		t.Error("the node load has no cluster getter")
	}
	s := f.explained
	if s == nil || len(s.Nodes) != 2 || s.Nodes[0].Name != "node-1" || s.Nodes[1].Name != "node-2" {
		t.Fatalf("the engine got nodes %v, want node-1 and node-2", s.Nodes)
	}
	if src := s.Sources[model.ObjectKey{Kind: "Node", Name: "node-2"}]; src.ResourceVersion != "6" {
		t.Errorf("node-2 source = %+v", src)
	}
	if r.stderr != "" {
		t.Errorf("stderr = %q, want nothing", r.stderr)
	}
}

// --from deployment/NAME reads the Deployments of its namespace with the rest, and the Node of
// the deployment's first pod, the client, once the pods are known.
func TestClusterFromDeploymentReadsItsPodsNode(t *testing.T) {
	world := bookinfoWorld()
	world.Deployments = []*appsv1.Deployment{{ObjectMeta: metav1.ObjectMeta{Namespace: "bookinfo", Name: "ratings-v1"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ratings"}}}}}
	f := &nodeFakes{world: world, nodes: &model.Snapshot{}}
	r := f.run(t, "cluster", "reviews", "-n", "bookinfo", "--from", "deploy/ratings-v1")
	if r.code != ExitOK || len(f.specs) != 2 {
		t.Fatalf("%d loads: %s", len(f.specs), r)
	}
	if got := readsByKind(f.specs[0].Reads)["Deployment"]; got != "bookinfo" {
		t.Errorf("Deployments read in %q, want bookinfo", got)
	}
	if want := []source.Read{{Kind: source.KindNode, Namespaces: []string{"node-2", "node-3"}}}; !reflect.DeepEqual(f.specs[1].Reads, want) {
		t.Errorf("node load reads %+v, want %+v (ratings-v1's node and the reviews pods')", f.specs[1].Reads, want)
	}
}

func TestClusterNodeReads(t *testing.T) {
	seWorld := &model.Snapshot{
		ServiceEntries: []*networkingv1.ServiceEntry{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "egress", Name: "api"},
			Spec: networkingapi.ServiceEntry{Hosts: []string{"api.example.com"},
				WorkloadSelector: &networkingapi.WorkloadSelector{Labels: map[string]string{"app": "gw"}}},
		}},
		Pods: []*corev1.Pod{
			scheduledPod("egress", "gw-1", "node-9", map[string]string{"app": "gw"}),
			scheduledPod("other", "gw-2", "node-8", map[string]string{"app": "gw"}),
		},
	}
	tests := []struct {
		name  string
		world *model.Snapshot
		args  []string
		want  [][]string
	}{
		{
			name:  "a namespace client has no pod: only the service's pods",
			world: bookinfoWorld(),
			args:  []string{"cluster", "reviews.bookinfo", "--from", "namespace/frontend"},
			want:  [][]string{{"node-2"}},
		},
		{
			name:  "ServiceEntry workloadSelector: the selected pods of its namespace",
			world: seWorld,
			args:  []string{"cluster", "api.example.com", "-n", "default"},
			want:  [][]string{{"node-9"}},
		},
		{
			name: "nodes the snapshot already holds (files in overlay mode) are not read again",
			world: func() *model.Snapshot {
				w := bookinfoWorld()
				w.Nodes = []*corev1.Node{nodeObj("node-1")}
				return w
			}(),
			args: []string{"cluster", "reviews", "-n", "bookinfo", "--from", "pod/productpage-v1"},
			want: [][]string{{"node-2"}},
		},
		{
			name:  "no pod on a node: no node read",
			world: bookinfoWorld(),
			args:  []string{"cluster", "details", "-n", "bookinfo"},
			want:  nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &nodeFakes{world: tt.world, nodes: &model.Snapshot{}}
			if r := f.run(t, tt.args...); r.code != ExitOK {
				t.Fatal(r)
			}
			if got := f.nodeReads(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("node reads = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestClusterNodeReadRefusedIsAWarning: a refused or failed node read leaves the locality
// unknown with a warning; the command still answers.
func TestClusterNodeReadRefusedIsAWarning(t *testing.T) {
	refused := "forbidden: alice cannot get nodes/node-1, nodes/node-2; locality unknown for the pods on those nodes"
	f := &nodeFakes{world: bookinfoWorld(), nodes: &model.Snapshot{
		Issues: []model.LoadIssue{
			{Severity: "warning", Message: refused, Incomplete: []string{"Node"}},
			// A load of files reads them again: issues about other objects are already known.
			{Severity: "error", Resource: &provenance.Ref{Kind: "DestinationRule", Namespace: "bookinfo", Name: "x"}, Message: "bad"},
		},
		Incomplete: map[string]string{"Node": refused},
	}}
	r := f.run(t, "cluster", "reviews", "-n", "bookinfo", "--from", "pod/productpage-v1", "-o", "envoy")
	// The locality the answer needs is unknown: it is incomplete.
	if r.code != ExitIncomplete {
		t.Fatal(r)
	}
	if want := "warning: " + refused + "\n" + incompleteLine("Nodes"); r.stderr != want {
		t.Errorf("stderr = %q, want %q", r.stderr, want)
	}
	if f.explained.Incomplete["Node"] != refused {
		t.Errorf("incomplete = %v", f.explained.Incomplete)
	}
	r = f.run(t, "cluster", "reviews", "-n", "bookinfo", "--from", "pod/productpage-v1", "-o", "json")
	if r.code != ExitIncomplete {
		t.Fatal(r)
	}
	var doc struct {
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	want := "locality is unknown for some pods: Nodes could not be read (" + refused + "); " +
		"locality load balancing (distribute, failover) may differ from what istiod pushes"
	if !reflect.DeepEqual(doc.Warnings, []string{want}) {
		t.Errorf("-o json warnings = %q, want [%q]", doc.Warnings, want)
	}

	f = &nodeFakes{world: bookinfoWorld(), nodeErr: errors.New("the connection to the server was lost")}
	r = f.run(t, "cluster", "reviews", "-n", "bookinfo", "--from", "pod/productpage-v1", "-o", "envoy")
	if r.code != ExitIncomplete {
		t.Fatal(r)
	}
	want = "warning: cannot get nodes/node-1, nodes/node-2: the connection to the server was lost; locality unknown for the pods on them\n" +
		incompleteLine("Nodes")
	if r.stderr != want {
		t.Errorf("stderr = %q, want %q", r.stderr, want)
	}
	if !strings.Contains(f.explained.Incomplete["Node"], "locality unknown") {
		t.Errorf("incomplete = %v", f.explained.Incomplete)
	}
}

// incompleteLine is the last line of stderr of an answer that lacks what.
func incompleteLine(what string) string {
	return "warning: the answer is incomplete: " + what + " could not be read (the warnings say why); " +
		"--allow-partial exits 0 with a partial answer\n"
}
