package plan

import (
	"context"
	"slices"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// Labels that bind objects to a waypoint (istio.io/api/label).
const (
	labelUseWaypoint = "istio.io/use-waypoint"
	// labelGatewayName is on the pods of a Gateway's deployment (a waypoint's): it names the
	// Gateway.
	labelGatewayName   = "gateway.networking.k8s.io/gateway-name"
	labelUseWaypointNS = "istio.io/use-waypoint-namespace"
)

// Waypoint is what `authz waypoint/NAME` reads: every Namespace (their labels bind services to
// waypoints), the Gateways of the waypoint's namespace, and the Services, ServiceEntries, pods,
// WorkloadEntries and AuthorizationPolicies of the waypoint's namespace, the root namespace and
// every namespace that may bind to it: those whose labels name it, and all of them when its
// HBONE listener allows other namespaces. In the other namespaces, the Services,
// ServiceEntries, pods and WorkloadEntries that carry an istio.io/use-waypoint label are read
// too (a list with that label selector): their own label may name the waypoint, bound or not.
// The Services of the namespaces of ext_authz providers are read as well.
type Waypoint struct {
	ns, name  string
	base      source.Spec
	root      string
	rootKnown bool
	// served are the other namespaces whose objects are read; all: every namespace.
	served    []string
	all       bool
	providers []string
}

// NewWaypoint plans the reads of `authz waypoint/NAME -n NS`.
func NewWaypoint(ns, name string, base source.Spec, root string, rootKnown bool) *Waypoint {
	return &Waypoint{ns: ns, name: name, base: base, root: root, rootKnown: rootKnown}
}

// Reads are the reads of the plan as it stands.
func (w *Waypoint) Reads() []source.Read {
	objs := namespaces(append([]string{w.ns}, w.served...)...)
	if w.all {
		objs = nil
	}
	withRoot := namespaces(append([]string{w.ns, w.root}, w.served...)...)
	if w.all {
		withRoot = nil
	}
	svcs := namespaces(append(append([]string{w.ns}, w.served...), w.providers...)...)
	if w.all {
		svcs = nil
	}
	reads := []source.Read{
		{Kind: source.KindNamespace},
		{Kind: source.KindGateway, Namespaces: namespaces(w.ns)},
		{Kind: source.KindService, Namespaces: svcs},
		{Kind: source.KindServiceEntry, Namespaces: objs},
		{Kind: source.KindPod, Namespaces: objs},
		{Kind: source.KindWorkloadEntry, Namespaces: objs},
		{Kind: source.KindAuthorizationPolicy, Namespaces: withRoot},
	}
	if !w.all {
		for _, kind := range []string{source.KindService, source.KindServiceEntry, source.KindPod, source.KindWorkloadEntry} {
			reads = append(reads, source.Read{Kind: kind, Labeled: labelUseWaypoint})
		}
	}
	return reads
}

// Load reads the planned kinds, then again with the namespaces the first snapshot shows bound
// (namespace labels, the Gateway's allowed routes), MeshConfig's root namespace and the
// namespaces of ext_authz providers.
func (w *Waypoint) Load(ctx context.Context, load Loader) (*model.Snapshot, error) {
	for {
		s := w.base
		s.Reads = w.Reads()
		snap, err := load(ctx, s)
		if err != nil {
			return snap, err
		}
		again := false
		if !w.rootKnown && snap.RootNamespace() != w.root {
			w.root, w.rootKnown, again = snap.RootNamespace(), true, true
		}
		for _, n := range snap.Namespaces {
			v, ok := n.Labels[labelUseWaypoint]
			wns := n.Name
			if o, f := n.Labels[labelUseWaypointNS]; f {
				wns = o
			}
			if ok && v == w.name && wns == w.ns && n.Name != w.ns && !slices.Contains(w.served, n.Name) {
				w.served, again = append(w.served, n.Name), true
			}
		}
		for _, g := range snap.Gateways {
			if g.Namespace == w.ns && g.Name == w.name && !w.all && allowsOthers(g) {
				w.all, again = true, true
			}
		}
		for _, pns := range providerNamespaces(snap) {
			if pns != w.ns && !slices.Contains(w.providers, pns) {
				w.providers, again = append(w.providers, pns), true
			}
		}
		if !again {
			return snap, nil
		}
	}
}

// allowsOthers reports whether the Gateway's HBONE listener lets other namespaces bind.
func allowsOthers(g *gatewayv1.Gateway) bool {
	for _, l := range g.Spec.Listeners {
		if l.Protocol == "HBONE" && l.Port == 15008 && l.AllowedRoutes != nil && l.AllowedRoutes.Namespaces != nil &&
			l.AllowedRoutes.Namespaces.From != nil && *l.AllowedRoutes.Namespaces.From != gatewayv1.NamespacesFromSame {
			return true
		}
	}
	return false
}
