package source

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
)

// filterWorld holds objects of several kinds in three namespaces, the mesh ConfigMap, and a
// broken DestinationRule in namespace c.
const filterWorld = `apiVersion: v1
kind: Namespace
metadata: {name: a}
---
apiVersion: v1
kind: Namespace
metadata: {name: b}
---
apiVersion: v1
kind: Namespace
metadata: {name: c}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: istio, namespace: istio-system}
data:
  mesh: "rootNamespace: a"
---
apiVersion: v1
kind: ConfigMap
metadata: {name: unrelated, namespace: a}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: a}
spec:
  ports: [{port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: b, labels: {istio.io/use-waypoint: wp}}
spec:
  ports: [{port: 80}]
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: b}
---
apiVersion: v1
kind: Pod
metadata: {name: q, namespace: b}
---
apiVersion: v1
kind: Pod
metadata: {name: r, namespace: c, labels: {istio.io/use-waypoint: wp}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: b}
spec:
  selector: {matchLabels: {app: d}}
  template:
    metadata: {labels: {app: d}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: web, namespace: a}
spec: {host: web.a.svc.cluster.local}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: web, namespace: b}
spec: {host: web.a.svc.cluster.local}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: broken, namespace: c}
spec: {hots: web.a.svc.cluster.local}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: api, namespace: c}
spec:
  hosts: [api.example.com]
  ports: [{number: 443, name: tls, protocol: TLS}]
  resolution: DNS
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: b}
spec: {mtls: {mode: STRICT}}
`

