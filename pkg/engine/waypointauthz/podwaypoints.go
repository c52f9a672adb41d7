package waypointauthz

import (
	"slices"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

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
	return PodWaypointsFor(snap, pod, selecting)
}

// PodWaypointsFor is PodWaypoints with the Services that select the pod given, in Service
// order (an engine that explains many pods finds them by namespace).
func PodWaypointsFor(snap *model.Snapshot, pod *corev1.Pod, selecting []*corev1.Service) []PodWaypoint {
	if pod.Labels[labelGatewayName] != "" {
		return nil // a waypoint's own pod
	}
	cache := map[string]*explanation{}
	bind := func(wns, wname, kind string, svc *corev1.Service) *PodWaypoint {
		gw, err := Find(snap, Query{Namespace: wns, Name: wname})
		if err != nil {
			return nil
		}
		e := cache[wns+"/"+wname]
		if e == nil {
			e = &explanation{snap: snap, gw: gw, wp: newWaypoint(gw), root: snap.RootNamespace()}
			cache[wns+"/"+wname] = e
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
		p := &PodWaypoint{Service: svc, Namespace: wns, Name: wname, Binding: *b, Deployed: e.wp.deployed}
		p.ServiceAccounts, p.ServiceAccountsFrom, p.FromPods = serviceAccounts(snap, e)
		return p
	}
	var out []PodWaypoint
	wns, wname, isNone, ok := useWaypoint(pod.Labels, pod.Namespace)
	if !ok {
		if ns := snap.Namespace(pod.Namespace); ns != nil {
			wns, wname, isNone, ok = useWaypoint(ns.Labels, pod.Namespace)
		}
	}
	if ok && !isNone {
		if p := bind(wns, wname, kindPod, nil); p != nil {
			out = append(out, *p)
		}
	}
	for _, svc := range selecting {
		if m := svc.Labels[labelManaged]; m == managedMesh || m == managedEastWest {
			continue
		}
		wns, wname, isNone, ok := useWaypoint(svc.Labels, svc.Namespace)
		if !ok {
			if ns := snap.Namespace(svc.Namespace); ns != nil {
				wns, wname, isNone, ok = useWaypoint(ns.Labels, svc.Namespace)
			}
		}
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
func serviceAccounts(snap *model.Snapshot, e *explanation) (sas []string, from string, fromPods bool) {
	for _, p := range snap.Pods {
		if p.Namespace != e.gw.Namespace || p.Labels[labelGatewayName] != e.gw.Name {
			continue
		}
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
	gw, err := Find(snap, Query{Namespace: p.Namespace, Name: p.Name})
	if err != nil {
		return false
	}
	e := &explanation{snap: snap, gw: gw, root: snap.RootNamespace()}
	var svc *service
	if p.Service != nil {
		svc = kubeService(p.Service)
	}
	_, ok := e.attaches(ap, svc)
	return ok
}
