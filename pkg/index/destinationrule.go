package index

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	networking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/meshhost"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/webhook"
)

// annotationInternalParents marks a DestinationRule istiod synthesized from a Gateway API
// backend policy (constants.InternalParentNames).
const annotationInternalParents = "internal.istio.io/parents"

// Lookup steps of push_context.go destinationRule.
const (
	StepClientNamespace  = "client namespace"
	StepServiceNamespace = "service namespace"
	StepRootNamespace    = "root namespace"
)

// drInfo is one DestinationRule as setDestinationRules sees it.
type drInfo struct {
	// pos is the rule's place in Index.drs.
	pos int
	obj *networkingv1.DestinationRule
	ref provenance.Ref
	ns  string
	// host is spec.host after ResolveShortnameToFQDN in the rule's namespace.
	host string
	// exportTo is the effective set: spec.exportTo, or {"."} with a workloadSelector.
	exportTo    map[string]bool
	hasSelector bool
	selector    map[string]string
	// inLocal: the rule is in its namespace's local index (exportTo empty, *, . or its namespace).
	inLocal bool
	// privateOnly: not in the exported index (exportTo only . or its namespace, or empty with
	// MeshConfig defaultDestinationRuleExportTo containing .).
	privateOnly bool
	backend     bool
	// rejected is D33 for the rule (rejectedByValidation), found once: the answers of every
	// client and host that name the rule ask for it.
	rejected struct {
		once  sync.Once
		diags []explain.Diagnostic
	}
}

// rejectedByValidation is D33 for what Istio's validation rejects in the rule.
func (d *drInfo) rejectedByValidation() []explain.Diagnostic {
	d.rejected.once.Do(func() {
		d.rejected.diags = webhook.Diagnostics(diag.RejectedByValidation, d.ref,
			webhook.DestinationRule(webhook.Meta{Name: d.obj.Name, Namespace: d.obj.Namespace, Annotations: d.obj.Annotations}, &d.obj.Spec))
	})
	return d.rejected.diags
}

// drsCovering returns the DestinationRules whose host can be returned by mostSpecificHostMatch
// for host (wildcardCovers), in the order of Index.drs.
func (ix *Index) drsCovering(host string) []*drInfo {
	exact := ix.drsByHost[host]
	var wild []*drInfo
	for _, d := range ix.wildcardDRs {
		if d.host != host && meshhost.Name(host).SubsetOf(meshhost.Name(d.host)) {
			wild = append(wild, d)
		}
	}
	if len(wild) == 0 {
		return exact
	}
	out := make([]*drInfo, 0, len(exact)+len(wild))
	out = append(out, exact...)
	out = append(out, wild...)
	slices.SortFunc(out, func(a, b *drInfo) int { return cmp.Compare(a.pos, b.pos) })
	return out
}

func (d *drInfo) exportToText() string {
	if len(d.obj.Spec.GetExportTo()) == 0 {
		return "none"
	}
	return strings.Join(d.obj.Spec.GetExportTo(), ",")
}

type dupSubset struct {
	name          string
	dropped, kept *drInfo
}

// drEntry is istiod's ConsolidatedDestRule plus the record of what the merge dropped.
type drEntry struct {
	exportTo   map[string]bool
	spec       *networking.DestinationRule
	primary    *drInfo
	from       []*drInfo
	subsetFrom []*drInfo
	tpFrom     *drInfo
	dupSubsets []dupSubset
	ignoredTP  []*drInfo
	// rule is the entry's ConsolidatedRule, made on first use (consolidated).
	rule atomic.Pointer[ConsolidatedRule]
}

func (e *drEntry) has(d *drInfo) bool { return slices.Contains(e.from, d) }

type drTable struct {
	specific map[string][]*drEntry
	wildcard map[string][]*drEntry
}

func newDRTable() *drTable {
	return &drTable{specific: map[string][]*drEntry{}, wildcard: map[string][]*drEntry{}}
}

func (t *drTable) match(host string) (string, []*drEntry, bool) {
	if t == nil {
		return "", nil, false
	}
	return mostSpecificHostMatch(host, t.specific, t.wildcard)
}

// drIndex is push_context.go destinationRuleIndex.
type drIndex struct {
	local     map[string]*drTable
	exported  map[string]*drTable
	rootLocal *drTable
}

