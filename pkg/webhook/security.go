package webhook

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	security "istio.io/api/security/v1beta1"
)

// valueLeftOut is what istiod does with a port or an address it cannot parse. For ztunnel,
// stringToPort and stringToIP (pilot/pkg/serviceregistry/ambient/authorization.go) skip the
// value. For a sidecar, the RBAC builder fails on it, and rule.checkError
// (pilot/pkg/security/authz/model/model.go) drops the whole rule of an ALLOW policy and only the
// value of any other.
func valueLeftOut(action security.AuthorizationPolicy_Action) string {
	if action == security.AuthorizationPolicy_ALLOW {
		return "istiod still pushes the policy: ztunnel gets the rule without the value, a sidecar none of the rule (istiod drops an ALLOW rule it cannot build, so it allows less); the rule's other diagnostics say what is left of it"
	}
	return "istiod still pushes the policy and leaves the value out of the rule, for a sidecar's RBAC filter and for ztunnel alike, so the rule matches more; the rule's other diagnostics say what is left of it"
}

// AuthorizationPolicy returns what ValidateAuthorizationPolicy rejects among the values the
// authorization engines read, after the metadata checks (istio.io/dry-run). Istio prefixes every error with "invalid policy NAME.NAMESPACE:".
func AuthorizationPolicy(m Meta, spec *security.AuthorizationPolicy) []Problem {
	if ps := checkMetadata(m, true, spec.GetAction().String()); ps != nil {
		return ps
	}
	var l list
	l.policyTargets(spec.GetSelector().GetMatchLabels(), spec.GetSelector() != nil, spec.GetTargetRef(), spec.GetTargetRefs())
	switch spec.GetAction() {
	case security.AuthorizationPolicy_CUSTOM:
		if spec.Rules == nil {
			l.add("spec.rules", "CUSTOM action without `rules` is meaningless as it will never be triggered, add an empty rule `{}` if you want it be triggered for every request",
				"istiod keeps the policy; without rules it never fires")
		} else if spec.GetProvider().GetName() == "" {
			// builder.go getExtAuthz fails, and the builder writes deny rules in place of the
			// ext_authz filter (getBadCustomDenyRules).
			field := "spec.provider.name"
			if spec.GetProvider() == nil {
				field = "spec.provider"
			}
			l.add(field, "`provider.name` must not be empty",
				"a sidecar gets an RBAC filter that denies what the rules match in place of the external authorizer; ztunnel does not enforce CUSTOM")
		}
		for i, r := range spec.GetRules() {
			for j, f := range r.GetFrom() {
				s := f.GetSource()
				if s == nil {
					continue
				}
				at := fmt.Sprintf("spec.rules[%d].from[%d].source.", i, j)
				for _, c := range []struct {
					field, name string
					n           int
				}{
					{"namespaces", "From.Namespaces", len(s.Namespaces)}, {"notNamespaces", "From.NotNamespaces", len(s.NotNamespaces)},
					{"serviceAccounts", "From.ServiceAccounts", len(s.ServiceAccounts)}, {"notServiceAccounts", "From.NotServiceAccounts", len(s.NotServiceAccounts)},
					{"trustDomains", "From.TrustDomains", len(s.TrustDomains)}, {"notTrustDomains", "From.NotTrustDomains", len(s.NotTrustDomains)},
					{"principals", "From.Principals", len(s.Principals)}, {"notPrincipals", "From.NotPrincipals", len(s.NotPrincipals)},
					{"requestPrincipals", "From.RequestPrincipals", len(s.RequestPrincipals)}, {"notRequestPrincipals", "From.NotRequestPrincipals", len(s.NotRequestPrincipals)},
				} {
					if c.n != 0 {
						l.add(at+c.field, c.name+" is currently not supported with CUSTOM action", asWrittenAuthz)
					}
				}
			}
			for j, w := range r.GetWhen() {
				if w == nil {
					l.add(fmt.Sprintf("spec.rules[%d].when[%d]", i, j), "when field cannot be nil", asWrittenAuthz)
					continue
				}
				if w.Key == "source.namespace" || w.Key == "source.serviceAccount" || w.Key == "source.trustDomain" || w.Key == "source.principal" || strings.HasPrefix(w.Key, "request.auth.") {
					l.add(fmt.Sprintf("spec.rules[%d].when[%d].key", i, j), w.Key+" is currently not supported with CUSTOM action", asWrittenAuthz)
				}
			}
		}
	case security.AuthorizationPolicy_DENY:
		if spec.Rules == nil {
			l.add("spec.rules", "DENY action without `rules` is meaningless as it will never be triggered, add an empty rule `{}` if you want it be triggered for every request",
				"istiod keeps the policy; without rules it never fires")
		}
	}
	if spec.GetProvider() != nil && spec.GetAction() != security.AuthorizationPolicy_CUSTOM {
		l.add("spec.provider", fmt.Sprintf("`provider` must not be with non CUSTOM action, found %s", spec.GetAction()), "istiod ignores the provider of a policy whose action is not CUSTOM")
	}
	for i, r := range spec.GetRules() {
		at := fmt.Sprintf("spec.rules[%d]", i)
		if r == nil {
			l.add(at, fmt.Sprintf("`rule` must not be nil, found at rule %d", i), "istiod treats the null rule as an empty rule, which matches everything")
			continue
		}
		if r.From != nil && len(r.From) == 0 {
			l.add(at+".from", fmt.Sprintf("`from` must not be empty, found at rule %d", i), asWrittenAuthz)
		}
		for j, f := range r.GetFrom() {
			fa := fmt.Sprintf("%s.from[%d]", at, j)
			if f == nil {
				l.add(fa, fmt.Sprintf("`from` must not be nil, found at rule %d", i), asWrittenAuthz)
				continue
			}
			s := f.GetSource()
			if s == nil {
				l.add(fa+".source", fmt.Sprintf("`from.source` must not be nil, found at rule %d", i), asWrittenAuthz)
				continue
			}
			fa += ".source."
			if len(s.Principals)+len(s.NotPrincipals)+len(s.Namespaces)+len(s.NotNamespaces) > 0 && len(s.ServiceAccounts)+len(s.NotServiceAccounts) > 0 {
				l.add(fa+"serviceAccounts", fmt.Sprintf("cannot set serviceAccounts with namespaces or principals, found at rule %d", i), asWrittenAuthz)
			}
			if len(s.Principals)+len(s.RequestPrincipals)+len(s.Namespaces)+len(s.IpBlocks)+len(s.RemoteIpBlocks)+len(s.NotPrincipals)+
				len(s.NotRequestPrincipals)+len(s.NotNamespaces)+len(s.NotIpBlocks)+len(s.NotRemoteIpBlocks)+len(s.ServiceAccounts)+
				len(s.NotServiceAccounts)+len(s.TrustDomains)+len(s.NotTrustDomains) == 0 {
				l.add(strings.TrimSuffix(fa, "."), fmt.Sprintf("`from.source` must not be empty, found at rule %d", i), asWrittenAuthz)
			}
			l.ips(fa+"ipBlocks", s.IpBlocks, spec.GetAction())
			l.ips(fa+"notIpBlocks", s.NotIpBlocks, spec.GetAction())
			l.ips(fa+"remoteIpBlocks", s.RemoteIpBlocks, spec.GetAction())
			l.ips(fa+"notRemoteIpBlocks", s.NotRemoteIpBlocks, spec.GetAction())
			l.empty(fa+"principals", "Principals", s.Principals)
			l.empty(fa+"requestPrincipals", "RequestPrincipals", s.RequestPrincipals)
			l.empty(fa+"namespaces", "Namespaces", s.Namespaces)
			l.serviceAccounts(fa+"serviceAccounts", "ServiceAccounts", s.ServiceAccounts)
			l.trustDomains(fa+"trustDomains", "TrustDomains", s.TrustDomains)
			l.empty(fa+"ipBlocks", "IpBlocks", s.IpBlocks)
			l.empty(fa+"remoteIpBlocks", "RemoteIpBlocks", s.RemoteIpBlocks)
			l.empty(fa+"notPrincipals", "NotPrincipals", s.NotPrincipals)
			l.empty(fa+"notRequestPrincipals", "NotRequestPrincipals", s.NotRequestPrincipals)
			l.empty(fa+"notNamespaces", "NotNamespaces", s.NotNamespaces)
			l.serviceAccounts(fa+"notServiceAccounts", "NotServiceAccounts", s.NotServiceAccounts)
			l.trustDomains(fa+"notTrustDomains", "NotTrustDomains", s.NotTrustDomains)
			l.empty(fa+"notIpBlocks", "NotIpBlocks", s.NotIpBlocks)
			l.empty(fa+"notRemoteIpBlocks", "NotRemoteIpBlocks", s.NotRemoteIpBlocks)
		}
		if r.To != nil && len(r.To) == 0 {
			l.add(at+".to", fmt.Sprintf("`to` must not be empty, found at rule %d", i), asWrittenAuthz)
		}
		for j, t := range r.GetTo() {
			ta := fmt.Sprintf("%s.to[%d]", at, j)
			if t == nil {
				l.add(ta, fmt.Sprintf("`to` must not be nil, found at rule %d", i), asWrittenAuthz)
				continue
			}
			op := t.GetOperation()
			if op == nil {
				l.add(ta+".operation", fmt.Sprintf("`to.operation` must not be nil, found at rule %d", i), asWrittenAuthz)
				continue
			}
			ta += ".operation."
			if len(op.Ports)+len(op.Methods)+len(op.Paths)+len(op.Hosts)+len(op.NotPorts)+len(op.NotMethods)+len(op.NotPaths)+len(op.NotHosts) == 0 {
				l.add(strings.TrimSuffix(ta, "."), fmt.Sprintf("`to.operation` must not be empty, found at rule %d", i), asWrittenAuthz)
			}
			l.ports(ta+"ports", op.Ports, spec.GetAction())
			l.ports(ta+"notPorts", op.NotPorts, spec.GetAction())
			l.empty(ta+"ports", "Ports", op.Ports)
			l.empty(ta+"methods", "Methods", op.Methods)
			l.empty(ta+"paths", "Paths", op.Paths)
			l.empty(ta+"hosts", "Hosts", op.Hosts)
			l.empty(ta+"notPorts", "NotPorts", op.NotPorts)
			l.empty(ta+"notMethods", "NotMethods", op.NotMethods)
			l.empty(ta+"notPaths", "NotPaths", op.NotPaths)
			l.empty(ta+"notHosts", "NotHosts", op.NotHosts)
			l.pathTemplates(ta+"paths", "Paths", op.Paths)
			l.pathTemplates(ta+"notPaths", "NotPaths", op.NotPaths)
		}
		for j, c := range r.GetWhen() {
			wa := fmt.Sprintf("%s.when[%d]", at, j)
			switch {
			case c.GetKey() == "":
				l.add(wa+".key", "`key` must not be empty", asWrittenAuthz)
			case len(c.GetValues()) == 0 && len(c.GetNotValues()) == 0:
				l.add(wa+".values", "at least one of `values` or `notValues` must be set for key "+c.GetKey(), asWrittenAuthz)
			default:
				for _, v := range []struct {
					field, word string
					values      []string
				}{{"values", "value", c.GetValues()}, {"notValues", "notValue", c.GetNotValues()}} {
					if msg, onKey, istiod := attribute(c.GetKey(), v.values, spec.GetAction()); msg != "" {
						field := wa + "." + v.field
						if onKey {
							field = wa + ".key"
						}
						l.add(field, fmt.Sprintf("invalid `%s` for `key` %s: %s", v.word, c.GetKey(), msg), istiod)
					}
				}
			}
		}
	}
	prefix := fmt.Sprintf("invalid policy %s.%s: ", m.Name, m.Namespace)
	for i := range l {
		l[i].Webhook = prefix + l[i].Webhook
	}
	return l
}

