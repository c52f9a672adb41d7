package waypointauthz

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/internal/parallel"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/meshhost"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// Labels and values istiod reads for waypoint binding (istio.io/api/label, pkg/config/constants).
const (
	// ClassName is the GatewayClass of waypoints (constants.WaypointGatewayClassName).
	ClassName                = "istio-waypoint"
	labelUseWaypoint         = "istio.io/use-waypoint"
	labelUseWaypointNS       = "istio.io/use-waypoint-namespace"
	labelWaypointFor         = "istio.io/waypoint-for"
	labelGatewayName         = "gateway.networking.k8s.io/gateway-name"
	labelManaged             = "gateway.istio.io/managed"
	managedMesh              = "istio.io-mesh-controller"
	managedEastWest          = "istio.io-eastwest-controller"
	trafficService           = "service"
	trafficWorkload          = "workload"
	trafficAll               = "all"
	trafficNone              = "none"
	useWaypointNone          = "none"
	hbonePort                = 15008
	hboneProtocol            = "HBONE"
	kindService              = "Service"
	kindServiceEntry         = "ServiceEntry"
	kindPod                  = "Pod"
	kindWorkloadEntry        = "WorkloadEntry"
	kindNamespace            = "Namespace"
	kindGateway              = "Gateway"
	kindAuthorizationPolicy  = "AuthorizationPolicy"
	groupGateway             = "gateway.networking.k8s.io"
	groupNetworking          = "networking.istio.io"
	defaultTrafficTypeOrigin = "istiod's default traffic type for a waypoint (service)"
)

// Binding is one object that names the waypoint (directly or through its namespace), and
// whether istiod binds it.
type Binding struct {
	// Kind is Service, ServiceEntry, Pod or WorkloadEntry.
	Kind, Namespace, Name string
	// Bound says the waypoint serves the object's traffic.
	Bound bool
	// Why names the label that decides it, on which object; Reason why an object that names
	// the waypoint is not bound, or what limits a bound one (a Gateway not yet programmed, the
	// hosts of a ServiceEntry that another service holds).
	Why, Reason string
	// Origin is the label's origin.
	Origin provenance.Origin
	// unserved: not bound because istiod binds nothing to the waypoint (unservedReason).
	unserved bool
	// outranked: a ServiceEntry not bound because other services hold its hosts (outranked).
	outranked bool
	// lost are the hosts of a bound ServiceEntry that other services hold (outranked).
	lost map[string]bool
}

// Ref is the object's provenance spelling.
func (b Binding) Ref() provenance.Ref {
	return provenance.Ref{Kind: b.Kind, Namespace: b.Namespace, Name: b.Name}
}

// waypoint is the Gateway as istiod's Waypoint collection sees it.
type waypoint struct {
	gw *gatewayv1.Gateway
	// deployed: the Gateway has status.addresses (gatewayToWaypointTransform skips it otherwise).
	deployed bool
	// traffic is the traffic type (service, workload, all, none) and trafficWhy its source.
	traffic, trafficWhy string
	// from is the allowed routes of the HBONE listener (Same, All, Selector), sel its selector.
	from    gatewayv1.FromNamespaces
	sel     labels.Selector
	fromWhy string
}

func newWaypoint(gw *gatewayv1.Gateway) *waypoint {
	w := &waypoint{gw: gw, deployed: len(gw.Status.Addresses) > 0, traffic: trafficService, trafficWhy: defaultTrafficTypeOrigin}
	if tt, ok := gw.Labels[labelWaypointFor]; ok {
		w.traffic, w.trafficWhy = tt, "label "+labelWaypointFor+" on the Gateway"
	}
	w.from, w.fromWhy = gatewayv1.NamespacesFromSame, "no HBONE listener on port 15008 with allowedRoutes: the waypoint's own namespace"
	for i, l := range gw.Spec.Listeners {
		if string(l.Protocol) != hboneProtocol || l.Port != hbonePort {
			continue
		}
		w.fromWhy = fmt.Sprintf("spec.listeners[%d].allowedRoutes.namespaces.from", i)
		if l.AllowedRoutes == nil || l.AllowedRoutes.Namespaces == nil {
			break // Same (the API server writes that default; files may leave it out)
		}
		if f := l.AllowedRoutes.Namespaces.From; f != nil {
			w.from = *f
		}
		if w.from == gatewayv1.NamespacesFromSelector {
			s, err := metav1.LabelSelectorAsSelector(l.AllowedRoutes.Namespaces.Selector)
			if err != nil {
				s = labels.Nothing()
			}
			w.sel = s
		}
		break
	}
	return w
}

