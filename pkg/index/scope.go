package index

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/meshhost"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/webhook"
)

// Scope says how a proxy's sidecar scope imports one service.
type Scope struct {
	// Sidecar is the Sidecar resource that decides the proxy's scope; nil for istiod's default
	// scope, which imports every visible service (egress hosts `*/*`).
	Sidecar *provenance.Ref
	// ImportedBy is "egress hosts" when an egress listener's hosts import the service, or
	// "VirtualService destination" when only a route of an imported VirtualService does
	// (sidecar.go collectImportedServices).
	ImportedBy string
	// VirtualService is the route that imported the service when ImportedBy says so.
	VirtualService *provenance.Ref
	// EgressPorts are the ports of the egress listeners that imported the service (empty when a
	// listener without port did).
	EgressPorts []uint32
	// Ports, when set, are the only service ports the proxy has clusters for: the Sidecar egress
	// listener port (serviceMatchingListenerPort) or the VirtualService destination ports
	// (serviceMatchingVirtualServicePorts). Nil means every port.
	Ports []uint32
	// Full is the same service with every port.
	Full *Service
	// Others are the definitions of the hostname in other namespaces that this proxy does not
	// use (sidecar.go selectServices keeps one namespace per hostname).
	Others []provenance.Ref
}

type seVisibility int

const (
	seVisibilityPublic seVisibility = iota
	seVisibilityNamespace
	seVisibilityNone
)

// serviceEntryVisibility is model.ServiceEntryVisibilityMatcher.VisibilityFor for the namespace
// of a ServiceEntry: the first policy whose rules all match the namespace labels, else the
// default (UNSPECIFIED and PUBLIC are public).
func (ix *Index) serviceEntryVisibility(namespace string) seVisibility {
	sev := ix.snap.MeshConfig.GetServiceEntryVisibility()
	if sev == nil {
		return seVisibilityPublic
	}
	var nsLabels map[string]string
	if ns := ix.snap.Namespace(namespace); ns != nil {
		nsLabels = ns.Labels
	}
	conv := func(v meshv1alpha1.ServiceEntryVisibility_Visibility) seVisibility {
		switch v {
		case meshv1alpha1.ServiceEntryVisibility_NAMESPACE:
			return seVisibilityNamespace
		case meshv1alpha1.ServiceEntryVisibility_NONE:
			return seVisibilityNone
		}
		return seVisibilityPublic
	}
	for _, p := range sev.GetPolicies() {
		all := true
		for _, r := range p.GetMatchingRules() {
			if !meshSelectorMatches(r.GetNamespaceSelector(), nsLabels) {
				all = false
				break
			}
		}
		if all {
			return conv(p.GetVisibility())
		}
	}
	return conv(sev.GetDefaultVisibility())
}