// asWrittenAuthz is what istiod does with most authorization values the webhook rejects.
const asWrittenAuthz = "istiod does not check it and builds the rule from what is written"

// ports is security.ValidatePorts: each value a number 0..65535.
func (l *list) ports(field string, ports []string, action security.AuthorizationPolicy_Action) {
	for k, p := range ports {
		n, err := strconv.ParseUint(p, 10, 32)
		if err != nil || n > 65535 {
			l.add(fmt.Sprintf("%s[%d]", field, k), fmt.Sprintf("bad port (%s): %v", p, err), valueLeftOut(action))
		}
	}
}

// ips is security.ValidateIPs: each value an IP address, or a CIDR range when it has a slash.
func (l *list) ips(field string, ips []string, action security.AuthorizationPolicy_Action) {
	for k, v := range ips {
		f := fmt.Sprintf("%s[%d]", field, k)
		if strings.Contains(v, "/") {
			if _, err := netip.ParsePrefix(v); err != nil {
				l.add(f, fmt.Sprintf("bad CIDR range (%s): %v", v, err), valueLeftOut(action))
			}
		} else if _, err := netip.ParseAddr(v); err != nil {
			l.add(f, fmt.Sprintf("bad IP address (%s)", v), valueLeftOut(action))
		}
	}
}

