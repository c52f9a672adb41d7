package index

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/meshhost"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/webhook"
)

// SubsetRef is one VirtualService route destination for a host.
type SubsetRef struct {
	// VirtualService holds the route (a delegate VirtualService for routes it contributes).
	VirtualService provenance.Ref
	// Field is the destination's path: `spec.http[0].route[1].destination`.
	Field string
	// Subset is the destination subset ("" routes to the default cluster).
	Subset string
	// Port is the destination port (0: not named).
	Port uint32
}

// routeDest is a destination of a VirtualService, host resolved like istiod does
// (ResolveVirtualServiceShortnames: short names in the VirtualService's namespace).
type routeDest struct {
	host   string
	subset string
	port   uint32
	field  routeField
	owner  provenance.Ref
	// sourceNamespaces are the sourceNamespace match conditions of the HTTP route (nil: none).
	sourceNamespaces []string
	http             bool
}

// routeField is where a destination sits in its VirtualService, spelled by String: kept as
// indexes, since only the destinations a diagnostic or SubsetReferences names are spelled.
type routeField struct {
	kind routeFieldKind
	i, j int32
}

type routeFieldKind uint8

const (
	fieldHTTPRoute routeFieldKind = iota
	fieldHTTPMirror
	fieldHTTPMirrors
	fieldTCPRoute
	fieldTLSRoute
)

// String is the destination's path: `spec.http[0].route[1].destination`.
func (f routeField) String() string {
	switch f.kind {
	case fieldHTTPMirror:
		return fmt.Sprintf("spec.http[%d].mirror", f.i)
	case fieldHTTPMirrors:
		return fmt.Sprintf("spec.http[%d].mirrors[%d].destination", f.i, f.j)
	case fieldTCPRoute:
		return fmt.Sprintf("spec.tcp[%d].route[%d].destination", f.i, f.j)
	case fieldTLSRoute:
		return fmt.Sprintf("spec.tls[%d].route[%d].destination", f.i, f.j)
	}
	return fmt.Sprintf("spec.http[%d].route[%d].destination", f.i, f.j)
}

// ref is the SubsetRef of d.
func (d *routeDest) ref() SubsetRef {
	return SubsetRef{VirtualService: d.owner, Field: d.field.String(), Subset: d.subset, Port: d.port}
}

type vsInfo struct {
	obj   *networkingv1.VirtualService
	ref   provenance.Ref
	hosts []string
	// exportTo is the effective set, "." already replaced by the namespace.
	exportTo map[string]bool
	dests    []routeDest
}

func (ix *Index) buildVirtualServices() {
	var roots []*networkingv1.VirtualService
	delegates := map[provenance.Ref]*networkingv1.VirtualService{}
	for _, vs := range ix.snap.VirtualServices {
		if len(vs.Spec.GetHosts()) == 0 {
			delegates[vsRef(vs)] = vs
			continue
		}
		roots = append(roots, vs)
	}
	slices.SortStableFunc(roots, func(a, b *networkingv1.VirtualService) int {
		return cmp.Or(a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time), strings.Compare(a.Name, b.Name), strings.Compare(a.Namespace, b.Namespace))
	})
	for _, vs := range roots {
		gws := vs.Spec.GetGateways()
		if len(gws) > 0 && !slices.Contains(gws, "mesh") {
			// Bound to gateways only: never part of a sidecar's routes.
			continue
		}
		info := &vsInfo{obj: vs, ref: vsRef(vs), exportTo: map[string]bool{}}
		for _, h := range vs.Spec.GetHosts() {
			info.hosts = append(info.hosts, meshhost.ResolveShortname(h, vs.Namespace))
		}
		exportTo := vs.Spec.GetExportTo()
		if len(exportTo) == 0 {
			exportTo = ix.snap.MeshConfig.GetDefaultVirtualServiceExportTo()
		}
		if len(exportTo) == 0 {
			exportTo = []string{"*"}
		}
		for _, e := range exportTo {
			if e == "." {
				e = vs.Namespace
			}
			info.exportTo[e] = true
		}
		info.dests = vsDestinations(&vs.Spec, vs.Namespace, info.ref, nil)
		for _, h := range vs.Spec.GetHttp() {
			d := h.GetDelegate()
			if d == nil {
				continue
			}
			ns := d.GetNamespace()
			if ns == "" {
				ns = vs.Namespace
			}
			dvs := delegates[provenance.Ref{Kind: "VirtualService", Namespace: ns, Name: d.GetName()}]
			if dvs == nil {
				continue
			}
			info.dests = append(info.dests, vsDestinations(&dvs.Spec, dvs.Namespace, vsRef(dvs), sourceNamespaces(h.GetMatch()))...)
		}
		ix.vss = append(ix.vss, info)
	}
}

