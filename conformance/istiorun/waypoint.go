package istiorun

import (
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"istio.io/api/label"
	"istio.io/istio/pilot/pkg/config/kube/crdclient"
	"istio.io/istio/pilot/pkg/features"
	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pilot/pkg/networking/core"
	"istio.io/istio/pilot/test/xds"
	istiocluster "istio.io/istio/pkg/cluster"
	"istio.io/istio/pkg/config"
	"istio.io/istio/pkg/config/constants"
	"istio.io/istio/pkg/config/schema/gvk"
	"istio.io/istio/pkg/test"
)

// ambientFeatures guards the feature flags a waypoint run switches on.
var ambientFeatures sync.Mutex

// withAmbientFeatures runs f with istiod's feature flags as PILOT_ENABLE_AMBIENT=true sets them
// (pilot/pkg/features/ambient.go: EnableAmbient, and every registerAmbient flag at its
// "with ambient" default), and restores them afterwards, so that the sidecar and cluster runners
// in the same process keep istiod's plain defaults.
func withAmbientFeatures(f func() error) error {
	ambientFeatures.Lock()
	defer ambientFeatures.Unlock()
	flags := []struct {
		v  *bool
		on bool
	}{
		{&features.EnableAmbient, true},
		{&features.EnableAmbientWaypoints, true},
		{&features.EnableHBONESend, true},
		{&features.EnableSidecarHBONEListening, true},
		{&features.EnableAmbientStatus, true},
		{&features.EnableIngressWaypointRouting, true},
		{&features.EnableAmbientWaypointMultiNetwork, true},
	}
	saved := make([]bool, len(flags))
	for i, fl := range flags {
		saved[i] = *fl.v
		*fl.v = fl.on
	}
	defer func() {
		for i, fl := range flags {
			*fl.v = saved[i]
		}
	}()
	return f()
}

// WaypointTarget is the waypoint an authz scenario names (`authz waypoint/NAME -n NS`): its
// Gateway and the address of its instance.
type WaypointTarget struct {
	Gateway *gatewayv1.Gateway
	// IP is the address of the waypoint instance: the status.podIP of a Pod, or the address of
	// a WorkloadEntry, labelled gateway.networking.k8s.io/gateway-name: NAME in the Gateway's
	// namespace.
	IP string
	// Instance names that Pod or WorkloadEntry ("pod/NAME" or "workloadentry/NAME").
	Instance string
}

// Waypoint resolves the scenario's `waypoint/NAME` target.
func (sc *Scenario) Waypoint() (*WaypointTarget, error) {
	kind, name, ok := strings.Cut(sc.Args.Target, "/")
	if !ok || (kind != "waypoint" && kind != "waypoints") || name == "" {
		return nil, fmt.Errorf("a waypoint scenario names waypoint/NAME, not %q", sc.Args.Target)
	}
	ns := sc.Args.Namespace
	w := &WaypointTarget{}
	for _, o := range sc.Kube {
		if g, ok := o.(*gatewayv1.Gateway); ok && g.Namespace == ns && g.Name == name {
			w.Gateway = g
		}
	}
	if w.Gateway == nil {
		return nil, fmt.Errorf("no Gateway %s/%s", ns, name)
	}
	gwLabel := label.IoK8sNetworkingGatewayGatewayName.Name
	var entry *networkingv1.WorkloadEntry
	for _, o := range sc.Kube {
		switch t := o.(type) {
		case *corev1.Pod:
			if w.IP == "" && t.Namespace == ns && t.Labels[gwLabel] == name && t.Status.PodIP != "" {
				w.IP, w.Instance = t.Status.PodIP, "pod/"+t.Name
			}
		case *networkingv1.WorkloadEntry:
			if entry == nil && t.Namespace == ns && (t.Labels[gwLabel] == name || t.Spec.GetLabels()[gwLabel] == name) && t.Spec.GetAddress() != "" {
				entry = t
			}
		}
	}
	if w.IP == "" && entry != nil {
		w.IP, w.Instance = entry.Spec.GetAddress(), "workloadentry/"+entry.Name
	}
	if w.IP == "" {
		return nil, &NoProxyError{Waypoint: ns + "/" + name}
	}
	return w, nil
}

