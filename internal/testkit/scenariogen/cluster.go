package scenariogen

import (
	"fmt"
	"sort"
	"strings"
)

// clusterWorld is what the cluster generator decided, for building the args.
type clusterWorld struct {
	svcNs, clientNs string
	// host is the FQDN or ServiceEntry host; k8s says whether it is a Service.
	host  string
	k8s   bool
	ports []int
	// subsetsOfOnlyDR are the subsets when exactly one plain DR (no selector, no exportTo,
	// in the service namespace) is on the host, else nil.
	subsetsOfOnlyDR []string
	// privateDRs is set when the MeshConfig makes DestinationRules private by default.
	privateDRs bool
	// exportedSE is set when the ServiceEntry carries exportTo.
	exportedSE bool
}

var localities = []string{"region1/zone1/subzone1", "region1/zone1/subzone2", "region1/zone2/subzone1", "region2/zone1/subzone1", "region2/zone1"}

var portNumbers = []int{80, 443, 3306, 5000, 6379, 8080, 9080, 9090, 15443, 27017}

var portNamePrefixes = []string{"http", "http2", "grpc", "grpc-web", "tcp", "tls", "https", "redis", "mongo", "mysql", "udp-ish", "web"}

var appProtocols = []string{"http", "http2", "grpc", "tcp", "tls", "https", "kubernetes.io/h2c", "kubernetes.io/ws", "mongo", "redis"}

// Cluster generates a `cluster` scenario: a client pod, a Service or a ServiceEntry with
// backends, DestinationRules on the host (several namespaces, selectors, exportTo,
// creationTimestamps, every TrafficPolicy block, portLevelSettings, subsets), possibly a
// MeshConfig and PeerAuthentications, and the extras of genClusterExtras (VirtualServices, a
// Sidecar, WorkloadEntries, EnvoyFilters).
func Cluster(seed uint64) *Scenario {
	g := newG(seed, 1)
	w := &clusterWorld{
		svcNs:    pick(g, "default", "ns1"),
		clientNs: pick(g, "default", "ns1", "ns2"),
	}
	s := &Scenario{Seed: seed, Kind: "cluster"}
	for _, ns := range []string{"default", "ns1", "ns2", "istio-system"} {
		s.Docs = append(s.Docs, namespaceDoc(ns, nil))
	}
	clientLabels := map[string]any{"app": "client", "version": "v1"}
	if g.chance(0.9) {
		clientLabels["security.istio.io/tlsMode"] = "istio"
	}
	if g.chance(0.6) {
		clientLabels["topology.kubernetes.io/region"] = "region1"
		clientLabels["topology.kubernetes.io/zone"] = pick(g, "zone1", "zone2")
		if g.chance(0.5) {
			clientLabels["topology.istio.io/subzone"] = "subzone1"
		}
	}
	s.Docs = append(s.Docs, podDoc("client", w.clientNs, "10.244.9.2", clientLabels, nil, true, "client"))

	if g.chance(0.7) {
		s.Docs = append(s.Docs, genService(g, w)...)
	} else {
		s.Docs = append(s.Docs, genServiceEntry(g, w)...)
	}
	if g.chance(0.4) {
		s.Docs = append(s.Docs, genMeshConfig(g, w))
	}
	s.Docs = append(s.Docs, genDestinationRules(g, w)...)
	if g.chance(0.4) {
		s.Docs = append(s.Docs, genPeerAuthentications(g, w.svcNs, "svc", w.ports)...)
	}
	s.Docs = append(s.Docs, genClusterExtras(seed, w, s.Docs)...)
	s.Command, s.Title = clusterArgs(g, w), fmt.Sprintf("generated cluster scenario, seed %d", seed)
	if g.chance(0.2) {
		// The client is a gateway's pod: its istio-proxy runs as a router (drawn last, so the
		// rest of the scenario is what the seed gave before).
		asRouter(s.Docs, "client", w.clientNs)
	}
	return s
}

