package envoycluster

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/webhook"
)

// ClusterKind is the Object.Kind of a generated cluster.
const ClusterKind = "envoy.config.cluster.v3.Cluster"

// Explain builds the outbound clusters istiod would push to the client proxy of q for q.Host,
// with the origin of every field and the diagnostics of the DestinationRule selection, the
// sidecar scope and the traffic-policy layering. A host that matches nothing is an
// *explain.NotFoundError; a port the service lacks or a subset the selected rule does not define
// is an *explain.InvalidQueryError. A service outside the proxy's scope is not an error: the
// result has no clusters and says why.
func Explain(snap *model.Snapshot, q Query) (*explain.Result, error) {
	if snap == nil {
		return nil, fmt.Errorf("no snapshot to explain %q from", q.Host)
	}
	ix := index.Build(snap)
	proxy, err := queryProxy(ix, q)
	if err != nil {
		return nil, err
	}
	return NewExplainer(ix, proxy).Explain(q)
}

// queryProxy is the client proxy q names (q.From), in q.Namespace unless q.From names one.
func queryProxy(ix *index.Index, q Query) (*index.Proxy, error) {
	proxyNs := q.From.Namespace
	if proxyNs == "" {
		proxyNs = q.Namespace
	}
	return ix.Proxy(string(q.From.Kind), proxyNs, q.From.Name)
}

// Explainer explains the outbound clusters of one client proxy, host after host, over one index
// of a snapshot: the index keeps the proxy's sidecar scope, so explaining every host the proxy
// sees is one pass over the mesh. It is safe for concurrent use.
type Explainer struct {
	ix    *index.Index
	snap  *model.Snapshot
	proxy *index.Proxy
	// envoyFilters are the D30 diagnostics of the proxy.
	envoyFilters []explain.Diagnostic

	// mu guards mtls, the NamespaceMTLS of the service namespaces seen so far.
	mu   sync.Mutex
	mtls map[string]NamespaceMTLS
	// positions are the file positions of fields looked up so far, for every host.
	positions positionCache
	// templates keep the traces of the clusters compactly, against those of earlier clusters
	// with the same paths.
	templates provenance.Templates
}

// slowPaths turn off the Explainer's fast paths, which change how the clusters are built and
// not what they are. Only tests ask for them, to compare each fast path with the slow one
// (explainer_test.go TestExplainerMatchesExplain, shared_test.go
// TestTracesKeptAgainstTemplatesAreWhole); Host and Explain take every fast path.
type slowPaths struct {
	// positionsNow looks the file positions of origins up while building, instead of leaving
	// them to ResolvePositions.
	positionsNow bool
	// wholeTraces keeps every cluster's traces whole, not against the templates.
	wholeTraces bool
}

// namespaceMTLS is index.NamespaceMTLSMode of namespace, once per namespace.
func (e *Explainer) namespaceMTLS(namespace string) NamespaceMTLS {
	e.mu.Lock()
	defer e.mu.Unlock()
	m, ok := e.mtls[namespace]
	if !ok {
		mode, origin := e.ix.NamespaceMTLSMode(namespace)
		m = NamespaceMTLS{Mode: mode, Origin: origin}
		if e.mtls == nil {
			e.mtls = map[string]NamespaceMTLS{}
		}
		e.mtls[namespace] = m
	}
	return m
}

// NewExplainer returns the Explainer of proxy (from ix.Proxy) over ix.
func NewExplainer(ix *index.Index, proxy *index.Proxy) *Explainer {
	snap := ix.Snapshot()
	return &Explainer{ix: ix, snap: snap, proxy: proxy, envoyFilters: envoyFilterDiagnostics(snap, proxy)}
}

// Hosts are the hostnames of every registry service, sorted: the hosts Host can be asked about.
// They are the index's (Hostnames), the same for every proxy.
func (e *Explainer) Hosts() []string { return Hostnames(e.ix) }

// Hostnames are the hostnames of every registry service of ix, sorted: what Explainer.Hosts
// returns for any proxy.
func Hostnames(ix *index.Index) []string {
	var out []string
	for _, s := range ix.Services() {
		if n := len(out); n == 0 || out[n-1] != s.Hostname {
			out = append(out, s.Hostname)
		}
	}
	return out
}

