package istiorun

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"istio.io/istio/pilot/pkg/features"
	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pilot/pkg/serviceregistry/ambient"
	"istio.io/istio/pilot/pkg/serviceregistry/util/xdsfake"
	"istio.io/istio/pkg/activenotifier"
	istiocluster "istio.io/istio/pkg/cluster"
	"istio.io/istio/pkg/config/constants"
	"istio.io/istio/pkg/config/mesh/meshwatcher"
	"istio.io/istio/pkg/config/schema/gvr"
	kubelib "istio.io/istio/pkg/kube"
	"istio.io/istio/pkg/kube/kclient/clienttest"
	"istio.io/istio/pkg/kube/krt"
	"istio.io/istio/pkg/kube/multicluster"
	"istio.io/istio/pkg/test"
	"istio.io/istio/pkg/util/protomarshal"
	"istio.io/istio/pkg/workloadapi/security"
)

// WorkloadAuthz is what istiod sends ztunnel about one workload: its policy key list, and the
// Authorization of each key (nil when no policy of the pool has that key).
type WorkloadAuthz struct {
	Namespace string
	Name      string
	Keys      []string
	Policies  []*security.Authorization
}

// ambientCRDs are the custom resources an Istio install provides and the ambient index watches.
var ambientCRDs = []schema.GroupVersionResource{
	gvr.AuthorizationPolicy,
	gvr.PeerAuthentication,
	gvr.KubernetesGateway,
	gvr.GatewayClass,
	gvr.WorkloadEntry,
	gvr.ServiceEntry,
}

// Ztunnel builds istiod's ambient index (the code behind PILOT_ENABLE_AMBIENT=true) from the
// scenario's objects and returns, for each workload the authz command names, its
// authorization_policies keys and their Authorizations from the policy pool.
func Ztunnel(sc *Scenario) ([]WorkloadAuthz, error) {
	ConfigureLogging()
	if sc.Args.Verb != "authz" {
		return nil, fmt.Errorf("not an authz scenario: %q", sc.Command)
	}
	pods, err := sc.selectPods()
	if err != nil {
		return nil, err
	}
	for _, pod := range pods {
		// Without an IP the ambient index makes no workload of the pod: nothing runs there
		// for ztunnel to enforce on.
		if pod.Status.PodIP == "" {
			return nil, &NoProxyError{Pod: pod.Namespace + "/" + pod.Name, Missing: "status.podIP"}
		}
	}
	var out []WorkloadAuthz
	err = test.Wrap(func(t test.Failer) {
		objs := append([]runtime.Object{}, sc.Kube...)
		objs = append(objs, installedGatewayClasses(sc.Kube)...)
		client := kubelib.NewFakeClient(objs...)
		t.Cleanup(client.Shutdown)
		for _, g := range ambientCRDs {
			clienttest.MakeCRD(t, client, g)
		}
		stop := test.NewStop(t)
		mw := meshwatcher.NewTestWatcher(sc.Mesh)
		clusterID := istiocluster.ID(constants.DefaultClusterName)
		mc := multicluster.NewController(multicluster.ControllerOptions{
			Client:          client,
			ClusterID:       clusterID,
			SystemNamespace: constants.IstioSystemNamespace,
			MeshConfig:      mw,
			Debugger:        krt.GlobalDebugHandler,
		})
		idx := ambient.New(ambient.Options{
			SystemNamespace:        constants.IstioSystemNamespace,
			DomainSuffix:           DomainSuffix,
			ClusterID:              clusterID,
			XDSUpdater:             xdsfake.NewFakeXDS(),
			MeshConfig:             mw,
			StatusNotifier:         activenotifier.New(false),
			Debugger:               krt.GlobalDebugHandler,
			MultiClusterController: mc,
			Flags: ambient.FeatureFlags{
				DefaultAllowFromWaypoint:              features.DefaultAllowFromWaypoint,
				EnableK8SServiceSelectWorkloadEntries: features.EnableK8SServiceSelectWorkloadEntries,
			},
		})
		if err := mc.Run(stop); err != nil {
			t.Fatal(err)
		}
		client.RunAndWait(stop)
		go idx.Run(stop)
		if !kubelib.WaitForCacheSync("ambient", stop, idx.HasSynced) {
			t.Fatal("ambient index did not sync")
		}
		pool := map[string]*security.Authorization{}
		for _, p := range idx.Policies(nil) {
			pool[p.Authorization.Namespace+"/"+p.Authorization.Name] = p.Authorization
		}
		for _, pod := range pods {
			var wl *model.WorkloadInfo
			for _, a := range idx.All() {
				w := a.GetWorkload()
				if w == nil || w.Namespace != pod.Namespace || w.Name != pod.Name || w.WorkloadType.String() != "POD" {
					continue
				}
				wl = &model.WorkloadInfo{Workload: w}
			}
			if wl == nil {
				t.Fatalf("no ambient workload for pod %s/%s (does it have status.podIP?)", pod.Namespace, pod.Name)
			}
			r := WorkloadAuthz{Namespace: pod.Namespace, Name: pod.Name, Keys: wl.Workload.AuthorizationPolicies}
			for _, k := range r.Keys {
				r.Policies = append(r.Policies, pool[k])
			}
			out = append(out, r)
		}
	})
	return out, err
}