// empty is security.CheckEmptyValues: one error for the first empty value of a list.
func (l *list) empty(field, key string, values []string) {
	if k := slices.Index(values, ""); k >= 0 {
		l.add(fmt.Sprintf("%s[%d]", field, k), "empty value not allowed, found in "+key, asWrittenAuthz)
	}
}

// PeerAuthentication returns what ValidatePeerAuthentication rejects (portLevelMtls and the
// selector), after the metadata checks.
func PeerAuthentication(m Meta, spec *security.PeerAuthentication) []Problem {
	if ps := checkMetadata(m, false, ""); ps != nil {
		return ps
	}
	var l list
	if len(spec.GetSelector().GetMatchLabels()) == 0 && len(spec.GetPortLevelMtls()) != 0 {
		// ComposePeerAuthentication (pilot/pkg/security/authn/policy_applier.go) reads
		// portLevelMtls of the workload policy only.
		l.add("spec.portLevelMtls", "mesh/namespace peer authentication cannot have port level mTLS",
			"istiod reads portLevelMtls only from a policy with a selector, so the entries are ignored")
	}
	if spec.PortLevelMtls != nil && len(spec.PortLevelMtls) == 0 {
		l.add("spec.portLevelMtls", "port level mTLS, if defined, must have at least one element", "istiod reads the empty map as no port-level settings")
	}
	ports := make([]uint32, 0, len(spec.GetPortLevelMtls()))
	for p := range spec.GetPortLevelMtls() {
		ports = append(ports, p)
	}
	slices.Sort(ports)
	for _, p := range ports {
		// istiod builds a sidecar's passthrough chains for every portLevelMtls port
		// (authn.Builder.ForPassthrough); Envoy's FilterChainMatch.destination_port carries the
		// proto rule 1..65535, and Envoy rejects two chains with the same match (the check
		// pilot/test/xdstest/validate.go makes).
		istiod := "istiod builds the port's passthrough chains for a sidecar with no destination port (0 means any), repeating the match of the catch-all chains; Envoy rejects a listener whose filter chains share a match, so the proxy NACKs it"
		if p > 65535 {
			istiod = "istiod builds passthrough chains for the port for a sidecar; Envoy rejects a destination port above 65535, so the proxy NACKs the listener"
		}
		if p == 0 || p > 65535 {
			l.add(fmt.Sprintf("spec.portLevelMtls[%d]", p), "port must be in range 1..65535", istiod)
		}
	}
	for _, msg := range selectorErrors(spec.GetSelector().GetMatchLabels()) {
		l.add("spec.selector.matchLabels", msg, selectorMatchesNothing)
	}
	return l
}