// buildDestinationRules is setDestinationRules: sort (workloadSelector first, then creation
// time, name, namespace), resolve hosts, and merge each rule into its namespace's local index,
// its exported index, or the root namespace's private index.
func (ix *Index) buildDestinationRules() {
	sorted := slices.Clone(ix.snap.DestinationRules)
	slices.SortStableFunc(sorted, func(a, b *networkingv1.DestinationRule) int {
		as, bs := a.Spec.GetWorkloadSelector() != nil, b.Spec.GetWorkloadSelector() != nil
		if as && !bs {
			return -1
		}
		if !as && bs {
			return 1
		}
		return cmp.Or(a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time), strings.Compare(a.Name, b.Name), strings.Compare(a.Namespace, b.Namespace))
	})
	defaultPrivate := slices.Contains(ix.snap.MeshConfig.GetDefaultDestinationRuleExportTo(), ".")
	ix.drIx = drIndex{local: map[string]*drTable{}, exported: map[string]*drTable{}, rootLocal: newDRTable()}
	ix.drsByHost = map[string][]*drInfo{}
	for _, obj := range sorted {
		d := &drInfo{obj: obj, ref: drRef(obj), ns: obj.Namespace, host: meshhost.ResolveShortname(obj.Spec.GetHost(), obj.Namespace), exportTo: map[string]bool{}}
		if _, ok := obj.Annotations[annotationInternalParents]; ok {
			d.backend = true
		}
		if ws := obj.Spec.GetWorkloadSelector(); ws != nil {
			d.hasSelector, d.selector = true, ws.GetMatchLabels()
			// Rules with a workloadSelector are never exported.
			d.exportTo["."] = true
		} else {
			for _, e := range obj.Spec.GetExportTo() {
				d.exportTo[e] = true
			}
		}
		d.pos = len(ix.drs)
		ix.drs = append(ix.drs, d)
		ix.drsByHost[d.host] = append(ix.drsByHost[d.host], d)
		if meshhost.Name(d.host).IsWildCarded() {
			ix.wildcardDRs = append(ix.wildcardDRs, d)
		}
		if len(d.exportTo) == 0 || d.exportTo["*"] || d.exportTo["."] || d.exportTo[d.ns] {
			d.inLocal = true
			t := ix.drIx.local[d.ns]
			if t == nil {
				t = newDRTable()
				ix.drIx.local[d.ns] = t
			}
			ix.mergeDestinationRule(t, d)
		}
		// Of defaultDestinationRuleExportTo istiod honours only ".".
		d.privateOnly = (len(d.exportTo) == 0 && defaultPrivate) ||
			(len(d.exportTo) == 1 && (d.exportTo["."] || d.exportTo[d.ns]))
		switch {
		case !d.privateOnly:
			t := ix.drIx.exported[d.ns]
			if t == nil {
				t = newDRTable()
				ix.drIx.exported[d.ns] = t
			}
			ix.mergeDestinationRule(t, d)
		case d.ns == ix.root:
			ix.mergeDestinationRule(ix.drIx.rootLocal, d)
		}
	}
}

func newDREntry(d *drInfo) *drEntry {
	spec := shallowCopy(&d.obj.Spec)
	spec.Host = d.host
	e := &drEntry{exportTo: d.exportTo, spec: spec, primary: d, from: []*drInfo{d}}
	for range spec.GetSubsets() {
		e.subsetFrom = append(e.subsetFrom, d)
	}
	if spec.GetTrafficPolicy() != nil {
		e.tpFrom = d
	}
	return e
}

// shallowCopy is a new DestinationRule with the fields of src, its lists and messages shared
// with src: an entry's spec is never written once made (a merge clones it first), so the copy
// is only there to carry the resolved host.
func shallowCopy(src *networking.DestinationRule) *networking.DestinationRule {
	dst := &networking.DestinationRule{}
	m := dst.ProtoReflect()
	src.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		m.Set(fd, v)
		return true
	})
	return dst
}

func setEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func supersetOf(a, b map[string]bool) bool {
	for k := range b {
		if !a[k] {
			return false
		}
	}
	return true
}

