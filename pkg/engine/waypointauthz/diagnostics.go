package waypointauthz

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

func apRef(ap *securityv1.AuthorizationPolicy) provenance.Ref {
	return provenance.Ref{Kind: kindAuthorizationPolicy, Namespace: ap.Namespace, Name: ap.Name}
}

func (e *explanation) gwRef() provenance.Ref {
	return provenance.Ref{Kind: kindGateway, Namespace: e.gw.Namespace, Name: e.gw.Name}
}

func (e *explanation) wpName() string { return "waypoint " + e.gw.Namespace + "/" + e.gw.Name }

// diagnostics are the findings of the answer, in the catalogue's one order, never nil.
func (e *explanation) diagnostics() []explain.Diagnostic {
	ds := []explain.Diagnostic{}
	if !e.wp.deployed {
		ds = append(ds, diag.WaypointNotDeployed.New(fmt.Sprintf("Gateway %s/%s has no status.addresses: istiod does not treat it as a waypoint yet, so nothing binds to it; the answer is as it will be once istiod has programmed it", e.gw.Namespace, e.gw.Name),
			fixOf(diag.WaypointNotDeployed), e.gwRef()))
	}
	if e.unserved != "" {
		state := "is deployed, but istiod binds"
		if !e.wp.deployed {
			state = "is not deployed yet, and once it is istiod will bind"
		}
		ds = append(ds, diag.WaypointServesNothing.New(fmt.Sprintf("Gateway %s/%s %s no service or workload to it: %s; istiod finds what a waypoint serves through the Service that selects the waypoint's pods, so the waypoint gets only its direct chains", e.gw.Namespace, e.gw.Name, state, e.unserved),
			fixOf(diag.WaypointServesNothing), e.gwRef()))
	}
	for _, b := range e.bind {
		if !b.Bound && b.Reason != "" && !b.unserved {
			fix := fixOf(diag.WaypointBindingRefused)
			if b.outranked {
				fix = "give the ServiceEntry hosts no other service of its namespace holds, or bind the service istiod keeps for them (its own istio.io/use-waypoint label)"
			}
			ds = append(ds, diag.WaypointBindingRefused.New(fmt.Sprintf("%s %s/%s names %s (%s) but is not bound: %s", b.Kind, b.Namespace, b.Name, e.wpName(), b.Why, b.Reason),
				fix, b.Ref(), e.gwRef()))
		}
	}
	served := e.servedNamespaces()
	for _, ap := range e.relevantPolicies() {
		refs := targetRefs(ap)
		if len(refs) == 0 {
			if slices.Contains(served, ap.Namespace) && ap.Namespace != e.root {
				scope := "namespace-wide"
				if ap.Spec.GetSelector() != nil {
					scope = "selector"
				}
				ds = append(ds, diag.WaypointSelectorPolicyIgnored.New(fmt.Sprintf("AuthorizationPolicy %s/%s is a %s policy (no targetRefs) in a namespace whose traffic goes through %s: the waypoint ignores it; ztunnel enforces it on the workloads, at L4 only, and sees the waypoint as the client", ap.Namespace, ap.Name, scope, e.wpName()),
					fixOf(diag.WaypointSelectorPolicyIgnored), apRef(ap)))
			}
			continue
		}
		for i, r := range refs {
			ds = append(ds, e.targetRefDiagnostics(ap, i, r)...)
		}
	}
	var tcp tcpRules
	var providers unusableProviders
	for _, b := range append(append([]*build{}, e.builds...), e.direct) {
		tcp.add(e, b)
		providers.add(b)
	}
	ds = append(ds, tcp.diagnostics()...)
	ds = append(ds, providers.diagnostics(e.wpName())...)
	return diag.Sort(ds, diag.SameMessage)
}

