package waypointauthz

import (
	"slices"
	"strings"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
)

// waypointSection says which Gateway answered, whether istiod treats it as a waypoint yet, and
// what decides who may bind to it.
func (e *explanation) waypointSection() explain.Section {
	addrs := "none: not yet deployed (answer as it will be once istiod has programmed it)"
	if e.wp.deployed {
		var vs []string
		for _, a := range e.gw.Status.Addresses {
			vs = append(vs, a.Value)
		}
		addrs = strings.Join(vs, ", ") + " (answer as istiod programs it now)"
	}
	from := string(e.wp.from)
	if e.wp.sel != nil {
		from += " " + e.wp.sel.String()
	}
	return explain.Section{Title: DataPlaneSection, Columns: []string{"FIELD", "VALUE", "FROM"}, Rows: [][]string{
		{"gateway", e.gw.Namespace + "/" + e.gw.Name, "Gateway"},
		{"class", string(e.gw.Spec.GatewayClassName), "spec.gatewayClassName"},
		{"addresses", addrs, "status.addresses"},
		{"traffic type", e.wp.traffic, e.wp.trafficWhy},
		{"namespaces allowed to bind", from, e.wp.fromWhy},
		{"peer identity", "the client identity ztunnel passes in filter state (not a certificate of the connection)", "istiod: a waypoint's RBAC matches peers in filter state (authz.NewBuilder, useFilterState)"},
	}}
}

// bindingSection lists what names the waypoint and whether it is bound.
func (e *explanation) bindingSection() explain.Section {
	s := explain.Section{Title: "Binding", Columns: []string{"OBJECT", "BOUND", "WHY"}}
	for _, b := range e.bind {
		bound := "yes"
		why := b.Why
		if !b.Bound {
			bound = "no"
		}
		if b.Reason != "" {
			why += ": " + b.Reason
		}
		s.Rows = append(s.Rows, []string{b.Kind + " " + b.Namespace + "/" + b.Name, bound, why})
	}
	if len(s.Rows) == 0 {
		s.Rows = append(s.Rows, []string{"-", "-", "no Service, ServiceEntry or workload names this waypoint (istio.io/use-waypoint on it or its namespace): only the direct chains"})
	}
	return s
}

// policySection lists the attached policies, which targetRef attached them and to which chains.
func (e *explanation) policySection() explain.Section {
	s := explain.Section{Title: "Policies", Columns: []string{"POLICY", "ACTION", "ATTACHED BY", "CHAINS OF"}}
	type row struct {
		ap    *securityv1.AuthorizationPolicy
		via   string
		where []string
	}
	var rows []*row
	find := func(ap *securityv1.AuthorizationPolicy, via string) *row {
		for _, r := range rows {
			if r.ap == ap && r.via == via {
				return r
			}
		}
		r := &row{ap: ap, via: via}
		rows = append(rows, r)
		return r
	}
	for _, b := range append(append([]*build{}, e.builds...), e.direct) {
		for _, ap := range b.policies {
			r := find(ap, targetRefText(ap, b.via[ap]))
			r.where = append(r.where, b.name())
		}
	}
	for _, r := range rows {
		action := r.ap.Spec.GetAction().String()
		if p := r.ap.Spec.GetProvider().GetName(); p != "" {
			action += " " + p
		}
		s.Rows = append(s.Rows, []string{r.ap.Namespace + "/" + r.ap.Name, action, r.via, strings.Join(r.where, ", ")})
	}
	if len(s.Rows) == 0 {
		s.Rows = append(s.Rows, []string{"-", "-", "-", "no policy targets this waypoint, its class or a service it serves: every chain lets everything through"})
	}
	return s
}

// ignoredSection lists the policies of the namespaces the waypoint serves that it does not
// apply, and why.
func (e *explanation) ignoredSection() *explain.Section {
	s := explain.Section{Title: "Not applied", Columns: []string{"POLICY", "WHY"}}
	for _, ap := range e.relevantPolicies() {
		if e.attachedAnywhere(ap) {
			continue
		}
		why := ""
		if len(targetRefs(ap)) == 0 {
			why = "no targetRefs: a waypoint applies only policies attached by targetRefs (ztunnel enforces this one on the workloads it selects)"
		} else {
			why = "its targetRefs name neither this waypoint, its class (from the root namespace), nor a service it serves"
		}
		s.Rows = append(s.Rows, []string{ap.Namespace + "/" + ap.Name, why})
	}
	if len(s.Rows) == 0 {
		return nil
	}
	return &s
}

// servedNamespaces are the waypoint's namespace and those of the services it serves.
func (e *explanation) servedNamespaces() []string {
	out := []string{e.gw.Namespace}
	for _, s := range e.svcs {
		if !slices.Contains(out, s.ns) {
			out = append(out, s.ns)
		}
	}
	return out
}

// relevantPolicies are the policies of the root namespace and the served namespaces, by
// namespace then istiod's order.
func (e *explanation) relevantPolicies() []*securityv1.AuthorizationPolicy {
	nss := append([]string{e.root}, e.servedNamespaces()...)
	var out []*securityv1.AuthorizationPolicy
	seen := map[string]bool{}
	for _, ns := range nss {
		if seen[ns] {
			continue
		}
		seen[ns] = true
		out = append(out, e.sortedPolicies(ns)...)
	}
	return out
}

func (e *explanation) attachedAnywhere(ap *securityv1.AuthorizationPolicy) bool {
	for _, b := range append(append([]*build{}, e.builds...), e.direct) {
		if slices.Contains(b.policies, ap) {
			return true
		}
	}
	return false
}