// asRouter makes the pod name/ns of docs a gateway's: an istio-proxy container that runs
// `proxy router`, as istiod's deployment controller and the gateway charts deploy it.
func asRouter(docs []map[string]any, name, ns string) {
	for _, d := range docs {
		m, _ := d["metadata"].(map[string]any)
		if d["kind"] != "Pod" || m["name"] != name || m["namespace"] != ns {
			continue
		}
		spec := d["spec"].(map[string]any)
		spec["containers"] = append(spec["containers"].([]any), map[string]any{
			"name": "istio-proxy", "image": "docker.io/istio/proxyv2:1.28.0",
			"args": []any{"proxy", "router", "--domain", "$(POD_NAMESPACE).svc.cluster.local"},
		})
	}
}

func clusterArgs(g *g, w *clusterWorld) string {
	var host, ns, from string
	switch pick(g, "pod", "pod", "pod", "namespace", "none") {
	case "pod":
		ns, from = w.clientNs, "--from pod/client"
	case "namespace":
		ns, from = pick(g, w.svcNs, w.clientNs), "--from namespace/"+w.clientNs
	default:
		ns = w.clientNs
	}
	if w.k8s {
		name := strings.SplitN(w.host, ".", 2)[0]
		switch {
		case ns == w.svcNs && g.chance(0.4):
			host = name
		case g.chance(0.5):
			host = name + "." + w.svcNs
		default:
			host = w.host
		}
	} else {
		host = w.host
	}
	parts := []string{"cluster", host, "-n", ns}
	if from != "" {
		parts = append(parts, from)
	}
	if len(w.ports) > 0 && g.chance(0.3) {
		parts = append(parts, "--port", fmt.Sprint(pick(g, w.ports...)))
	}
	if len(w.subsetsOfOnlyDR) > 0 && g.chance(0.25) {
		parts = append(parts, "--subset", pick(g, w.subsetsOfOnlyDR...))
	}
	return strings.Join(parts, " ")
}

func genService(g *g, w *clusterWorld) []map[string]any {
	w.k8s = true
	w.host = "svc." + w.svcNs + ".svc.cluster.local"
	nPorts := g.between(1, 3)
	nums := some(g, nPorts, nPorts, portNumbers...)
	var ports []any
	var cports []containerPort
	for i, n := range nums {
		p := map[string]any{"port": n}
		name := ""
		if nPorts > 1 || g.chance(0.8) {
			name = fmt.Sprintf("%s-p%d", pick(g, portNamePrefixes...), i)
			if g.chance(0.3) {
				name = pick(g, portNamePrefixes...)
				name = fmt.Sprintf("%s%d", strings.ReplaceAll(name, "-", ""), i)
			}
			p["name"] = name
		}
		if g.chance(0.25) {
			p["appProtocol"] = pick(g, appProtocols...)
		}
		target := n
		switch pick(g, "same", "same", "other", "named") {
		case "other":
			target = n + 1000
			p["targetPort"] = target
		case "named":
			p["targetPort"] = fmt.Sprintf("tp%d", i)
			cports = append(cports, containerPort{Name: fmt.Sprintf("tp%d", i), Port: n + 2000})
			target = -1
		}
		if target > 0 {
			cports = append(cports, containerPort{Port: target})
		}
		ports = append(ports, p)
		w.ports = append(w.ports, n)
	}
	spec := map[string]any{"selector": map[string]any{"app": "svc"}, "ports": ports}
	if g.chance(0.15) {
		spec["clusterIP"] = "None"
	} else {
		spec["clusterIP"] = "10.96.7.7"
	}
	docs := []map[string]any{{
		"apiVersion": "v1", "kind": "Service",
		"metadata": meta("svc", w.svcNs, "labels", map[string]any{"app": "svc"}),
		"spec":     spec,
	}}
	for i := 1; i <= g.between(1, 3); i++ {
		labels := map[string]any{"app": "svc", "version": fmt.Sprintf("v%d", i)}
		if g.chance(0.7) {
			labels["security.istio.io/tlsMode"] = "istio"
		}
		docs = append(docs, podDoc(fmt.Sprintf("svc-v%d", i), w.svcNs, fmt.Sprintf("10.244.1.%d", 10+i), labels, cports, g.chance(0.9), "svc"))
	}
	return docs
}

