// Package envoycluster reproduces how istiod builds the outbound Envoy Clusters (CDS) of one
// host for one client proxy, and records the origin of every field it sets.
//
// It owns: service and DestinationRule selection for a proxy, DestinationRule merging, traffic
// policy layering (mesh baseline, top level, portLevelSettings, subsets), the TrafficPolicy to
// Cluster field mapping, TLS and auto-mTLS, and the cluster diagnostics (spec §7).
// It may import: model, explain, provenance, go-control-plane Envoy types, istio.io/api types.
// It must not import cli, render, source, cobra, lipgloss or client-go.
// Reference: shared/spec/cluster.md; the code of istio.io/istio (the version conformance/ pins) wins.
package envoycluster

// ProxyKind says what the client proxy is.
type ProxyKind string

// Client proxy kinds.
const (
	// ProxyDefault: a sidecar without labels in Query.Namespace.
	ProxyDefault ProxyKind = ""
	// ProxyPod: the sidecar of pod Namespace/Name (its namespace, labels and IPs count).
	ProxyPod ProxyKind = "pod"
	// ProxyNamespace: a sidecar without labels in Namespace.
	ProxyNamespace ProxyKind = "namespace"
)

// ProxyRef names the client proxy (`--from pod/NAME`, `--from namespace/NS`).
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
