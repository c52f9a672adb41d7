package ztunnelauthz

import (
	"fmt"
	"slices"
	"strings"
)

// tri is a three-valued truth: some facts of a connection (its source and destination IPs,
// the peer's identity) are not known when reading the policies offline.
type tri int8

const (
	triNo tri = iota
	triMaybe
	triYes
)

func triOf(b bool) tri {
	if b {
		return triYes
	}
	return triNo
}

func triAnd(a, b tri) tri { return min(a, b) }
func triOr(a, b tri) tri  { return max(a, b) }
func triNot(a tri) tri    { return triYes - a }

// conn is the inbound connection being judged, as the destination ztunnel sees it.
type conn struct {
	// port is the destination (pod) port; 0 stands for "a port no policy names".
	port uint32
	// plaintext: no peer identity (a connection that did not arrive over HBONE).
	plaintext bool
	// peer is the peer identity when it is known (a waypoint's); nil: unknown.
	peer *peer
}

// peer is a known SPIFFE identity: `<trust domain>/ns/<namespace>/sa/<service account>`, the
// form ztunnel matches principals against.
type peer struct{ trustDomain, namespace, serviceAccount string }

func (p *peer) principal() string {
	return p.trustDomain + "/ns/" + p.namespace + "/sa/" + p.serviceAccount
}

// evalPolicy is ztunnel's Authorization::matches (src/rbac.rs): a policy matches when any group
// matches; a group when every clause matches (no clauses: always); a clause when any
// non-empty match matches (only empty matches: never); a match when every populated field
// passes.
func evalPolicy(a *Authorization, c conn) tri {
	res := triNo
	for _, g := range a.Groups {
		res = triOr(res, evalGroup(g, c))
	}
	return res
}

// evalGroup: every clause must match; a group without clauses always matches.
func evalGroup(g *Group, c conn) tri {
	res := triYes
	for _, r := range g.Rules {
		res = triAnd(res, evalClause(r, c))
	}
	return res
}

// evalClause: any non-empty match; empty matches are skipped, so a clause of only `{}` never
// matches. This is why an HTTP-only `when` makes a DENY rule a no-op
// (docs/semantics/authz.md#degenerate-rules).
func evalClause(r *Rules, c conn) tri {
	if len(r.Matches) == 0 {
		return triYes
	}
	res := triNo
	for _, m := range r.Matches {
		if m.IsEmpty() {
			continue
		}
		res = triOr(res, evalMatch(m, c))
	}
	return res
}

// evalMatch judges one Match. Without a peer identity every principal and service-account
// predicate is false (presence included) and the namespace is "". With a known identity they
// are decided; with an unknown one they are unknown. IP predicates are always unknown offline.
func evalMatch(m *Match, c conn) tri {
	res := triYes
	identity := func(n int, plain, known tri) tri {
		switch {
		case n == 0:
			return triYes
		case c.plaintext:
			return plain
		case c.peer != nil:
			return known
		}
		return triMaybe
	}
	anyString := func(ms []*StringMatch, v string) bool {
		for _, s := range ms {
			if stringMatches(s, v) {
				return true
			}
		}
		return false
	}
	anySA := func(ms []*ServiceAccountMatch) bool {
		return c.peer != nil && slices.ContainsFunc(ms, func(s *ServiceAccountMatch) bool {
			return s.Namespace == c.peer.namespace && s.ServiceAccount == c.peer.serviceAccount
		})
	}
	var principal, ns string
	if c.peer != nil {
		principal, ns = c.peer.principal(), c.peer.namespace
	}
	// Positive lists: empty or any value matches; negative lists: none matches.
	res = triAnd(res, identity(len(m.Principals), triNo, triOf(anyString(m.Principals, principal))))
	res = triAnd(res, identity(len(m.NotPrincipals), triYes, triNot(triOf(anyString(m.NotPrincipals, principal)))))
	res = triAnd(res, identity(len(m.ServiceAccounts), triNo, triOf(anySA(m.ServiceAccounts))))
	res = triAnd(res, identity(len(m.NotServiceAccounts), triYes, triNot(triOf(anySA(m.NotServiceAccounts)))))
	res = triAnd(res, identity(len(m.Namespaces), triOf(anyString(m.Namespaces, "")), triOf(anyString(m.Namespaces, ns))))
	res = triAnd(res, identity(len(m.NotNamespaces), triNot(triOf(anyString(m.NotNamespaces, ""))), triNot(triOf(anyString(m.NotNamespaces, ns)))))
	for _, ips := range [][]*Address{m.SourceIps, m.NotSourceIps, m.DestinationIps, m.NotDestinationIps} {
		if len(ips) > 0 {
			res = triAnd(res, triMaybe)
		}
	}
	if len(m.DestinationPorts) > 0 {
		res = triAnd(res, triOf(c.port != 0 && slices.Contains(m.DestinationPorts, c.port)))
	}
	if len(m.NotDestinationPorts) > 0 {
		res = triAnd(res, triOf(c.port == 0 || !slices.Contains(m.NotDestinationPorts, c.port)))
	}
	return res
}

// stringMatches is ztunnel's StringMatch on a known value; presence needs a non-empty value.
func stringMatches(s *StringMatch, v string) bool {
	switch s.Kind {
	case StringMatchExact:
		return v == s.Value
	case StringMatchPrefix:
		return strings.HasPrefix(v, s.Value)
	case StringMatchSuffix:
		return strings.HasSuffix(v, s.Value)
	case StringMatchPresence:
		return v != ""
	}
	return false
}