// installedGatewayClasses are the GatewayClasses istiod creates in a cluster that has the
// Gateway API, unless the scenario defines them itself.
func installedGatewayClasses(objs []runtime.Object) []runtime.Object {
	have := map[string]bool{}
	for _, o := range objs {
		if gc, ok := o.(*gatewayv1.GatewayClass); ok {
			have[gc.Name] = true
		}
	}
	var out []runtime.Object
	for _, n := range []string{constants.WaypointGatewayClassName, constants.EastWestGatewayClassName} {
		if have[n] {
			continue
		}
		out = append(out, &gatewayv1.GatewayClass{
			TypeMeta:   metav1.TypeMeta{APIVersion: "gateway.networking.k8s.io/v1", Kind: "GatewayClass"},
			ObjectMeta: metav1.ObjectMeta{Name: n, CreationTimestamp: metav1.NewTime(DefaultCreationTime)},
			Spec:       gatewayv1.GatewayClassSpec{ControllerName: constants.ManagedGatewayMeshController},
		})
	}
	return out
}

// selectPods resolves the authz target: pod/NAME (or a bare NAME), deployment/NAME (the pods
// its selector matches), or -l SELECTOR, in the -n namespace, sorted by name.
func (sc *Scenario) selectPods() ([]*corev1.Pod, error) {
	a := sc.Args
	ns := a.Namespace
	var sel labels.Selector
	kind, name, found := strings.Cut(a.Target, "/")
	if !found {
		kind, name = "pod", a.Target
	}
	switch {
	case a.Target == "" && a.Selector != "":
		s, err := labels.Parse(a.Selector)
		if err != nil {
			return nil, err
		}
		sel = s
	case kind == "pod" || kind == "pods" || kind == "po":
		p := sc.Pod(ns, name)
		if p == nil {
			return nil, fmt.Errorf("no pod %s/%s", ns, name)
		}
		return []*corev1.Pod{p}, nil
	case kind == "deployment" || kind == "deploy" || kind == "deployments":
		d := sc.deploymentSelector(ns, name)
		if d == nil {
			return nil, fmt.Errorf("no deployment %s/%s", ns, name)
		}
		sel = d
	default:
		return nil, fmt.Errorf("unsupported workload %q", a.Target)
	}
	var out []*corev1.Pod
	for _, o := range sc.Kube {
		if p, ok := o.(*corev1.Pod); ok && p.Namespace == ns && sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if len(out) == 0 {
		return nil, fmt.Errorf("no pod matches %s in %s", a.Target+a.Selector, ns)
	}
	return out, nil
}

func (sc *Scenario) deploymentSelector(ns, name string) labels.Selector {
	for _, o := range sc.Kube {
		d, ok := o.(*appsv1.Deployment)
		if !ok || d.Namespace != ns || d.Name != name || d.Spec.Selector == nil {
			continue
		}
		if s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
			return s
		}
	}
	return nil
}

