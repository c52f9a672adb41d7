// Package index is the lookup layer over a model.Snapshot for the cluster engine: services by
// host (Kubernetes Services and ServiceEntries, with ports, resolution and endpoints), the
// client proxy, the services in a proxy's scope, DestinationRule selection and merging exactly as
// istiod's PushContext does it, and VirtualService subset references.
//
// It owns: the registry view (Service, Port, Endpoint), Proxy, ConsolidatedRule, Selection.
// It may import: model, explain, provenance, istio.io/api and client-go types, k8s.io/api types.
// It must not import cli, render, source, engines, cobra, lipgloss or client-go clients.
// Reference: shared/spec/cluster.md §1–§2 and §7; istio.io/istio pilot/pkg/model wins on conflicts.
package index

import (
	"time"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// Resolution is istiod's model.Resolution of a service.
type Resolution int

// Resolutions (pilot/pkg/model/service.go).
const (
	ClientSideLB Resolution = iota
	DNSLB
	Passthrough
	DNSRoundRobinLB
	Alias
	DynamicDNS
)

// Protocol is istiod's protocol.Instance spelling ("HTTP", "HTTP2", "GRPC", "GRPC-Web", "TCP",
// "TLS", "HTTPS", "Mongo", "Redis", "MySQL", "UDP", "UnsupportedProtocol" for auto-detected).
type Protocol string

// Port is one service port.
type Port struct {
	Name       string
	Number     uint32
	Protocol   Protocol
	TargetPort uint32
}

// Endpoint is one endpoint of a service port (a Pod, a WorkloadEntry, or a ServiceEntry endpoint).
type Endpoint struct {
	Address string
	// Port is the endpoint port (targetPort) for this service port.
	Port uint32
	// Labels are the workload labels plus istiod's topology labels.
	Labels map[string]string
	// ServiceAccount is the SPIFFE identity (`spiffe://<td>/ns/<ns>/sa/<sa>`), or "".
	ServiceAccount string
	// TLSModeIstio is true when the workload has `security.istio.io/tlsMode: istio`.
	TLSModeIstio bool
	// Locality is `region/zone/subzone`.
	Locality string
	Weight   uint32
	// Ref is the Pod, WorkloadEntry or ServiceEntry behind the endpoint.
	Ref provenance.Ref
}

// Service is a registry service: a Kubernetes Service or one host of a ServiceEntry.
type Service struct {
	// Hostname is the FQDN (or the ServiceEntry host, possibly a wildcard).
	Hostname string
	// Namespace and Name of the Service or ServiceEntry.
	Namespace string
	Name      string
	// Ref is `Service bookinfo/reviews` or `ServiceEntry ns/name`.
	Ref provenance.Ref
	// Kubernetes is true for a Kubernetes Service (registry Kubernetes), false for ServiceEntries.
	Kubernetes   bool
	Ports        []Port
	Resolution   Resolution
	MeshExternal bool
	Labels       map[string]string
	Annotations  map[string]string
	// SubjectAltNames of a ServiceEntry.
	SubjectAltNames []string
	// Endpoints by service port number.
	Endpoints map[uint32][]Endpoint
	// ServiceAccounts is the sorted, de-duplicated identity set istiod uses for SANs
	// (push_context.go:ServiceAccounts).
	ServiceAccounts []string
	// ExportTo of the Service or ServiceEntry (empty: MeshConfig defaultServiceExportTo).
	ExportTo     []string
	CreationTime time.Time
}

// Proxy is the client proxy clusters are generated for (a sidecar).
type Proxy struct {
	// Namespace is the proxy's config namespace.
	Namespace string
	Labels    map[string]string
	IPs       []string
	// Pod is the pod behind the proxy, nil for a namespace-only proxy.
	Pod *provenance.Ref
	// Locality is `region/zone/subzone` of the pod's node, when known.
	Locality string
	// Description is the header line: "sidecar of pod bookinfo/productpage-v1".
	Description string
}

// ConsolidatedRule is the merged DestinationRule istiod hands to cluster building for one host
// (pilot/pkg/model/destination_rule.go ConsolidatedDestRule), with the contributor of each part.
type ConsolidatedRule struct {
	// Spec is the merged rule (a deep copy; never the input object).
	Spec *networking.DestinationRule
	// Primary is the first DestinationRule of the merge: its metadata is what istiod writes
	// into the cluster's `istio.config` metadata.
	Primary provenance.Ref
	// From lists every DestinationRule that contributed, in merge order.
	From []provenance.Ref
	// TrafficPolicyFrom is the DestinationRule whose top-level trafficPolicy was used (nil if none).
	TrafficPolicyFrom *provenance.Ref
	// SubsetFrom is parallel to Spec.Subsets: the DestinationRule that defined each subset.
	SubsetFrom []provenance.Ref
}

// Selection is the outcome of DestinationRule lookup for one proxy and one service.
type Selection struct {
	// Rule is the DestinationRule that applies, or nil.
	Rule *ConsolidatedRule
	// Step says where it was found: "client namespace", "service namespace", "root namespace".
	Step string
	// Diagnostics about rules that do not apply or were shadowed (D2–D6, D11–D13, D31).
	Diagnostics []explain.Diagnostic
}