// HostClusters is what an Explainer finds for one host: the service the proxy has clusters for,
// how its scope imports it, the DestinationRule selected, and the clusters of every port and
// subset.
type HostClusters struct {
	// Host is the hostname.
	Host string
	// Service is the service the proxy has clusters for; nil when the host is outside the
	// proxy's scope (Diagnostics say why).
	Service *index.Service
	// Scope says how the proxy's sidecar scope imports Service.
	Scope *index.Scope
	// Selection is the DestinationRule selection for the proxy and Service.
	Selection index.Selection
	// Diagnostics are those of the sidecar scope, the DestinationRule selection, the host and
	// the routes, in that order and unsorted. The clusters carry their own.
	Diagnostics []explain.Diagnostic
	// Warnings say what is not reconstructed.
	Warnings []string
	// Clusters are the clusters of every port (default cluster, then subsets, port by port),
	// including those istiod drops (nil Cluster). Nil for an ExternalName alias. Their Origins
	// and the file positions of the origins are left to ResolvePositions: until it runs, the
	// traces are kept compactly (Built.Traces reads them) and an origin that has a position
	// carries a placeholder.
	Clusters []Built

	snap      *model.Snapshot
	positions *positionCache
}

// ResolvePositions fills in the Origins of Clusters and the file positions of their origins,
// looking each field up once.
func (h *HostClusters) ResolvePositions() {
	resolvePositions(h.snap, h.positions, h.Clusters)
}

// Host explains every cluster the proxy has for hostname (a full hostname, as Hosts lists).
func (e *Explainer) Host(hostname string) (*HostClusters, error) {
	return e.host(hostname, 0, "", slowPaths{})
}

// Explain is the package Explain for the Explainer's proxy (q.From is not read).
func (e *Explainer) Explain(q Query) (*explain.Result, error) {
	candidates, err := e.ix.ResolveHost(q.Host, q.Namespace)
	if err != nil {
		return nil, err
	}
	host := candidates[0].Hostname
	proxy := e.proxy
	res := &explain.Result{
		APIVersion: explain.APIVersion,
		Kind:       explain.KindClusterExplanation,
		Subject:    explain.Subject{Kind: "Host", Host: host, Namespace: candidates[0].Namespace, Port: q.Port, Subset: q.Subset},
		Proxy:      resultProxy(proxy),
		Objects:    []explain.Object{},
	}
	if why, ok := e.snap.Incomplete["PeerAuthentication"]; ok {
		res.Warnings = append(res.Warnings, fmt.Sprintf("mTLS inference is incomplete: PeerAuthentications could not be read (%s); auto-mTLS assumes there are none", why))
	}
	if sc := e.ix.SidecarIgnored(proxy); sc != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("Sidecar %s/%s does not apply to this gateway: istiod gives a gateway (router) the default scope of its namespace, every service exported to %s, whatever the Sidecars", sc.Namespace, sc.Name, proxy.Namespace))
	}
	hc, err := e.host(host, q.Port, q.Subset, slowPaths{})
	if err != nil {
		return nil, err
	}
	res.Diagnostics = append(res.Diagnostics, hc.Diagnostics...)
	res.Diagnostics = append(res.Diagnostics, e.envoyFilters...)
	res.Warnings = append(res.Warnings, hc.Warnings...)
	if hc.Service == nil {
		// Not in the proxy's scope: istiod builds no cluster for it (D7 says why).
		if q.Port != 0 && !hasPort(candidates[0].Ports, q.Port) {
			return nil, invalidPort(candidates[0], q.Port)
		}
		res.Diagnostics = diag.Sort(res.Diagnostics, diag.SameMessage)
		return res, nil
	}
	res.Subject.Namespace = hc.Service.Namespace
	ref := hc.Service.Ref
	res.Subject.Resource = &ref
	hc.ResolvePositions()
	for _, bc := range hc.Clusters {
		if q.Subset != "" && bc.Subset != q.Subset {
			continue
		}
		res.Diagnostics = append(res.Diagnostics, bc.Diagnostics...)
		if bc.Cluster == nil {
			continue
		}
		res.Objects = append(res.Objects, clusterObject(bc, proxy, hc.Selection.Rule))
	}
	slices.SortStableFunc(res.Objects, func(a, b explain.Object) int { return cmp.Compare(a.Name, b.Name) })
	res.Diagnostics = diag.Sort(res.Diagnostics, diag.SameMessage)
	return res, nil
}

// host explains hostname for the Explainer's proxy, narrowed to one port (0: all) and checked
// against one subset ("": none). Outside the scope only the scope diagnostics are computed, and
// port is not checked. slow turns fast paths off (tests only).
func (e *Explainer) host(hostname string, port uint32, subset string, slow slowPaths) (*HostClusters, error) {
	out, in, err := e.prepare(hostname, port, subset, slow)
	if err != nil || in == nil {
		return out, err
	}
	if out.Clusters, err = buildPorts(*in, port); err != nil {
		return nil, err
	}
	return out, nil
}