// ZtunnelYAML writes the `-o ztunnel` form: one YAML document per key (protomarshal.ToYAML),
// `---` between documents, `# missing: NS/NAME` for a key without an Authorization, and
// nothing at all for an empty key list.
func ZtunnelYAML(ws []WorkloadAuthz) ([]byte, error) {
	var docs []string
	for _, w := range ws {
		for i, k := range w.Keys {
			if w.Policies[i] == nil {
				docs = append(docs, "# missing: "+k+"\n")
				continue
			}
			y, err := protomarshal.ToYAML(w.Policies[i])
			if err != nil {
				return nil, err
			}
			docs = append(docs, y)
		}
	}
	return []byte(strings.Join(docs, "---\n")), nil
}

// RunZtunnel runs an authz scenario and returns Istio's `-o ztunnel` output.
func RunZtunnel(sc *Scenario) ([]byte, error) {
	ws, err := Ztunnel(sc)
	if err != nil {
		return nil, err
	}
	return ZtunnelYAML(ws)
}

// Run runs a scenario of the kind its command names (cluster: CDS, authz: the ambient index)
// and returns Istio's output and the want file name.
func Run(sc *Scenario) (out []byte, wantFile string, err error) {
	return RunKind(sc, sc.Args.Verb)
}

// Kinds are the scenario kinds, each a folder of testdata/scenarios: cluster (CDS), authz (an
// ambient workload: ztunnel's Authorizations) and sidecar (an authz command on a sidecar pod:
// its virtualInbound listener) and waypoint (`authz waypoint/NAME`: the main_internal listener
// of an ambient waypoint).
var Kinds = []string{"cluster", "authz", "sidecar", "waypoint"}

// KindOf returns the kind of a scenario folder: the name of its parent folder when that is a
// kind, else "".
func KindOf(dir string) string {
	parent := filepath.Base(filepath.Dir(filepath.Clean(dir)))
	for _, k := range Kinds {
		if k == parent {
			return k
		}
	}
	return ""
}

// WantFile is the expected-output file of a scenario kind.
func WantFile(kind string) string {
	if kind == "authz" {
		return "want.ztunnel.yaml"
	}
	return "want.envoy.json"
}

// RunKind runs a scenario as a kind and returns Istio's output and the want file name.
func RunKind(sc *Scenario, kind string) (out []byte, wantFile string, err error) {
	want := map[string]string{"cluster": "cluster", "authz": "authz", "sidecar": "authz", "waypoint": "authz"}[kind]
	if want == "" {
		return nil, "", fmt.Errorf("unknown scenario kind %q", kind)
	}
	if sc.Args.Verb != want {
		return nil, "", fmt.Errorf("a %s scenario runs %s, not %q", kind, want, sc.Command)
	}
	// Istio's fake servers register every krt collection they build with krt's
	// GlobalDebugHandler, which nothing empties: each run's servers would stay reachable, about
	// 3 MiB a run, until a long loop (the differential fuzz target) runs out of memory. Each
	// run gets a handler of its own, dropped with its servers.
	krt.GlobalDebugHandler = new(krt.DebugHandler)
	switch kind {
	case "cluster":
		out, err = RunCDS(sc)
	case "authz":
		out, err = RunZtunnel(sc)
	case "sidecar":
		out, err = RunInbound(sc)
	case "waypoint":
		out, err = RunWaypoint(sc)
	}
	return out, WantFile(kind), err
}