func sourceNamespaces(ms []*networking.HTTPMatchRequest) []string {
	var out []string
	for _, m := range ms {
		if m.GetSourceNamespace() != "" {
			out = append(out, m.GetSourceNamespace())
		}
	}
	return out
}

func vsDestinations(spec *networking.VirtualService, ns string, owner provenance.Ref, inherited []string) []routeDest {
	var out []routeDest
	add := func(d *networking.Destination, field routeField, src []string, http bool) {
		if d == nil {
			return
		}
		out = append(out, routeDest{
			host: meshhost.ResolveShortname(d.GetHost(), ns), subset: d.GetSubset(), port: d.GetPort().GetNumber(),
			field: field, owner: owner, sourceNamespaces: src, http: http,
		})
	}
	for i, h := range spec.GetHttp() {
		src := sourceNamespaces(h.GetMatch())
		if len(src) == 0 {
			src = inherited
		}
		for j, r := range h.GetRoute() {
			add(r.GetDestination(), routeField{fieldHTTPRoute, int32(i), int32(j)}, src, true)
		}
		add(h.GetMirror(), routeField{fieldHTTPMirror, int32(i), 0}, src, true)
		for j, m := range h.GetMirrors() {
			add(m.GetDestination(), routeField{fieldHTTPMirrors, int32(i), int32(j)}, src, true)
		}
	}
	for i, t := range spec.GetTcp() {
		for j, r := range t.GetRoute() {
			add(r.GetDestination(), routeField{fieldTCPRoute, int32(i), int32(j)}, nil, false)
		}
	}
	for i, t := range spec.GetTls() {
		for j, r := range t.GetRoute() {
			add(r.GetDestination(), routeField{fieldTLSRoute, int32(i), int32(j)}, nil, false)
		}
	}
	return out
}

// appliesTo is virtualServiceDestinationsFilteredBySourceNamespace's test for an HTTP route: it
// counts for a proxy in configNamespace unless its matches name other source namespaces only.
func (d routeDest) appliesTo(configNamespace string) bool {
	if !d.http || len(d.sourceNamespaces) == 0 {
		return true
	}
	return slices.Contains(d.sourceNamespaces, configNamespace)
}

type hostPorts struct {
	host  string
	ports []uint32
}

// destinationsFor is virtualServiceDestinationsFilteredBySourceNamespace: destination hosts and
// their ports (0 when a destination names no port), in first-seen order.
func (v *vsInfo) destinationsFor(configNamespace string) []hostPorts {
	var out []hostPorts
	idx := map[string]int{}
	for _, d := range v.dests {
		if !d.appliesTo(configNamespace) {
			continue
		}
		i, ok := idx[d.host]
		if !ok {
			i = len(out)
			idx[d.host] = i
			out = append(out, hostPorts{host: d.host})
		}
		if !slices.Contains(out[i].ports, d.port) {
			out[i].ports = append(out[i].ports, d.port)
		}
	}
	return out
}

// selectVirtualServices is model.SelectVirtualServices for the mesh gateway: the
// VirtualServices visible to configNamespace (private, then exported to it, then public) whose
// hosts match the egress hosts of their namespace or of `*`.
func (ix *Index) selectVirtualServices(configNamespace string, hosts map[string]*hostClass) []*vsInfo {
	var private, exported, public []*vsInfo
	for _, v := range ix.vss {
		switch {
		case v.exportTo["*"]:
			public = append(public, v)
		case v.exportTo["~"]:
		default:
			if v.exportTo[configNamespace] {
				if v.obj.Namespace == configNamespace {
					private = append(private, v)
				} else {
					exported = append(exported, v)
				}
			}
		}
	}
	wild, wildFound := hosts["*"]
	var out []*vsInfo
	seen := map[provenance.Ref]bool{}
	add := func(v *vsInfo, hc *hostClass) {
		if seen[v.ref] {
			return
		}
		nsExcl, nsExclFound := hosts[v.obj.Namespace]
		for _, h := range v.hosts {
			if !hc.vsMatches(h) {
				continue
			}
			if (nsExclFound && nsExcl.isExcluded(h)) || (wildFound && wild.isExcluded(h)) {
				continue
			}
			out = append(out, v)
			seen[v.ref] = true
			return
		}
	}
	for _, list := range [][]*vsInfo{private, exported, public} {
		for _, v := range list {
			if hc, ok := hosts[v.obj.Namespace]; ok {
				add(v, hc)
			}
			if wildFound {
				add(v, wild)
			}
		}
	}
	return out
}