func genServiceEntry(g *g, w *clusterWorld) []map[string]any {
	resolution := pick(g, "STATIC", "DNS", "DNS", "DNS_ROUND_ROBIN", "NONE")
	host := "api.example.com"
	if resolution == "NONE" && g.chance(0.3) {
		host = "*.example.com"
	}
	w.host = host
	nPorts := g.between(1, 2)
	nums := some(g, nPorts, nPorts, portNumbers...)
	var ports []any
	for i, n := range nums {
		proto := pick(g, "HTTP", "HTTPS", "TLS", "TCP", "GRPC", "HTTP2", "MONGO")
		ports = append(ports, map[string]any{"number": n, "name": fmt.Sprintf("%s-%d", strings.ToLower(proto), i), "protocol": proto})
		w.ports = append(w.ports, n)
	}
	spec := map[string]any{
		"hosts":      []any{host},
		"location":   pick(g, "MESH_EXTERNAL", "MESH_INTERNAL"),
		"resolution": resolution,
		"ports":      ports,
	}
	if resolution == "NONE" || (resolution == "STATIC" && g.chance(0.3)) {
		spec["addresses"] = []any{"240.240.0.10"}
	}
	var eps []any
	switch resolution {
	case "STATIC":
		for i := 1; i <= g.between(0, 3); i++ {
			eps = append(eps, map[string]any{"address": fmt.Sprintf("10.10.0.%d", 20+i), "labels": map[string]any{"version": fmt.Sprintf("v%d", i)}})
		}
	case "DNS":
		if g.chance(0.6) {
			for i := 1; i <= g.between(1, 4); i++ {
				ep := map[string]any{"address": fmt.Sprintf("backend%d.example.net", i), "labels": map[string]any{"version": fmt.Sprintf("v%d", 1+i%3)}}
				if g.chance(0.5) {
					ep["locality"] = pick(g, localities...)
				}
				if g.chance(0.2) {
					ep["weight"] = pick(g, 1, 3, 10)
				}
				eps = append(eps, ep)
			}
		}
	case "DNS_ROUND_ROBIN":
		if g.chance(0.5) {
			eps = append(eps, map[string]any{"address": "backend1.example.net", "labels": map[string]any{"version": "v1"}})
		}
	}
	if len(eps) > 0 {
		spec["endpoints"] = eps
	}
	if g.chance(0.15) {
		spec["exportTo"] = exportTo(g, w.clientNs)
		w.exportedSE = true
	}
	m := meta("se", w.svcNs)
	if resolution == "DNS" && g.chance(0.1) {
		m["annotations"] = map[string]any{"istio.io/connect-strategy": "RACE_FIRST_TCP_CONNECT"}
	}
	return []map[string]any{{"apiVersion": "networking.istio.io/v1", "kind": "ServiceEntry", "metadata": m, "spec": spec}}
}