// NoProxyError says that a scenario has no proxy to connect to the discovery server as: a
// waypoint without an instance, a pod without an IP (no sidecar runs in it yet), or a pod the
// sidecar injector has not marked (no sidecar in it at all). istiod pushes to proxies, so
// without one Istio's code has nothing to answer, where the plugin answers what istiod would
// push to the waypoint, or says the pod has no sidecar.
type NoProxyError struct {
	// Waypoint is the Gateway, NS/NAME, for a waypoint without an instance.
	Waypoint string
	// Pod is the pod, NS/NAME, and Missing what it lacks, for a pod.
	Pod, Missing string
}

func (e *NoProxyError) Error() string {
	if e.Pod != "" {
		return fmt.Sprintf("pod %s has no %s", e.Pod, e.Missing)
	}
	_, name, _ := strings.Cut(e.Waypoint, "/")
	return fmt.Sprintf("no instance of waypoint %s: want a Pod with status.podIP or a WorkloadEntry with an address, labelled %s: %s", e.Waypoint, label.IoK8sNetworkingGatewayGatewayName.Name, name)
}

// WaypointProxy is the proxy of a waypoint instance as Istio's pilot/pkg/xds/waypoint_test.go
// setupWaypointTest builds it: type waypoint, config namespace the Gateway's, the labels the
// deployment controller puts on the waypoint's pods, and the instance's address; plus the
// ISTIO_VERSION and cluster ID the other runners' proxies report.
func (w *WaypointTarget) WaypointProxy() *model.Proxy {
	ns := w.Gateway.Namespace
	labels := map[string]string{
		label.IoK8sNetworkingGatewayGatewayName.Name: w.Gateway.Name,
		label.GatewayManaged.Name:                    constants.ManagedGatewayMeshControllerLabel,
	}
	return &model.Proxy{
		Type:            model.Waypoint,
		ID:              fmt.Sprintf("%s.%s", strings.TrimPrefix(strings.TrimPrefix(w.Instance, "pod/"), "workloadentry/"), ns),
		ConfigNamespace: ns,
		Labels:          labels,
		IPAddresses:     []string{w.IP},
		Metadata: &model.NodeMetadata{
			IstioVersion: ProxyIstioVersion,
			Namespace:    ns,
			Labels:       labels,
			ClusterID:    istiocluster.ID(constants.DefaultClusterName),
		},
	}
}

// Programmed returns the scenario with the waypoint's Gateway as istiod has programmed it: when
// the Gateway has no status.addresses (a waypoint not yet deployed, or read from files), they
// are filled in as istiod's Gateway controller reports them for a waypoint class (both kinds,
// pilot/pkg/config/kube/gateway/conversion.go reportGatewayStatus): the clusterIP of the
// waypoint's Service (the Service with the Gateway's name), then its hostname. That is the
// assumption the tool answers under for such a Gateway. A Gateway that has addresses is left
// as it is; the scenario itself is not changed.
func (sc *Scenario) Programmed() (*Scenario, error) {
	wp, err := sc.Waypoint()
	if err != nil {
		return nil, err
	}
	if len(wp.Gateway.Status.Addresses) > 0 {
		return sc, nil
	}
	gw := wp.Gateway.DeepCopy()
	ipType, hostType := gatewayv1.IPAddressType, gatewayv1.HostnameAddressType
	for _, o := range sc.Kube {
		if s, ok := o.(*corev1.Service); ok && s.Namespace == gw.Namespace && s.Name == gw.Name && s.Spec.ClusterIP != "" && s.Spec.ClusterIP != corev1.ClusterIPNone {
			gw.Status.Addresses = append(gw.Status.Addresses, gatewayv1.GatewayStatusAddress{Type: &ipType, Value: s.Spec.ClusterIP})
		}
	}
	gw.Status.Addresses = append(gw.Status.Addresses, gatewayv1.GatewayStatusAddress{
		Type: &hostType, Value: fmt.Sprintf("%s.%s.svc.%s", gw.Name, gw.Namespace, DomainSuffix),
	})
	out := *sc
	out.Kube = make([]runtime.Object, len(sc.Kube))
	for i, o := range sc.Kube {
		if o == wp.Gateway {
			o = gw
		}
		out.Kube[i] = o
	}
	out.Configs = make([]config.Config, len(sc.Configs))
	for i, c := range sc.Configs {
		if c.GroupVersionKind == gvk.KubernetesGateway && c.Namespace == gw.Namespace && c.Name == gw.Name {
			c = crdclient.TranslateObject(gw, gvk.KubernetesGateway, DomainSuffix)
		}
		out.Configs[i] = c
	}
	return &out, nil
}

