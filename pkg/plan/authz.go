package plan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// AuthzQuery is what decides the reads of `authz`.
type AuthzQuery struct {
	// Namespace is -n, where the workload lives.
	Namespace string
	// Kind and Name are those of pod/NAME, deployment/NAME or service/NAME ("pod",
	// "deployment", "service"); empty for a selector. A deployment or a service lists the pods
	// of the namespace (its Services are read in any case).
	Kind, Name string
	// Selector is -l.
	Selector string
}

// Authz is what `authz` reads from a cluster: the workload's and the root namespace's
// Namespace objects (ambient enrolment, by get), the pod of pod/NAME (by get) with the pods of
// the namespace's waypoints (those labelled gateway.networking.k8s.io/gateway-name: their
// service account is the identity the pod's ztunnel sees), or the pods (and deployments) of the
// namespace, the PeerAuthentications and AuthorizationPolicies of the
// namespace and the root namespace, the RequestAuthentications of both (request principals on
// a sidecar), the Services of the namespace (waypoint and
// service-targeted policies, a sidecar's ports) and of the namespaces of ext_authz providers,
// and the Gateways of the namespace and of the namespaces whose waypoints its Services use (with
// their AuthorizationPolicies, and their Services: istiod binds to a waypoint only through the
// Service that holds its address).
type Authz struct {
	q         AuthzQuery
	base      source.Spec
	root      string
	rootKnown bool
	// listPods: list the pods of the namespace even for pod/NAME (after the pod was not found
	// by name).
	listPods bool
	// providers are the namespaces of MeshConfig's ext_authz provider services, whose
	// Services are read too (a sidecar's CUSTOM policies name their clusters).
	providers []string
	// waypointNs are other namespaces whose waypoints the namespace's Services use
	// (istio.io/use-waypoint-namespace): their Gateways, AuthorizationPolicies and Services are
	// read too.
	waypointNs []string
}

// NewAuthz plans the reads of q. base is the Spec of the command's flags, without Reads; root
// is the root namespace assumed (MeshConfig's, when rootKnown, else the Istio namespace).
func NewAuthz(q AuthzQuery, base source.Spec, root string, rootKnown bool) *Authz {
	return &Authz{q: q, base: base, root: root, rootKnown: rootKnown}
}

// Reads are the reads of the plan as it stands.
func (a *Authz) Reads() []source.Read {
	ns, root := a.q.Namespace, a.root
	pods := source.Read{Kind: source.KindPod, Namespaces: namespaces(ns)}
	if a.podByName() {
		pods.Names = []string{a.q.Name}
	}
	reads := []source.Read{
		{Kind: source.KindNamespace, Namespaces: namespaces(ns, root)},
		pods,
		{Kind: source.KindPeerAuthentication, Namespaces: namespaces(ns, root)},
		{Kind: source.KindAuthorizationPolicy, Namespaces: namespaces(ns, root)},
		{Kind: source.KindRequestAuthentication, Namespaces: namespaces(ns, root)},
		{Kind: source.KindService, Namespaces: namespaces(append(append([]string{ns}, a.providers...), a.waypointNs...)...)},
		{Kind: source.KindGateway, Namespaces: namespaces(append([]string{ns}, a.waypointNs...)...)},
	}
	if len(a.waypointNs) > 0 {
		reads[3].Namespaces = namespaces(append([]string{ns, root}, a.waypointNs...)...)
	}
	if a.podByName() {
		// The pods of the waypoints the pod's Services may use, for their service account
		// (the identity the pod's ztunnel sees): those of the namespace and of the namespaces
		// whose waypoints its Services name, which carry the Gateway's name.
		reads = append(reads, source.Read{Kind: source.KindPod, Namespaces: namespaces(append([]string{ns}, a.waypointNs...)...), Labeled: labelGatewayName})
	} else if len(a.waypointNs) > 0 {
		reads = append(reads, source.Read{Kind: source.KindPod, Namespaces: namespaces(a.waypointNs...), Labeled: labelGatewayName})
	}
	if a.q.Kind == "deployment" {
		reads = append(reads, source.Read{Kind: source.KindDeployment, Namespaces: namespaces(ns)})
	}
	return reads
}

// podByName reports whether the query is pod/NAME, read by name rather than by listing the
// pods of its namespace.
func (a *Authz) podByName() bool {
	return a.q.Selector == "" && a.q.Kind == "pod" && !a.listPods
}

// Load reads the planned kinds, and reads again when MeshConfig names another root namespace
// than the one assumed; the plan keeps the corrected one. Files are filtered by the same plan
// and go through the same correction, so files and a cluster with the same objects give the
// same snapshot.
func (a *Authz) Load(ctx context.Context, load Loader) (*model.Snapshot, error) {
	for {
		s := a.base
		s.Reads = a.Reads()
		snap, err := load(ctx, s)
		if err != nil {
			return snap, err
		}
		again := false
		if !a.rootKnown && snap.RootNamespace() != a.root {
			a.root, a.rootKnown, again = snap.RootNamespace(), true, true
		}
		// The Services of CUSTOM providers (MeshConfig extensionProviders) live in other
		// namespaces: read those too, so that a provider's cluster can be looked up.
		for _, pns := range providerNamespaces(snap) {
			if pns != a.q.Namespace && !slices.Contains(a.providers, pns) {
				a.providers, again = append(a.providers, pns), true
			}
		}
		for _, wns := range waypointNamespaces(snap, a.q.Namespace) {
			if !slices.Contains(a.waypointNs, wns) {
				a.waypointNs, again = append(a.waypointNs, wns), true
			}
		}
		if !again {
			return snap, nil
		}
	}
}

