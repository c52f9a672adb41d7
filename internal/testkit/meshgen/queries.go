package meshgen

import "slices"

// Queries are the questions the benchmark asks of a generated mesh. They exist at every size.
type Queries struct {
	// Host is the Service host of `cluster`: Service 0, which has four DestinationRules (two
	// merged in its namespace, a private one in the client namespace, a workloadSelector one),
	// the root-namespace rule, a VirtualService, and HTTP, gRPC and database ports.
	Host string
	// ClientNamespace and ClientPod are the client sidecar of `cluster` (--from pod/NAME): a
	// replica of Service 1, in the namespace where the private rule for Host lives.
	ClientNamespace string
	ClientPod       string
	// ClusterNodes are the Nodes whose locality `cluster` needs: the client pod's and those of
	// the pods of Host's Service. The plugin gets them by name once it has read the pods.
	ClusterNodes []string
	// AuthzNamespace and AuthzPod are the ambient pod of `authz`: a replica of Service 2, with a
	// namespace-wide and a workload PeerAuthentication and several AuthorizationPolicies.
	AuthzNamespace string
	AuthzPod       string
	// WaypointNamespace and WaypointName are the waypoint of `authz waypoint/NAME`: the first
	// ambient namespace's (AuthzNamespace), which serves every other Service of its namespace
	// (at 100 namespaces, Services 102, 302, 502, ...; not Service 2, AuthzPod's) and has the
	// waypoint policies 0, Waypoints, 2·Waypoints, ... attached by targetRefs (the Gateway
	// itself, bound Services; ALLOW and DENY, with HTTP rules).
	WaypointNamespace string
	WaypointName      string
}

// Queries returns the benchmark questions of the mesh.
func (m *Mesh) Queries() Queries {
	g := &generator{seed: m.Config.Seed, s: m.Config.Sizes}
	return Queries{
		Host:            g.fqdn(0),
		ClientNamespace: NamespaceName(g.nsOf(1)),
		ClientPod:       g.podName(2),
		ClusterNodes:    nodeNames(2, 0, 1),
		AuthzNamespace:  NamespaceName(g.nsOf(2)),
		AuthzPod:        g.podName(4),

		WaypointNamespace: NamespaceName(waypointNamespace(0)),
		WaypointName:      WaypointName,
	}
}

// ClusterArgs is the `cluster` command line (after the plugin name), without -f or a kubeconfig.
func (q Queries) ClusterArgs() []string {
	return []string{"cluster", q.Host, "-n", q.ClientNamespace, "--from", "pod/" + q.ClientPod}
}

// SidecarAuthzArgs is the `authz` command line of a sidecar pod: the client pod of `cluster`,
// whose namespace is outside ambient.
func (q Queries) SidecarAuthzArgs() []string {
	return []string{"authz", "pod/" + q.ClientPod, "-n", q.ClientNamespace}
}

// AuthzArgs is the `authz` command line (after the plugin name), without -f or a kubeconfig.
func (q Queries) AuthzArgs() []string {
	return []string{"authz", "pod/" + q.AuthzPod, "-n", q.AuthzNamespace}
}

// WaypointAuthzArgs is the `authz waypoint/NAME` command line, without -f or a kubeconfig.
func (q Queries) WaypointAuthzArgs() []string {
	return []string{"authz", "waypoint/" + q.WaypointName, "-n", q.WaypointNamespace}
}

// QueriesFor returns the benchmark questions of the mesh c describes, without generating it.
func QueriesFor(c Config) Queries {
	return (&Mesh{Config: c}).Queries()
}

// nodeNames returns the names of the Nodes of Pods ps, sorted, without duplicates.
func nodeNames(ps ...int) []string {
	var out []string
	for _, p := range ps {
		n := NodeName(nodeOf(p))
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}