// allows is AllowsAttachmentFromNamespace.
func (w *waypoint) allows(ns *corev1.Namespace, name string) bool {
	switch w.from {
	case gatewayv1.NamespacesFromAll:
		return true
	case gatewayv1.NamespacesFromSelector:
		if ns == nil || w.sel == nil {
			return false
		}
		return w.sel.Matches(labels.Set(ns.Labels))
	}
	return w.gw.Namespace == name
}

// useWaypoint is GetUseWaypoint: the waypoint an object's labels name, or none.
func useWaypoint(l map[string]string, ns string) (wns, wname string, isNone, ok bool) {
	v, found := l[labelUseWaypoint]
	if !found {
		return "", "", false, false
	}
	if v == useWaypointNone {
		return "", "", true, true
	}
	wns = ns
	if o, f := l[labelUseWaypointNS]; f {
		wns = o
	}
	return wns, v, false, true
}

// objectWaypoint is useWaypoint on an object's labels, then, when they name none, on its
// namespace's: the waypoint an object of namespace ns uses, or none.
func objectWaypoint(snap *model.Snapshot, l map[string]string, ns string) (wns, wname string, isNone, ok bool) {
	wns, wname, isNone, ok = useWaypoint(l, ns)
	if !ok {
		if n := snap.Namespace(ns); n != nil {
			return useWaypoint(n.Labels, ns)
		}
	}
	return wns, wname, isNone, ok
}

// bindTarget is fetchWaypointForTarget for this waypoint, then the traffic-type check of a
// service (forService) or a workload. It returns nil when the object does not name this
// waypoint at all.
func (e *explanation) bindTarget(kind string, meta *metav1.ObjectMeta, forService bool) *Binding {
	wns, wname, fromNamespace, ok := e.namedWaypoint(meta.Labels, meta.Namespace)
	if !ok || wns != e.gw.Namespace || wname != e.gw.Name {
		return nil
	}
	ns := e.namespace(meta.Namespace)
	b := &Binding{Kind: kind, Namespace: meta.Namespace, Name: meta.Name}
	if fromNamespace {
		b.Why = fmt.Sprintf("label %s=%s on Namespace %s", labelUseWaypoint, wname, meta.Namespace)
		b.Origin = e.snap.Origin(provenance.LayerRegistry, model.ObjectKey{Kind: kindNamespace, Name: meta.Namespace}, "metadata.labels["+labelUseWaypoint+"]")
	} else {
		b.Why = fmt.Sprintf("label %s=%s on %s %s/%s", labelUseWaypoint, wname, kind, meta.Namespace, meta.Name)
		b.Origin = e.snap.Origin(provenance.LayerRegistry, model.ObjectKey{Kind: kind, Namespace: meta.Namespace, Name: meta.Name}, "metadata.labels["+labelUseWaypoint+"]")
	}
	if wns != meta.Namespace {
		b.Why += fmt.Sprintf(" (%s=%s)", labelUseWaypointNS, wns)
	}
	allowed := e.wp.allows(ns, meta.Namespace)
	if fromNamespace {
		allowed = ns != nil && e.wp.allows(ns, ns.Name)
	}
	switch {
	case !allowed:
		b.Reason = fmt.Sprintf("the waypoint's HBONE listener does not allow namespace %s (%s: %s)", meta.Namespace, e.wp.fromWhy, e.wp.from)
	case forService && e.wp.traffic != trafficService && e.wp.traffic != trafficAll:
		b.Reason = fmt.Sprintf("the waypoint is for %s traffic (%s), not service traffic", e.wp.traffic, e.wp.trafficWhy)
	case !forService && e.wp.traffic != trafficWorkload && e.wp.traffic != trafficAll:
		b.Reason = fmt.Sprintf("the waypoint is for %s traffic (%s), not workload traffic", e.wp.traffic, e.wp.trafficWhy)
	case e.unserved != "":
		b.Reason, b.unserved = "istiod binds nothing to this waypoint: "+e.unserved, true
	default:
		b.Bound = true
		if !e.wp.deployed {
			b.Reason = "bound once istiod has programmed the waypoint (the Gateway has no status.addresses yet)"
		}
	}
	return b
}