func genDestinationRules(g *g, w *clusterWorld) []map[string]any {
	n := pick(g, 0, 1, 1, 1, 2, 2, 3)
	ts := g.timestamps(n)
	if n >= 2 && g.chance(0.15) {
		ts[1] = ts[0]
	}
	var docs []map[string]any
	plain := 0
	var plainSubsets []string
	for i := 0; i < n; i++ {
		ns := pick(g, w.svcNs, w.svcNs, w.clientNs, "istio-system")
		var host string
		if w.k8s {
			name := "svc"
			switch {
			case ns == w.svcNs && g.chance(0.3):
				host = name
			case g.chance(0.1):
				host = "*." + w.svcNs + ".svc.cluster.local"
			case g.chance(0.05):
				host = name + "." + w.svcNs
			default:
				host = w.host
			}
		} else {
			host = w.host
			if g.chance(0.1) && !strings.HasPrefix(host, "*") {
				host = "*.example.com"
			}
		}
		spec := map[string]any{"host": host}
		if g.chance(0.75) {
			spec["trafficPolicy"] = genTrafficPolicy(g, w.ports, true)
		}
		var subsetNames []string
		if g.chance(0.5) {
			var subsets []any
			for j := 1; j <= g.between(1, 3); j++ {
				name := fmt.Sprintf("v%d", j)
				sub := map[string]any{"name": name}
				if g.chance(0.9) {
					sub["labels"] = map[string]any{"version": fmt.Sprintf("v%d", j)}
				}
				if g.chance(0.35) {
					sub["trafficPolicy"] = genTrafficPolicy(g, w.ports, true)
				}
				subsets = append(subsets, sub)
				subsetNames = append(subsetNames, name)
			}
			spec["subsets"] = subsets
		}
		selector := false
		if ns != "istio-system" && g.chance(0.15) {
			spec["workloadSelector"] = map[string]any{"matchLabels": map[string]any{"app": pick(g, "client", "other")}}
			selector = true
		}
		exported := false
		if g.chance(0.2) {
			spec["exportTo"] = exportTo(g, w.clientNs)
			exported = true
		}
		// A DR that certainly applies to the client: its --subset can be asked for.
		if ns == w.svcNs && !selector && !exported && !w.privateDRs && !w.exportedSE && (host == w.host || host == "svc") {
			plain++
			plainSubsets = subsetNames
		}
		docs = append(docs, map[string]any{
			"apiVersion": "networking.istio.io/v1", "kind": "DestinationRule",
			"metadata": meta(fmt.Sprintf("dr%d", i), ns, "creationTimestamp", ts[i]),
			"spec":     spec,
		})
	}
	if plain == 1 && n == 1 {
		seen := map[string]bool{}
		for _, s := range plainSubsets {
			if !seen[s] {
				seen[s] = true
				w.subsetsOfOnlyDR = append(w.subsetsOfOnlyDR, s)
			}
		}
		sort.Strings(w.subsetsOfOnlyDR)
	}
	return docs
}

// genTrafficPolicy returns a TrafficPolicy with a random selection of its blocks.
func genTrafficPolicy(g *g, ports []int, withPortLevel bool) map[string]any {
	tp := map[string]any{}
	if g.chance(0.45) {
		tp["connectionPool"] = genConnectionPool(g)
	}
	if g.chance(0.45) {
		tp["loadBalancer"] = genLoadBalancer(g)
	}
	if g.chance(0.4) {
		tp["outlierDetection"] = genOutlierDetection(g)
	}
	if g.chance(0.4) {
		tp["tls"] = genTLS(g)
	}
	if g.chance(0.1) {
		tp["proxyProtocol"] = map[string]any{"version": pick(g, "V1", "V2")}
	}
	if g.chance(0.1) {
		rb := map[string]any{}
		if g.chance(0.7) {
			rb["percent"] = pick(g, 10.0, 25.5, 50.0)
		}
		if g.chance(0.5) {
			rb["minRetryConcurrency"] = g.between(1, 10)
		}
		tp["retryBudget"] = rb
	}
	if len(tp) == 0 {
		tp["connectionPool"] = genConnectionPool(g)
	}
	if withPortLevel && len(ports) > 0 && g.chance(0.3) {
		var pls []any
		cands := append([]int{}, ports...)
		if g.chance(0.2) {
			cands = append(cands, 7777)
		}
		for _, p := range some(g, 1, 2, cands...) {
			pl := genTrafficPolicy(g, nil, false)
			delete(pl, "proxyProtocol")
			delete(pl, "retryBudget")
			pl["port"] = map[string]any{"number": p}
			pls = append(pls, pl)
		}
		tp["portLevelSettings"] = pls
	}
	return tp
}

