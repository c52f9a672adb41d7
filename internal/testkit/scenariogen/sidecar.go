package scenariogen

import (
	"fmt"
	"strings"
)

// sidecarStatus is the sidecar.istio.io/status annotation the injector writes.
const sidecarStatus = `{"initContainers":["istio-init"],"containers":["istio-proxy"],"volumes":["istio-envoy","istio-data","istio-podinfo","istio-token","istiod-ca-cert"],"imagePullSecrets":null,"revision":"default"}`

// Sidecar generates an `authz` scenario for a sidecar-injected pod: Services exposing its
// ports with random protocols (named, appProtocol, auto-detected), sometimes two Services on
// one target port; a random PeerAuthentication chain (mesh, namespace, workload, root-namespace
// selector, portLevelMtls on target ports, Service ports and ports no Service exposes);
// AuthorizationPolicies of every action with every source, operation and condition field,
// dry-run, targetRefs and CUSTOM providers (MeshConfig extensionProviders over HTTP and gRPC,
// and missing ones); sometimes a RequestAuthentication, a client DestinationRule and
// meshMTLS settings.
func Sidecar(seed uint64) *Scenario {
	g := newG(seed, 3)
	s := &Scenario{Seed: seed, Kind: "sidecar", Title: fmt.Sprintf("generated sidecar authz scenario, seed %d", seed)}
	s.Docs = append(s.Docs, namespaceDoc("foo", nil), namespaceDoc("bar", nil), namespaceDoc("istio-system", nil))

	ports := []containerPort{{Name: "http", Port: 8080}, {Name: "tcp", Port: 9090}}
	if g.chance(0.3) {
		ports = append(ports, containerPort{Name: "admin", Port: 7070})
	}
	a := sidecarPod(podDoc("a", "foo", "10.244.1.10", map[string]any{"app": "a", "version": "v1"}, ports, true, "a"))
	s.Docs = append(s.Docs, a)
	target := "pod/a -n foo"
	if g.chance(0.1) {
		s.Docs = append(s.Docs, sidecarPod(podDoc("c", "bar", "10.244.2.10", map[string]any{"app": "a"}, ports, true, "c")))
		target = "pod/c -n bar"
	}

	// Services: none, one, or two on overlapping target ports (the oldest wins a port).
	nSvc := pick(g, 0, 1, 1, 1, 1, 2)
	ts := g.timestamps(nSvc)
	for i := 0; i < nSvc; i++ {
		ns := "foo"
		if target == "pod/c -n bar" {
			ns = "bar"
		}
		sp := genServicePorts(g, ports)
		s.Docs = append(s.Docs, map[string]any{
			"apiVersion": "v1", "kind": "Service",
			"metadata": meta(fmt.Sprintf("svc%d", i), ns, "creationTimestamp", ts[i]),
			"spec":     map[string]any{"selector": map[string]any{"app": "a"}, "ports": sp},
		})
	}

	extDocs, providers := genExtAuthz(g)
	s.Docs = append(s.Docs, extDocs...)
	if len(providers) > 0 || g.chance(0.25) {
		var m strings.Builder
		if len(providers) > 0 {
			m.WriteString(yamlOf(map[string]any{"extensionProviders": providers}))
		}
		if g.chance(0.3) {
			mtls := map[string]any{"minProtocolVersion": pick(g, "TLSV1_2", "TLSV1_3")}
			if g.chance(0.5) {
				mtls["cipherSuites"] = anyList(some(g, 1, 2, "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES128-GCM-SHA256"))
			}
			m.WriteString(yamlOf(map[string]any{"meshMTLS": mtls}))
		}
		if g.chance(0.3) {
			m.WriteString("trustDomain: example.org\n")
			if g.chance(0.5) {
				m.WriteString("trustDomainAliases: [old.example.org]\n")
			}
		}
		s.Docs = append(s.Docs, meshConfigDoc(m.String()))
	}

	if g.chance(0.85) {
		s.Docs = append(s.Docs, genSidecarPeerAuthentications(g)...)
	}
	if g.chance(0.85) {
		s.Docs = append(s.Docs, genSidecarAuthorizationPolicies(g)...)
	}
	if g.chance(0.2) {
		// The keys inline: a jwksUri makes istiod fetch it, and with no network the fetcher
		// outlives the run and can stall the fake server's shutdown.
		spec := map[string]any{"jwtRules": []any{map[string]any{"issuer": "issuer.example.com", "jwks": inlineJWKS}}}
		if g.chance(0.7) {
			spec["selector"] = map[string]any{"matchLabels": map[string]any{"app": "a"}}
		}
		s.Docs = append(s.Docs, map[string]any{
			"apiVersion": "security.istio.io/v1", "kind": "RequestAuthentication",
			"metadata": meta("jwt", pick(g, "foo", "istio-system")), "spec": spec,
		})
	}
	if g.chance(0.15) {
		s.Docs = append(s.Docs, map[string]any{
			"apiVersion": "networking.istio.io/v1", "kind": "DestinationRule",
			"metadata": meta("to-a", pick(g, "foo", "bar")),
			"spec": map[string]any{"host": "svc0.foo.svc.cluster.local",
				"trafficPolicy": map[string]any{"tls": map[string]any{"mode": pick(g, "DISABLE", "ISTIO_MUTUAL")}}},
		})
	}
	s.Command = "authz " + target
	return s
}

