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
	// TargetPortName is a named Kubernetes targetPort (resolved per pod through its container
	// ports); TargetPort is 0 then.
	TargetPortName string
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
	// TLSMode is the workload's `security.istio.io/tlsMode` label, "disabled" when absent (a
	// WorkloadEntry with a serviceAccount and no label is "istio"), as istiod records it.
	TLSMode string
	// Locality is `region/zone/subzone`.
	Locality string
	Weight   uint32
	// Ref is the Pod, WorkloadEntry or ServiceEntry behind the endpoint.
	Ref provenance.Ref

	// workload is the workload the endpoint was made from (for a ServiceEntry's own
	// endpoints, one per entry of spec.endpoints), nil for the endpoint a DNS ServiceEntry
	// without endpoints makes of its host.
	workload *workload
}

// EntryName is the name istiod gives one of a ServiceEntry's own endpoints (spec.endpoints),
// `<name>-<index>` (convertServiceEntryToInstances), and false for any other endpoint: a pod's,
// a WorkloadEntry's, or the one a DNS ServiceEntry without endpoints makes of its host.
func (e Endpoint) EntryName() (string, bool) {
	if e.workload == nil || e.workload.ref.Kind != "ServiceEntry" {
		return "", false
	}
	return e.workload.name, true
}

// SameWorkload reports whether e and o are endpoints of one workload at one address: one pod,
// WorkloadEntry or entry of a ServiceEntry's spec.endpoints. Entries of one ServiceEntry share
// its Ref and may share an address, and each is a workload of its own, with its own labels.
func (e Endpoint) SameWorkload(o Endpoint) bool {
	return e.workload == o.workload && e.Ref == o.Ref && e.Address == o.Address
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

	// Selector is the Kubernetes spec.selector or the ServiceEntry workloadSelector labels.
	Selector map[string]string
	// ExternalName is the target of a Kubernetes ExternalName Service (Resolution Alias).
	ExternalName string
	// EndpointsUnknown is true for a Kubernetes Service without a selector: its endpoints come
	// from EndpointSlices managed by hand, which the snapshot does not carry.
	EndpointsUnknown bool
	// TrafficDistribution is istiod's traffic distribution for the service
	// (model.GetTrafficDistribution): "" (any), "PreferSameZone" or "PreferSameNode", from
	// spec.trafficDistribution, else the networking.istio.io/traffic-distribution annotation of
	// the Service or ServiceEntry, else of its namespace.
	TrafficDistribution string
	// Sources lists every Service and ServiceEntry that defines this hostname in this namespace,
	// in istiod's order (creation time). istiod keys endpoints and identities by hostname and
	// namespace, so Endpoints and ServiceAccounts cover all of them.
	Sources []provenance.Ref
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
	// Router is a gateway's proxy (its istio-proxy runs as a router): istiod gives it the
	// default scope of its namespace whatever the Sidecars (PushContext.getSidecarScope), and
	// builds some of its clusters otherwise than a sidecar's (convertResolution, the
	// downstream protocol, credentialName).
	Router bool
	// RouterField is the field that makes the pod a gateway's, for the origins that name it.
	RouterField string
}

// ConsolidatedRule is the merged DestinationRule istiod hands to cluster building for one host
// (pilot/pkg/model/destination_rule.go ConsolidatedDestRule), with the contributor of each part.
type ConsolidatedRule struct {
	// Spec is the merged rule: the index's own message, never the input object (though its
	// lists and messages may be the input's), shared by every selection of the rule. Read it;
	// never write it.
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
	// ExportTo is the effective exportTo set istiod keyed the entry by (sorted; forced to "."
	// for a rule with a workloadSelector).
	ExportTo []string
	// WorkloadSelector is the primary rule's workloadSelector labels (nil: none).
	WorkloadSelector map[string]string
}

// Selection is the outcome of DestinationRule lookup for one proxy and one service.
type Selection struct {
	// Rule is the DestinationRule that applies, or nil.
	Rule *ConsolidatedRule
	// Step says where it was found: "client namespace", "service namespace", "root namespace".
	Step string
	// Diagnostics about rules that do not apply or were shadowed (D2–D6, D11–D13, D31).
	Diagnostics []explain.Diagnostic
	// Candidates are all entries istiod's lookup returned at Step, in its order (Rule is one of
	// them, picked by SidecarScope.DestinationRule).
	Candidates []*ConsolidatedRule
}