// unservedReason says why istiod binds (or, once it has programmed the waypoint, will bind)
// nothing to the waypoint, or "" when it binds what names it. istiod builds a waypoint's
// listeners for the services and workloads it finds by the waypoint proxy's key
// (model.WaypointKeyForProxy: the hostnames and cluster IPs of the Services that select the
// proxy), and those are indexed by the Gateway's address (getGatewayAddress in
// pilot/pkg/serviceregistry/ambient/waypoints.go: the first Hostname of status.addresses, else
// the first IP address; ServicesForWaypoint, WorkloadsForWaypoint). So the waypoint's own
// Service must hold that address. The proxy is an instance of the waypoint: a pod or
// WorkloadEntry of its namespace labelled with the Gateway's name; without one, the labels the
// waypoint's deployment gives its pods.
//
// A Gateway not yet deployed is answered as istiod will program it: its address will be the
// hostname of the Service named as the Gateway (reportGatewayStatus), which its deployment
// creates; when the snapshot already holds that Service, it must select the instances too.
func (e *explanation) unservedReason() string {
	var host, ip string
	if !e.wp.deployed {
		if e.findService(e.gw.Namespace, e.gw.Name) == nil {
			return ""
		}
		host = e.gw.Name + "." + e.gw.Namespace + ".svc." + meshhost.DomainSuffix
	}
	for _, a := range e.gw.Status.Addresses {
		if a.Type != nil && *a.Type == gatewayv1.HostnameAddressType {
			host = a.Value
			break
		}
	}
	if host == "" {
		for _, a := range e.gw.Status.Addresses {
			if a.Type != nil && *a.Type == gatewayv1.IPAddressType {
				if addr, err := netip.ParseAddr(a.Value); err == nil {
					ip = addr.String()
					break
				}
			}
		}
	}
	if host == "" && ip == "" {
		return "status.addresses holds no address of type Hostname or IPAddress that istiod can use"
	}
	instances := e.instanceLabels()
	for _, s := range e.snap.Services {
		if s.Namespace != e.gw.Namespace || len(s.Spec.Selector) == 0 {
			continue
		}
		sel := labels.SelectorFromSet(s.Spec.Selector)
		if !slices.ContainsFunc(instances, func(l map[string]string) bool { return sel.Matches(labels.Set(l)) }) {
			continue
		}
		if host != "" && host == s.Name+"."+s.Namespace+".svc."+meshhost.DomainSuffix {
			return ""
		}
		if ip != "" && slices.ContainsFunc(append([]string{s.Spec.ClusterIP}, s.Spec.ClusterIPs...), func(v string) bool {
			addr, err := netip.ParseAddr(v)
			return err == nil && addr.String() == ip
		}) {
			return ""
		}
	}
	if !e.wp.deployed {
		return fmt.Sprintf("Service %s/%s, whose hostname istiod will give the waypoint as its address, does not select the waypoint's instances (%s=%s)", e.gw.Namespace, e.gw.Name, labelGatewayName, e.gw.Name)
	}
	if host != "" {
		return fmt.Sprintf("its address %s (status.addresses) is the hostname of no Service of namespace %s that selects the waypoint's instances (%s=%s)", host, e.gw.Namespace, labelGatewayName, e.gw.Name)
	}
	return fmt.Sprintf("its address %s (status.addresses) is the cluster IP of no Service of namespace %s that selects the waypoint's instances (%s=%s)", ip, e.gw.Namespace, labelGatewayName, e.gw.Name)
}