// genExtAuthz returns, now and then, a Service ext-authz in foo (ports 8000 http, 9000 grpc)
// and, mostly with it, the two MeshConfig extensionProviders ext-authz-http and ext-authz-grpc
// pointing at it, with random options.
func genExtAuthz(g *g) (docs []map[string]any, providers []any) {
	providers = []any{}
	if !g.chance(0.6) {
		return nil, providers
	}
	docs = append(docs, map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": meta("ext-authz", "foo"),
		"spec": map[string]any{"selector": map[string]any{"app": "ext-authz"}, "ports": []any{
			map[string]any{"name": "http", "port": 8000},
			map[string]any{"name": "grpc", "port": 9000},
		}},
	})
	if g.chance(0.8) {
		http := map[string]any{"service": "ext-authz.foo.svc.cluster.local", "port": 8000}
		if g.chance(0.5) {
			http["includeRequestHeadersInCheck"] = []any{"x-ext-authz"}
		}
		if g.chance(0.3) {
			http["failOpen"] = true
		}
		if g.chance(0.3) {
			http["pathPrefix"] = "/check"
		}
		grpc := map[string]any{"service": "ext-authz.foo.svc.cluster.local", "port": 9000}
		if g.chance(0.3) {
			grpc["statusOnError"] = "403"
		}
		if g.chance(0.3) {
			grpc["timeout"] = "0.5s"
		}
		providers = append(providers,
			map[string]any{"name": "ext-authz-http", "envoyExtAuthzHttp": http},
			map[string]any{"name": "ext-authz-grpc", "envoyExtAuthzGrpc": grpc})
	}
	return docs, providers
}

// genServicePorts returns one to three Service ports on the target ports 8080, 9090 and 7070,
// with random protocols (name prefix, appProtocol, detection), sometimes on another Service port,
// sometimes with the target port given by the name of the pod's container port (podPorts).
func genServicePorts(g *g, podPorts []containerPort) []any {
	var sp []any
	for j, tp := range some(g, 1, 3, 8080, 9090, 7070) {
		p := map[string]any{"port": pick(g, tp, tp, 80+j, 443+j)}
		name, appProto := randomPortProtocol(g)
		// Every port is named (a Service with several ports needs names); a name without a
		// protocol prefix leaves the protocol to appProtocol or to detection.
		p["name"] = fmt.Sprintf("%s%d", name, j)
		if name == "" {
			p["name"] = fmt.Sprintf("p%d", j)
		}
		if appProto != "" {
			p["appProtocol"] = appProto
		}
		if p["port"] != tp {
			p["targetPort"] = tp
		} else if g.chance(0.2) {
			// A named target port resolves through the pod's container ports.
			for _, cp := range podPorts {
				if cp.Port == tp {
					p["targetPort"] = cp.Name
				}
			}
		}
		sp = append(sp, p)
	}
	return sp
}

func sidecarPod(p map[string]any) map[string]any {
	m := p["metadata"].(map[string]any)
	l, _ := m["labels"].(map[string]any)
	if l == nil {
		l = map[string]any{}
	}
	l["security.istio.io/tlsMode"] = "istio"
	l["service.istio.io/canonical-name"] = m["name"]
	m["labels"] = l
	m["annotations"] = map[string]any{"sidecar.istio.io/status": sidecarStatus}
	return p
}

