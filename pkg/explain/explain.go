// Package explain is the Result schema engines return and renderers read: what was explained,
// the generated objects with the origin of every field, and diagnostics. Its JSON form is the
// public `-o json|yaml` API (docs/output.md); change it only with a new APIVersion.
//
// It owns: Result, Object, Diagnostic, Subject, Proxy, and CheckReport (the `check` document).
// It may import: provenance, and protobuf (objects carry their generated proto message).
package explain

import (
	"encoding/json"

	"google.golang.org/protobuf/proto"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// APIVersion is the version of the explanation document.
const APIVersion = "mesh-explain.io/v1alpha1"

// Kinds of explanation documents.
const (
	KindClusterExplanation = "ClusterExplanation"
	KindAuthzExplanation   = "AuthzExplanation"
)

// Severity of a diagnostic.
type Severity string

// Severities, most severe first.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Rank orders severities: error 0, warning 1, info 2.
func (s Severity) Rank() int {
	switch s {
	case SeverityError:
		return 0
	case SeverityWarning:
		return 1
	default:
		return 2
	}
}

// Diagnostic is a finding about the mesh configuration: something that silently does not do
// what it seems to. Diagnostics never change the exit code.
type Diagnostic struct {
	// ID is the stable identifier from the catalogue in pkg/explain/diag (D-prefixed for
	// clusters, A-prefixed for authz), listed in docs/diagnostics.md.
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	// Message states the finding plainly, lower-case, no trailing period.
	Message string `json:"message"`
	// Resources are the objects involved.
	Resources []provenance.Ref `json:"resources,omitempty"`
	// Fix says what to change.
	Fix string `json:"fix,omitempty"`
}

// Subject is what was asked about.
type Subject struct {
	// Kind is "Host" for cluster, "Workload" for authz.
	Kind string `json:"kind"`
	// Host is the resolved FQDN (cluster).
	Host string `json:"host,omitempty"`
	// Namespace of the service or workload.
	Namespace string `json:"namespace,omitempty"`
	// Port and Subset narrow a cluster explanation, when given.
	Port   uint32 `json:"port,omitempty"`
	Subset string `json:"subset,omitempty"`
	// Workload is the pod the authz explanation is for (`pod/NAME`).
	Workload string `json:"workload,omitempty"`
	// Resource is the Service, ServiceEntry or Pod behind the subject.
	Resource *provenance.Ref `json:"resource,omitempty"`
}

// Proxy is the client proxy a cluster explanation was computed for.
type Proxy struct {
	// Description is the human form: "sidecar of pod bookinfo/productpage-v1".
	Description string            `json:"description"`
	Namespace   string            `json:"namespace"`
	Pod         string            `json:"pod,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	IPs         []string          `json:"ips,omitempty"`
	// Type is "router" for a gateway's proxy; omitted for a sidecar.
	Type string `json:"type,omitempty"`
}

// Summary is one header line of an object: `discovery type: EDS`.
type Summary struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Object is one generated object (an Envoy Cluster, a ztunnel Authorization) with the origin
// of every field.
type Object struct {
	// Kind is the proto type: envoy.config.cluster.v3.Cluster, istio.security.Authorization.
	Kind string `json:"kind"`
	// Name is the object's name (cluster name, `ns/name` of an Authorization).
	Name string `json:"name"`
	// Summary lines for the table header (discovery type, rules applied, scope...).
	Summary []Summary `json:"summary,omitempty"`
	// Value is the object in its JSON form. An engine may leave it empty when it sets Message:
	// renderers of the document (-o json, -o yaml) then print Message in its protojson form, so
	// commands with other outputs do not marshal it.
	Value json.RawMessage `json:"value,omitempty"`
	// Origins holds the origin of every field, by output path.
	Origins []provenance.FieldTrace `json:"origins"`
	// Message is the generated proto (not serialised as such; renderers of -o envoy use it, and
	// those of the document print it as value when Value is empty).
	Message proto.Message `json:"-"`
	// Missing marks a referenced object that istiod does not generate (a dangling ztunnel key).
	Missing bool `json:"missing,omitempty"`
	// Listed marks an object the proxy is sent by name, the Objects so marked in the order of
	// its list: the keys of a ztunnel workload's authorization_policies (-o ztunnel prints them).
	// Not part of the document, which says the same in the object's attachment summary.
	Listed bool `json:"-"`
}

// Result is the explanation document.
type Result struct {
	APIVersion string  `json:"apiVersion"`
	Kind       string  `json:"kind"`
	Subject    Subject `json:"subject"`
	Proxy      *Proxy  `json:"proxy,omitempty"`
	// Objects in output order (clusters sorted by name; authorizations in the workload's key order).
	Objects []Object `json:"objects"`
	// Sections carry command-specific tables (the PeerAuthentication chain, the plain reading of
	// authz, DestinationRule selection). Each has a title and rows.
	Sections []Section `json:"sections,omitempty"`
	// Diagnostics, sorted by severity, then ID, then message.
	Diagnostics []Diagnostic `json:"diagnostics"`
	// Warnings are things that could not be read or inferred (forbidden lists, bad objects).
	Warnings []string `json:"warnings,omitempty"`
	// Assumptions are what the answer takes for granted that the input does not say (a
	// waypoint Gateway without status.addresses answered as once istiod has programmed it).
	Assumptions []string `json:"assumptions,omitempty"`
	// Incomplete names what the answer needed and could not read: kinds (DestinationRules)
	// whose read was denied, failed or timed out, and objects skipped as malformed; Warnings say
	// why. Empty when the answer is whole.
	Incomplete []string `json:"incomplete,omitempty"`
}

// Section is a titled table of extra facts, rendered before the objects.
type Section struct {
	Title   string     `json:"title"`
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
	// Wide marks a section shown only with -o wide (and always in json/yaml).
	Wide bool `json:"wide,omitempty"`
}
