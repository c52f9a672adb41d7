package waypointauthz

import (
	"slices"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
)

// annotationServiceAccount overrides the waypoint's service account name
// (annotation.GatewayServiceAccount).
const annotationServiceAccount = "gateway.istio.io/service-account"

// PodWaypoint is a waypoint in front of an ambient pod: the waypoint of a Service that selects
// the pod, or the pod's own (traffic addressed to the pod).
type PodWaypoint struct {
	// Service is the Service whose traffic the waypoint serves; nil for the pod's own waypoint.
	Service *corev1.Service
	// Namespace and Name are the waypoint Gateway's.
	Namespace, Name string
	// Binding is istiod's binding of the Service (or the pod) to the waypoint.
	Binding Binding
	// Deployed: the Gateway has status.addresses (istiod's Waypoint collection skips it until
	// then, pilot/pkg/serviceregistry/ambient/waypoints.go gatewayToWaypointTransform).
	Deployed bool
	// ServiceAccounts are the waypoint's service accounts, sorted; ServiceAccountsFrom says
	// where they come from. FromPods is true when they are those of the waypoint's pods in the
	// snapshot (what istiod's Waypoint.ServiceAccounts holds).
	ServiceAccounts     []string
	ServiceAccountsFrom string
	FromPods            bool

	gw *gatewayv1.Gateway
}

// Via names what sends the traffic through the waypoint: `Service NS/NAME` or `Pod NS/NAME`.
func (p PodWaypoint) Via() string {
	return p.Binding.Kind + " " + p.Binding.Namespace + "/" + p.Binding.Name
}

// PodWaypoints returns the waypoints istiod binds in front of an ambient pod: its own (the
// istio.io/use-waypoint label of the pod, else of its namespace, for a waypoint of workload or
// all traffic: computeWaypoint), then those of the Services of its namespace that select it
// (fetchWaypointForService), in Service order. An object that names a Gateway that is not a
// waypoint, or whose binding istiod refuses, is left out; a waypoint not yet deployed is kept
// with Deployed false (bound once istiod programs it).
func PodWaypoints(snap *model.Snapshot, pod *corev1.Pod) []PodWaypoint {
	var selecting []*corev1.Service
	for _, svc := range snap.Services {
		if svc.Namespace == pod.Namespace && len(svc.Spec.Selector) > 0 && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
			selecting = append(selecting, svc)
		}
	}
	return NewWaypoints(snap).For(pod, selecting)
}

// Waypoints finds the waypoints in front of the pods of one snapshot. The Gateways and the
// waypoints' own pods are indexed once, so an engine that explains every pod of a mesh does not
// scan them again for each.
type Waypoints struct {
	snap *model.Snapshot
	// gateways are the snapshot's Gateways by "namespace/name".
	gateways map[string]*gatewayv1.Gateway
	// pods are the pods that carry the gateway-name label, by "namespace/gateway name".
	pods map[string][]*corev1.Pod
}

// NewWaypoints indexes snap for Waypoints.For.
func NewWaypoints(snap *model.Snapshot) *Waypoints {
	ws := &Waypoints{snap: snap, gateways: map[string]*gatewayv1.Gateway{}, pods: map[string][]*corev1.Pod{}}
	for _, g := range snap.Gateways {
		if g != nil {
			ws.gateways[g.Namespace+"/"+g.Name] = g
		}
	}
	for _, p := range snap.Pods {
		if p != nil && p.Labels[labelGatewayName] != "" {
			k := p.Namespace + "/" + p.Labels[labelGatewayName]
			ws.pods[k] = append(ws.pods[k], p)
		}
	}
	return ws
}

