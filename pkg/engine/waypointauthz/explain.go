package waypointauthz

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/proto"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/envoyrbac"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// Object kinds and section titles of a waypoint explanation.
const (
	// ChainKind is the kind of a filter chain object (its Message is what -o envoy prints).
	ChainKind = "envoy.config.listener.v3.FilterChain"
	// DataPlaneSection is the title of the section that says which waypoint answered.
	DataPlaneSection = "Waypoint"
	// NotDeployedAssumption is the assumption of an answer for a Gateway without addresses.
	NotDeployedAssumption = "the Gateway has no status.addresses (a waypoint not yet deployed, or read from files): the answer is as it will be once istiod has programmed the waypoint"
)

// Query names the waypoint: a Gateway in Namespace.
type Query struct {
	Namespace, Name string
	// Protos asks for the generated protos: the Message of every chain and filter object, what
	// -o envoy and the document (-o json, -o yaml) print. Without it those objects carry their
	// summary and origins only (what the table prints), and the filters are not packed
	// (envoyrbac.Filter.Envoy).
	Protos bool
}

// explanation is the state of one waypoint's explanation.
type explanation struct {
	snap *model.Snapshot
	gw   *gatewayv1.Gateway
	wp   *waypoint
	root string
	bind []Binding
	// unserved says why istiod binds nothing to the waypoint, or will not once it has
	// programmed it (unservedReason).
	unserved string
	svcs     []*service
	// direct is the build of the direct chains (policies attached to the Gateway or class).
	direct *build
	builds []*build // one per bound service, in svcs order
	chains []*chain
	res    *explain.Result
	// namespaces, services and serviceEntries index the snapshot's objects by name (and
	// namespace), built on first use.
	namespaces     map[string]*corev1.Namespace
	services       map[types.NamespacedName]*corev1.Service
	serviceEntries map[types.NamespacedName]*networkingv1.ServiceEntry
	// policies are the AuthorizationPolicies by namespace, in istiod's order (sortedPolicies).
	policies map[string][]*securityv1.AuthorizationPolicy
	// rbacCache is shared by the builds: each rule attached to several is translated once.
	rbacCache *envoyrbac.Cache
	// results are the filters built, by the policies and targetRefs that attached them
	// (buildKey).
	results map[string]*envoyrbac.Result
	// origins are the located fields of the policies (policyOrigin).
	origins map[policyField]provenance.Origin
	// notes are the origins' notes of the targetRef that attached a policy (attachedBy).
	notes map[policyVia]string
}

// build is the policies attached for one service (nil: the direct chains) and their filters.
type build struct {
	svc      *service
	policies []*securityv1.AuthorizationPolicy
	// via is the targetRef index of each policy that attached it.
	via  map[*securityv1.AuthorizationPolicy]int
	rbac *envoyrbac.Result
}

// chain is one filter chain of main_internal.
type chain struct {
	name string
	http bool
	svc  *service
	port *port
	b    *build
}

// Find returns the Gateway q names, a NotFoundError when there is none, or an
// InvalidQueryError for a Gateway of another class.
func Find(snap *model.Snapshot, q Query) (*gatewayv1.Gateway, error) {
	var names []string
	for _, g := range snap.Gateways {
		if g.Namespace != q.Namespace {
			continue
		}
		if g.Name == q.Name {
			if string(g.Spec.GatewayClassName) != ClassName {
				return nil, &explain.InvalidQueryError{Message: fmt.Sprintf("Gateway %s/%s is of class %q, not a waypoint (class %s)", g.Namespace, g.Name, g.Spec.GatewayClassName, ClassName)}
			}
			return g, nil
		}
		if string(g.Spec.GatewayClassName) == ClassName {
			names = append(names, "waypoint/"+g.Name)
		}
	}
	hint := ""
	if len(names) > 0 {
		hint = "waypoints in the namespace: " + strings.Join(names, ", ")
	} else if why, ok := snap.Incomplete["Gateway"]; ok {
		hint = "Gateways could not be read: " + why
	} else if why, ok := snap.Absent["Gateway"]; ok {
		hint = why + ": no Gateway, so no waypoint, can exist"
	}
	return nil, &explain.NotFoundError{What: fmt.Sprintf("waypoint %s (a Gateway of class %s) in namespace %s", q.Name, ClassName, q.Namespace), Hint: hint}
}