// TestFilterFilesKeepsWhatAClusterReadWould: with FilterFiles, files give the objects a
// cluster holding the same objects gives for the same Reads; the mesh ConfigMap is always
// kept, and an object no read would return is not even decoded (no issue for the broken one).
func TestFilterFilesKeepsWhatAClusterReadWould(t *testing.T) {
	t.Chdir(t.TempDir())
	write(t, "world.yaml", filterWorld)

	// The cluster: every valid object of the files.
	all, err := load(t.Context(), Spec{Files: []string{"world.yaml"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var kubeObjs, istioObjs []runtime.Object
	for _, o := range all.Namespaces {
		kubeObjs = append(kubeObjs, o)
	}
	for _, o := range all.Services {
		kubeObjs = append(kubeObjs, o)
	}
	for _, o := range all.Pods {
		kubeObjs = append(kubeObjs, o)
	}
	for _, o := range all.Deployments {
		kubeObjs = append(kubeObjs, o)
	}
	for _, o := range all.DestinationRules {
		istioObjs = append(istioObjs, o)
	}
	for _, o := range all.ServiceEntries {
		istioObjs = append(istioObjs, o)
	}
	for _, o := range all.PeerAuthentications {
		istioObjs = append(istioObjs, o)
	}
	kubeObjs = append(kubeObjs, meshConfigMap("rootNamespace: a"))

	tests := []struct {
		name  string
		reads []Read
		want  []string
	}{
		{
			name: "lookup namespaces only",
			reads: []Read{
				{Kind: KindNamespace, Namespaces: []string{"a"}},
				{Kind: KindService, Namespaces: []string{"a"}},
				{Kind: KindDestinationRule, Namespaces: []string{"a"}},
				{Kind: KindServiceEntry},
			},
			want: []string{"DestinationRule a/web", "Namespace a", "Service a/web", "ServiceEntry c/api"},
		},
		{
			name: "reads of one kind are merged; nil is every namespace",
			reads: []Read{
				{Kind: KindNamespace},
				{Kind: KindDestinationRule, Namespaces: []string{"a"}},
				{Kind: KindDestinationRule, Namespaces: []string{"b"}},
				{Kind: KindPod, Namespaces: []string{"b"}},
				{Kind: KindPeerAuthentication, Namespaces: []string{"a"}},
				{Kind: KindDeployment, Namespaces: []string{"b"}},
			},
			want: []string{"Deployment b/d", "DestinationRule a/web", "DestinationRule b/web", "Namespace a", "Namespace b", "Namespace c", "Pod b/p", "Pod b/q"},
		},
		{
			name: "pods by name, unless another read lists their namespace",
			reads: []Read{
				{Kind: KindPod, Namespaces: []string{"b", "c"}, Names: []string{"p", "r", "missing"}},
				{Kind: KindPod, Namespaces: []string{"c"}},
			},
			want: []string{"Pod b/p", "Pod c/r"},
		},
		{
			name: "pods by name and in every namespace",
			reads: []Read{
				{Kind: KindPod, Namespaces: []string{"b"}, Names: []string{"p"}},
				{Kind: KindPod},
			},
			want: []string{"Pod b/p", "Pod b/q", "Pod c/r"},
		},
		{
			name: "labelled reads: the objects of other namespaces that carry the label",
			reads: []Read{
				{Kind: KindService, Namespaces: []string{"a"}},
				{Kind: KindService, Labeled: "istio.io/use-waypoint"},
				{Kind: KindPod, Namespaces: []string{"b"}},
				{Kind: KindPod, Labeled: "istio.io/use-waypoint"},
				{Kind: KindServiceEntry, Labeled: "istio.io/use-waypoint"},
			},
			want: []string{"Pod b/p", "Pod b/q", "Pod c/r", "Service a/web", "Service b/web"},
		},
		{
			name: "labelled reads in namespaces: the objects there that carry the label",
			reads: []Read{
				{Kind: KindPod, Namespaces: []string{"b", "c"}, Labeled: "istio.io/use-waypoint"},
			},
			want: []string{"Pod c/r"},
		},
		{
			name: "a labelled read in a namespace another read lists reads it whole",
			reads: []Read{
				{Kind: KindPod, Namespaces: []string{"b", "c"}, Labeled: "istio.io/use-waypoint"},
				{Kind: KindPod, Namespaces: []string{"b"}},
			},
			want: []string{"Pod b/p", "Pod b/q", "Pod c/r"},
		},
		{
			name: "a read of every namespace reads past the label",
			reads: []Read{
				{Kind: KindPod, Labeled: "istio.io/use-waypoint"},
				{Kind: KindPod},
			},
			want: []string{"Pod b/p", "Pod b/q", "Pod c/r"},
		},
		{
			name:  "an empty namespace list reads nothing",
			reads: []Read{{Kind: KindService, Namespaces: []string{}}},
			want:  nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files, err := load(t.Context(), Spec{Files: []string{"world.yaml"}, Reads: tt.reads, FilterFiles: true}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, keys(files)); diff != "" {
				t.Errorf("objects from files (-want +got):\n%s", diff)
			}
			if len(files.Issues) != 0 {
				t.Errorf("issues for objects no read returns: %+v", files.Issues)
			}
			if got := files.MeshConfigSource.String(); got != "ConfigMap istio-system/istio" || files.RootNamespace() != "a" {
				t.Errorf("mesh config from %s with root %q, want the file's ConfigMap with root a", got, files.RootNamespace())
			}

			f := newFakeCluster(kubeObjs, istioObjs)
			live, err := load(t.Context(), Spec{Reads: tt.reads}, f.clients())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(keys(live), keys(files)); diff != "" {
				t.Errorf("files (+) keep other objects than a cluster read returns (-):\n%s", diff)
			}
		})
	}

	// Without FilterFiles files are loaded whole, and the broken rule is reported.
	whole, err := load(t.Context(), Spec{Files: []string{"world.yaml"}, Reads: tests[0].reads}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys(whole)) != len(keys(all)) || len(whole.Issues) != 1 {
		t.Errorf("without FilterFiles: %d objects and issues %+v, want %d objects and the broken rule's issue", len(keys(whole)), whole.Issues, len(keys(all)))
	}
}

// TestFilterFilesInOverlay: the files laid over a cluster are filtered by the same Reads.
func TestFilterFilesInOverlay(t *testing.T) {
	t.Chdir(t.TempDir())
	write(t, "world.yaml", filterWorld)
	f := newFakeCluster(nil, []runtime.Object{liveDR("c", "live", "web.a.svc.cluster.local", 0)})
	reads := []Read{{Kind: KindDestinationRule, Namespaces: []string{"a", "c"}}}
	snap, err := load(t.Context(), Spec{Files: []string{"world.yaml"}, Overlay: true, Reads: reads, FilterFiles: true}, f.clients())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"DestinationRule a/web", "DestinationRule c/live"}
	if diff := cmp.Diff(want, keys(snap)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	// The broken rule in c is read (c is planned), so its problem is reported.
	if len(snap.Issues) != 1 || snap.Issues[0].Resource == nil || snap.Issues[0].Resource.Name != "broken" {
		t.Errorf("issues = %+v, want the broken rule's", snap.Issues)
	}
}

// TestLabelledReadInOverlay: a file that drops the label from an object a labelled read returns
// live still replaces it (the what-if removes the label); an unlabelled file object no read
// returns is left out.
func TestLabelledReadInOverlay(t *testing.T) {
	t.Chdir(t.TempDir())
	write(t, "change.yaml", `apiVersion: v1
kind: Service
metadata: {name: web, namespace: b}
spec:
  ports: [{port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: other, namespace: c}
spec:
  ports: [{port: 80}]
`)
	live := &corev1.Service{ObjectMeta: objMeta("b", "web", "4")}
	live.Labels = map[string]string{"istio.io/use-waypoint": "wp"}
	f := newFakeCluster([]runtime.Object{live}, nil)
	reads := []Read{{Kind: KindService, Namespaces: []string{"a"}}, {Kind: KindService, Labeled: "istio.io/use-waypoint"}}
	snap, err := load(t.Context(), Spec{Files: []string{"change.yaml"}, Overlay: true, Reads: reads, FilterFiles: true}, f.clients())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Service b/web"}, keys(snap)); diff != "" {
		t.Fatalf("objects (-want +got):\n%s", diff)
	}
	if s := snap.Services[0]; len(s.Labels) != 0 || snap.Sources[model.ObjectKey{Kind: "Service", Namespace: "b", Name: "web"}].Position == nil {
		t.Errorf("Service b/web is the live one (labels %v), want the file's without the label", s.Labels)
	}
}