// SubsetReferences lists the destinations for hostname in the VirtualServices the proxy's
// sidecar scope imports (http, tcp and tls routes and mirrors; HTTP routes whose
// sourceNamespace matches exclude other namespaces), in precedence order.
func (ix *Index) SubsetReferences(p *Proxy, hostname string) []SubsetRef {
	dests := ix.scopeFor(p).refs[hostname]
	if dests == nil {
		return nil
	}
	out := make([]SubsetRef, len(dests))
	for i, d := range dests {
		out[i] = d.ref()
	}
	return out
}

// subsetReferences groups the destinations of the VirtualServices of sc by host, each in
// precedence order: listener by listener, a VirtualService once.
func subsetReferences(sc *sidecarScope) map[string][]*routeDest {
	out := map[string][]*routeDest{}
	seen := map[provenance.Ref]bool{}
	for _, l := range sc.listeners {
		for _, v := range l.vss {
			if seen[v.ref] {
				continue
			}
			seen[v.ref] = true
			for i := range v.dests {
				if d := &v.dests[i]; d.appliesTo(sc.namespace) {
					out[d.host] = append(out[d.host], d)
				}
			}
		}
	}
	return out
}

// RouteDiagnostics compares the subsets of the selected DestinationRule with the routes the
// proxy has: D9 for a subset no route sends traffic to (its cluster exists but its policy never
// applies), D10 for a route to a subset the selected rule does not define (the cluster is
// missing, so requests fail with 503 NC). D33 reports what Istio's validation rejects in the
// VirtualServices whose routes send to the service.
func (ix *Index) RouteDiagnostics(p *Proxy, svc *Service, sel Selection) []explain.Diagnostic {
	if svc == nil {
		return nil
	}
	dests := ix.scopeFor(p).refs[svc.Hostname]
	defined := map[string]int{}
	if sel.Rule != nil {
		for i, s := range sel.Rule.Spec.GetSubsets() {
			defined[s.GetName()] = i
		}
	}
	var out []explain.Diagnostic
	used := map[string]bool{}
	validated := map[provenance.Ref]bool{}
	for _, d := range dests {
		if r := d.ref().VirtualService; !validated[r] {
			validated[r] = true
			out = append(out, ix.virtualServiceRejected(r)...)
		}
		if d.subset == "" {
			continue
		}
		used[d.subset] = true
		if _, ok := defined[d.subset]; ok {
			continue
		}
		r := d.ref()
		resources := []provenance.Ref{r.VirtualService}
		msg := fmt.Sprintf("%s %s routes to subset %q of %s, but ", r.VirtualService, r.Field, r.Subset, svc.Hostname)
		var fix string
		if sel.Rule != nil {
			resources = append(resources, sel.Rule.Primary)
			msg += fmt.Sprintf("%s (the rule this proxy uses) does not define it", ruleName(sel.Rule))
			fix = fmt.Sprintf("add subset %q to %s, or route to a subset it defines", r.Subset, sel.Rule.Primary)
		} else {
			msg += "no DestinationRule applies to this proxy for the host"
			fix = fmt.Sprintf("define subset %q in a DestinationRule for %s that this proxy uses", r.Subset, svc.Hostname)
		}
		msg += fmt.Sprintf(": cluster outbound|%s|%s|%s does not exist and requests fail with 503 NC", portText(r.Port), r.Subset, svc.Hostname)
		if other := ix.rulesDefiningSubset(svc.Hostname, r.Subset, sel); len(other) > 0 {
			names := make([]string, 0, len(other))
			for _, o := range other {
				names = append(names, o.String())
				resources = append(resources, o)
			}
			msg += fmt.Sprintf(" (%s defines it but is not the rule this proxy uses)", strings.Join(names, ", "))
		}
		out = append(out, diag.RouteToUndefinedSubset.New(msg, fix, resources...))
	}
	if sel.Rule != nil {
		for i, s := range sel.Rule.Spec.GetSubsets() {
			if used[s.GetName()] {
				continue
			}
			from := sel.Rule.Primary
			if i < len(sel.Rule.SubsetFrom) {
				from = sel.Rule.SubsetFrom[i]
			}
			out = append(out, diag.SubsetNotRouted.New(
				fmt.Sprintf("subset %q of %s is not the destination of any route this proxy has: its clusters exist but receive no traffic, so its policy never applies",
					s.GetName(), from),
				fmt.Sprintf("route to subset %q from a VirtualService for %s exported to the client's namespace, or remove spec.subsets[name=%s]", s.GetName(), svc.Hostname, s.GetName()),
				from))
		}
	}
	return out
}