// Explain answers for one waypoint: what it serves and why, the main_internal filter chains
// with their authorization filters in istiod's order, with origins and diagnostics.
func Explain(snap *model.Snapshot, q Query) (*explain.Result, error) {
	gw, err := Find(snap, q)
	if err != nil {
		return nil, err
	}
	e := newExplanation(snap, gw)
	e.res.Sections = append(e.res.Sections, e.waypointSection(), e.bindingSection(), e.policySection())
	if s := e.ignoredSection(); s != nil {
		e.res.Sections = append(e.res.Sections, *s)
	}
	e.addObjects(q.Protos)
	e.res.Diagnostics = e.diagnostics()
	for _, kind := range []string{"Gateway", "AuthorizationPolicy", "Service", "ServiceEntry", "Namespace"} {
		if why, ok := snap.Incomplete[kind]; ok {
			e.res.Warnings = append(e.res.Warnings, fmt.Sprintf("%s objects could not be read (%s): the answer may be incomplete", kind, why))
			e.res.Incomplete = append(e.res.Incomplete, kind)
		}
	}
	return e.res, nil
}

// Diagnostics are the diagnostics of Explain, without the sections and objects.
func Diagnostics(snap *model.Snapshot, gw *gatewayv1.Gateway) []explain.Diagnostic {
	return newExplanation(snap, gw).diagnostics()
}

func newExplanation(snap *model.Snapshot, gw *gatewayv1.Gateway) *explanation {
	ref := provenance.Ref{Kind: kindGateway, Namespace: gw.Namespace, Name: gw.Name}
	e := &explanation{snap: snap, gw: gw, wp: newWaypoint(gw), root: snap.RootNamespace(), res: &explain.Result{
		APIVersion: explain.APIVersion,
		Kind:       explain.KindAuthzExplanation,
		Subject:    explain.Subject{Kind: "Waypoint", Namespace: gw.Namespace, Workload: "waypoint/" + gw.Name, Resource: &ref},
	}}
	if !e.wp.deployed {
		e.res.Assumptions = append(e.res.Assumptions, NotDeployedAssumption)
	}
	e.rbacCache = envoyrbac.NewCache()
	e.unserved = e.unservedReason()
	e.bind = e.bindings()
	e.svcs = e.boundServices(e.bind)
	for _, s := range e.svcs {
		b := e.newBuild(s)
		e.builds = append(e.builds, b)
		for i := range s.ports {
			p := &s.ports[i]
			for _, k := range chainKinds(p.proto) {
				e.chains = append(e.chains, &chain{name: "inbound-vip|" + strconv.Itoa(int(p.number)) + "|" + k + "|" + s.host, http: k == "http", svc: s, port: p, b: b})
			}
		}
	}
	e.direct = e.newBuild(nil)
	e.chains = append(e.chains, &chain{name: "direct-tcp", b: e.direct}, &chain{name: "direct-http", http: true, b: e.direct})
	return e
}

// sortedPolicies are the AuthorizationPolicies of ns in istiod's order (creation time, name),
// grouped by namespace on first use. The slice is shared: callers do not change it.
func (e *explanation) sortedPolicies(ns string) []*securityv1.AuthorizationPolicy {
	if e.policies == nil {
		e.policies = map[string][]*securityv1.AuthorizationPolicy{}
		for _, ap := range e.snap.AuthorizationPolicies {
			e.policies[ap.Namespace] = append(e.policies[ap.Namespace], ap)
		}
		for _, ps := range e.policies {
			sortPolicies(ps)
		}
	}
	return e.policies[ns]
}