func genConnectionPool(g *g) map[string]any {
	cp := map[string]any{}
	if g.chance(0.7) {
		tcp := map[string]any{}
		if g.chance(0.6) {
			tcp["maxConnections"] = pick(g, 1, 10, 100, 1024)
		}
		if g.chance(0.4) {
			tcp["connectTimeout"] = g.duration("1s", "250ms", "30s")
		}
		if g.chance(0.3) {
			ka := map[string]any{}
			if g.chance(0.6) {
				ka["probes"] = g.between(1, 9)
			}
			if g.chance(0.6) {
				ka["time"] = g.duration("10s", "7200s", "1m")
			}
			if g.chance(0.6) {
				ka["interval"] = g.duration("5s", "75s")
			}
			tcp["tcpKeepalive"] = ka
		}
		if g.chance(0.2) {
			tcp["maxConnectionDuration"] = g.duration("30m", "1h")
		}
		if len(tcp) == 0 || g.chance(0.2) {
			tcp["idleTimeout"] = g.duration("1h", "90s")
		}
		cp["tcp"] = tcp
	}
	if len(cp) == 0 || g.chance(0.7) {
		h := map[string]any{}
		if g.chance(0.4) {
			h["http1MaxPendingRequests"] = pick(g, 1, 100, 1024)
		}
		if g.chance(0.4) {
			h["http2MaxRequests"] = pick(g, 1, 100, 1000)
		}
		if g.chance(0.3) {
			h["maxRequestsPerConnection"] = pick(g, 1, 10)
		}
		if g.chance(0.3) {
			h["maxRetries"] = pick(g, 0, 3, 10)
		}
		if g.chance(0.3) {
			h["idleTimeout"] = g.duration("30s", "1h")
		}
		if g.chance(0.3) {
			h["h2UpgradePolicy"] = pick(g, "DEFAULT", "DO_NOT_UPGRADE", "UPGRADE")
		}
		if g.chance(0.2) {
			// useClientProtocol: true next to h2UpgradePolicy: UPGRADE is invalid.
			h["useClientProtocol"] = h["h2UpgradePolicy"] != "UPGRADE" && g.chance(0.5)
		}
		if len(h) == 0 || g.chance(0.2) {
			h["maxConcurrentStreams"] = pick(g, 10, 100)
		}
		cp["http"] = h
	}
	return cp
}

func genLoadBalancer(g *g) map[string]any {
	lb := map[string]any{}
	switch pick(g, "simple", "simple", "hash", "none") {
	case "simple":
		lb["simple"] = pick(g, "UNSPECIFIED", "ROUND_ROBIN", "LEAST_REQUEST", "RANDOM", "PASSTHROUGH", "LEAST_CONN")
	case "hash":
		ch := map[string]any{}
		switch pick(g, "header", "cookie", "ip", "query") {
		case "header":
			ch["httpHeaderName"] = "x-user"
		case "cookie":
			c := map[string]any{"name": "session"}
			if g.chance(0.6) {
				c["ttl"] = g.duration("0s", "60s")
			}
			if g.chance(0.3) {
				c["path"] = "/"
			}
			ch["httpCookie"] = c
		case "ip":
			ch["useSourceIp"] = true
		case "query":
			ch["httpQueryParameterName"] = "user"
		}
		switch pick(g, "none", "ring", "maglev", "legacy") {
		case "ring":
			ch["ringHash"] = map[string]any{"minimumRingSize": pick(g, 1024, 2048)}
		case "maglev":
			ch["maglev"] = map[string]any{"tableSize": pick(g, 65537, 131)}
		case "legacy":
			ch["minimumRingSize"] = 512
		}
		lb["consistentHash"] = ch
	}
	if g.chance(0.3) {
		ll := map[string]any{}
		switch pick(g, "distribute", "distribute", "failover", "enabled", "priority") {
		case "distribute":
			from := pick(g, "region1/zone1/*", "region1/zone1/subzone1", "region1/*", "region1/zone2/*")
			to := pick(g,
				map[string]any{"region1/zone1/*": 80, "region2/zone1/*": 20},
				map[string]any{"region1/zone1/subzone1": 50, "region1/zone2/*": 25, "region2/*": 25},
				map[string]any{"region2/zone1/subzone1": 100})
			ll["distribute"] = []any{map[string]any{"from": from, "to": to}}
		case "failover":
			ll["failover"] = []any{map[string]any{"from": "region1", "to": "region2"}}
		case "priority":
			ll["failoverPriority"] = []any{"topology.kubernetes.io/region", "topology.kubernetes.io/zone"}
		}
		if g.chance(0.5) {
			ll["enabled"] = pick(g, true, false)
		}
		lb["localityLbSetting"] = ll
	}
	if g.chance(0.15) {
		if g.chance(0.5) {
			lb["warmupDurationSecs"] = g.duration("30s", "120s")
		} else {
			wu := map[string]any{"duration": g.duration("45s", "90s")}
			if g.chance(0.5) {
				wu["minimumPercent"] = pick(g, 10.0, 25.0)
			}
			if g.chance(0.5) {
				wu["aggression"] = pick(g, 1.0, 2.0)
			}
			lb["warmup"] = wu
		}
	}
	return lb
}

