package scenariogen

import (
	"fmt"
	"strings"
)

// Authz generates an `authz` scenario: ambient workloads in foo and bar, and a random set of
// PeerAuthentications (mesh, namespace, workload with portLevelMtls) and AuthorizationPolicies
// (every action, selectors, targetRefs, dry-run, L4 and L7 attributes, root-namespace ones).
func Authz(seed uint64) *Scenario {
	g := newG(seed, 2)
	s := &Scenario{Seed: seed, Kind: "authz", Title: fmt.Sprintf("generated authz scenario, seed %d", seed)}
	ambientNs := map[string]any{"istio.io/dataplane-mode": "ambient"}
	s.Docs = append(s.Docs,
		namespaceDoc("foo", ambientNs),
		namespaceDoc("bar", ambientNs),
		namespaceDoc("istio-system", nil))
	ports := []containerPort{{Name: "http", Port: 8080}, {Name: "metrics", Port: 9090}}
	s.Docs = append(s.Docs,
		podDoc("a", "foo", "10.244.1.10", map[string]any{"app": "a", "version": "v1"}, ports, true, "a"),
		podDoc("b", "foo", "10.244.1.11", map[string]any{"app": "b"}, ports, true, "b"),
		podDoc("c", "bar", "10.244.2.10", map[string]any{"app": "a"}, ports, true, "c"))
	target := pick(g, "pod/a -n foo", "pod/a -n foo", "pod/a -n foo", "pod/a -n foo", "pod/a -n foo", "pod/b -n foo", "pod/c -n bar")
	if g.chance(0.05) {
		// A pod without labels lists every selector policy of its namespace
		// (docs/semantics/authz.md#workloads-without-labels).
		s.Docs = append(s.Docs, podDoc("d", "foo", "10.244.1.12", nil, ports, true, "d"))
		target = "pod/d -n foo"
	}
	s.Docs = append(s.Docs, map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": meta("a", "foo"),
		"spec": map[string]any{
			"clusterIP": "10.96.1.10",
			"selector":  map[string]any{"app": "a"},
			"ports": []any{
				map[string]any{"name": "http", "port": 80, "targetPort": 8080},
				map[string]any{"name": "metrics", "port": 9090},
			},
		},
	})
	if g.chance(0.85) {
		s.Docs = append(s.Docs, genAmbientPeerAuthentications(g)...)
	}
	if g.chance(0.85) {
		s.Docs = append(s.Docs, genAuthorizationPolicies(g)...)
	}
	if g.chance(0.15) {
		s.Docs = append(s.Docs, meshConfigDoc("trustDomain: "+pick(g, "example.org", "cluster.local")+"\n"))
	}
	s.Command = "authz " + target
	return s
}

func genAmbientPeerAuthentications(g *g) []map[string]any {
	n := g.between(1, 4)
	ts := g.timestamps(n)
	var docs []map[string]any
	for i := 0; i < n; i++ {
		ns := pick(g, "foo", "foo", "foo", "istio-system", "istio-system", "bar")
		spec := map[string]any{}
		mode := pick(g, mtlsModes...)
		if mode != "UNSET" || g.chance(0.5) {
			spec["mtls"] = map[string]any{"mode": mode}
		}
		if g.chance(0.6) {
			lbls := pick(g,
				map[string]any{"app": "a"},
				map[string]any{"app": "a"},
				map[string]any{"app": "b"},
				map[string]any{"app": "a", "version": "v1"})
			spec["selector"] = map[string]any{"matchLabels": lbls}
			if g.chance(0.7) {
				pl := map[string]any{}
				for _, p := range some(g, 1, 3, 8080, 9090, 80) {
					pl[fmt.Sprint(p)] = map[string]any{"mode": pick(g, mtlsModes...)}
				}
				spec["portLevelMtls"] = pl
			}
		}
		docs = append(docs, map[string]any{
			"apiVersion": "security.istio.io/v1", "kind": "PeerAuthentication",
			"metadata": meta(fmt.Sprintf("pa%d", i), ns, "creationTimestamp", ts[i]),
			"spec":     spec,
		})
	}
	return docs
}

func genAuthorizationPolicies(g *g) []map[string]any {
	n := g.between(1, 5)
	var docs []map[string]any
	for i := 0; i < n; i++ {
		ns := pick(g, "foo", "foo", "foo", "istio-system", "bar")
		m := meta(fmt.Sprintf("ap%d", i), ns)
		spec := map[string]any{}
		action := pick(g, "", "ALLOW", "ALLOW", "DENY", "DENY", "AUDIT", "CUSTOM")
		if action != "" {
			spec["action"] = action
		}
		if action == "CUSTOM" {
			spec["provider"] = map[string]any{"name": "ext-authz"}
		}
		switch pick(g, "none", "app-a", "app-a", "app-a", "app-a", "app-b", "empty", "empty-labels", "targetRef") {
		case "app-a":
			spec["selector"] = map[string]any{"matchLabels": map[string]any{"app": "a"}}
		case "app-b":
			spec["selector"] = map[string]any{"matchLabels": map[string]any{"app": "b"}}
		case "empty":
			spec["selector"] = map[string]any{}
		case "empty-labels":
			spec["selector"] = map[string]any{"matchLabels": map[string]any{}}
		case "targetRef":
			spec["targetRefs"] = []any{map[string]any{"kind": "Gateway", "group": "gateway.networking.k8s.io", "name": "waypoint"}}
		}
		// DENY, CUSTOM and AUDIT need rules; ALLOW without rules is allow-nothing.
		if action == "" || action == "ALLOW" {
			if g.chance(0.85) {
				var rules []any
				for j := 0; j < g.between(0, 3); j++ {
					rules = append(rules, genRule(g, action))
				}
				spec["rules"] = rules
			}
		} else {
			var rules []any
			for j := 0; j < g.between(1, 3); j++ {
				rules = append(rules, genRule(g, action))
			}
			spec["rules"] = rules
		}
		if (action == "" || action == "ALLOW" || action == "DENY") && g.chance(0.1) {
			m["annotations"] = map[string]any{"istio.io/dry-run": pick(g, "true", "false")}
		}
		docs = append(docs, map[string]any{
			"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
			"metadata": m,
			"spec":     spec,
		})
	}
	return docs
}

