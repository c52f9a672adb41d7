package plan

import (
	"context"
	"slices"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// Check is what `check` reads. Every host's answer needs the hosts (Services, ServiceEntries,
// WorkloadEntries), their endpoints (Pods) and rules (DestinationRules, VirtualServices,
// PeerAuthentications for the mTLS of each service namespace) in every namespace; what
// selects the clients and workloads checked (Sidecars, EnvoyFilters, AuthorizationPolicies,
// and the RequestAuthentications a sidecar's request principals need) only in their
// namespaces and the root namespace. A sidecar's answer also needs the Services of its pod
// (its ports) and of MeshConfig's ext_authz providers, which the Services of every namespace
// already hold.
//
// The waypoints checked are the Gateways of the namespaces checked; Gateways are read in every
// namespace, as an ambient pod's answer needs the waypoints its Services (or the pod) use,
// wherever they live (W09, W10). A waypoint's answer also needs the AuthorizationPolicies of
// the namespaces it may serve, and a pod's the targetRef policies of the waypoints it uses:
// those are read too, once a first read shows which namespaces have objects that name a
// waypoint checked, and which namespaces hold the waypoints the objects checked use.
type Check struct {
	// namespaces are those checked; nil for every namespace.
	namespaces []string
	base       source.Spec
	root       string
	rootKnown  bool
	// served are the other namespaces whose objects name a waypoint of namespaces.
	served []string
}

// NewCheck plans the reads of a check of namespaces (nil: all). base is the Spec of the
// command's flags, without Reads; root is the root namespace assumed (MeshConfig's, when
// rootKnown, else the Istio namespace).
func NewCheck(namespaces []string, base source.Spec, root string, rootKnown bool) *Check {
	return &Check{namespaces: namespaces, base: base, root: root, rootKnown: rootKnown}
}

// Reads are the reads of the plan as it stands.
func (c *Check) Reads() []source.Read {
	var scoped, policies []string
	if c.namespaces != nil {
		scoped = namespaces(append([]string{c.root}, c.namespaces...)...)
		policies = namespaces(append(slices.Clone(scoped), c.served...)...)
	}
	return []source.Read{
		{Kind: source.KindNamespace},
		{Kind: source.KindService},
		{Kind: source.KindPod},
		{Kind: source.KindServiceEntry},
		{Kind: source.KindWorkloadEntry},
		{Kind: source.KindDestinationRule},
		{Kind: source.KindVirtualService},
		{Kind: source.KindPeerAuthentication},
		{Kind: source.KindSidecar, Namespaces: scoped},
		{Kind: source.KindEnvoyFilter, Namespaces: scoped},
		{Kind: source.KindAuthorizationPolicy, Namespaces: policies},
		{Kind: source.KindRequestAuthentication, Namespaces: scoped},
		{Kind: source.KindGateway},
	}
}

// Load reads the planned kinds with base (the command's Spec, or another one: the live state
// alone for --diff), and reads again when MeshConfig names another root namespace than the one
// assumed; the plan keeps the corrected one.
func (c *Check) Load(ctx context.Context, load Loader, base source.Spec) (*model.Snapshot, error) {
	for {
		s := base
		s.Reads = c.Reads()
		snap, err := load(ctx, s)
		if err != nil {
			return snap, err
		}
		again := false
		if !c.rootKnown && snap.RootNamespace() != c.root {
			c.root, c.rootKnown, again = snap.RootNamespace(), true, true
		}
		if c.namespaces != nil {
			for _, ns := range waypointLinks(snap, c.namespaces) {
				if !slices.Contains(c.namespaces, ns) && !slices.Contains(c.served, ns) {
					c.served, again = append(c.served, ns), true
				}
			}
		}
		if !again {
			return snap, nil
		}
	}
}

// waypointLinks are the namespaces that istio.io/use-waypoint labels link to nss: those of
// the Namespaces, Services and ServiceEntries whose label names a waypoint of nss (the
// waypoint's namespace is the object's own, or its istio.io/use-waypoint-namespace label's),
// and those that the use-waypoint-namespace labels of the Namespaces, Services, ServiceEntries
// and Pods of nss name.
func waypointLinks(snap *model.Snapshot, nss []string) []string {
	var out []string
	visit := func(ns string, l map[string]string, binds bool) {
		if _, ok := l[labelUseWaypoint]; !ok {
			return
		}
		wns, named := l[labelUseWaypointNS]
		if !named {
			wns = ns
		}
		if binds && slices.Contains(nss, wns) {
			out = append(out, ns)
		}
		if named && slices.Contains(nss, ns) {
			out = append(out, wns)
		}
	}
	for _, n := range snap.Namespaces {
		visit(n.Name, n.Labels, true)
	}
	for _, s := range snap.Services {
		visit(s.Namespace, s.Labels, true)
	}
	for _, se := range snap.ServiceEntries {
		visit(se.Namespace, se.Labels, true)
	}
	for _, p := range snap.Pods {
		visit(p.Namespace, p.Labels, false)
	}
	return namespaces(out...)
}

// Base is the Spec of the command's flags the plan was made with.
func (c *Check) Base() source.Spec { return c.base }
