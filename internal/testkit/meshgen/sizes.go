// Package meshgen generates a synthetic Istio mesh for the benchmarks and for the tests that
// need a large mesh: Namespaces, Services, Pods with labels and IPs, DestinationRules,
// VirtualServices, PeerAuthentications, AuthorizationPolicies and ambient waypoints (Gateways
// of class istio-waypoint with their Service and pod, and AuthorizationPolicies attached to
// them by targetRefs), seeded and reproducible.
//
// Every object is a function of the seed, its kind and its index only, so a mesh of a smaller
// size is a prefix of a mesh of a larger size: growing a cluster from one size to the next only
// adds objects. The same objects go to a live API server (hack/meshgen load) and to files
// (hack/meshgen files, WriteFiles) so live and offline runs explain the same mesh.
package meshgen

import (
	"fmt"
	"math"
)

// Sizes are the object counts of a generated mesh.
type Sizes struct {
	Namespaces            int
	Services              int
	Pods                  int
	DestinationRules      int
	VirtualServices       int
	PeerAuthentications   int
	AuthorizationPolicies int
	// Waypoints are the ambient waypoints, one per ambient namespace in namespace order (at
	// most AmbientNamespaces): a Gateway of class istio-waypoint named WaypointName, programmed
	// (status.addresses), with the Service and the pod istiod deploys for it. Every other
	// Service of the namespace (the second, fourth, ... by index) binds to it with
	// istio.io/use-waypoint.
	Waypoints int
	// WaypointPolicies are the AuthorizationPolicies attached to the waypoints by targetRefs,
	// spread over the waypoints in turn: per waypoint, ALLOWs of the Gateway itself, and ALLOWs
	// and DENYs of its bound Services, with HTTP rules.
	WaypointPolicies int
}

// Full is the size the benchmark targets: 10,000 Services over 100 namespaces, 20,000 Pods,
// 5,000 DestinationRules, 2,000 PeerAuthentications, 1,000 AuthorizationPolicies and 1,000
// VirtualServices, and a waypoint in each of the 25 ambient namespaces with 1,000
// AuthorizationPolicies attached by targetRefs (40 per waypoint, which serves the 50 Services of
// its namespace that bind to it).
func Full() Sizes {
	return Sizes{
		Namespaces:            100,
		Services:              10000,
		Pods:                  20000,
		DestinationRules:      5000,
		VirtualServices:       1000,
		PeerAuthentications:   2000,
		AuthorizationPolicies: 1000,
		Waypoints:             AmbientNamespaces(100),
		WaypointPolicies:      1000,
	}
}

// Scaled is Full with every count but Namespaces and Waypoints (one per ambient namespace)
// multiplied by f, keeping Full's ratios exactly (two Pods per Service, one DestinationRule per
// two Services, ...), so that the references between objects stay inside the mesh.
func Scaled(f float64) Sizes {
	s := Full()
	svc := int(math.Round(float64(s.Services) * f))
	return Sizes{
		Namespaces:            s.Namespaces,
		Services:              svc,
		Pods:                  2 * svc,
		DestinationRules:      svc / 2,
		VirtualServices:       svc / 10,
		PeerAuthentications:   svc / 5,
		AuthorizationPolicies: svc / 10,
		Waypoints:             s.Waypoints,
		WaypointPolicies:      svc / 10,
	}
}

// AmbientNamespaces is the number of ambient namespaces (Ambient) among n namespaces.
func AmbientNamespaces(n int) int { return (n + 1) / 4 }

// MaxWaypoints is the largest Waypoints count: their cluster IPs are 10.96.255.1 and up.
const MaxWaypoints = 250

// MaxServices is the largest Services count: cluster IPs are taken from 10.96.0.0/16.
const MaxServices = 250 * 254

// Validate checks that the sizes make a mesh the benchmark queries can run on.
func (s Sizes) Validate() error {
	switch {
	case s.Namespaces < 3:
		return fmt.Errorf("at least 3 namespaces are needed (the queries use three), got %d", s.Namespaces)
	case s.Services < 3:
		return fmt.Errorf("at least 3 services are needed (the queries use three), got %d", s.Services)
	case s.Services > MaxServices:
		return fmt.Errorf("at most %d services fit the service CIDR 10.96.0.0/16, got %d", MaxServices, s.Services)
	case s.Pods < 2*3:
		return fmt.Errorf("at least 6 pods are needed (the queries use the pods of three services), got %d", s.Pods)
	case s.Pods > 1<<20:
		return fmt.Errorf("at most %d pods fit the pod CIDR 10.16.0.0/12, got %d", 1<<20, s.Pods)
	case s.DestinationRules < 0 || s.VirtualServices < 0 || s.PeerAuthentications < 0 || s.AuthorizationPolicies < 0 || s.WaypointPolicies < 0:
		return fmt.Errorf("object counts cannot be negative")
	case s.Waypoints < 1:
		return fmt.Errorf("at least 1 waypoint is needed (the queries use one), got %d", s.Waypoints)
	case s.Waypoints > AmbientNamespaces(s.Namespaces):
		return fmt.Errorf("at most one waypoint per ambient namespace: %d namespaces have %d, got %d waypoints",
			s.Namespaces, AmbientNamespaces(s.Namespaces), s.Waypoints)
	case s.Waypoints > MaxWaypoints:
		return fmt.Errorf("at most %d waypoints fit 10.96.255.0/24, got %d", MaxWaypoints, s.Waypoints)
	}
	return nil
}

// PodsPerNode is how many Pods share a Node: Pod p runs on Node p/PodsPerNode.
const PodsPerNode = 100

// Nodes is the number of Nodes the Pods run on.
func (s Sizes) Nodes() int { return (s.Pods + PodsPerNode - 1) / PodsPerNode }

// Total is the number of objects the sizes stand for, the root namespace, the Nodes, the
// Namespaces, the mesh ConfigMap and each waypoint's Gateway, Service and pod included.
func (s Sizes) Total() int {
	return 1 + s.Namespaces + s.Nodes() + 1 + s.Services + s.Pods + s.DestinationRules + s.VirtualServices +
		s.PeerAuthentications + s.AuthorizationPolicies + 3*s.Waypoints + s.WaypointPolicies
}

// String spells the sizes as the benchmark tables do.
func (s Sizes) String() string {
	return fmt.Sprintf("%d namespaces, %d Services, %d Pods on %d Nodes, %d DestinationRules, %d VirtualServices, %d PeerAuthentications, %d AuthorizationPolicies, %d waypoints with %d AuthorizationPolicies by targetRef",
		s.Namespaces, s.Services, s.Pods, s.Nodes(), s.DestinationRules, s.VirtualServices, s.PeerAuthentications, s.AuthorizationPolicies,
		s.Waypoints, s.WaypointPolicies)
}