// targetRefDiagnostics checks one targetRef of a policy read for the waypoint.
func (e *explanation) targetRefDiagnostics(ap *securityv1.AuthorizationPolicy, i int, r targetRef) []explain.Diagnostic {
	field := targetRefField(ap, i)
	missing := func(what string) []explain.Diagnostic {
		return []explain.Diagnostic{diag.WaypointTargetRefMissing.New(fmt.Sprintf("AuthorizationPolicy %s/%s %s names %s: the policy attaches to nothing through it", ap.Namespace, ap.Name, field, what),
			fixOf(diag.WaypointTargetRefMissing), apRef(ap))}
	}
	switch {
	case r.is("", kindService), r.is(groupNetworking, kindServiceEntry):
		kind := r.kind
		var meta interface{ GetLabels() map[string]string }
		if kind == kindService {
			if s := e.findService(ap.Namespace, r.name); s != nil {
				meta = s
			}
		} else if se := e.findServiceEntry(ap.Namespace, r.name); se != nil {
			meta = se
		}
		if meta == nil {
			return missing(fmt.Sprintf("%s %s, which does not exist in namespace %s", kind, r.name, ap.Namespace))
		}
		for _, b := range e.bind {
			if b.Kind == kind && b.Namespace == ap.Namespace && b.Name == r.name {
				if b.Bound {
					return nil
				}
				return []explain.Diagnostic{diag.WaypointTargetNotBound.New(fmt.Sprintf("AuthorizationPolicy %s/%s %s names %s %s/%s, which names %s but is not bound (%s): the policy is enforced nowhere", ap.Namespace, ap.Name, field, kind, ap.Namespace, r.name, e.wpName(), b.Reason),
					fixOf(diag.WaypointTargetNotBound), apRef(ap), provenance.Ref{Kind: kind, Namespace: ap.Namespace, Name: r.name})}
			}
		}
		// Names another waypoint (its own, or through its namespace): that waypoint's business.
		if _, _, none, ok := useWaypoint(meta.GetLabels(), ap.Namespace); ok && !none {
			return nil
		}
		if ns := e.namespace(ap.Namespace); ns != nil {
			if _, _, none, ok := useWaypoint(ns.Labels, ap.Namespace); ok && !none {
				if _, _, own, set := useWaypoint(meta.GetLabels(), ap.Namespace); !(set && own) {
					return nil
				}
			}
		}
		if ap.Namespace != e.gw.Namespace {
			return nil
		}
		return []explain.Diagnostic{diag.WaypointTargetNotBound.New(fmt.Sprintf("AuthorizationPolicy %s/%s %s names %s %s/%s, which uses no waypoint (no istio.io/use-waypoint label on it or its namespace): no waypoint enforces the policy", ap.Namespace, ap.Name, field, kind, ap.Namespace, r.name),
			fixOf(diag.WaypointTargetNotBound), apRef(ap), provenance.Ref{Kind: kind, Namespace: ap.Namespace, Name: r.name})}
	case r.is(groupGateway, "GatewayClass"):
		if r.name != ClassName {
			return missing(fmt.Sprintf("GatewayClass %s: only the class %s attaches policies to waypoints", r.name, ClassName))
		}
		if ap.Namespace != e.root {
			return []explain.Diagnostic{diag.WaypointGatewayClassOutsideRoot.New(fmt.Sprintf("AuthorizationPolicy %s/%s %s names GatewayClass %s from namespace %s, not the root namespace %s: istiod ignores it", ap.Namespace, ap.Name, field, r.name, ap.Namespace, e.root),
				fixOf(diag.WaypointGatewayClassOutsideRoot), apRef(ap))}
		}
	case r.is(groupGateway, kindGateway):
		if ap.Namespace != e.gw.Namespace {
			return nil
		}
		if r.namespace != "" && r.namespace != ap.Namespace {
			return missing(fmt.Sprintf("Gateway %s in namespace %s: a targetRef never reaches another namespace", r.name, r.namespace))
		}
		for _, g := range e.snap.Gateways {
			if g.Namespace == ap.Namespace && g.Name == r.name {
				return nil
			}
		}
		return missing(fmt.Sprintf("Gateway %s, which does not exist in namespace %s", r.name, ap.Namespace))
	default:
		return missing(fmt.Sprintf("%s %s (group %q), a kind istiod does not attach AuthorizationPolicies to on a waypoint", r.kind, r.name, r.group))
	}
	return nil
}

// tcpRules gathers the rules with HTTP-only fields that lose them on TCP chains, each once
// with every place it loses them (the TCP chains of a service, the direct-tcp chain): one W06
// per rule and effect, however many services the rule's policy attaches to.
type tcpRules struct {
	order []tcpRuleKey
	where map[tcpRuleKey][]string
}

// tcpRuleKey is one rule of a policy and what happens to it on TCP chains.
type tcpRuleKey struct {
	ap      *securityv1.AuthorizationPolicy
	index   int
	action  string
	dropped bool   // the HTTP-only fields are dropped (DENY, AUDIT), not the rule (ALLOW)
	text    string // what is left out or dropped
}