// WaypointChains runs istiod in process on the scenario in ambient mode, as Istio's
// pilot/pkg/xds/waypoint_test.go setupWaypointTest does (every object given both as config and
// as a Kubernetes object), builds the listeners of the waypoint the authz command names, and
// returns the filter chains of its `main_internal` listener, reduced by AuthzChains without
// transportSocket, in istiod's order. The scenario is run as it is: see Programmed for the
// Gateway without status.addresses.
func WaypointChains(sc *Scenario) ([]*listener.FilterChain, error) {
	ConfigureLogging()
	if sc.Args.Verb != "authz" {
		return nil, fmt.Errorf("not an authz scenario: %q", sc.Command)
	}
	wp, err := sc.Waypoint()
	if err != nil {
		return nil, err
	}
	var chains []*listener.FilterChain
	var panicked *PanicError
	err = withAmbientFeatures(func() error {
		return test.Wrap(func(t test.Failer) {
			objs := append([]runtime.Object{}, sc.Kube...)
			objs = append(objs, installedGatewayClasses(sc.Kube)...)
			s := xds.NewFakeDiscoveryServer(t, xds.FakeOptions{
				KubernetesObjects: objs,
				Configs:           sc.Configs,
				MeshConfig:        sc.Mesh,
			})
			settle(s)
			var ls []*listener.Listener
			func() {
				defer func() {
					if r := recover(); r != nil {
						panicked = &PanicError{What: "listeners", Value: r, Stack: string(debug.Stack())}
					}
				}()
				proxy := s.SetupProxy(wp.WaypointProxy())
				ls = s.Listeners(proxy)
			}()
			if panicked != nil {
				t.Fatal(panicked)
			}
			var main *listener.Listener
			for _, l := range ls {
				if l.Name == core.MainInternalName {
					main = l
				}
			}
			if main == nil {
				t.Fatalf("istiod built waypoint %s/%s no %s listener", wp.Gateway.Namespace, wp.Gateway.Name, core.MainInternalName)
			}
			cs, err := AuthzChains(main)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cs {
				c.TransportSocket = nil
			}
			chains = cs
		})
	})
	if panicked != nil {
		return nil, panicked
	}
	return chains, err
}

// settle waits until istiod has committed every update its controllers queued while the fake
// cluster synced (the ambient index and the Gateway controller keep pushing after their caches
// report synced), so that the push context the listeners are built from holds all of them.
func settle(s *xds.FakeDiscoveryServer) {
	deadline := time.Now().Add(10 * time.Second)
	stable := 0
	for stable < 5 && time.Now().Before(deadline) {
		in := s.Discovery.InboundUpdates.Load()
		time.Sleep(5 * time.Millisecond)
		if s.Discovery.CommittedUpdates.Load() >= in && s.Discovery.InboundUpdates.Load() == in {
			stable++
		} else {
			stable = 0
		}
	}
}

// WaypointJSON writes a waypoint's filter chains the way `-o envoy` does for `waypoint/NAME`.
func WaypointJSON(chains []*listener.FilterChain) ([]byte, error) {
	return InboundJSON(chains)
}

// RunWaypoint runs a waypoint authz scenario and returns Istio's `-o envoy` output for the
// waypoint as istiod has programmed it (Programmed): for a Gateway with status.addresses, the
// scenario as it is.
func RunWaypoint(sc *Scenario) ([]byte, error) {
	p, err := sc.Programmed()
	if err != nil {
		return nil, err
	}
	cs, err := WaypointChains(p)
	if err != nil {
		return nil, err
	}
	return WaypointJSON(cs)
}