// verdict is ztunnel's assert_rbac (src/state.rs) over the policies in effect: any matching
// DENY rejects; with no ALLOW policy the connection is accepted; otherwise an ALLOW must match.
// Dry-run policies are only logged and take no part.
func verdict(policies []*Authorization, c conn) string {
	var denyMaybe, allowYes, allowMaybe []string
	anyAllow := false
	for _, p := range policies {
		if p.DryRun {
			continue
		}
		r := evalPolicy(p, c)
		switch p.Action {
		case ActionDeny:
			if r == triYes {
				return "denied by DENY " + p.Key()
			}
			if r == triMaybe {
				denyMaybe = append(denyMaybe, p.Key())
			}
		default:
			anyAllow = true
			if r == triYes {
				allowYes = append(allowYes, p.Key())
			} else if r == triMaybe {
				allowMaybe = append(allowMaybe, p.Key())
			}
		}
	}
	var depends []string
	if len(denyMaybe) > 0 {
		depends = append(depends, "DENY "+strings.Join(denyMaybe, ", ")+" may fire")
	}
	switch {
	case !anyAllow && len(depends) == 0:
		return "allowed (no DENY matches, no ALLOW policy)"
	case !anyAllow:
		return "depends on the connection's IPs: " + strings.Join(depends, "; ")
	case len(allowYes) > 0 && len(depends) == 0:
		return "allowed by ALLOW " + strings.Join(allowYes, ", ")
	case len(allowYes) == 0 && len(allowMaybe) == 0:
		return "denied: no ALLOW policy matches"
	}
	if len(allowYes) == 0 {
		depends = append(depends, "ALLOW "+strings.Join(allowMaybe, ", ")+" may match")
	}
	return "depends on the connection's IPs: " + strings.Join(depends, "; ")
}

// describeAllow says, in words, which peers the ALLOW policies let in on port c.port.
func describeAllow(policies []*Authorization, c conn, viaWaypoint string) string {
	var parts []string
	anyAllow := false
	for _, p := range policies {
		if p.DryRun || p.Action != ActionAllow {
			continue
		}
		anyAllow = true
		for _, g := range p.Groups {
			// A group that cannot match this port whatever the peer is, is skipped.
			if evalGroup(g, conn{port: c.port}) == triNo {
				continue
			}
			parts = append(parts, p.Key()+": "+describeGroup(g))
		}
	}
	if !anyAllow {
		return "any peer not denied (no ALLOW policy applies)"
	}
	if len(parts) == 0 {
		return "nobody: ALLOW policies apply but none matches this port"
	}
	s := strings.Join(parts, "; ")
	if viaWaypoint != "" {
		s += " (traffic through waypoint " + viaWaypoint + " carries the waypoint's identity)"
	}
	return s
}

// describeGroup renders a group's peer conditions: clauses joined by "and", matches by "or".
func describeGroup(g *Group) string {
	var clauses []string
	for _, r := range g.Rules {
		var alts []string
		for _, m := range r.Matches {
			if d := describeMatchPeer(m); d != "" {
				alts = append(alts, d)
			}
		}
		switch len(alts) {
		case 0:
		case 1:
			clauses = append(clauses, alts[0])
		default:
			clauses = append(clauses, "("+strings.Join(alts, " or ")+")")
		}
	}
	if len(clauses) == 0 {
		return "any peer, including plaintext"
	}
	return strings.Join(clauses, " and ")
}

// describeMatchPeer renders the peer conditions of a match (ports are left to the row).
func describeMatchPeer(m *Match) string {
	var p []string
	strs := func(label string, ms []*StringMatch) {
		if len(ms) == 0 {
			return
		}
		var v []string
		for _, s := range ms {
			switch s.Kind {
			case StringMatchPresence:
				v = append(v, "any")
			case StringMatchPrefix:
				v = append(v, s.Value+"*")
			case StringMatchSuffix:
				v = append(v, "*"+s.Value)
			default:
				v = append(v, s.Value)
			}
		}
		p = append(p, label+" "+strings.Join(v, "|"))
	}
	sas := func(label string, ms []*ServiceAccountMatch) {
		if len(ms) == 0 {
			return
		}
		var v []string
		for _, s := range ms {
			v = append(v, s.Namespace+"/"+s.ServiceAccount)
		}
		p = append(p, label+" "+strings.Join(v, "|"))
	}
	ips := func(label string, as []*Address) {
		if len(as) == 0 {
			return
		}
		var v []string
		for _, a := range as {
			v = append(v, addressString(a))
		}
		p = append(p, label+" "+strings.Join(v, "|"))
	}
	strs("principal", m.Principals)
	strs("principal not", m.NotPrincipals)
	sas("serviceAccount", m.ServiceAccounts)
	sas("serviceAccount not", m.NotServiceAccounts)
	strs("namespace", m.Namespaces)
	strs("namespace not", m.NotNamespaces)
	ips("source IP", m.SourceIps)
	ips("source IP not", m.NotSourceIps)
	ips("destination IP", m.DestinationIps)
	ips("destination IP not", m.NotDestinationIps)
	return strings.Join(p, ", ")
}

// portLabel spells a port row; 0 is every port no policy or container names.
func portLabel(p uint32) string {
	if p == 0 {
		return "other ports"
	}
	return fmt.Sprint(p)
}