// sortPolicies sorts ps in istiod's order (creation time, then name), keeping the order of
// equal ones.
func sortPolicies(ps []*securityv1.AuthorizationPolicy) {
	slices.SortStableFunc(ps, func(a, b *securityv1.AuthorizationPolicy) int {
		if c := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// newBuild is authz.NewBuilderForService with the waypoint option for svc (nil: the
// waypoint's own policies): ListAuthorizationPolicies over the root namespace, the waypoint's
// namespace and the service's, each policy kept when ShouldAttachPolicy says so.
func (e *explanation) newBuild(svc *service) *build {
	b := &build{svc: svc, via: map[*securityv1.AuthorizationPolicy]int{}}
	nss := []string{e.root, e.gw.Namespace}
	if svc != nil {
		nss = append(nss, svc.ns)
	}
	seen := map[string]bool{}
	for _, ns := range nss {
		if seen[ns] {
			continue
		}
		seen[ns] = true
		for _, ap := range e.sortedPolicies(ns) {
			if i, ok := e.attaches(ap, svc); ok {
				b.policies = append(b.policies, ap)
				b.via[ap] = i
			}
		}
	}
	// A build depends only on its policies and on the targetRef that attached each (the
	// origins' notes name it): services with the same, such as those with no policy of their
	// own, share one.
	key := buildKey(b)
	if r, ok := e.results[key]; ok {
		b.rbac = r
		return b
	}
	b.rbac = envoyrbac.Build(envoyrbac.Input{
		Policies:           b.policies,
		TrustDomain:        e.snap.MeshConfig.GetTrustDomain(),
		TrustDomainAliases: e.snap.MeshConfig.GetTrustDomainAliases(),
		ExtensionProviders: e.snap.MeshConfig.GetExtensionProviders(),
		LookupCluster:      func(s string, p int) (string, string, error) { return index.LookupCluster(e.snap, s, p) },
		UseFilterState:     true,
		Cache:              e.rbacCache,
		Origin: func(ap *securityv1.AuthorizationPolicy, field, note string) provenance.Origin {
			o := e.policyOrigin(ap, field)
			o.Note = strings.TrimPrefix(note+"; ", "; ") + e.attachedBy(ap, b.via[ap])
			return o
		},
		MeshOrigin: e.meshOrigin,
	})
	if e.results == nil {
		e.results = map[string]*envoyrbac.Result{}
	}
	e.results[key] = b.rbac
	return b
}

// buildKey names the inputs of b's filters: each policy, in order, with the index of the
// targetRef that attached it.
func buildKey(b *build) string {
	var k strings.Builder
	for _, ap := range b.policies {
		k.WriteString(ap.Namespace + "/" + ap.Name + "#" + strconv.Itoa(b.via[ap]) + "\x00")
	}
	return k.String()
}

// policyOrigin is the origin of a field of ap, located once per answer (every build that
// attaches ap traces the same fields). The caller may change the copy it gets.
func (e *explanation) policyOrigin(ap *securityv1.AuthorizationPolicy, field string) provenance.Origin {
	k := policyField{ap: ap, field: field}
	o, ok := e.origins[k]
	if !ok {
		o = e.snap.Origin(provenance.LayerAuthorizationPolicy, model.ObjectKey{Kind: kindAuthorizationPolicy, Namespace: ap.Namespace, Name: ap.Name}, field)
		if e.origins == nil {
			e.origins = map[policyField]provenance.Origin{}
		}
		e.origins[k] = o
	}
	if o.Resource != nil {
		r := *o.Resource
		o.Resource = &r
	}
	if o.Position != nil {
		p := *o.Position
		o.Position = &p
	}
	return o
}

// attachedBy is the note of the origins of ap attached by its targetRef i, spelled once per
// answer (every trace of ap in every build that attaches it has it).
func (e *explanation) attachedBy(ap *securityv1.AuthorizationPolicy, i int) string {
	k := policyVia{ap: ap, via: i}
	s, ok := e.notes[k]
	if !ok {
		s = "attached by " + targetRefText(ap, i)
		if e.notes == nil {
			e.notes = map[policyVia]string{}
		}
		e.notes[k] = s
	}
	return s
}

type policyVia struct {
	ap  *securityv1.AuthorizationPolicy
	via int
}

type policyField struct {
	ap    *securityv1.AuthorizationPolicy
	field string
}

// targetRefs is GetTargetRefs: targetRefs, or the deprecated targetRef.
func targetRefs(ap *securityv1.AuthorizationPolicy) []targetRef {
	var out []targetRef
	for _, r := range ap.Spec.GetTargetRefs() {
		out = append(out, targetRef{group: r.GetGroup(), kind: r.GetKind(), name: r.GetName(), namespace: r.GetNamespace()})
	}
	if len(out) == 0 {
		if r := ap.Spec.GetTargetRef(); r != nil { //nolint:staticcheck // read as istiod reads it
			out = append(out, targetRef{group: r.GetGroup(), kind: r.GetKind(), name: r.GetName(), namespace: r.GetNamespace(), legacy: true})
		}
	}
	return out
}

type targetRef struct {
	group, kind, name, namespace string
	legacy                       bool
}

func (r targetRef) is(group, kind string) bool {
	g := r.group
	if g == "core" {
		g = ""
	}
	return g == group && r.kind == kind
}

func targetRefField(ap *securityv1.AuthorizationPolicy, i int) string {
	if len(ap.Spec.GetTargetRefs()) == 0 {
		return "spec.targetRef"
	}
	return fmt.Sprintf("spec.targetRefs[%d]", i)
}

func targetRefText(ap *securityv1.AuthorizationPolicy, i int) string {
	refs := targetRefs(ap)
	if i < 0 || i >= len(refs) {
		return "?"
	}
	return fmt.Sprintf("%s (%s %s)", targetRefField(ap, i), refs[i].kind, refs[i].name)
}

// attaches is ShouldAttachPolicy for the waypoint (IsWaypoint) and svc: the index of the
// targetRef that attaches ap. A policy without targetRefs never attaches to a waypoint.
func (e *explanation) attaches(ap *securityv1.AuthorizationPolicy, svc *service) (int, bool) {
	for i, r := range targetRefs(ap) {
		if svc != nil && svc.kind == kindService && r.is("", kindService) && r.name == svc.name && ap.Namespace == svc.ns {
			return i, true
		}
		if svc != nil && svc.kind == kindServiceEntry && r.is(groupNetworking, kindServiceEntry) && r.name == svc.name && ap.Namespace == svc.ns {
			return i, true
		}
		if ap.Namespace == e.root && r.is(groupGateway, "GatewayClass") && r.name == ClassName {
			return i, true
		}
		if ap.Namespace != e.gw.Namespace || (r.namespace != "" && r.namespace != e.gw.Namespace) {
			continue
		}
		if r.is(groupGateway, kindGateway) && r.name == e.gw.Name {
			return i, true
		}
	}
	return -1, false
}

// meshOrigin is the origin of a MeshConfig field; one the user did not set is an Istio default.
func (e *explanation) meshOrigin(field, note string) provenance.Origin {
	o, set := e.snap.MeshConfigOrigin(field, note)
	if !set {
		o.Layer = provenance.LayerIstioDefault
	}
	return o
}

// filtersOf are the authorization filters of a chain, in order: CUSTOM (shadow RBAC and
// ext_authz) then AUDIT, DENY, ALLOW.
func (c *chain) filters() []envoyrbac.Filter {
	if c.http {
		return append(append([]envoyrbac.Filter{}, c.b.rbac.HTTPCustom...), c.b.rbac.HTTPLocal...)
	}
	return append(append([]envoyrbac.Filter{}, c.b.rbac.TCPCustom...), c.b.rbac.TCPLocal...)
}

// name names a build in object names: the service host, or "direct" for the direct chains.
func (b *build) name() string {
	if b.svc == nil {
		return "direct"
	}
	return b.svc.host
}

// label names a build in text: the service host, or the direct chains.
func (b *build) label() string {
	if b.svc == nil {
		return "the direct chains"
	}
	return b.svc.host
}

// addObjects adds one object per chain (what -o envoy prints, in istiod's order) and one per
// distinct authorization filter, with the origin of every permission and principal. Builds with
// the same inputs share their filters (newBuild): such a filter is one object, named after the
// first build that has it (the bound services in order, then the direct chains), whose "also
// for" lists the others; the chains of every build that has it name that object.
func (e *explanation) addObjects(protos bool) {
	// at is each filter's object in filterObjs, by its config; also, by object, the other
	// builds that have it; packed, by object, the filter istiod sends (with protos).
	at := map[proto.Message]int{}
	var packed []*listenerv3.Filter
	// same is each packed filter by its content: filters of builds whose policies differ only
	// in what attached them are often the same filter, and objects that share a message have
	// it marshalled once by the printers (more than half of a waypoint's at 10,000 Services).
	same := map[string]*listenerv3.Filter{}
	var also [][]string
	var filterObjs []explain.Object
	for _, b := range append(append([]*build{}, e.builds...), e.direct) {
		for _, group := range []struct {
			http bool
			fs   []envoyrbac.Filter
		}{{true, append(append([]envoyrbac.Filter{}, b.rbac.HTTPCustom...), b.rbac.HTTPLocal...)}, {false, append(append([]envoyrbac.Filter{}, b.rbac.TCPCustom...), b.rbac.TCPLocal...)}} {
			for i, f := range group.fs {
				if k, ok := at[f.Config]; ok {
					also[k] = append(also[k], b.label())
					continue
				}
				kind := "tcp"
				if group.http {
					kind = "http"
				}
				name := fmt.Sprintf("%s %s %d: %s (%s", b.name(), kind, i+1, f.Name, f.Action)
				if f.Provider != "" {
					name += " " + f.Provider
				}
				name += ")"
				o := explain.Object{Kind: string(f.Config.ProtoReflect().Descriptor().FullName()), Name: name, Origins: f.Traces,
					Summary: []explain.Summary{{Name: "filter", Value: f.Name}, {Name: "action", Value: f.Action}}}
				if f.Provider != "" {
					o.Summary = append(o.Summary, explain.Summary{Name: "provider", Value: f.Provider})
				}
				if f.Broken != "" {
					o.Summary = append(o.Summary, explain.Summary{Name: "fails closed", Value: f.Broken})
				}
				// The document outputs print the filter from Message (-o json, -o yaml); -o
				// envoy prints it inside its chains, which share it.
				if protos {
					p := f.Envoy()
					k := p.Name + "\x00" + p.GetTypedConfig().GetTypeUrl() + "\x00" + string(p.GetTypedConfig().GetValue())
					if q, ok := same[k]; ok {
						p = q
					} else {
						same[k] = p
					}
					o.Message = p
					packed = append(packed, p)
				}
				if o.Origins == nil {
					o.Origins = []provenance.FieldTrace{}
				}
				at[f.Config] = len(filterObjs)
				filterObjs = append(filterObjs, o)
				also = append(also, nil)
			}
		}
	}
	for k, l := range also {
		if len(l) > 0 {
			filterObjs[k].Summary = append(filterObjs[k].Summary, explain.Summary{Name: "also for", Value: strings.Join(l, ", ")})
		}
	}
	for _, c := range e.chains {
		o := explain.Object{Kind: ChainKind, Name: c.name}
		var fc *listenerv3.FilterChain
		if protos {
			fc = &listenerv3.FilterChain{Name: c.name}
			o.Message = fc
		}
		o.Origins = []provenance.FieldTrace{}
		if c.svc != nil {
			chainKind := "TCP"
			if c.http {
				chainKind = "HTTP"
			}
			o.Summary = append(o.Summary, explain.Summary{Name: "service", Value: c.svc.kind + " " + c.svc.ns + "/" + c.svc.name},
				explain.Summary{Name: "port", Value: fmt.Sprintf("%d (%s; %s chain)", c.port.number, c.port.proto, chainKind)})
			org := e.snap.Origin(provenance.LayerRegistry, c.svc.key(), c.port.field)
			org.Note = "a port of a service bound to the waypoint"
			o.Origins = append(o.Origins, provenance.FieldTrace{Path: "name", Value: c.name, Origin: org})
		} else {
			o.Summary = append(o.Summary, explain.Summary{Name: "traffic", Value: "addressed to a workload directly (not through a service VIP)"})
			o.Origins = append(o.Origins, provenance.FieldTrace{Path: "name", Value: c.name,
				Origin: provenance.Origin{Layer: provenance.LayerIstioDefault, Note: "the waypoint's direct chains; policies attached to the Gateway or its class apply"}})
		}
		fs := c.filters()
		for i, f := range fs {
			k := at[f.Config]
			if fc != nil {
				fc.Filters = append(fc.Filters, packed[k])
			}
			o.Origins = append(o.Origins, provenance.FieldTrace{Path: fmt.Sprintf("filters[%d]", i), Value: f.Name + " (" + f.Action + ")",
				Origin: provenance.Origin{Layer: provenance.LayerAuthorizationPolicy, Note: "every permission and principal: object " + filterObjs[k].Name}})
		}
		if len(fs) == 0 {
			o.Summary = append(o.Summary, explain.Summary{Name: "authorization", Value: "none: no policy is attached"})
		}
		e.res.Objects = append(e.res.Objects, o)
	}
	e.res.Objects = append(e.res.Objects, filterObjs...)
}