// mergeDestinationRule is destination_rule.go mergeDestinationRule with
// ENABLE_ENHANCED_DESTINATIONRULE_MERGE on. It keeps istiod's control flow as written: the
// decision to append the incoming rule as its own entry is the one taken for the last existing
// entry the loop did not skip, so a rule whose exportTo is a strict superset of a selector-less
// entry's is merged into it and (unlike the comment in istiod says) not appended.
func (ix *Index) mergeDestinationRule(t *drTable, d *drInfo) {
	m := t.specific
	if meshhost.Name(d.host).IsWildCarded() {
		m = t.wildcard
	}
	list, exists := m[d.host]
	if !exists {
		m[d.host] = []*drEntry{newDREntry(d)}
		return
	}
	appendSeparately := true
	for _, e := range list {
		switch {
		case setEqual(d.exportTo, e.exportTo):
			appendSeparately = false
		case len(e.exportTo) > 0 && supersetOf(d.exportTo, e.exportTo):
			appendSeparately = true
		default:
			appendSeparately = true
			continue
		}
		existing := e.primary
		bothWithout := !d.hasSelector && !existing.hasSelector
		bothWith := d.hasSelector && existing.hasSelector
		selectorsMatch := mapsEqual(existing.selector, d.selector)
		if bothWith && !selectorsMatch {
			appendSeparately = true
			continue
		}
		if bothWithout || (bothWith && selectorsMatch) {
			appendSeparately = false
		}

		merged := proto.Clone(e.spec).(*networking.DestinationRule)
		e.spec = merged
		e.from = append(e.from, d)
		have := map[string]*drInfo{}
		for i, s := range merged.GetSubsets() {
			have[s.GetName()] = e.subsetFrom[i]
		}
		for _, s := range d.obj.Spec.GetSubsets() {
			if kept, dup := have[s.GetName()]; dup {
				e.dupSubsets = append(e.dupSubsets, dupSubset{name: s.GetName(), dropped: d, kept: kept})
				continue
			}
			merged.Subsets = append(merged.Subsets, proto.Clone(s).(*networking.Subset))
			e.subsetFrom = append(e.subsetFrom, d)
			have[s.GetName()] = d
		}
		incomingTP := d.obj.Spec.GetTrafficPolicy()
		// isBackendPolicyDestinationRule looks at the merged rule's metadata, which stays the
		// first rule's.
		switch {
		case existing.backend == d.backend:
			if merged.TrafficPolicy == nil && incomingTP != nil {
				merged.TrafficPolicy = proto.Clone(incomingTP).(*networking.TrafficPolicy)
				e.tpFrom = d
			} else if incomingTP != nil {
				e.ignoredTP = append(e.ignoredTP, d)
			}
		case d.backend:
			// A user rule merged with a synthesized one: user fields win, the backend
			// policy fills the gaps (mergeBackendPolicyTrafficPolicy).
			merged.TrafficPolicy = mergeBackendPolicy(merged.TrafficPolicy, incomingTP)
		default:
			merged.TrafficPolicy = mergeBackendPolicy(incomingTP, merged.TrafficPolicy)
			if incomingTP != nil {
				e.tpFrom = d
			}
		}
	}
	if appendSeparately {
		m[d.host] = append(m[d.host], newDREntry(d))
	}
}

// mergeBackendPolicy is mergeBackendPolicyTrafficPolicy: fields of user win block by block,
// backend fills the rest, port-level settings merged per port.
func mergeBackendPolicy(user, backend *networking.TrafficPolicy) *networking.TrafficPolicy {
	if user == nil {
		if backend == nil {
			return nil
		}
		return proto.Clone(backend).(*networking.TrafficPolicy)
	}
	if backend == nil {
		return proto.Clone(user).(*networking.TrafficPolicy)
	}
	out := &networking.TrafficPolicy{
		ConnectionPool: backend.GetConnectionPool(), LoadBalancer: backend.GetLoadBalancer(),
		OutlierDetection: backend.GetOutlierDetection(), Tls: backend.GetTls(), Tunnel: backend.GetTunnel(),
		ProxyProtocol: backend.GetProxyProtocol(), RetryBudget: backend.GetRetryBudget(),
	}
	if user.ConnectionPool != nil {
		out.ConnectionPool = user.ConnectionPool
	}
	if user.OutlierDetection != nil {
		out.OutlierDetection = user.OutlierDetection
	}
	if user.LoadBalancer != nil {
		out.LoadBalancer = user.LoadBalancer
	}
	if user.Tls != nil {
		out.Tls = user.Tls
	}
	if user.Tunnel != nil {
		out.Tunnel = user.Tunnel
	}
	if user.ProxyProtocol != nil {
		out.ProxyProtocol = user.ProxyProtocol
	}
	if user.RetryBudget != nil {
		out.RetryBudget = user.RetryBudget
	}
	byPort := map[uint32]*networking.TrafficPolicy_PortTrafficPolicy{}
	for _, p := range user.GetPortLevelSettings() {
		c := proto.Clone(p).(*networking.TrafficPolicy_PortTrafficPolicy)
		out.PortLevelSettings = append(out.PortLevelSettings, c)
		byPort[c.GetPort().GetNumber()] = c
	}
	for _, bp := range backend.GetPortLevelSettings() {
		up, ok := byPort[bp.GetPort().GetNumber()]
		if !ok {
			out.PortLevelSettings = append(out.PortLevelSettings, bp)
			continue
		}
		if up.LoadBalancer == nil {
			up.LoadBalancer = bp.LoadBalancer
		}
		if up.ConnectionPool == nil {
			up.ConnectionPool = bp.ConnectionPool
		}
		if up.OutlierDetection == nil {
			up.OutlierDetection = bp.OutlierDetection
		}
		if up.Tls == nil {
			up.Tls = bp.Tls
		}
	}
	return proto.Clone(out).(*networking.TrafficPolicy)
}