func genOutlierDetection(g *g) map[string]any {
	od := map[string]any{}
	if g.chance(0.5) {
		od["consecutive5xxErrors"] = pick(g, 0, 1, 5)
	}
	if g.chance(0.3) {
		od["consecutiveGatewayErrors"] = pick(g, 0, 2, 7)
	}
	if g.chance(0.2) {
		od["splitExternalLocalOriginErrors"] = true
		if g.chance(0.7) {
			od["consecutiveLocalOriginFailures"] = pick(g, 1, 5)
		}
	}
	if g.chance(0.5) {
		od["interval"] = g.duration("1s", "10s", "1m")
	}
	if g.chance(0.4) {
		od["baseEjectionTime"] = g.duration("30s", "3m")
	}
	if g.chance(0.4) {
		od["maxEjectionPercent"] = pick(g, 10, 50, 100)
	}
	if g.chance(0.3) {
		od["minHealthPercent"] = pick(g, 0, 20, 50)
	}
	return od
}

func genTLS(g *g) map[string]any {
	mode := pick(g, "DISABLE", "SIMPLE", "MUTUAL", "ISTIO_MUTUAL", "ISTIO_MUTUAL")
	t := map[string]any{"mode": mode}
	switch mode {
	case "SIMPLE", "MUTUAL":
		if mode == "MUTUAL" || g.chance(0.5) {
			if g.chance(0.3) {
				t["credentialName"] = "client-cred"
			} else {
				if mode == "MUTUAL" {
					t["clientCertificate"] = "/etc/certs/cert.pem"
					t["privateKey"] = "/etc/certs/key.pem"
				}
				if g.chance(0.6) {
					t["caCertificates"] = "/etc/certs/ca.pem"
				}
			}
		}
		if g.chance(0.4) {
			t["subjectAltNames"] = []any{"api.example.com"}
		}
		if g.chance(0.2) {
			// insecureSkipVerify: true excludes caCertificates and subjectAltNames.
			_, ca := t["caCertificates"]
			_, san := t["subjectAltNames"]
			t["insecureSkipVerify"] = !ca && !san && g.chance(0.7)
		}
		if g.chance(0.4) {
			t["sni"] = "sni.example.com"
		}
	case "ISTIO_MUTUAL":
		if g.chance(0.3) {
			t["sni"] = "custom.sni"
		}
		if g.chance(0.2) {
			t["subjectAltNames"] = []any{"spiffe://cluster.local/ns/default/sa/svc"}
		}
	}
	return t
}

