package plan

import (
	"context"

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
// already hold. An ambient pod's answer also needs the waypoint Gateways its Services (or the
// pod) use, in any namespace.
type Check struct {
	// namespaces are those checked; nil for every namespace.
	namespaces []string
	base       source.Spec
	root       string
	rootKnown  bool
}

// NewCheck plans the reads of a check of namespaces (nil: all). base is the Spec of the
// command's flags, without Reads; root is the root namespace assumed (MeshConfig's, when
// rootKnown, else the Istio namespace).
func NewCheck(namespaces []string, base source.Spec, root string, rootKnown bool) *Check {
	return &Check{namespaces: namespaces, base: base, root: root, rootKnown: rootKnown}
}

// Reads are the reads of the plan as it stands.
func (c *Check) Reads() []source.Read {
	var scoped []string
	if c.namespaces != nil {
		scoped = namespaces(append([]string{c.root}, c.namespaces...)...)
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
		{Kind: source.KindAuthorizationPolicy, Namespaces: scoped},
		{Kind: source.KindRequestAuthentication, Namespaces: scoped},
		// The waypoints in front of ambient pods (W09, W10), wherever they live.
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
		if err != nil || c.rootKnown || snap.RootNamespace() == c.root {
			return snap, err
		}
		c.root, c.rootKnown = snap.RootNamespace(), true
	}
}

// Base is the Spec of the command's flags the plan was made with.
func (c *Check) Base() source.Spec { return c.base }
