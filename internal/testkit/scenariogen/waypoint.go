package scenariogen

import (
	"fmt"
	"strings"
)

// Waypoint generates an `authz waypoint/waypoint -n foo` scenario: an ambient waypoint (a
// Gateway of class istio-waypoint, sometimes without status.addresses, for service, workload or
// all traffic, sometimes accepting routes from every namespace; its Service and an instance, Pod
// or WorkloadEntry), Services and a ServiceEntry with random ports and protocols, bound to it by
// istio.io/use-waypoint on the namespace, the Service or the pod (or opted out with `none`, or
// naming another waypoint), a Service of another namespace bound through
// istio.io/use-waypoint-namespace, and AuthorizationPolicies of every action attached by every
// targetRef kind (Gateway, Service, ServiceEntry, GatewayClass from the root namespace and from
// elsewhere, names that exist and names that do not), plus selector and namespace-wide ones
// that a waypoint ignores, with the sidecar generator's rules; CUSTOM providers from MeshConfig
// or missing; sometimes PeerAuthentications.
func Waypoint(seed uint64) *Scenario {
	g := newG(seed, 4)
	s := &Scenario{Seed: seed, Kind: "waypoint", Title: fmt.Sprintf("generated waypoint authz scenario, seed %d", seed),
		Command: "authz waypoint/waypoint -n foo"}

	useWaypoint := func(l map[string]any) map[string]any {
		if l == nil {
			l = map[string]any{}
		}
		l["istio.io/use-waypoint"] = pick(g, "waypoint", "waypoint", "waypoint", "none", "other")
		return l
	}
	ambient := func() map[string]any { return map[string]any{"istio.io/dataplane-mode": "ambient"} }
	foo, bar := ambient(), ambient()
	if g.chance(0.4) {
		useWaypoint(foo)
	}
	if g.chance(0.3) {
		bar["istio.io/use-waypoint"] = "waypoint"
		bar["istio.io/use-waypoint-namespace"] = "foo"
	}
	s.Docs = append(s.Docs, namespaceDoc("foo", foo), namespaceDoc("bar", bar), namespaceDoc("istio-system", nil))

	s.Docs = append(s.Docs, genWaypointGateway(g)...)

	// Services in foo on the pod's ports, some bound by their own label.
	ports := []containerPort{{Name: "http", Port: 8080}, {Name: "tcp", Port: 9090}, {Name: "admin", Port: 7070}}
	nSvc := g.between(1, 3)
	ts := g.timestamps(nSvc + 1)
	var services []string
	for i := 0; i < nSvc; i++ {
		name := fmt.Sprintf("svc%d", i)
		services = append(services, name)
		m := meta(name, "foo", "creationTimestamp", ts[i])
		if g.chance(0.5) {
			m["labels"] = useWaypoint(nil)
		}
		s.Docs = append(s.Docs, map[string]any{
			"apiVersion": "v1", "kind": "Service", "metadata": m,
			"spec": map[string]any{"selector": map[string]any{"app": "a"}, "ports": genServicePorts(g, ports)},
		})
	}
	if g.chance(0.5) {
		// A Service of bar that names the waypoint of foo.
		l := map[string]any{}
		if g.chance(0.7) {
			l["istio.io/use-waypoint"] = "waypoint"
			l["istio.io/use-waypoint-namespace"] = "foo"
		}
		m := meta("svc-bar", "bar", "creationTimestamp", ts[nSvc])
		if len(l) > 0 {
			m["labels"] = l
		}
		s.Docs = append(s.Docs, map[string]any{
			"apiVersion": "v1", "kind": "Service", "metadata": m,
			"spec": map[string]any{"selector": map[string]any{"app": "b"}, "ports": genServicePorts(g, ports)},
		})
	}
	hasSE := g.chance(0.4)
	if hasSE {
		s.Docs = append(s.Docs, genWaypointServiceEntry(g))
	}

	aLabels := map[string]any{"app": "a", "version": "v1"}
	if g.chance(0.25) {
		useWaypoint(aLabels)
	}
	s.Docs = append(s.Docs,
		podDoc("a", "foo", "10.244.1.10", aLabels, ports, true, "a"),
		podDoc("b", "bar", "10.244.2.10", map[string]any{"app": "b"}, ports, true, "b"))

	extDocs, providers := genExtAuthz(g)
	s.Docs = append(s.Docs, extDocs...)
	if len(providers) > 0 || g.chance(0.2) {
		var m strings.Builder
		if len(providers) > 0 {
			m.WriteString(yamlOf(map[string]any{"extensionProviders": providers}))
		}
		if g.chance(0.3) {
			m.WriteString("trustDomain: example.org\n")
		}
		s.Docs = append(s.Docs, meshConfigDoc(m.String()))
	}
	if g.chance(0.3) {
		s.Docs = append(s.Docs, genSidecarPeerAuthentications(g)...)
	}
	if g.chance(0.9) {
		s.Docs = append(s.Docs, genWaypointAuthorizationPolicies(g, services, hasSE)...)
	}
	return s
}