func genMeshConfig(g *g, w *clusterWorld) map[string]any {
	var lines []string
	if g.chance(0.4) {
		lines = append(lines, "connectTimeout: "+g.duration("1s", "5s", "30s"))
	}
	if g.chance(0.3) {
		lines = append(lines, "enableAutoMtls: "+pick(g, "true", "false"))
	}
	if g.chance(0.3) {
		lines = append(lines, "h2UpgradePolicy: "+pick(g, "UPGRADE", "DO_NOT_UPGRADE"))
	}
	if g.chance(0.3) {
		lines = append(lines, "outboundClusterStatName: "+pick(g, `"%SERVICE%_%SERVICE_PORT_NAME%"`, `"%SERVICE_FQDN%|%SERVICE_PORT%|%SUBSET_NAME%"`, `"%SERVICE_NAME%.%SERVICE_NAMESPACE%"`))
	}
	if g.chance(0.3) {
		lines = append(lines, "tcpKeepalive:", "  probes: 3", "  time: "+g.duration("60s", "10s"))
	}
	if g.chance(0.3) {
		lines = append(lines, "localityLbSetting:", "  enabled: "+pick(g, "true", "true", "false"))
		switch pick(g, "none", "distribute", "failover") {
		case "distribute":
			lines = append(lines, "  distribute:", "  - from: "+pick(g, "region1/zone1/*", "region1/zone1/subzone1", "region1/*"),
				"    to:", `      "region1/zone1/*": 50`, `      "region2/zone1/subzone1": 50`)
		case "failover":
			lines = append(lines, "  failover:", "  - from: region1", "    to: region2")
		}
	}
	if g.chance(0.2) {
		v := pick(g, `"."`, `"*"`)
		lines = append(lines, "defaultDestinationRuleExportTo: ["+v+"]")
		w.privateDRs = v == `"."`
	}
	if g.chance(0.3) {
		lines = append(lines, "defaultTrafficPolicy:")
		if g.chance(0.7) {
			lines = append(lines, "  connectionPool:", "    tcp:", fmt.Sprintf("      maxConnections: %d", pick(g, 5, 50)), "    http:", "      http2MaxRequests: 77")
		}
		if g.chance(0.6) {
			lines = append(lines, "  outlierDetection:", fmt.Sprintf("    consecutive5xxErrors: %d", pick(g, 2, 9)), "    interval: 7s")
		}
	}
	if g.chance(0.1) {
		lines = append(lines, "trustDomain: example.org")
	}
	if len(lines) == 0 {
		lines = append(lines, "connectTimeout: 3s")
	}
	return meshConfigDoc(strings.Join(lines, "\n") + "\n")
}

// exportTo returns a valid exportTo: "*" alone, or namespaces and ".".
func exportTo(g *g, clientNs string) []any {
	if g.chance(0.25) {
		return []any{"*"}
	}
	return anyList(some(g, 1, 2, ".", "ns2", clientNs, "istio-system"))
}

var mtlsModes = []string{"UNSET", "STRICT", "PERMISSIVE", "DISABLE"}

// genPeerAuthentications returns PeerAuthentications in ns (namespace and workload level, the
// workload ones selecting app=appLabel) and in istio-system, with distinct creationTimestamps.
func genPeerAuthentications(g *g, ns, appLabel string, ports []int) []map[string]any {
	n := g.between(1, 4)
	ts := g.timestamps(n)
	var docs []map[string]any
	for i := 0; i < n; i++ {
		pns := pick(g, ns, ns, "istio-system")
		spec := map[string]any{}
		mode := pick(g, mtlsModes...)
		if mode != "UNSET" || g.chance(0.5) {
			spec["mtls"] = map[string]any{"mode": mode}
		}
		if pns != "istio-system" && g.chance(0.5) {
			lbls := map[string]any{"app": appLabel}
			if g.chance(0.2) {
				lbls = map[string]any{"app": "other"}
			}
			spec["selector"] = map[string]any{"matchLabels": lbls}
			if len(ports) > 0 && g.chance(0.6) {
				pl := map[string]any{}
				for _, p := range some(g, 1, 2, ports...) {
					pl[fmt.Sprint(p)] = map[string]any{"mode": pick(g, mtlsModes...)}
				}
				spec["portLevelMtls"] = pl
			}
		}
		docs = append(docs, map[string]any{
			"apiVersion": "security.istio.io/v1", "kind": "PeerAuthentication",
			"metadata": meta(fmt.Sprintf("pa%d", i), pns, "creationTimestamp", ts[i]),
			"spec":     spec,
		})
	}
	return docs
}