// For is PodWaypoints for one pod of the indexed snapshot, with the Services that select it
// given, in Service order.
func (ws *Waypoints) For(pod *corev1.Pod, selecting []*corev1.Service) []PodWaypoint {
	if pod.Labels[labelGatewayName] != "" {
		return nil // a waypoint's own pod
	}
	snap := ws.snap
	cache := map[string]*explanation{}
	bind := func(wns, wname, kind string, svc *corev1.Service) *PodWaypoint {
		key := wns + "/" + wname
		gw := ws.gateways[key]
		if gw == nil || string(gw.Spec.GatewayClassName) != ClassName {
			return nil // as Find: no such waypoint
		}
		e := cache[key]
		if e == nil {
			e = &explanation{snap: snap, gw: gw, wp: newWaypoint(gw), root: snap.RootNamespace()}
			cache[key] = e
		}
		var b *Binding
		if svc != nil {
			b = e.bindTarget(kind, &svc.ObjectMeta, true)
		} else {
			b = e.bindTarget(kind, &pod.ObjectMeta, false)
		}
		if b == nil || !b.Bound {
			return nil
		}
		p := &PodWaypoint{Service: svc, Namespace: wns, Name: wname, Binding: *b, Deployed: e.wp.deployed, gw: gw}
		p.ServiceAccounts, p.ServiceAccountsFrom, p.FromPods = serviceAccounts(ws.pods[key], e)
		return p
	}
	var out []PodWaypoint
	wns, wname, isNone, ok := objectWaypoint(snap, pod.Labels, pod.Namespace)
	if ok && !isNone {
		if p := bind(wns, wname, kindPod, nil); p != nil {
			out = append(out, *p)
		}
	}
	for _, svc := range selecting {
		if m := svc.Labels[labelManaged]; m == managedMesh || m == managedEastWest {
			continue
		}
		wns, wname, isNone, ok := objectWaypoint(snap, svc.Labels, svc.Namespace)
		if !ok || isNone {
			continue
		}
		if p := bind(wns, wname, kindService, svc); p != nil {
			out = append(out, *p)
		}
	}
	return out
}

// serviceAccounts are the waypoint's service accounts: those of its pods in the snapshot (label
// gateway.networking.k8s.io/gateway-name, as gatewayToWaypointTransform reads them), else the
// name istiod's deployment controller gives the ServiceAccount it creates: the
// gateway.istio.io/service-account annotation, else the Gateway's name (the istio-waypoint
// class sets DisableNameSuffix: pilot/pkg/config/kube/gatewaycommon deploymentcontroller.go
// and gateway_utils.go GetDefaultName).
// pods are the waypoint's pods: those of its namespace with its name in that label.
func serviceAccounts(pods []*corev1.Pod, e *explanation) (sas []string, from string, fromPods bool) {
	for _, p := range pods {
		sa := p.Spec.ServiceAccountName
		if sa == "" {
			sa = "default" // the API server's default
		}
		if !slices.Contains(sas, sa) {
			sas = append(sas, sa)
		}
	}
	if len(sas) > 0 {
		slices.Sort(sas)
		return sas, "spec.serviceAccountName of the waypoint's pods", true
	}
	if sa := e.gw.Annotations[annotationServiceAccount]; sa != "" {
		return []string{sa}, "annotation " + annotationServiceAccount + " on the Gateway", false
	}
	return []string{e.gw.Name}, "the Gateway's name, as istiod's deployment controller names the service account", false
}

// Attaches says whether the waypoint builds ap into the chains it serves for the pod
// (ShouldAttachPolicy with IsWaypoint): ap targets the waypoint's Gateway, the istio-waypoint
// GatewayClass from the root namespace, or the Service p is the waypoint of.
func (p PodWaypoint) Attaches(snap *model.Snapshot, ap *securityv1.AuthorizationPolicy) bool {
	root := snap.RootNamespace()
	if ap.Namespace != root && ap.Namespace != p.Namespace && (p.Service == nil || ap.Namespace != p.Service.Namespace) {
		return false // attaches below needs one of these namespaces
	}
	gw := p.gw
	if gw == nil {
		var err error
		if gw, err = Find(snap, Query{Namespace: p.Namespace, Name: p.Name}); err != nil {
			return false
		}
	}
	e := &explanation{snap: snap, gw: gw, root: root}
	var svc *service
	if p.Service != nil {
		svc = kubeService(p.Service)
	}
	_, ok := e.attaches(ap, svc)
	return ok
}
