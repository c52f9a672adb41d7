// Package envoycluster reproduces how istiod builds the outbound Envoy Clusters (CDS) of one
// host for one client proxy, and records the origin of every field it sets.
//
// It owns: traffic policy layering (mesh baseline, top level, portLevelSettings, subsets), the
// TrafficPolicy to Cluster field mapping, TLS and auto-mTLS, the origin of every field, and the
// layering, load-balancer and TLS diagnostics (docs/semantics/cluster.md#diagnostics). Service
// scope, DestinationRule selection and merging, and the host and route diagnostics are package
// index's; Explain joins the two.
// It may import: index, model, explain, provenance, go-control-plane Envoy types, istio.io/api types.
// It must not import cli, render, source, cobra, lipgloss or client-go.
// The rules it follows: docs/semantics/cluster.md, with the file and function of istio.io/istio
// (the version conformance/go.mod pins) behind each; where they differ, Istio's code wins.
//
// Entry points: Explain answers one host; an Explainer keeps the index and the proxy's scope
// across the hosts it is asked about, and keeps each cluster's field traces against those of an
// earlier cluster with the same paths until ResolvePositions expands them (docs/performance.md).
package envoycluster

import (
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	meshv1alpha1 "istio.io/api/mesh/v1alpha1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// ProxyKind says what the client proxy is.
type ProxyKind string

// Client proxy kinds.
const (
	// ProxyDefault: a sidecar without labels in Query.Namespace.
	ProxyDefault ProxyKind = ""
	// ProxyPod: the sidecar of pod Namespace/Name (its namespace, labels and IPs count).
	ProxyPod ProxyKind = "pod"
	// ProxyDeployment: the sidecar of the first pod, by name, of Deployment Namespace/Name.
	ProxyDeployment ProxyKind = "deployment"
	// ProxyNamespace: a sidecar without labels in Namespace.
	ProxyNamespace ProxyKind = "namespace"
)

// ProxyRef names the client proxy (`--from pod/NAME`, `--from deployment/NAME`,
// `--from namespace/NS`).
type ProxyRef struct {
	Kind      ProxyKind
	Namespace string
	Name      string
}

// Query is one `cluster` question.
type Query struct {
	// Host as the user typed it: `reviews`, `reviews.bookinfo`, an FQDN, or a ServiceEntry host.
	// A name without dots resolves in Namespace (`reviews` → reviews.NS.svc.<domain>).
	Host string
	// Namespace is `-n` (default namespace of the kubeconfig context, or "default").
	Namespace string
	// Port narrows to one service port (0: all ports).
	Port uint32
	// Subset narrows to one subset ("": the default cluster and every subset).
	Subset string
	// From is the client proxy.
	From ProxyRef
}

// NamespaceMTLS is the namespace-level (else mesh-level) PeerAuthentication mode of the service's
// namespace, the input of istiod's BestEffortInferServiceMTLSMode (index.NamespaceMTLSMode).
// Workload-level PeerAuthentications do not count: istiod ignores them for clusters.
type NamespaceMTLS struct {
	// Mode is the inferred mode; MTLSUnknown is read as istiod's PERMISSIVE fallback.
	Mode index.MTLSMode
	// Origin names the PeerAuthentication (or default) that decided Mode.
	Origin provenance.Origin
}

// Flags are the istiod feature flags that change CDS (docs/semantics/cluster.md#feature-flags,
// pilot/pkg/features). DefaultFlags returns istiod's
// defaults; the zero value is not meaningful.
type Flags struct {
	// AutoSendUnhealthyEndpoints is PILOT_AUTO_SEND_UNHEALTHY_ENDPOINTS (default true).
	AutoSendUnhealthyEndpoints bool
	// SendUnhealthyEndpoints is PILOT_SEND_UNHEALTHY_ENDPOINTS (default false).
	SendUnhealthyEndpoints bool
	// MetadataExchange is PILOT_ENABLE_METADATA_EXCHANGE (default true).
	MetadataExchange bool
	// DisableMxALPN is PILOT_DISABLE_MX_ALPN (default false).
	DisableMxALPN bool
	// TelemetryLabel is PILOT_ENABLE_TELEMETRY_LABEL (default true).
	TelemetryLabel bool
	// EndpointTelemetryLabel is PILOT_ENDPOINT_TELEMETRY_LABEL (default true).
	EndpointTelemetryLabel bool
	// DisableTrackRemainingCBMetrics is DISABLE_TRACK_REMAINING_CB_METRICS (default true).
	DisableTrackRemainingCBMetrics bool
	// LocalityWeightedLbConfig is ENABLE_LOCALITY_WEIGHTED_LB_CONFIG (default false).
	LocalityWeightedLbConfig bool
	// RedisFilter is PILOT_ENABLE_REDIS_FILTER (default false).
	RedisFilter bool
	// EDSForHeadless is PILOT_ENABLE_EDS_FOR_HEADLESS_SERVICES (default false).
	EDSForHeadless bool
	// DNSCaresUDPMaxQueries is PILOT_DNS_CARES_UDP_MAX_QUERIES (default 100).
	DNSCaresUDPMaxQueries uint32
	// DNSJitter is PILOT_DNS_JITTER_DURATION (default 100ms).
	DNSJitter time.Duration
	// DualStack is ISTIO_DUAL_STACK (default false).
	DualStack bool
	// IPv4OutboundForIPv6 is ISTIO_ENABLE_IPV4_OUTBOUND_LISTENER_FOR_IPV6_CLUSTERS (default false).
	IPv4OutboundForIPv6 bool
	// ClusterID is the istiod cluster ID written into endpoint telemetry metadata (default "Kubernetes").
	ClusterID string
}

// DefaultFlags returns istiod's default feature flags (pilot/pkg/features).
func DefaultFlags() Flags {
	return Flags{
		AutoSendUnhealthyEndpoints:     true,
		MetadataExchange:               true,
		TelemetryLabel:                 true,
		EndpointTelemetryLabel:         true,
		DisableTrackRemainingCBMetrics: true,
		DNSCaresUDPMaxQueries:          100,
		DNSJitter:                      100 * time.Millisecond,
		ClusterID:                      "Kubernetes",
	}
}

// Input is everything one service port's clusters are built from.
type Input struct {
	// Mesh is the effective MeshConfig (the user's merged over istiod's defaults); nil means
	// istiod's defaults.
	Mesh *meshv1alpha1.MeshConfig
	// Snapshot, when set, gives file positions and tells user-set MeshConfig fields from defaults.
	Snapshot *model.Snapshot
	// Proxy is the client sidecar.
	Proxy *index.Proxy
	// Service and Port are the destination.
	Service *index.Service
	Port    index.Port
	// Rule is the DestinationRule selected for the proxy and host, nil when none applies.
	Rule *index.ConsolidatedRule
	// MTLS is the PeerAuthentication mode of the service's namespace.
	MTLS NamespaceMTLS
	// WorkloadMTLS are the workload-selector PeerAuthentications that decide the server-side mode
	// of some endpoints (index.WorkloadPeerAuthentications). istiod ignores them for the cluster
	// itself; they decide the per-endpoint tlsMode of inline DNS load assignments and feed the
	// TLS-conflict diagnostics.
	WorkloadMTLS []index.WorkloadMTLS
	// Flags are the istiod feature flags.
	Flags Flags

	// positions are the file positions looked up so far, shared by the builds of an Explainer.
	positions *positionCache
	// deferPositions leaves the positions of origins to resolvePositions.
	deferPositions bool
	// shared is what the builds of one host share.
	shared *hostShared
	// templates, when set, keep the traces of the builds compactly (Built.traces): the builds
	// of an Explainer share them.
	templates *provenance.Templates
}

// Built is one generated cluster with the origin of its fields. Cluster is nil when istiod
// generates no cluster: a DNS cluster whose (subset-filtered) endpoints are empty
// (index.HostDiagnostics reports those as D17/D18). Clusters share the sub-messages that are
// the same in every cluster (the EDS config source, the plaintext transport socket match, the
// metadata exchange filter, ...): a caller that changes a Cluster clones it first.
type Built struct {
	Name    string
	Subset  string
	Cluster *clusterv3.Cluster
	// Origins are the field traces, sorted by path. The builds of an Explainer keep them in a
	// compact form instead, sharing the traces that are the same as an earlier cluster's, until
	// HostClusters.ResolvePositions fills Origins in; Traces reads either.
	Origins []provenance.FieldTrace
	// Diagnostics are the layering and TLS findings for this cluster.
	Diagnostics []explain.Diagnostic

	traces provenance.SharedTraces
}

// Traces returns Origins, or a new copy of the traces kept compactly when Origins is not filled
// in yet (before HostClusters.ResolvePositions, file positions are placeholders).
func (b *Built) Traces() []provenance.FieldTrace {
	if b.Origins == nil && !b.traces.IsZero() {
		return b.traces.Traces()
	}
	return b.Origins
}