// genWaypointGateway returns the waypoint Gateway foo/waypoint, its Service and its instance.
func genWaypointGateway(g *g) []map[string]any {
	const ip = "10.96.200.1"
	gwLabel := "gateway.networking.k8s.io/gateway-name"
	gm := meta("waypoint", "foo")
	if f := pick(g, "", "", "", "service", "workload", "all"); f != "" {
		gm["labels"] = map[string]any{"istio.io/waypoint-for": f}
	}
	listener := map[string]any{"name": "mesh", "port": 15008, "protocol": "HBONE"}
	if g.chance(0.4) {
		listener["allowedRoutes"] = map[string]any{"namespaces": map[string]any{"from": pick(g, "All", "All", "Same")}}
	}
	gw := map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": gm,
		"spec": map[string]any{"gatewayClassName": "istio-waypoint", "listeners": []any{listener}},
	}
	if g.chance(0.9) {
		addr := pick(g,
			map[string]any{"type": "IPAddress", "value": ip},
			map[string]any{"type": "IPAddress", "value": ip},
			map[string]any{"type": "Hostname", "value": "waypoint.foo.svc.cluster.local"})
		gw["status"] = map[string]any{"addresses": []any{addr}}
	}
	labels := map[string]any{gwLabel: "waypoint", "gateway.istio.io/managed": "istio.io-mesh-controller"}
	svc := map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": meta("waypoint", "foo", "labels", labels),
		"spec": map[string]any{"clusterIP": ip, "selector": map[string]any{gwLabel: "waypoint"},
			"ports": []any{map[string]any{"name": "mesh", "port": 15008, "appProtocol": "hbone"}}},
	}
	var inst map[string]any
	if g.chance(0.8) {
		inst = podDoc("waypoint-5c7d8f9b6-x2k4p", "foo", "10.244.1.100", map[string]any{gwLabel: "waypoint", "gateway.istio.io/managed": "istio.io-mesh-controller"}, nil, true, "waypoint")
	} else {
		inst = map[string]any{
			"apiVersion": "networking.istio.io/v1", "kind": "WorkloadEntry",
			"metadata": meta("waypoint-a", "foo"),
			"spec":     map[string]any{"address": "10.244.1.100", "labels": map[string]any{gwLabel: "waypoint"}},
		}
	}
	return []map[string]any{gw, svc, inst}
}

// genWaypointServiceEntry returns ServiceEntry foo/se0 for a.example.com, mostly bound to the
// waypoint.
func genWaypointServiceEntry(g *g) map[string]any {
	m := meta("se0", "foo")
	if g.chance(0.7) {
		m["labels"] = map[string]any{"istio.io/use-waypoint": "waypoint"}
	}
	var ports []any
	for _, p := range some(g, 1, 3,
		map[string]any{"number": 80, "name": "http", "protocol": "HTTP"},
		map[string]any{"number": 9090, "name": "tcp", "protocol": "TCP"},
		map[string]any{"number": 8080, "name": "grpc", "protocol": "GRPC"},
		map[string]any{"number": 7070, "name": "auto"}) {
		ports = append(ports, p)
	}
	spec := map[string]any{"hosts": []any{"a.example.com"}, "ports": ports}
	if g.chance(0.7) {
		spec["addresses"] = []any{"240.240.0.1"}
	}
	if g.chance(0.6) {
		spec["resolution"] = "STATIC"
		spec["endpoints"] = []any{map[string]any{"address": "192.0.2.10"}}
	} else {
		spec["resolution"] = "DNS"
	}
	spec["location"] = pick(g, "MESH_EXTERNAL", "MESH_INTERNAL")
	return map[string]any{"apiVersion": "networking.istio.io/v1", "kind": "ServiceEntry", "metadata": m, "spec": spec}
}

// genWaypointAuthorizationPolicies returns one to five policies in foo, bar or the root
// namespace: attached by targetRefs (one or two, of every kind, to objects that exist and ones
// that do not), or by a selector or nothing (which a waypoint ignores).
func genWaypointAuthorizationPolicies(g *g, services []string, hasSE bool) []map[string]any {
	gatewayRef := func(name string) map[string]any {
		return map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": name}
	}
	refs := []map[string]any{
		gatewayRef("waypoint"), gatewayRef("waypoint"), gatewayRef("waypoint"), gatewayRef("other"),
		{"group": "gateway.networking.k8s.io", "kind": "GatewayClass", "name": "istio-waypoint"},
		{"group": "", "kind": "Service", "name": "missing"},
		{"group": "networking.istio.io", "kind": "ServiceEntry", "name": "se0"},
	}
	for _, svc := range services {
		refs = append(refs, map[string]any{"group": "", "kind": "Service", "name": svc}, map[string]any{"group": "", "kind": "Service", "name": svc})
	}
	if hasSE {
		refs = append(refs, map[string]any{"group": "networking.istio.io", "kind": "ServiceEntry", "name": "se0"})
	}
	n := g.between(1, 5)
	var docs []map[string]any
	for i := 0; i < n; i++ {
		ns := pick(g, "foo", "foo", "foo", "foo", "istio-system", "bar")
		docs = append(docs, genPolicy(g, fmt.Sprintf("ap%d", i), ns, func(spec map[string]any) {
			switch pick(g, "targetRefs", "targetRefs", "targetRefs", "targetRefs", "targetRefs", "two", "selector", "none") {
			case "targetRefs":
				spec["targetRefs"] = []any{pick(g, refs...)}
			case "two":
				a, b := pick(g, refs...), pick(g, refs...)
				if a["kind"] == b["kind"] && a["name"] == b["name"] {
					spec["targetRefs"] = []any{a}
				} else {
					spec["targetRefs"] = []any{a, b}
				}
			case "selector":
				spec["selector"] = map[string]any{"matchLabels": pick(g,
					map[string]any{"app": "a"},
					map[string]any{"gateway.networking.k8s.io/gateway-name": "waypoint"})}
			}
		}))
	}
	return docs
}