// sourceFields are the Source fields a rule may use; serviceAccounts excludes principals and
// namespaces, and CUSTOM supports only some fields.
var (
	sourceFields   = []string{"principals", "notPrincipals", "namespaces", "notNamespaces", "ipBlocks", "notIpBlocks", "requestPrincipals", "notRequestPrincipals", "remoteIpBlocks"}
	saFields       = []string{"serviceAccounts", "notServiceAccounts", "ipBlocks", "notIpBlocks", "requestPrincipals"}
	customFields   = []string{"ipBlocks", "notIpBlocks", "remoteIpBlocks", "notRemoteIpBlocks"}
	customWhenKeys = []string{"source.ip", "destination.port", "destination.ip", "request.headers[x-user]", "remote.ip"}
	whenKeys       = []string{"source.ip", "source.namespace", "source.principal", "destination.port", "destination.ip",
		"request.headers[x-user]", "request.auth.claims[iss]", "connection.sni", "remote.ip", "source.serviceAccount"}
)

func genRule(g *g, action string) map[string]any {
	rule := map[string]any{}
	if g.chance(0.6) {
		rule["from"] = fromSources(g, action, sourceFields, customFields, saFields, sourceValues)
	}
	if g.chance(0.5) {
		var tos []any
		for k := 0; k < g.between(1, 2); k++ {
			op := map[string]any{}
			for _, f := range some(g, 1, 2, "ports", "notPorts", "methods", "notMethods", "paths", "hosts", "notHosts") {
				switch f {
				case "ports", "notPorts":
					op[f] = anyList(some(g, 1, 2, "8080", "9090", "80"))
				case "methods", "notMethods":
					op[f] = anyList(some(g, 1, 2, "GET", "POST"))
				case "paths":
					op[f] = anyList(some(g, 1, 2, "/admin", "/api/*", "*/health"))
				default:
					op[f] = anyList(some(g, 1, 2, "a.example.com", "*.example.com"))
				}
			}
			tos = append(tos, map[string]any{"operation": op})
		}
		rule["to"] = tos
	}
	if g.chance(0.35) {
		rule["when"] = whenConditions(g, action, whenKeys, customWhenKeys, conditionValues)
	}
	return rule
}

// fromSources is a rule's `from`: one or two sources, each with one to three of fields
// (customFields for a CUSTOM rule; now and then saFields), their values from valuesOf.
func fromSources(g *g, action string, fields, customFields, saFields []string, valuesOf func(*g, string) []string) []any {
	var froms []any
	for k := 0; k < g.between(1, 2); k++ {
		fs := fields
		switch {
		case action == "CUSTOM":
			fs = customFields
		case g.chance(0.15):
			fs = saFields
		}
		src := map[string]any{}
		for _, f := range some(g, 1, 3, fs...) {
			src[f] = anyList(valuesOf(g, f))
		}
		froms = append(froms, map[string]any{"source": src})
	}
	return froms
}

// whenConditions is a rule's `when`: one or two conditions on keys (customKeys for a CUSTOM
// rule), each with values, notValues or both, taken from valuesOf(key).
func whenConditions(g *g, action string, keys, customKeys []string, valuesOf func(string) []string) []any {
	var whens []any
	for k := 0; k < g.between(1, 2); k++ {
		ks := keys
		if action == "CUSTOM" {
			ks = customKeys
		}
		key := pick(g, ks...)
		cond := map[string]any{"key": key}
		vals := valuesOf(key)
		if g.chance(0.7) {
			cond["values"] = anyList(some(g, 1, 2, vals...))
		}
		if _, ok := cond["values"]; !ok || g.chance(0.3) {
			cond["notValues"] = anyList(some(g, 1, 1, vals...))
		}
		whens = append(whens, cond)
	}
	return whens
}

func sourceValues(g *g, field string) []string {
	switch {
	case strings.HasSuffix(field, "rincipals") && strings.Contains(strings.ToLower(field), "request"):
		return some(g, 1, 2, "issuer.example.com/alice", "*", "issuer.example.com/*")
	case strings.HasSuffix(field, "rincipals"):
		return some(g, 1, 2, "cluster.local/ns/foo/sa/a", "*", "cluster.local/ns/bar/*", "*/sa/b")
	case strings.HasSuffix(field, "amespaces"):
		return some(g, 1, 2, "foo", "bar", "ba*", "*")
	case strings.HasSuffix(field, "erviceAccounts"):
		return some(g, 1, 2, "foo/a", "b", "bar/c")
	default:
		return some(g, 1, 2, "10.0.0.0/8", "192.168.1.7", "2001:db8::/32")
	}
}

func conditionValues(key string) []string {
	switch key {
	case "source.ip", "destination.ip", "remote.ip":
		return []string{"10.1.2.3", "10.0.0.0/16"}
	case "source.namespace":
		return []string{"foo", "bar"}
	case "source.principal":
		return []string{"cluster.local/ns/foo/sa/a", "*"}
	case "source.serviceAccount":
		return []string{"foo/a", "bar/c"}
	case "destination.port":
		return []string{"8080", "9090"}
	default:
		return []string{"alice", "example.com"}
	}
}