// prepare is host but the builds: the scope, the selection, the host and route diagnostics, and
// the Input of the builds, nil when there is nothing to build.
func (e *Explainer) prepare(hostname string, port uint32, subset string, slow slowPaths) (*HostClusters, *Input, error) {
	ix, proxy := e.ix, e.proxy
	out := &HostClusters{Host: hostname}
	svc, scopeDiags, scope := ix.ServiceForProxy(proxy, hostname)
	out.Diagnostics = append(out.Diagnostics, scopeDiags...)
	if svc == nil {
		return out, nil, nil
	}
	out.Service, out.Scope = svc, scope
	sel := ix.DestinationRule(proxy, svc)
	out.Selection = sel
	hostDiags, routeDiags := ix.HostDiagnostics(proxy, svc, sel), ix.RouteDiagnostics(proxy, svc, sel)
	if n := len(scopeDiags) + len(sel.Diagnostics) + len(hostDiags) + len(routeDiags); n > len(scopeDiags) {
		out.Diagnostics = append(make([]explain.Diagnostic, 0, n), scopeDiags...)
		out.Diagnostics = append(out.Diagnostics, sel.Diagnostics...)
		out.Diagnostics = append(out.Diagnostics, hostDiags...)
		out.Diagnostics = append(out.Diagnostics, routeDiags...)
	}

	full := svc
	if scope != nil && scope.Full != nil {
		full = scope.Full
	}
	if port != 0 && !hasPort(full.Ports, port) {
		return nil, nil, invalidPort(full, port)
	}
	if subset != "" && !hasSubset(sel.Rule, subset) {
		return nil, nil, invalidSubset(svc, sel.Rule, subset)
	}
	switch {
	case svc.Resolution == index.Alias:
		// ExternalName: no cluster (D28 comes from the index).
		return out, nil, nil
	case svc.Resolution == index.DynamicDNS && strings.HasPrefix(svc.Hostname, "*"):
		out.Warnings = append(out.Warnings, fmt.Sprintf("%s is a DYNAMIC_DNS wildcard ServiceEntry: its dynamic forward proxy clusters are not reconstructed", svc.Hostname))
		return out, nil, nil
	}

	in := &Input{
		Mesh:           e.snap.MeshConfig,
		Snapshot:       e.snap,
		Proxy:          proxy,
		Service:        svc,
		Rule:           sel.Rule,
		MTLS:           e.namespaceMTLS(svc.Namespace),
		Flags:          DefaultFlags(),
		positions:      &e.positions,
		deferPositions: !slow.positionsNow,
		// The workload PeerAuthentications of the host are looked up only when a build needs
		// them (builder.workloadMTLS).
		shared: &hostShared{workloadsOf: svc, ix: ix},
	}
	if !slow.wholeTraces {
		in.templates = &e.templates
	}
	out.snap, out.positions = e.snap, in.positions
	return out, in, nil
}