// randomPortProtocol returns a Service port name prefix (its protocol, or one that names none)
// and an appProtocol.
func randomPortProtocol(g *g) (name, appProtocol string) {
	switch g.intn(8) {
	case 0:
		return "http-", ""
	case 1:
		return "tcp-", ""
	case 2:
		return "grpc-", ""
	case 3:
		return "http2-", ""
	case 4:
		return "web-", ""
	case 5:
		return "", pick(g, "http", "tcp", "grpc", "kubernetes.io/h2c")
	case 6:
		return "mongo-", ""
	default:
		return "https-", ""
	}
}

func yamlOf(v map[string]any) string {
	s := &Scenario{Docs: []map[string]any{v}}
	b, _ := s.YAML()
	return string(b)
}

func genSidecarPeerAuthentications(g *g) []map[string]any {
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
				map[string]any{"version": "v1"},
				map[string]any{"app": "a", "version": "v1"})
			spec["selector"] = map[string]any{"matchLabels": lbls}
			if g.chance(0.7) {
				pl := map[string]any{}
				for _, p := range some(g, 1, 4, 8080, 9090, 7070, 80, 7071, 7072, 15006) {
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

func genSidecarAuthorizationPolicies(g *g) []map[string]any {
	n := g.between(1, 5)
	var docs []map[string]any
	for i := 0; i < n; i++ {
		ns := pick(g, "foo", "foo", "foo", "istio-system", "bar")
		docs = append(docs, genPolicy(g, fmt.Sprintf("ap%d", i), ns, func(spec map[string]any) {
			switch pick(g, "none", "app-a", "app-a", "app-a", "version", "app-b", "empty", "targetRef") {
			case "app-a":
				spec["selector"] = map[string]any{"matchLabels": map[string]any{"app": "a"}}
			case "version":
				spec["selector"] = map[string]any{"matchLabels": map[string]any{"version": "v1"}}
			case "app-b":
				spec["selector"] = map[string]any{"matchLabels": map[string]any{"app": "b"}}
			case "empty":
				spec["selector"] = map[string]any{}
			case "targetRef":
				spec["targetRefs"] = []any{pick(g,
					map[string]any{"kind": "Gateway", "group": "gateway.networking.k8s.io", "name": "waypoint"},
					map[string]any{"kind": "Service", "group": "", "name": "svc0"})}
			}
		}))
	}
	return docs
}

// genPolicy returns the AuthorizationPolicy ns/name with a random action (CUSTOM with one of
// the providers ext-authz-http, ext-authz-grpc or a missing one), attached by attach (which
// sets the selector or targetRefs of its spec), with zero to three of genSidecarRule's rules
// (one at least for DENY and CUSTOM), and sometimes istio.io/dry-run on ALLOW and DENY.
func genPolicy(g *g, name, ns string, attach func(spec map[string]any)) map[string]any {
	m := meta(name, ns)
	spec := map[string]any{}
	action := pick(g, "", "ALLOW", "ALLOW", "DENY", "DENY", "AUDIT", "CUSTOM", "CUSTOM")
	if action != "" {
		spec["action"] = action
	}
	if action == "CUSTOM" {
		spec["provider"] = map[string]any{"name": pick(g, "ext-authz-http", "ext-authz-grpc", "ext-authz-grpc", "missing")}
	}
	attach(spec)
	// DENY and CUSTOM need rules; ALLOW and AUDIT without rules match nothing.
	if action == "DENY" || action == "CUSTOM" || g.chance(0.85) {
		var rules []any
		lo := 0
		if action == "DENY" || action == "CUSTOM" {
			lo = 1
		}
		for j := 0; j < g.between(lo, 3); j++ {
			rules = append(rules, genSidecarRule(g, action))
		}
		if rules == nil {
			rules = []any{}
		}
		spec["rules"] = rules
	}
	// Istio's validation accepts istio.io/dry-run on ALLOW and DENY only.
	if action != "AUDIT" && action != "CUSTOM" && g.chance(0.2) {
		m["annotations"] = map[string]any{"istio.io/dry-run": pick(g, "true", "true", "false")}
	}
	return map[string]any{
		"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
		"metadata": m,
		"spec":     spec,
	}
}

var (
	sidecarSourceFields = []string{"principals", "notPrincipals", "namespaces", "notNamespaces", "ipBlocks", "notIpBlocks",
		"remoteIpBlocks", "notRemoteIpBlocks", "requestPrincipals", "notRequestPrincipals", "trustDomains", "notTrustDomains"}
	sidecarSAFields = []string{"serviceAccounts", "notServiceAccounts", "ipBlocks", "notIpBlocks", "requestPrincipals",
		"notRequestPrincipals", "trustDomains", "remoteIpBlocks"}
	sidecarCustomSourceFields = []string{"ipBlocks", "notIpBlocks", "remoteIpBlocks", "notRemoteIpBlocks"}
	sidecarOperationFields    = []string{"ports", "notPorts", "methods", "notMethods", "paths", "notPaths", "hosts", "notHosts"}
	sidecarWhenKeys           = []string{"source.ip", "remote.ip", "source.namespace", "source.principal", "source.serviceAccount",
		"source.trustDomain", "request.headers[x-user]", "request.auth.principal", "request.auth.audiences",
		"request.auth.presenter", "request.auth.claims[iss]", "request.auth.claims[groups][0]", "destination.ip",
		"destination.port", "connection.sni", "experimental.envoy.filters.network.mysql_proxy[db.table]"}
	sidecarCustomWhenKeys = []string{"source.ip", "remote.ip", "request.headers[x-user]", "destination.ip", "destination.port", "connection.sni"}
)

func genSidecarRule(g *g, action string) map[string]any {
	rule := map[string]any{}
	if g.chance(0.6) {
		rule["from"] = fromSources(g, action, sidecarSourceFields, sidecarCustomSourceFields, sidecarSAFields, sidecarSourceValues)
	}
	if g.chance(0.5) {
		var tos []any
		for k := 0; k < g.between(1, 2); k++ {
			op := map[string]any{}
			for _, f := range some(g, 1, 3, sidecarOperationFields...) {
				switch f {
				case "ports", "notPorts":
					op[f] = anyList(some(g, 1, 2, "8080", "9090", "80", "7070"))
				case "methods", "notMethods":
					op[f] = anyList(some(g, 1, 2, "GET", "POST", "DELETE"))
				case "paths", "notPaths":
					op[f] = anyList(some(g, 1, 2, "/admin", "/api/*", "*/health", "/api/{*}/items", "*"))
				default:
					op[f] = anyList(some(g, 1, 2, "a.example.com", "*.example.com", "A.Example.com:8080"))
				}
			}
			tos = append(tos, map[string]any{"operation": op})
		}
		rule["to"] = tos
	}
	if g.chance(0.35) {
		rule["when"] = whenConditions(g, action, sidecarWhenKeys, sidecarCustomWhenKeys, sidecarConditionValues)
	}
	return rule
}

func sidecarSourceValues(g *g, field string) []string {
	lower := strings.ToLower(field)
	switch {
	case strings.Contains(lower, "requestprincipals"):
		return some(g, 1, 2, "issuer.example.com/alice", "*", "issuer.example.com/*", "*/bob")
	case strings.Contains(lower, "principals"):
		return some(g, 1, 2, "cluster.local/ns/foo/sa/a", "*", "cluster.local/ns/bar/*", "*/sa/b", "example.org/ns/foo/sa/a")
	case strings.Contains(lower, "namespaces"):
		return some(g, 1, 2, "foo", "bar", "ba*", "*", "*oo")
	case strings.Contains(lower, "serviceaccounts"):
		return some(g, 1, 2, "foo/a", "b", "bar/c")
	case strings.Contains(lower, "trustdomains"):
		return some(g, 1, 2, "cluster.local", "example.org", "old.example.org")
	default:
		return some(g, 1, 2, "10.0.0.0/8", "192.168.1.7", "2001:db8::/32")
	}
}

func sidecarConditionValues(key string) []string {
	switch key {
	case "source.ip", "destination.ip", "remote.ip":
		return []string{"10.1.2.3", "10.0.0.0/16"}
	case "source.namespace":
		return []string{"foo", "bar", "ba*"}
	case "source.principal", "request.auth.principal":
		return []string{"cluster.local/ns/foo/sa/a", "*", "issuer.example.com/*"}
	case "source.serviceAccount":
		return []string{"foo/a", "bar/c"}
	case "source.trustDomain":
		return []string{"cluster.local", "example.org"}
	case "destination.port":
		return []string{"8080", "9090"}
	case "connection.sni":
		return []string{"a.foo.svc.cluster.local", "*.example.com"}
	default:
		return []string{"alice", "example.com", "adm*"}
	}
}

// inlineJWKS is a public key set (one EC P-256 key, from Istio's pilot/pkg/xds/waypoint_test.go).
const inlineJWKS = `{"keys":[{"kty":"EC","crv":"P-256","x":"MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4","y":"4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM","use":"enc","kid":"1"}]}`