// meshSelectorMatches is labelselector.LabelSelectorAsSelector(...).Matches: nil matches
// nothing, an empty selector everything; an invalid operator fails closed.
func meshSelectorMatches(sel *meshv1alpha1.LabelSelector, l map[string]string) bool {
	if sel == nil {
		return false
	}
	if !meshhost.LabelsSubsetOf(sel.GetMatchLabels(), l) {
		return false
	}
	for _, e := range sel.GetMatchExpressions() {
		v, has := l[e.GetKey()]
		switch e.GetOperator() {
		case "In":
			if !has || !slices.Contains(e.GetValues(), v) {
				return false
			}
		case "NotIn":
			if has && slices.Contains(e.GetValues(), v) {
				return false
			}
		case "Exists":
			if !has {
				return false
			}
		case "DoesNotExist":
			if has {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// serviceExportTo is PushContext.serviceExportTo: the declared exportTo, or MeshConfig
// defaultServiceExportTo, capped by serviceEntryVisibility when it applies to sidecars.
func (ix *Index) serviceExportTo(rs *regService) map[string]bool {
	set := map[string]bool{}
	src := rs.svc.ExportTo
	if len(src) == 0 {
		src = ix.snap.MeshConfig.GetDefaultServiceExportTo()
	}
	if len(src) == 0 {
		src = []string{"*"}
	}
	for _, e := range src {
		set[e] = true
	}
	if len(set) == 1 && set["~"] {
		return set
	}
	if ix.snap.MeshConfig.GetServiceEntryVisibility().GetApplyToSidecars() {
		switch rs.visibility {
		case seVisibilityNamespace:
			if set["*"] || set["."] || set[rs.svc.Namespace] {
				return map[string]bool{".": true}
			}
			return map[string]bool{"~": true}
		case seVisibilityNone:
			return map[string]bool{"~": true}
		}
	}
	return set
}

// isServiceVisible is PushContext.IsServiceVisible.
func (ix *Index) isServiceVisible(rs *regService, namespace string) bool {
	set := ix.serviceExportTo(rs)
	return set["*"] || (set["."] && rs.svc.Namespace == namespace) || set[namespace]
}

// IsServiceVisible reports whether svc (any definition of its hostname in its namespace) is
// visible to proxies in namespace, by exportTo and MeshConfig defaults.
func (ix *Index) IsServiceVisible(svc *Service, namespace string) bool {
	if rs := ix.regFor(svc); rs != nil {
		return ix.isServiceVisible(rs, namespace)
	}
	return false
}

func (ix *Index) regFor(svc *Service) *regService {
	if svc == nil {
		return nil
	}
	g := ix.groups[svc.Hostname][svc.Namespace]
	if g == nil {
		return nil
	}
	for _, m := range g.members {
		if m.svc.Ref == svc.Ref {
			return m
		}
	}
	return g.chosen
}

// servicesExportedToNamespace is the PushContext function of that name.
func (ix *Index) servicesExportedToNamespace(ns string) []*regService {
	out := slices.Clone(ix.exportedTo[ns])
	return append(out, ix.public...)
}

// hostClass is sidecar.go hostClassification: the egress hosts of one namespace.
type hostClass struct {
	exact    map[string]bool
	all      []string
	excluded []string
}

func (hc *hostClass) isExcluded(h string) bool {
	for _, e := range hc.excluded {
		if meshhost.Name(h).SubsetOf(meshhost.Name(e)) {
			return true
		}
	}
	return false
}

func (hc *hostClass) matches(h string) bool {
	if hc.exact[h] {
		return true
	}
	for _, imp := range hc.all {
		if !meshhost.Name(h).IsWildCarded() && !meshhost.Name(imp).IsWildCarded() {
			continue
		}
		if meshhost.Name(h).SubsetOf(meshhost.Name(imp)) {
			return true
		}
	}
	return false
}

// vsMatches is hostClassification.VSMatches without Gateway API semantics (bi-directional
// Matches, kept by istiod for backwards compatibility).
func (hc *hostClass) vsMatches(h string) bool {
	if hc.exact[h] {
		return true
	}
	for _, imp := range hc.all {
		if !meshhost.Name(h).IsWildCarded() && !meshhost.Name(imp).IsWildCarded() {
			continue
		}
		if meshhost.Name(h).Matches(meshhost.Name(imp)) {
			return true
		}
	}
	return false
}

type egressListener struct {
	index     int
	matchPort bool
	port      uint32
	hosts     map[string]*hostClass
	services  []*Service
	vss       []*vsInfo
}

type importInfo struct {
	byVS        *provenance.Ref
	egressPorts []uint32
}

// sidecarScope is the part of istiod's SidecarScope that decides which services (and so which
// clusters) a proxy has.
type sidecarScope struct {
	namespace string
	sidecar   *networkingv1.Sidecar
	listeners []*egressListener
	services  []*Service
	byHost    map[string]int
	how       map[string]*importInfo
	// refs are the route destinations of the imported VirtualServices by host (SubsetReferences).
	refs map[string][]*routeDest
}

// sidecarFor is the Sidecar that applies to p: none for a gateway's proxy, which always gets
// the default scope of its namespace (PushContext.getSidecarScope), else sidecarOf.
func (ix *Index) sidecarFor(p *Proxy) *networkingv1.Sidecar {
	if p.Router {
		return nil
	}
	return ix.sidecarOf(p)
}

// SidecarIgnored is the Sidecar that would apply to p were it a sidecar, when p is a gateway's
// proxy (nil otherwise): istiod gives a gateway its namespace's default scope whatever the
// Sidecars (PushContext.getSidecarScope).
func (ix *Index) SidecarIgnored(p *Proxy) *networkingv1.Sidecar {
	if p == nil || !p.Router {
		return nil
	}
	return ix.sidecarOf(p)
}

// sidecarOf is PushContext.doGetSidecarScope for a sidecar proxy: in the proxy's namespace, the
// first Sidecar whose workloadSelector matches the proxy labels (selector ones sorted first, then
// by creation time), else the first selector-less one; else the root namespace's selector-less
// Sidecar; else nil (the default scope).
func (ix *Index) sidecarOf(p *Proxy) *networkingv1.Sidecar {
	sorted := slices.Clone(ix.snap.Sidecars)
	slices.SortStableFunc(sorted, func(a, b *networkingv1.Sidecar) int {
		return cmp.Or(a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time), strings.Compare(a.Name, b.Name), strings.Compare(a.Namespace, b.Namespace))
	})
	var ordered []*networkingv1.Sidecar
	for _, sc := range sorted {
		if sc.Spec.GetWorkloadSelector() != nil {
			ordered = append(ordered, sc)
		}
	}
	for _, sc := range sorted {
		if sc.Spec.GetWorkloadSelector() == nil {
			ordered = append(ordered, sc)
		}
	}
	for _, sc := range ordered {
		if sc.Namespace != p.Namespace {
			continue
		}
		if ws := sc.Spec.GetWorkloadSelector(); ws != nil && !meshhost.LabelsSubsetOf(ws.GetLabels(), p.Labels) {
			continue
		}
		return sc
	}
	for _, sc := range ordered {
		if sc.Namespace == ix.root && sc.Spec.GetWorkloadSelector() == nil {
			return sc
		}
	}
	return nil
}

// scopeFor returns the proxy's sidecar scope, built on first use for the proxy's namespace and
// labels (all it depends on) and kept in the index. The scope found for a *Proxy is reused
// without comparing labels: a Proxy is not changed once asked about.
func (ix *Index) scopeFor(p *Proxy) *sidecarScope {
	if sc, ok := ix.proxyScopes.Load(p); ok {
		return sc.(*sidecarScope)
	}
	sc := ix.scopeOf(p)
	ix.proxyScopes.Store(p, sc)
	return sc
}

// scopeOf is scopeFor without the scopes found by *Proxy. The scope is built outside mu, so a
// scope being built keeps no other proxy waiting but those that share it.
func (ix *Index) scopeOf(p *Proxy) *sidecarScope {
	ix.mu.Lock()
	ls := ix.lazyScopeOf(p)
	ix.mu.Unlock()
	ls.once.Do(func() { ls.scope = ix.buildScope(p.Namespace, ls.sidecar, ls.router) })
	return ls.scope
}

// lazyScopeOf is the entry of the proxy's scope, made on first use; ix.mu is held.
func (ix *Index) lazyScopeOf(p *Proxy) *lazyScope {
	for _, e := range ix.scopes[p.Namespace] {
		if e.scope.router == p.Router && mapsEqual(e.labels, p.Labels) {
			return e.scope
		}
	}
	// A scope depends only on the proxy's namespace and the Sidecar that applies to it
	// (buildScope): a proxy with other labels that gets the same Sidecar shares the scope.
	sidecar := ix.sidecarFor(p)
	var ls *lazyScope
	for _, e := range ix.scopes[p.Namespace] {
		if e.scope.sidecar == sidecar && e.scope.router == p.Router {
			ls = e.scope
			break
		}
	}
	if ls == nil {
		ls = &lazyScope{sidecar: sidecar, router: p.Router}
	}
	if ix.scopes == nil {
		ix.scopes = map[string][]scopeEntry{}
	}
	ix.scopes[p.Namespace] = append(ix.scopes[p.Namespace], scopeEntry{labels: maps.Clone(p.Labels), scope: ls})
	return ls
}

// scopeEntry is the sidecar scope of the proxies of one namespace with these labels (gateways'
// and sidecars' apart: lazyScope.router).
type scopeEntry struct {
	labels map[string]string
	scope  *lazyScope
}

// lazyScope is the sidecar scope of the proxies of one namespace that get sidecar (nil: none),
// built once by the first that asks.
type lazyScope struct {
	sidecar *networkingv1.Sidecar
	// router: the scope of a gateway's proxies (buildScope).
	router bool
	once   sync.Once
	scope  *sidecarScope
}

// buildScope builds the sidecar scope of the proxies of namespace that get sidecar (nil: none)
// (convertToSidecarScope + initSidecarScopeInternalIndexes): each egress listener imports
// services and VirtualServices, then collectImportedServices unions them; a gateway's proxies
// (router) get gatewayScope.
func (ix *Index) buildScope(namespace string, sidecar *networkingv1.Sidecar, router bool) *sidecarScope {
	if router {
		return ix.gatewayScope(namespace)
	}
	sc := &sidecarScope{namespace: namespace, sidecar: sidecar}
	var egress []*networking.IstioEgressListener
	if sc.sidecar != nil {
		egress = sc.sidecar.Spec.GetEgress()
	}
	if len(egress) == 0 {
		egress = []*networking.IstioEgressListener{{Hosts: []string{"*/*"}}}
	}
	imported := 0
	for i, e := range egress {
		l := ix.convertListener(namespace, i, e)
		sc.listeners = append(sc.listeners, l)
		imported += len(l.services)
	}
	sc.byHost, sc.how = make(map[string]int, imported), map[string]*importInfo{}

	note := func(s *Service, l *egressListener, vs *provenance.Ref) {
		info := sc.how[s.Hostname]
		if info == nil {
			if vs == nil && !l.matchPort {
				// Imported by the egress hosts on every port: what ServiceForProxy takes a
				// host without an entry for. A VirtualService notes only a host not yet
				// imported, so no later note finds the entry missing that this one would
				// have made.
				return
			}
			info = &importInfo{byVS: vs}
			sc.how[s.Hostname] = info
		}
		if vs == nil {
			info.byVS = nil
		}
		if l.matchPort && !slices.Contains(info.egressPorts, l.port) {
			info.egressPorts = append(info.egressPorts, l.port)
		}
	}
	for _, l := range sc.listeners {
		for _, s := range l.services {
			sc.services = appendSidecarService(sc.services, sc.byHost, s)
			note(s, l, nil)
		}
		for _, vs := range l.vss {
			for _, d := range vs.destinationsFor(namespace) {
				byNs := ix.groups[d.host]
				if len(byNs) == 0 {
					continue
				}
				var chosen *regService
				if g, ok := byNs[namespace]; ok {
					chosen = g.chosen
				} else if ns := ix.pickBestVisibleNamespace(byNs, namespace); ns != "" {
					chosen = byNs[ns].chosen
				}
				if chosen == nil {
					continue
				}
				var s *Service
				if l.matchPort {
					s = serviceMatchingListenerPort(chosen.svc, l.port)
				} else {
					s = serviceMatchingVirtualServicePorts(chosen.svc, d.ports)
				}
				if s == nil {
					continue
				}
				if _, already := sc.byHost[s.Hostname]; !already {
					ref := vs.ref
					note(s, l, &ref)
				}
				sc.services = appendSidecarService(sc.services, sc.byHost, s)
			}
		}
	}
	sc.refs = subsetReferences(sc)
	return sc
}

// gatewayScope is DefaultSidecarScopeForGateway, the scope of a gateway's proxies in namespace:
// every service exported to the namespace, in servicesExportedToNamespace's order, through
// appendSidecarServices alone, and the VirtualServices of a `*/*` listener. Where several
// namespaces define a hostname, the first in that order holds it (a Kubernetes Service before
// a ServiceEntry), not the one of the proxy's own namespace that a sidecar's `*/*` listener
// keeps (selectServices); no service is imported through a VirtualService's destinations.
func (ix *Index) gatewayScope(namespace string) *sidecarScope {
	l, _ := ix.listenerRoutes(namespace, 0, &networking.IstioEgressListener{Hosts: []string{"*/*"}})
	exported := ix.servicesExportedToNamespace(namespace)
	sc := &sidecarScope{namespace: namespace, listeners: []*egressListener{l},
		byHost: make(map[string]int, len(exported)), how: map[string]*importInfo{}}
	for _, rs := range exported {
		sc.services = appendSidecarService(sc.services, sc.byHost, rs.svc)
	}
	sc.refs = subsetReferences(sc)
	return sc
}

// pickBestVisibleNamespace is sidecar.go pickBestVisibleNamespace: a visible Kubernetes Service
// first, else the oldest visible ServiceEntry.
func (ix *Index) pickBestVisibleNamespace(byNs map[string]*serviceGroup, configNamespace string) string {
	var best *regService
	for _, ns := range sortedKeys(byNs) {
		rs := byNs[ns].chosen
		if !ix.isServiceVisible(rs, configNamespace) {
			continue
		}
		if rs.svc.Kubernetes {
			return ns
		}
		if best == nil || rs.svc.CreationTime.Before(best.svc.CreationTime) {
			best = rs
		}
	}
	if best == nil {
		return ""
	}
	return best.svc.Namespace
}

// convertListener is sidecar.go convertIstioListenerToWrapper: listenerRoutes, then the
// services the listener imports.
func (ix *Index) convertListener(configNamespace string, index int, e *networking.IstioEgressListener) *egressListener {
	l, allExact := ix.listenerRoutes(configNamespace, index, e)
	var candidates []*regService
	if allExact {
		// servicesForExactHosts: only the HostnameAndNamespace entry, visibility re-checked.
		for _, ns := range sortedKeys(l.hosts) {
			for _, h := range sortedKeys(l.hosts[ns].exact) {
				g := ix.groups[h][ns]
				if g == nil || !ix.isServiceVisible(g.chosen, configNamespace) {
					continue
				}
				candidates = append(candidates, g.chosen)
			}
		}
		slices.SortStableFunc(candidates, func(a, b *regService) int {
			return cmp.Or(a.svc.CreationTime.Compare(b.svc.CreationTime), strings.Compare(a.sortName, b.sortName), strings.Compare(a.svc.Namespace, b.svc.Namespace))
		})
	} else {
		candidates = ix.servicesExportedToNamespace(configNamespace)
	}
	l.services = selectServices(candidates, configNamespace, l, func(h string) bool { return len(ix.groups[h]) > 1 })
	return l
}

// listenerRoutes is the part of convertIstioListenerToWrapper before the services: the
// listener's port, its hosts by namespace and the VirtualServices they select. allExact
// reports whether every host is an exact name of a named namespace (servicesForExactHosts).
func (ix *Index) listenerRoutes(configNamespace string, index int, e *networking.IstioEgressListener) (l *egressListener, allExact bool) {
	l = &egressListener{index: index, hosts: map[string]*hostClass{}}
	// needsPortMatch: a listener with a port imports only that port, unless it is an
	// HTTP_PROXY listener.
	if e.GetPort().GetNumber() != 0 && ParseProtocol(e.GetPort().GetProtocol()) != "HTTP_PROXY" {
		l.matchPort, l.port = true, e.GetPort().GetNumber()
	}
	allExact = true
	for _, h := range e.GetHosts() {
		if strings.Count(h, "/") != 1 {
			continue
		}
		ns, name, _ := strings.Cut(h, "/")
		excluded := strings.HasPrefix(ns, "~")
		if excluded {
			ns = strings.TrimPrefix(ns, "~")
			if ns == "" {
				ns = "*"
			}
		}
		if ns == "." {
			ns = configNamespace
		}
		hc := l.hosts[ns]
		if hc == nil {
			hc = &hostClass{exact: map[string]bool{}}
			l.hosts[ns] = hc
		}
		if excluded {
			hc.excluded = append(hc.excluded, name)
			continue
		}
		if !meshhost.Name(name).IsWildCarded() {
			hc.exact[name] = true
		} else {
			allExact = false
		}
		if ns == "*" {
			allExact = false
		}
		hc.all = append(hc.all, name)
	}
	l.vss = ix.selectVirtualServices(configNamespace, l.hosts)
	return l, allExact
}

// selectServices is IstioEgressListenerWrapper.selectServices with PILOT_UNIFIED_SIDECAR_SCOPE
// (default on): services matched by `ns/host` or `*/host`, minus `~` exclusions, then one
// namespace per hostname: the proxy's own namespace first, else a Kubernetes Service over a
// ServiceEntry, else the first seen.
//
// shared reports whether services of several namespaces have a hostname: only those need the
// choice.
func selectServices(candidates []*regService, configNamespace string, l *egressListener, shared func(string) bool) []*Service {
	wild, wildFound := l.hosts["*"]
	// Sized for `*/*`, which imports every candidate: the default scope of every namespace.
	imported := make([]*Service, 0, len(candidates))
	for _, rs := range candidates {
		s := rs.svc
		nsHosts, nsFound := l.hosts[s.Namespace]
		if (nsFound && nsHosts.isExcluded(s.Hostname)) || (wildFound && wild.isExcluded(s.Hostname)) {
			continue
		}
		if nsFound {
			if m := matchingService(nsHosts, s, l); m != nil {
				imported = append(imported, m)
				continue
			}
		}
		if wildFound {
			if m := matchingService(wild, s, l); m != nil {
				imported = append(imported, m)
			}
		}
	}
	type provider struct {
		ns   string
		kube bool
	}
	valid := map[string]provider{}
	for _, s := range imported {
		if !shared(s.Hostname) {
			continue
		}
		np := provider{ns: s.Namespace, kube: s.Kubernetes}
		ex, found := valid[s.Hostname]
		switch {
		case !found:
			valid[s.Hostname] = np
		case s.Namespace == configNamespace:
			valid[s.Hostname] = np
		case !ex.kube && np.kube && (np.ns == configNamespace || ex.ns != configNamespace):
			valid[s.Hostname] = np
		}
	}
	return slices.DeleteFunc(imported, func(s *Service) bool { return shared(s.Hostname) && valid[s.Hostname].ns != s.Namespace })
}

func matchingService(hc *hostClass, s *Service, l *egressListener) *Service {
	if !hc.matches(s.Hostname) {
		return nil
	}
	if l.matchPort {
		return serviceMatchingListenerPort(s, l.port)
	}
	return s
}

// serviceMatchingListenerPort keeps only the listener's port of the service (nil when the
// service lacks it).
func serviceMatchingListenerPort(s *Service, port uint32) *Service {
	for _, p := range s.Ports {
		if p.Number != port {
			continue
		}
		if len(s.Ports) == 1 {
			return s
		}
		c := *s
		c.Ports = []Port{p}
		return &c
	}
	return nil
}

// serviceMatchingVirtualServicePorts keeps the ports VirtualService destinations name (0: a
// destination without port, meaning every port); nil when none of them exists.
func serviceMatchingVirtualServicePorts(s *Service, ports []uint32) *Service {
	if len(ports) == 0 || slices.Contains(ports, 0) {
		return s
	}
	var found []Port
	for _, p := range s.Ports {
		if slices.Contains(ports, p.Number) {
			found = append(found, p)
		}
	}
	switch {
	case len(found) == len(s.Ports):
		return s
	case len(found) > 0:
		c := *s
		c.Ports = found
		return &c
	}
	return nil
}

// ServiceForProxy returns the service the proxy has clusters for under hostname, as istiod's
// SidecarScope computes it: Sidecar egress hosts (or the default `*/*`), Service and
// ServiceEntry exportTo with MeshConfig defaultServiceExportTo, one namespace per duplicated
// hostname, ports trimmed by an egress listener port or by VirtualService destination ports. It
// returns nil with a D7 diagnostic when the service is not in scope, and a D8 diagnostic when
// the scope trims ports; D33 reports what Istio's validation rejects in the Sidecar.
func (ix *Index) ServiceForProxy(p *Proxy, hostname string) (*Service, []explain.Diagnostic, *Scope) {
	sc := ix.scopeFor(p)
	var scRef *provenance.Ref
	var diags []explain.Diagnostic
	if s := sc.sidecar; s != nil {
		r := sidecarRef(s)
		scRef = &r
		// D33: what Istio's validation rejects in the Sidecar that decides the scope.
		diags = webhook.Diagnostics(diag.RejectedByValidation, r,
			webhook.Sidecar(webhook.Meta{Name: s.Name, Namespace: s.Namespace, Annotations: s.Annotations, Labels: s.Labels}, &s.Spec))
	}
	i, ok := sc.byHost[hostname]
	if !ok {
		return nil, append(ix.notInScope(p, sc, hostname), diags...), nil
	}
	svc := sc.services[i]
	scope := &Scope{Sidecar: scRef, ImportedBy: "egress hosts"}
	if info := sc.how[hostname]; info != nil {
		if info.byVS != nil {
			scope.ImportedBy, scope.VirtualService = "VirtualService destination", info.byVS
		}
		scope.EgressPorts = slices.Sorted(slices.Values(info.egressPorts))
	}
	groups := ix.groups[hostname]
	full := groups[svc.Namespace].merged
	scope.Full = full
	if len(groups) > 1 {
		for _, ns := range sortedKeys(groups) {
			if ns != svc.Namespace {
				scope.Others = append(scope.Others, groups[ns].chosen.svc.Ref)
			}
		}
	}
	var dropped []string
	for _, fp := range full.Ports {
		if !slices.ContainsFunc(svc.Ports, func(q Port) bool { return q.Number == fp.Number }) {
			dropped = append(dropped, fmt.Sprint(fp.Number))
		}
	}
	if len(dropped) > 0 {
		for _, q := range svc.Ports {
			scope.Ports = append(scope.Ports, q.Number)
		}
		diags = append(diags, ix.trimDiagnostic(sc, scope, svc, dropped))
	}
	return svc, diags, scope
}

func (ix *Index) trimDiagnostic(sc *sidecarScope, scope *Scope, svc *Service, dropped []string) explain.Diagnostic {
	kept := make([]string, 0, len(scope.Ports))
	for _, p := range scope.Ports {
		kept = append(kept, fmt.Sprint(p))
	}
	resources := []provenance.Ref{svc.Ref}
	if scope.Sidecar != nil {
		resources = append(resources, *scope.Sidecar)
	}
	if scope.VirtualService != nil && len(scope.EgressPorts) == 0 {
		resources = append(resources, *scope.VirtualService)
		return diag.SidecarPortTrimsPorts.New(
			fmt.Sprintf("%s imports %s only through the routes of %s, which name port %s: there are no clusters for port %s, and DestinationRule settings for those ports have no effect",
				sidecarName(scope.Sidecar), svc.Hostname, scope.VirtualService, strings.Join(kept, ","), strings.Join(dropped, ",")),
			fmt.Sprintf("add %s/%s to spec.egress[].hosts of %s to import every port", svc.Namespace, svc.Hostname, sidecarName(scope.Sidecar)),
			resources...)
	}
	return diag.SidecarPortTrimsPorts.New(
		fmt.Sprintf("%s imports %s through an egress listener on port %s: there are no clusters for port %s, and DestinationRule settings for those ports have no effect",
			sidecarName(scope.Sidecar), svc.Hostname, strings.Join(kept, ","), strings.Join(dropped, ",")),
		fmt.Sprintf("add an egress listener without port (or one per port) importing %s/%s to %s if the other ports are needed", svc.Namespace, svc.Hostname, sidecarName(scope.Sidecar)),
		resources...)
}

func sidecarName(r *provenance.Ref) string {
	if r == nil {
		return "the default sidecar scope"
	}
	return r.String()
}

// notInScope explains why hostname is not in the proxy's scope (D7).
func (ix *Index) notInScope(p *Proxy, sc *sidecarScope, hostname string) []explain.Diagnostic {
	byNs := ix.groups[hostname]
	if len(byNs) == 0 {
		return []explain.Diagnostic{diag.HostNotInScope.New(
			fmt.Sprintf("no Service or ServiceEntry defines host %s, so the proxy has no cluster for it", hostname),
			fmt.Sprintf("create a Service or ServiceEntry for %s", hostname))}
	}
	var visible, hidden []*regService
	for _, ns := range sortedKeys(byNs) {
		for _, m := range byNs[ns].members {
			if ix.isServiceVisible(m, p.Namespace) {
				visible = append(visible, m)
			} else {
				hidden = append(hidden, m)
			}
		}
	}
	if len(visible) == 0 {
		var out []explain.Diagnostic
		for _, m := range hidden {
			out = append(out, diag.HostNotInScope.New(
				fmt.Sprintf("%s is not visible from namespace %s (exportTo: %s), so the proxy has no cluster for %s and no DestinationRule applies",
					m.svc.Ref, p.Namespace, ix.exportToText(m), hostname),
				ix.exportFix(m, p.Namespace),
				m.svc.Ref))
		}
		return out
	}
	scName := sidecarName(nil)
	var resources []provenance.Ref
	if sc.sidecar != nil {
		r := sidecarRef(sc.sidecar)
		scName, resources = r.String(), []provenance.Ref{r}
	}
	m := visible[0]
	resources = append(resources, m.svc.Ref)
	reason := "none of its spec.egress[].hosts imports it"
	for _, l := range sc.listeners {
		nsHosts, nsFound := l.hosts[m.svc.Namespace]
		wild, wildFound := l.hosts["*"]
		if (nsFound && nsHosts.isExcluded(hostname)) || (wildFound && wild.isExcluded(hostname)) {
			reason = fmt.Sprintf("spec.egress[%d].hosts excludes it with a ~ entry", l.index)
			break
		}
		if (nsFound && nsHosts.matches(hostname)) || (wildFound && wild.matches(hostname)) {
			if l.matchPort {
				reason = fmt.Sprintf("spec.egress[%d] imports it only on port %d, which the service does not have", l.index, l.port)
			}
		}
	}
	return []explain.Diagnostic{diag.HostNotInScope.New(
		fmt.Sprintf("%s of namespace %s does not import %s (%s): the proxy has no cluster for it and no DestinationRule applies",
			scName, p.Namespace, hostname, reason),
		fmt.Sprintf("add %s/%s to spec.egress[].hosts of %s", m.svc.Namespace, hostname, scName),
		resources...)}
}

func (ix *Index) exportToText(rs *regService) string {
	if len(rs.svc.ExportTo) == 0 {
		if d := ix.snap.MeshConfig.GetDefaultServiceExportTo(); len(d) > 0 {
			return strings.Join(d, ",") + " from MeshConfig defaultServiceExportTo"
		}
	}
	set := ix.serviceExportTo(rs)
	keys := sortedKeys(set)
	text := strings.Join(keys, ",")
	if rs.visibility != seVisibilityPublic && ix.snap.MeshConfig.GetServiceEntryVisibility().GetApplyToSidecars() {
		text += ", capped by MeshConfig serviceEntryVisibility"
	}
	return text
}

func (ix *Index) exportFix(rs *regService, ns string) string {
	if rs.svc.Kubernetes {
		return fmt.Sprintf("add %s to the networking.istio.io/exportTo annotation of %s", ns, rs.svc.Ref)
	}
	return fmt.Sprintf("add %s to spec.exportTo of %s", ns, rs.svc.Ref)
}