// add notes the rules of b's filters that lose HTTP-only fields on its TCP chains.
func (t *tcpRules) add(e *explanation, b *build) {
	hasTCP := false
	for _, c := range e.chains {
		if c.b == b && !c.http {
			hasTCP = true
		}
	}
	where := directTCP
	if b.svc != nil {
		where = b.svc.host
	} else if !e.workloadsBound() {
		// The direct chains match only the addresses of the workloads bound to the waypoint
		// (buildWaypointInternal): without one, no traffic reaches them.
		hasTCP = false
	}
	if !hasTCP {
		return
	}
	note := func(k tcpRuleKey) {
		if t.where == nil {
			t.where = map[tcpRuleKey][]string{}
		}
		if _, ok := t.where[k]; !ok {
			t.order = append(t.order, k)
		}
		t.where[k] = append(t.where[k], where)
	}
	for _, r := range b.rbac.Rules {
		if r.TCP.Skipped != "" && r.TCP.SkippedField != "" {
			note(tcpRuleKey{ap: r.Policy, index: r.Index, action: r.Action, text: r.TCP.Skipped})
		}
		if len(r.TCP.Dropped) > 0 {
			var fs []string
			for _, d := range r.TCP.Dropped {
				fs = append(fs, d.Field)
			}
			note(tcpRuleKey{ap: r.Policy, index: r.Index, action: r.Action, dropped: true, text: strings.Join(fs, ", ")})
		}
	}
}

// diagnostics are the W06 findings, one per rule and effect, naming every place.
func (t *tcpRules) diagnostics() []explain.Diagnostic {
	var ds []explain.Diagnostic
	for _, k := range t.order {
		where := tcpChains(t.where[k])
		var msg string
		if k.dropped {
			msg = fmt.Sprintf("AuthorizationPolicy %s/%s rule %d (%s) matches more on %s than written: %s are HTTP-only and dropped there", k.ap.Namespace, k.ap.Name, k.index, k.action, where, k.text)
		} else {
			msg = fmt.Sprintf("AuthorizationPolicy %s/%s rule %d (%s) is left out of %s: %s; an ALLOW rule that is left out allows nothing there", k.ap.Namespace, k.ap.Name, k.index, k.action, where, k.text)
		}
		ds = append(ds, diag.WaypointHTTPFieldsOnTCP.New(msg, fixOf(diag.WaypointHTTPFieldsOnTCP), apRef(k.ap)))
	}
	return ds
}

// tcpChains names TCP chains in text: "the TCP chains of A, B and C", then ", and the
// direct-tcp chain" when it is one of them.
func tcpChains(where []string) string {
	var hosts []string
	direct := false
	for _, w := range where {
		if w == directTCP {
			direct = true
		} else {
			hosts = append(hosts, w)
		}
	}
	switch {
	case len(hosts) == 0:
		return directTCP
	case direct:
		return "the TCP chains of " + andList(hosts) + ", and " + directTCP
	}
	return "the TCP chains of " + andList(hosts)
}

// directTCP names the direct-tcp chain in text.
const directTCP = "the direct-tcp chain"

// andList joins items as English does: "A", "A and B", "A, B and C".
func andList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// unusableProviders gathers the CUSTOM providers a waypoint's filters cannot use, each once
// with every build whose filters name it and the policies that do: one W07 per provider and
// reason, however many services its policies attach to.
type unusableProviders struct {
	order []providerWhy
	by    map[providerWhy]*unusableProvider
}

type providerWhy struct{ provider, why string }

type unusableProvider struct {
	builds []string
	refs   []provenance.Ref
}

// add notes the providers b's filters cannot use.
func (u *unusableProviders) add(b *build) {
	for _, p := range slices.Sorted(maps.Keys(b.rbac.Providers)) {
		why := b.rbac.Providers[p]
		if why == "" {
			continue
		}
		k := providerWhy{provider: p, why: why}
		if u.by == nil {
			u.by = map[providerWhy]*unusableProvider{}
		}
		up := u.by[k]
		if up == nil {
			up = &unusableProvider{}
			u.by[k] = up
			u.order = append(u.order, k)
		}
		up.builds = append(up.builds, b.label())
		for _, ap := range b.policies {
			if r := apRef(ap); ap.Spec.GetProvider().GetName() == p && !slices.Contains(up.refs, r) {
				up.refs = append(up.refs, r)
			}
		}
	}
}

// diagnostics are the W07 findings, one per provider and reason, naming every build.
func (u *unusableProviders) diagnostics(wpName string) []explain.Diagnostic {
	var ds []explain.Diagnostic
	for _, k := range u.order {
		up := u.by[k]
		ds = append(ds, diag.WaypointCustomProviderUnusable.New(fmt.Sprintf("CUSTOM provider %q cannot be used by %s for %s: %s; the chains deny what the CUSTOM policies match", k.provider, wpName, andList(up.builds), k.why),
			fixOf(diag.WaypointCustomProviderUnusable), up.refs...))
	}
	return ds
}

// workloadsBound reports whether a pod or WorkloadEntry is bound to the waypoint: only then
// does traffic reach its direct chains.
func (e *explanation) workloadsBound() bool {
	for _, b := range e.bind {
		if b.Bound && (b.Kind == kindPod || b.Kind == kindWorkloadEntry) {
			return true
		}
	}
	return false
}

// fixOf is the catalogue's fix of id.
func fixOf(id diag.ID) string {
	e, _ := id.Entry()
	return e.Fix
}
