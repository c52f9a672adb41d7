package scenariogen

import "fmt"

// extrasStream is the random stream of the objects genClusterExtras adds, apart from the
// stream of the rest of a cluster scenario: a seed keeps the Service, ServiceEntry and
// DestinationRules it always had.
const extrasStream = 11

// genClusterExtras adds what a cluster scenario can also hold beside the host and its rules:
// VirtualServices that route to the host (their subsets, other namespaces, exportTo), a Sidecar
// of the client namespace (egress hosts that import the host or not, the outbound traffic
// policy), WorkloadEntries that a ServiceEntry selects, and EnvoyFilters that patch listeners
// and HTTP filters (never Clusters, which the plugin does not apply and says so). docs are the
// scenario's documents so far; a ServiceEntry without endpoints may get a workloadSelector.
func genClusterExtras(seed uint64, w *clusterWorld, docs []map[string]any) []map[string]any {
	g := newG(seed, extrasStream)
	var out []map[string]any
	for i := 0; i < pick(g, 0, 0, 1, 1, 2); i++ {
		out = append(out, genVirtualService(g, w, i))
	}
	if g.chance(0.3) {
		out = append(out, genSidecarResource(g, w))
	}
	if !w.k8s && g.chance(0.5) {
		out = append(out, genWorkloadEntries(g, w, docs)...)
	}
	if g.chance(0.15) {
		out = append(out, genEnvoyFilter(g, w))
	}
	return out
}

// genVirtualService routes the host (by short name, FQDN or a wildcard) to its subsets, to a
// subset no DestinationRule defines, or to its ports, over HTTP or TCP.
func genVirtualService(g *g, w *clusterWorld, i int) map[string]any {
	ns := pick(g, w.svcNs, w.svcNs, w.clientNs, "istio-system")
	host := w.host
	if w.k8s && ns == w.svcNs && g.chance(0.3) {
		host = "svc"
	}
	dest := func() map[string]any {
		d := map[string]any{"host": host}
		if g.chance(0.6) {
			subsets := append([]string{"v9"}, w.subsetsOfOnlyDR...)
			subsets = append(subsets, "v1", "v2")
			d["subset"] = pick(g, subsets...)
		}
		if len(w.ports) > 1 && g.chance(0.4) {
			d["port"] = map[string]any{"number": pick(g, w.ports...)}
		}
		return d
	}
	spec := map[string]any{"hosts": []any{host}}
	if g.chance(0.3) {
		var tcp []any
		tcp = append(tcp, map[string]any{"route": []any{map[string]any{"destination": dest()}}})
		spec["tcp"] = tcp
	} else {
		var routes []any
		for j := 0; j < g.between(1, 2); j++ {
			routes = append(routes, map[string]any{"destination": dest(), "weight": 50})
		}
		if len(routes) == 1 {
			delete(routes[0].(map[string]any), "weight")
		}
		http := map[string]any{"route": routes}
		if g.chance(0.3) {
			http["match"] = []any{map[string]any{"uri": map[string]any{"prefix": "/api"}}}
		}
		spec["http"] = []any{http}
	}
	if g.chance(0.2) {
		// One entry: "." and the namespace's own name together are a duplicate to Istio.
		spec["exportTo"] = []any{pick(g, ".", "*", w.clientNs)}
	}
	return map[string]any{
		"apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
		"metadata": meta(fmt.Sprintf("vs%d", i), ns),
		"spec":     spec,
	}
}

// genSidecarResource is the default Sidecar of the client namespace: its egress hosts import the
// host's namespace, every namespace, only the client's own, or the host alone.
func genSidecarResource(g *g, w *clusterWorld) map[string]any {
	var hosts []any
	switch pick(g, "own", "all", "svcns", "host") {
	case "own":
		hosts = []any{"./*", "istio-system/*"}
	case "all":
		hosts = []any{"*/*"}
	case "svcns":
		hosts = []any{w.svcNs + "/*"}
	default:
		hosts = []any{"*/" + w.host}
	}
	spec := map[string]any{"egress": []any{map[string]any{"hosts": hosts}}}
	if g.chance(0.3) {
		spec["outboundTrafficPolicy"] = map[string]any{"mode": pick(g, "REGISTRY_ONLY", "ALLOW_ANY")}
	}
	return map[string]any{
		"apiVersion": "networking.istio.io/v1", "kind": "Sidecar",
		"metadata": meta("default", w.clientNs),
		"spec":     spec,
	}
}

// genWorkloadEntries gives a ServiceEntry that has no endpoints a workloadSelector and the
// WorkloadEntries it selects (with a version label for the subsets, a locality, a weight).
func genWorkloadEntries(g *g, w *clusterWorld, docs []map[string]any) []map[string]any {
	var se map[string]any
	for _, d := range docs {
		if d["kind"] == "ServiceEntry" {
			se = d
		}
	}
	if se == nil {
		return nil
	}
	spec := se["spec"].(map[string]any)
	if _, has := spec["endpoints"]; has || spec["resolution"] == "DNS_ROUND_ROBIN" {
		return nil
	}
	spec["workloadSelector"] = map[string]any{"labels": map[string]any{"app": "se-backend"}}
	var out []map[string]any
	for i := 1; i <= g.between(1, 3); i++ {
		labels := map[string]any{"app": "se-backend", "version": fmt.Sprintf("v%d", i)}
		if g.chance(0.5) {
			labels["security.istio.io/tlsMode"] = "istio"
		}
		we := map[string]any{"address": fmt.Sprintf("10.10.1.%d", 10+i), "labels": labels}
		if g.chance(0.4) {
			we["locality"] = pick(g, localities...)
		}
		if g.chance(0.2) {
			we["weight"] = pick(g, 1, 5)
		}
		out = append(out, map[string]any{
			"apiVersion": "networking.istio.io/v1", "kind": "WorkloadEntry",
			"metadata": meta(fmt.Sprintf("we%d", i), w.svcNs, "labels", map[string]any{"app": "se-backend"}),
			"spec":     we,
		})
	}
	return out
}

// genEnvoyFilter patches the listeners or the HTTP filters of the client's proxy: the
// Clusters of the answer stay as they are.
func genEnvoyFilter(g *g, w *clusterWorld) map[string]any {
	ns := pick(g, "istio-system", w.clientNs)
	var patch map[string]any
	if g.chance(0.5) {
		patch = map[string]any{
			"applyTo": "LISTENER",
			"match":   map[string]any{"context": "SIDECAR_OUTBOUND"},
			"patch":   map[string]any{"operation": "MERGE", "value": map[string]any{"per_connection_buffer_limit_bytes": 32768}},
		}
	} else {
		patch = map[string]any{
			"applyTo": "HTTP_FILTER",
			"match": map[string]any{"context": "SIDECAR_INBOUND", "listener": map[string]any{"filterChain": map[string]any{"filter": map[string]any{
				"name": "envoy.filters.network.http_connection_manager", "subFilter": map[string]any{"name": "envoy.filters.http.router"}}}}},
			"patch": map[string]any{"operation": "INSERT_BEFORE", "value": map[string]any{
				"name": "envoy.filters.http.buffer",
				"typed_config": map[string]any{
					"@type":             "type.googleapis.com/envoy.extensions.filters.http.buffer.v3.Buffer",
					"max_request_bytes": 1024,
				},
			}},
		}
	}
	return map[string]any{
		"apiVersion": "networking.istio.io/v1alpha3", "kind": "EnvoyFilter",
		"metadata": meta("ef", ns),
		"spec":     map[string]any{"configPatches": []any{patch}},
	}
}