// instanceLabels are the labels of the waypoint's instances: the pods and WorkloadEntries of
// its namespace labelled gateway.networking.k8s.io/gateway-name with its name (a
// WorkloadEntry's spec.labels over its metadata.labels), or, when there is none, that label
// alone, as the waypoint's deployment sets it.
func (e *explanation) instanceLabels() []map[string]string {
	var out []map[string]string
	for _, p := range e.snap.Pods {
		if p.Namespace == e.gw.Namespace && p.Labels[labelGatewayName] == e.gw.Name {
			out = append(out, p.Labels)
		}
	}
	for _, we := range e.snap.WorkloadEntries {
		if we.Namespace != e.gw.Namespace {
			continue
		}
		l := maps.Clone(we.Labels)
		if l == nil {
			l = map[string]string{}
		}
		maps.Copy(l, we.Spec.GetLabels())
		if l[labelGatewayName] == e.gw.Name {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		out = append(out, map[string]string{labelGatewayName: e.gw.Name})
	}
	return out
}

// namedWaypoint is the waypoint an object of namespace nsName names (GetUseWaypoint on its
// labels, then on its namespace's): ok is false when neither names one, or when the one that
// decides says none; fromNamespace says the namespace's label decides.
func (e *explanation) namedWaypoint(l map[string]string, nsName string) (wns, wname string, fromNamespace, ok bool) {
	wns, wname, isNone, ok := useWaypoint(l, nsName)
	switch {
	case isNone:
		return "", "", false, false
	case ok:
		return wns, wname, false, true
	case e.namespace(nsName) != nil:
		wns, wname, isNone, ok = useWaypoint(e.namespace(nsName).Labels, nsName)
		if !ok || isNone {
			return "", "", false, false
		}
		return wns, wname, true, true
	}
	return "", "", false, false
}

// namespace is snap.Namespace(name) from an index built on first use (the first Namespace of
// that name, as snap.Namespace finds it).
func (e *explanation) namespace(name string) *corev1.Namespace {
	if e.namespaces == nil {
		e.namespaces = make(map[string]*corev1.Namespace, len(e.snap.Namespaces))
		for _, n := range e.snap.Namespaces {
			if _, dup := e.namespaces[n.Name]; !dup {
				e.namespaces[n.Name] = n
			}
		}
	}
	return e.namespaces[name]
}

// bindings are the Services, ServiceEntries, pods and WorkloadEntries that name the waypoint,
// in kind then namespace/name order.
func (e *explanation) bindings() []Binding {
	var out []Binding
	for _, i := range e.naming(len(e.snap.Services), func(i int) *metav1.ObjectMeta { return &e.snap.Services[i].ObjectMeta }) {
		s := e.snap.Services[i]
		b := e.bindTarget(kindService, &s.ObjectMeta, true)
		if m := s.Labels[labelManaged]; m == managedMesh || m == managedEastWest {
			continue
		}
		out = append(out, *b)
	}
	for _, i := range e.naming(len(e.snap.ServiceEntries), func(i int) *metav1.ObjectMeta { return &e.snap.ServiceEntries[i].ObjectMeta }) {
		se := e.snap.ServiceEntries[i]
		b := e.bindTarget(kindServiceEntry, &se.ObjectMeta, true)
		if b.Bound {
			// Bound only through the hosts istiod keeps this ServiceEntry's service for.
			var why []string
			for _, h := range se.Spec.GetHosts() {
				if r := e.outranked(se, h); r != "" {
					why = append(why, r)
					if b.lost == nil {
						b.lost = map[string]bool{}
					}
					b.lost[h] = true
				}
			}
			switch {
			case len(why) > 0 && len(why) == len(se.Spec.GetHosts()):
				b.Bound, b.Reason, b.outranked = false, strings.Join(why, "; "), true
			case len(why) > 0:
				// Bound, but not for the hosts another service holds: say which.
				note := "bound for its other hosts only: " + strings.Join(why, "; ")
				if b.Reason != "" {
					note = b.Reason + "; " + note
				}
				b.Reason = note
			}
		}
		out = append(out, *b)
	}
	for _, i := range e.naming(len(e.snap.Pods), func(i int) *metav1.ObjectMeta { return &e.snap.Pods[i].ObjectMeta }) {
		p := e.snap.Pods[i]
		if b := e.bindTarget(kindPod, &p.ObjectMeta, false); (b.Bound || e.podNamesWaypoint(p)) && p.Labels[labelGatewayName] == "" {
			out = append(out, *b)
		}
	}
	for _, i := range e.naming(len(e.snap.WorkloadEntries), func(i int) *metav1.ObjectMeta { return &e.snap.WorkloadEntries[i].ObjectMeta }) {
		we := e.snap.WorkloadEntries[i]
		if b := e.bindTarget(kindWorkloadEntry, &we.ObjectMeta, false); b.Bound || hasUseWaypoint(we.Labels) {
			out = append(out, *b)
		}
	}
	return out
}

// namingChunk is how many objects one worker of naming reads at a time.
const namingChunk = 1024

// naming is, in order, the indices below n of the objects (meta(i)) that name this waypoint,
// by their labels or their namespace's (namedWaypoint): those bindTarget binds or reports.
// Looking that up reads the labels of every Service and pod of the mesh, tens of thousands of
// maps at 10,000 Services and most of a waypoint's answer (docs/performance.md): it is done on
// every core, and only the few objects found go through bindTarget.
func (e *explanation) naming(n int, meta func(i int) *metav1.ObjectMeta) []int {
	e.namespace("") // builds the namespaces' index before the workers read it
	parts := make([][]int, (n+namingChunk-1)/namingChunk)
	parallel.Each(len(parts), func(c int) {
		for i := c * namingChunk; i < min(n, (c+1)*namingChunk); i++ {
			m := meta(i)
			if wns, wname, _, ok := e.namedWaypoint(m.Labels, m.Namespace); ok && wns == e.gw.Namespace && wname == e.gw.Name {
				parts[c] = append(parts[c], i)
			}
		}
	})
	return slices.Concat(parts...)
}

// podNamesWaypoint: a pod whose own label names the waypoint is reported even when the traffic
// type leaves it out (fetchWaypointForWorkload reports it then; a namespace label does not).
func (e *explanation) podNamesWaypoint(p *corev1.Pod) bool { return hasUseWaypoint(p.Labels) }

func hasUseWaypoint(l map[string]string) bool { _, ok := l[labelUseWaypoint]; return ok }

// boundServices are the Services and ServiceEntries bound to the waypoint, each host once,
// in SortServicesByCreationTime order (creation time, then name or host, then namespace).
func (e *explanation) boundServices(bs []Binding) []*service {
	var out []*service
	byHost := map[string]int{}
	add := func(s *service) {
		if i, ok := byHost[s.host]; ok {
			out[i] = s // the last one read wins (findWaypointResources keys a map by hostname)
			return
		}
		byHost[s.host] = len(out)
		out = append(out, s)
	}
	for _, b := range bs {
		if !b.Bound {
			continue
		}
		switch b.Kind {
		case kindService:
			if s := e.findService(b.Namespace, b.Name); s != nil {
				add(kubeService(s))
			}
		case kindServiceEntry:
			if se := e.findServiceEntry(b.Namespace, b.Name); se != nil {
				for _, s := range serviceEntryServices(se) {
					if !b.lost[s.host] {
						add(s)
					}
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b *service) int {
		if c := a.created.Compare(b.created); c != 0 {
			return c
		}
		if c := strings.Compare(a.attrName, b.attrName); c != 0 {
			return c
		}
		return strings.Compare(a.ns, b.ns)
	})
	return out
}

// outranked says why istiod keeps another service than ServiceEntry se's for host in se's
// namespace, or "" when it keeps se's. Services that share a hostname are resolved to one per
// namespace, before any waypoint binds them: a Kubernetes Service always wins, else the oldest
// ServiceEntry (selectWorkloadServices in pilot/pkg/serviceregistry/ambient/services.go). The
// one kept binds by its own labels.
func (e *explanation) outranked(se *networkingv1.ServiceEntry, host string) string {
	if name, ok := strings.CutSuffix(host, "."+se.Namespace+".svc.cluster.local"); ok && e.findService(se.Namespace, name) != nil {
		return fmt.Sprintf("host %s is also Service %s/%s's, and istiod keeps the Service for it", host, se.Namespace, name)
	}
	for _, o := range e.snap.ServiceEntries {
		if o != se && o.Namespace == se.Namespace && o.CreationTimestamp.Before(&se.CreationTimestamp) && slices.Contains(o.Spec.GetHosts(), host) {
			return fmt.Sprintf("host %s is also ServiceEntry %s/%s's, older, and istiod keeps the oldest for it", host, o.Namespace, o.Name)
		}
	}
	return ""
}

// findService is the first Service ns/name of the snapshot, from an index built on first use.
func (e *explanation) findService(ns, name string) *corev1.Service {
	if e.services == nil {
		e.services = make(map[types.NamespacedName]*corev1.Service, len(e.snap.Services))
		for _, s := range e.snap.Services {
			k := types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
			if _, dup := e.services[k]; !dup {
				e.services[k] = s
			}
		}
	}
	return e.services[types.NamespacedName{Namespace: ns, Name: name}]
}

// findServiceEntry is the first ServiceEntry ns/name of the snapshot, from an index built on
// first use.
func (e *explanation) findServiceEntry(ns, name string) *networkingv1.ServiceEntry {
	if e.serviceEntries == nil {
		e.serviceEntries = make(map[types.NamespacedName]*networkingv1.ServiceEntry, len(e.snap.ServiceEntries))
		for _, s := range e.snap.ServiceEntries {
			k := types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
			if _, dup := e.serviceEntries[k]; !dup {
				e.serviceEntries[k] = s
			}
		}
	}
	return e.serviceEntries[types.NamespacedName{Namespace: ns, Name: name}]
}