// buildPorts builds the clusters of every port of in.Service (only port, when not 0): the
// default cluster, then the subsets of in.Rule, port by port; nil when there are none.
func buildPorts(in Input, port uint32) ([]Built, error) {
	svc := in.Service
	clusters := len(svc.Ports)
	if port != 0 {
		clusters = 1
	}
	if in.Rule != nil && in.Rule.Spec != nil {
		clusters *= 1 + len(in.Rule.Spec.Subsets)
	}
	out := make([]Built, 0, clusters)
	for i, p := range svc.Ports {
		if port != 0 && p.Number != port {
			continue
		}
		// InferencePool services build only their first port (cluster.go buildOutboundClusters).
		if i > 0 && svc.Labels["internal.istio.io/service-semantics"] == "inferencepool" {
			continue
		}
		if p.Protocol == "UDP" {
			continue
		}
		in.Port = p
		var err error
		if out, err = appendClusters(out, in); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// Clusters returns the generated clusters of a cluster explanation, in output order.
func Clusters(res *explain.Result) []*clusterv3.Cluster {
	if res == nil {
		return nil
	}
	var out []*clusterv3.Cluster
	for _, o := range res.Objects {
		if c, ok := o.Message.(*clusterv3.Cluster); ok {
			out = append(out, c)
		}
	}
	return out
}

func resultProxy(p *index.Proxy) *explain.Proxy {
	out := &explain.Proxy{Description: p.Description, Namespace: p.Namespace, Labels: p.Labels, IPs: p.IPs}
	if p.Pod != nil {
		out.Pod = p.Pod.Name
	}
	if p.Router {
		out.Type = "router"
	}
	return out
}

// clusterObject is the Result object of a built cluster. Its Value is left to the renderers of
// the document, which print Message (explain.Object), so a table does not marshal clusters.
func clusterObject(bc Built, proxy *index.Proxy, rule *index.ConsolidatedRule) explain.Object {
	return explain.Object{
		Kind: ClusterKind,
		Name: bc.Name,
		Summary: []explain.Summary{
			{Name: "discovery type", Value: bc.Cluster.GetType().String()},
			{Name: "client proxy", Value: proxy.Description},
			{Name: "rules applied", Value: rulesApplied(bc, rule)},
		},
		Origins: bc.Origins,
		Message: bc.Cluster,
	}
}

// rulesApplied names the DestinationRules (and the mesh baseline) that set a field of the cluster.
func rulesApplied(bc Built, rule *index.ConsolidatedRule) string {
	seen := map[string]bool{}
	var names []string
	mesh := false
	for _, t := range bc.Origins {
		switch t.Origin.Layer {
		case provenance.LayerDestinationRule, provenance.LayerPortLevel, provenance.LayerSubset, provenance.LayerSubsetPortLevel:
			if r := t.Origin.Resource; r != nil && !seen[r.String()] {
				seen[r.String()] = true
				names = append(names, r.String())
			}
		case provenance.LayerMeshDefaultTrafficPolicy:
			mesh = true
		}
	}
	slices.Sort(names)
	if mesh {
		names = append(names, "MeshConfig defaultTrafficPolicy")
	}
	if len(names) == 0 {
		if rule != nil {
			return rule.Primary.String() + " (selected; sets nothing for this cluster)"
		}
		return "none"
	}
	return strings.Join(names, ", ")
}

func hasPort(ports []index.Port, n uint32) bool {
	return slices.ContainsFunc(ports, func(p index.Port) bool { return p.Number == n })
}

func hasSubset(r *index.ConsolidatedRule, name string) bool {
	if r == nil || r.Spec == nil {
		return false
	}
	return slices.ContainsFunc(r.Spec.Subsets, func(s *networking.Subset) bool { return s.GetName() == name })
}

func invalidPort(svc *index.Service, port uint32) error {
	var ports []string
	for _, p := range svc.Ports {
		ports = append(ports, fmt.Sprint(p.Number))
	}
	return &explain.InvalidQueryError{Message: fmt.Sprintf("%s has no port %d (ports: %s)", svc.Hostname, port, strings.Join(ports, ", "))}
}

func invalidSubset(svc *index.Service, r *index.ConsolidatedRule, subset string) error {
	if r == nil {
		return &explain.InvalidQueryError{Message: fmt.Sprintf("no DestinationRule applies to %s for this proxy, so there is no subset %q", svc.Hostname, subset)}
	}
	var names []string
	for _, s := range r.Spec.GetSubsets() {
		names = append(names, s.GetName())
	}
	have := "it defines none"
	if len(names) > 0 {
		have = "subsets: " + strings.Join(names, ", ")
	}
	return &explain.InvalidQueryError{Message: fmt.Sprintf("%s, the DestinationRule selected for %s, has no subset %q (%s)", r.Primary, svc.Hostname, subset, have)}
}

// envoyFilterDiagnostics reports D30: EnvoyFilters whose CLUSTER patches apply to the proxy's
// outbound clusters (root namespace or the proxy's namespace, selector matching the proxy).
// istiod applies them last (envoyfilter.ApplyClusterMerge); they are not reconstructed. Every
// EnvoyFilter that applies to the proxy also gets a D33 for each value Istio's validation
// rejects (pkg/webhook EnvoyFilter), whatever it patches.
func envoyFilterDiagnostics(snap *model.Snapshot, p *index.Proxy) []explain.Diagnostic {
	var out []explain.Diagnostic
	root := snap.RootNamespace()
	for _, ef := range snap.EnvoyFilters {
		if ef.Namespace != root && ef.Namespace != p.Namespace {
			continue
		}
		if sel := ef.Spec.GetWorkloadSelector().GetLabels(); len(sel) > 0 {
			match := true
			for k, v := range sel {
				if p.Labels[k] != v {
					match = false
					break
				}
			}
			if !match {
				continue
			}
		}
		ref := provenance.Ref{Kind: "EnvoyFilter", Namespace: ef.Namespace, Name: ef.Name}
		out = append(out, webhook.Diagnostics(diag.RejectedByValidation, ref,
			webhook.EnvoyFilter(webhook.Meta{Name: ef.Name, Namespace: ef.Namespace, Annotations: ef.Annotations, Labels: ef.Labels}, &ef.Spec))...)
		for _, cp := range ef.Spec.GetConfigPatches() {
			if cp.GetApplyTo() != networking.EnvoyFilter_CLUSTER {
				continue
			}
			ctx := cp.GetMatch().GetContext()
			if ctx != networking.EnvoyFilter_ANY && ctx != networking.EnvoyFilter_SIDECAR_OUTBOUND {
				continue
			}
			out = append(out, diag.EnvoyFilterPatchesClusters.New(
				fmt.Sprintf("%s patches clusters of this proxy (%s): istiod applies it after everything shown here, so the real clusters may differ", ref, strings.ToLower(cp.GetPatch().GetOperation().String())),
				"check the patched fields with istioctl proxy-config cluster",
				ref))
			break
		}
	}
	return out
}