// lookup is push_context.go destinationRule: the client namespace's local index (for a root
// namespace client: the root namespace's private index), then the service namespace's exported
// rules, then the root namespace's exported rules; the first non-empty answer wins.
func (ix *Index) lookup(clientNs, svcNs, host string) ([]*drEntry, int) {
	if clientNs != ix.root {
		if _, l, ok := ix.drIx.local[clientNs].match(host); ok {
			return l, 1
		}
	} else if _, l, ok := ix.drIx.rootLocal.match(host); ok {
		return l, 1
	}
	return ix.lookupAfterClient(clientNs, svcNs, host)
}

// exportedFrom is getExportedDestinationRuleFromNamespace: the most specific host of the
// namespace's exported index, keeping the entries exported to the client.
func (ix *Index) exportedFrom(ns, host, clientNs string) []*drEntry {
	_, l, ok := ix.drIx.exported[ns].match(host)
	if !ok {
		return nil
	}
	var out []*drEntry
	for _, e := range l {
		if exportedTo(e.exportTo, clientNs) {
			out = append(out, e)
		}
	}
	return out
}

func exportedTo(set map[string]bool, clientNs string) bool {
	return len(set) == 0 || set["*"] || set[clientNs]
}

// pick is SidecarScope.DestinationRule for outbound traffic: the first entry whose rule has a
// workloadSelector, lives in the proxy's namespace and selects the proxy's labels; otherwise
// the last entry without a workloadSelector.
func pick(list []*drEntry, p *Proxy) *drEntry {
	var catchAll *drEntry
	for _, e := range list {
		if !e.primary.hasSelector {
			catchAll = e
			continue
		}
		if e.primary.ns == p.Namespace && meshhost.LabelsSubsetOf(e.primary.selector, p.Labels) {
			return e
		}
	}
	return catchAll
}

func stepName(step int) string {
	switch step {
	case 1:
		return StepClientNamespace
	case 2:
		return StepServiceNamespace
	case 3:
		return StepRootNamespace
	}
	return ""
}

// consolidated is the entry as a ConsolidatedRule, made once: it and its Spec (a copy of the
// input made when the index was built) are shared by every selection of the entry, as istiod
// shares its consolidated rules between proxies.
func (e *drEntry) consolidated() *ConsolidatedRule {
	if r := e.rule.Load(); r != nil {
		return r
	}
	r := e.consolidate()
	if !e.rule.CompareAndSwap(nil, r) {
		return e.rule.Load()
	}
	return r
}

func (e *drEntry) consolidate() *ConsolidatedRule {
	r := &ConsolidatedRule{
		Spec:    e.spec,
		Primary: e.primary.ref,
	}
	for _, d := range e.from {
		r.From = append(r.From, d.ref)
	}
	if e.tpFrom != nil {
		ref := e.tpFrom.ref
		r.TrafficPolicyFrom = &ref
	}
	for _, d := range e.subsetFrom {
		r.SubsetFrom = append(r.SubsetFrom, d.ref)
	}
	r.ExportTo = sortedKeys(e.exportTo)
	if e.primary.hasSelector {
		r.WorkloadSelector = e.primary.selector
		if r.WorkloadSelector == nil {
			r.WorkloadSelector = map[string]string{}
		}
	}
	return r
}

// DestinationRule is istiod's DestinationRule selection for the outbound clusters of svc on
// proxy p: the lookup of push_context.go destinationRule over the merged indexes, then the pick
// of SidecarScope.DestinationRule. The Selection explains every DestinationRule for the host
// that does not apply, and what merging dropped from the one that does.
func (ix *Index) DestinationRule(p *Proxy, svc *Service) Selection {
	if svc == nil || p == nil {
		return Selection{}
	}
	list, step := ix.lookup(p.Namespace, svc.Namespace, svc.Hostname)
	sel := Selection{Step: stepName(step)}
	chosen := pick(list, p)
	for _, e := range list {
		c := e.consolidated()
		sel.Candidates = append(sel.Candidates, c)
		if e == chosen {
			sel.Rule = c
		}
	}
	sel.Diagnostics = ix.selectionDiagnostics(p, svc, list, step, chosen)
	return sel
}