func portText(p uint32) string {
	if p == 0 {
		return "<port>"
	}
	return fmt.Sprint(p)
}

func ruleName(r *ConsolidatedRule) string {
	if len(r.From) > 1 {
		names := make([]string, 0, len(r.From))
		for _, f := range r.From {
			names = append(names, f.Namespace+"/"+f.Name)
		}
		return "DestinationRule " + strings.Join(names, " + ")
	}
	return r.Primary.String()
}

// rulesDefiningSubset lists DestinationRules for host that define subset but did not contribute
// to the selected rule.
func (ix *Index) rulesDefiningSubset(host, subset string, sel Selection) []provenance.Ref {
	var out []provenance.Ref
	for _, d := range ix.drsCovering(host) {
		if sel.Rule != nil && slices.Contains(sel.Rule.From, d.ref) {
			continue
		}
		for _, s := range d.obj.Spec.GetSubsets() {
			if s.GetName() == subset {
				out = append(out, d.ref)
				break
			}
		}
	}
	return out
}

// VirtualServiceFilter returns a test of the JSON of a VirtualService as a list returns it
// (the whole object): whether the VirtualService can change what the cluster command explains
// for host. The index reads a VirtualService for a host only through its route destinations
// that resolve to the host's Service (the subsets they route to, D9 and D10, and the host
// imported into a client's scope, with the destination's ports), and a root VirtualService
// takes in its delegates' destinations. A destination names a Service by its hostname's first
// label (a short name, `name.ns`, the full name), or is the wildcard ServiceEntry host that
// stands for it (`*.example.com` for `a.example.com`, or `*`), and hostnames match exactly, as
// in istiod's lookups (the host ResolveHost finds for a name is in lower case, and so must be a
// destination that resolves to it). So a VirtualService whose JSON holds none of the host's
// first label, a wildcard covering the host, a `"host"` set to `"*"` or a `"delegate"` has no
// destination for the host, and the test's false means it can be left out. An `exportTo:
// ["*"]` alone does not keep it. The test may be called from several goroutines.
func VirtualServiceFilter(host string) func(listed []byte) bool {
	h := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(host)), ".")
	first, rest, _ := strings.Cut(h, ".")
	if first == "" {
		return func([]byte) bool { return true }
	}
	label, delegate := []byte(first), []byte(`"delegate"`)
	var wildcards [][]byte
	for rest != "" {
		wildcards = append(wildcards, []byte("*."+rest))
		_, rest, _ = strings.Cut(rest, ".")
	}
	return func(listed []byte) bool {
		if bytes.Contains(listed, label) || bytes.Contains(listed, delegate) {
			return true
		}
		if bytes.IndexByte(listed, '*') < 0 {
			return false
		}
		for _, w := range wildcards {
			if bytes.Contains(listed, w) {
				return true
			}
		}
		return hostIsStar(listed)
	}
}

// hostIsStar reports whether a JSON object holds a "host" key whose value is "*".
func hostIsStar(listed []byte) bool {
	for i := 0; ; i++ {
		j := bytes.IndexByte(listed[i:], '*')
		if j < 0 {
			return false
		}
		i += j
		if i == 0 || i+1 >= len(listed) || listed[i-1] != '"' || listed[i+1] != '"' {
			continue
		}
		before := bytes.TrimRight(listed[:i-1], " \t\r\n")
		if b, ok := bytes.CutSuffix(before, []byte(":")); ok && bytes.HasSuffix(bytes.TrimRight(b, " \t\r\n"), []byte(`"host"`)) {
			return true
		}
	}
}

// virtualServiceRejected is D33 for what Istio's validation rejects in the VirtualService ref,
// found once for every answer that names the VirtualService.
func (ix *Index) virtualServiceRejected(ref provenance.Ref) []explain.Diagnostic {
	if d, ok := ix.vsRejected.Load(ref); ok {
		return d.([]explain.Diagnostic)
	}
	var out []explain.Diagnostic
	for _, vs := range ix.snap.VirtualServices {
		if vs.Namespace == ref.Namespace && vs.Name == ref.Name {
			out = webhook.Diagnostics(diag.RejectedByValidation, ref,
				webhook.VirtualService(webhook.Meta{Name: vs.Name, Namespace: vs.Namespace, Annotations: vs.Annotations, Labels: vs.Labels}, &vs.Spec))
			break
		}
	}
	ix.vsRejected.Store(ref, out)
	return out
}