// waypointNamespaces are the namespaces other than ns named by istio.io/use-waypoint-namespace
// on ns's Namespace object or its Services (where their waypoints live), sorted.
func waypointNamespaces(snap *model.Snapshot, ns string) []string {
	var out []string
	add := func(l map[string]string) {
		if _, ok := l[labelUseWaypoint]; !ok {
			return
		}
		if w, ok := l[labelUseWaypointNS]; ok && w != ns && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	if n := snap.Namespace(ns); n != nil {
		add(n.Labels)
	}
	for _, s := range snap.Services {
		if s.Namespace == ns {
			add(s.Labels)
		}
	}
	slices.Sort(out)
	return out
}

// providerNamespaces are the namespaces named by the services of MeshConfig's ext_authz
// providers: `NS/HOST`, or a `NAME.NS.svc.*` hostname.
func providerNamespaces(snap *model.Snapshot) []string {
	var out []string
	for _, p := range snap.MeshConfig.GetExtensionProviders() {
		svc := p.GetEnvoyExtAuthzHttp().GetService()
		if svc == "" {
			svc = p.GetEnvoyExtAuthzGrpc().GetService()
		}
		ns := ""
		if before, _, ok := strings.Cut(svc, "/"); ok {
			ns = before
		} else if parts := strings.Split(svc, "."); len(parts) >= 3 && parts[2] == "svc" {
			ns = parts[1]
		}
		if ns != "" && !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return out
}

// Answer loads what the workload's answer needs and explains it. When pod/NAME is not there,
// its namespace is listed and the query explained again, so that the error can list the pods
// that are. The snapshot returned is the one whose load issues the command reports: none when
// the load failed; without the issues the error already says when a required kind could not be
// read. No result at all is a NotFoundError.
func (a *Authz) Answer(ctx context.Context, load Loader, explainer func(*model.Snapshot) ([]*explain.Result, error)) (*model.Snapshot, []*explain.Result, error) {
	snap, results, err := a.loadAndExplain(ctx, load, explainer)
	if notFound := (*explain.NotFoundError)(nil); snap != nil && errors.As(err, &notFound) && a.podByName() {
		a.listPods = true
		snap, results, err = a.loadAndExplain(ctx, load, explainer)
	}
	if err != nil {
		return snap, nil, err
	}
	if len(results) == 0 {
		if a.q.Selector != "" {
			return snap, nil, &explain.NotFoundError{What: fmt.Sprintf("pods matching %q in namespace %s", a.q.Selector, a.q.Namespace)}
		}
		return snap, nil, &explain.NotFoundError{What: fmt.Sprintf("%s/%s in namespace %s", a.q.Kind, a.q.Name, a.q.Namespace)}
	}
	return snap, results, nil
}

// loadAndExplain loads the snapshot and explains the query. A load that fails gives no
// snapshot; a snapshot that cannot answer gives itself without the issues the error says, and
// the error.
func (a *Authz) loadAndExplain(ctx context.Context, load Loader, explainer func(*model.Snapshot) ([]*explain.Result, error)) (*model.Snapshot, []*explain.Result, error) {
	snap, err := a.Load(ctx, load)
	if err != nil {
		return nil, nil, err
	}
	if err := a.unanswerable(snap); err != nil {
		return withoutRequired(snap), nil, err
	}
	results, err := explainer(snap)
	return snap, results, err
}

// requiredKinds are the kinds without which no ztunnel policy can be explained: the
// PeerAuthentications decide the mTLS policy and the AuthorizationPolicies the rest, and a
// missing one may change any of it.
var requiredKinds = []requiredKind{
	{source.KindPeerAuthentication, "PeerAuthentications"},
	{source.KindAuthorizationPolicy, "AuthorizationPolicies"},
}

type requiredKind struct{ kind, plural string }

// unanswerable returns the error for a snapshot that lacks a required kind: `cannot explain
// ztunnel policy for pod foo/a: PeerAuthentications could not be read (forbidden: ...)`.
func (a *Authz) unanswerable(snap *model.Snapshot) error {
	var missing []string
	for _, k := range requiredKinds {
		if why, ok := snap.Incomplete[k.kind]; ok {
			missing = append(missing, fmt.Sprintf("%s could not be read (%s)", k.plural, why))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("cannot explain ztunnel policy for %s: %s", a.subject(), strings.Join(missing, "; "))
}

// subject names what was asked about: pod foo/a, deployment foo/web, or the pods of a selector.
func (a *Authz) subject() string {
	if a.q.Selector != "" {
		return fmt.Sprintf("pods matching %q in namespace %s", a.q.Selector, a.q.Namespace)
	}
	return fmt.Sprintf("%s %s/%s", a.q.Kind, a.q.Namespace, a.q.Name)
}

// withoutRequired returns snap without the load issues that say a required kind could not be
// read (the error says it already).
func withoutRequired(snap *model.Snapshot) *model.Snapshot {
	required := func(kind string) bool {
		return slices.ContainsFunc(requiredKinds, func(r requiredKind) bool { return r.kind == kind })
	}
	out := *snap
	out.Issues = nil
	for _, is := range snap.Issues {
		if !slices.ContainsFunc(is.Incomplete, required) {
			out.Issues = append(out.Issues, is)
		}
	}
	return &out
}
