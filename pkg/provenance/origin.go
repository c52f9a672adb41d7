package provenance

import (
	"fmt"
	"strings"
)

// Ref names one Kubernetes or Istio object. Its String form is the human spelling used in every
// output format: `DestinationRule bookinfo/reviews` (Istio analyzer's FriendlyName shape).
type Ref struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String returns `<Kind> <namespace>/<name>`, or `<Kind> <name>` for cluster-scoped objects.
func (r Ref) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// IsZero reports whether r names nothing.
func (r Ref) IsZero() bool { return r.Kind == "" && r.Name == "" }

// Position is where an object or field was read from a file: `file:line:col`.
type Position struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
	Col  int    `json:"col,omitempty"`
}

// String returns `file:line:col` (or the shorter forms when line or column are unknown).
func (p Position) String() string {
	switch {
	case p.Line == 0:
		return p.File
	case p.Col == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	default:
		return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
	}
}

// Layer is where in istiod's layering a value was decided. The vocabulary is documented in
// docs/origins.md; keep the two in step. It is spelled as its name (String) in every output
// format; in memory it is one byte, as every origin of every field carries one.
type Layer uint8

// The layers, described one by one (with the title and an example of each) in docs/origins.md.
const (
	// LayerNone: no layer (an origin that is not set, e.g. a path that only carries shadows).
	LayerNone Layer = iota
	// LayerRegistry: derived from a Service, ServiceEntry, Pod or WorkloadEntry.
	LayerRegistry
	// LayerMeshConfig: a MeshConfig field (user value or istiod's mesh default).
	LayerMeshConfig
	// LayerMeshDefaultTrafficPolicy: MeshConfig defaultTrafficPolicy (connectionPool, outlierDetection).
	LayerMeshDefaultTrafficPolicy
	// LayerDestinationRule: DestinationRule spec.trafficPolicy (top level).
	LayerDestinationRule
	// LayerPortLevel: DestinationRule spec.trafficPolicy.portLevelSettings[port=N].
	LayerPortLevel
	// LayerSubset: DestinationRule spec.subsets[name=S] (labels or trafficPolicy).
	LayerSubset
	// LayerSubsetPortLevel: DestinationRule spec.subsets[name=S].trafficPolicy.portLevelSettings[port=N].
	LayerSubsetPortLevel
	// LayerAutoMTLS: ISTIO_MUTUAL synthesized by auto-mTLS from PeerAuthentication inference.
	LayerAutoMTLS
	// LayerIstioDefault: a value istiod writes whatever the configuration says.
	LayerIstioDefault
	// LayerEnvoyDefault: not sent by istiod; Envoy applies its own default.
	LayerEnvoyDefault
	// LayerProxy: taken from the client proxy (namespace, labels, IPs, metadata).
	LayerProxy
	// LayerIstiodFlag: an istiod feature flag at its default.
	LayerIstiodFlag
	// LayerSidecar: a Sidecar resource.
	LayerSidecar
	// LayerPeerAuthentication: a PeerAuthentication field.
	LayerPeerAuthentication
	// LayerAuthorizationPolicy: an AuthorizationPolicy field.
	LayerAuthorizationPolicy
	// LayerStaticPolicy: istiod's static istio_converted_static_strict policy.
	LayerStaticPolicy
	layerCount
)

// layerNames are the names of the layers, as every output format spells them.
var layerNames = [layerCount]string{
	LayerNone:                     "",
	LayerRegistry:                 "registry",
	LayerMeshConfig:               "meshconfig",
	LayerMeshDefaultTrafficPolicy: "mesh-default-traffic-policy",
	LayerDestinationRule:          "destinationrule",
	LayerPortLevel:                "destinationrule-port",
	LayerSubset:                   "destinationrule-subset",
	LayerSubsetPortLevel:          "destinationrule-subset-port",
	LayerAutoMTLS:                 "auto-mtls",
	LayerIstioDefault:             "istio-default",
	LayerEnvoyDefault:             "envoy-default",
	LayerProxy:                    "proxy",
	LayerIstiodFlag:               "istiod-flag",
	LayerSidecar:                  "sidecar",
	LayerPeerAuthentication:       "peerauthentication",
	LayerAuthorizationPolicy:      "authorizationpolicy",
	LayerStaticPolicy:             "istio-static-policy",
}

// Layers are every layer but LayerNone, in declaration order.
func Layers() []Layer {
	out := make([]Layer, 0, layerCount-1)
	for l := LayerNone + 1; l < layerCount; l++ {
		out = append(out, l)
	}
	return out
}

// String is the layer's name (`destinationrule-port`); "" for LayerNone.
func (l Layer) String() string {
	if l < layerCount {
		return layerNames[l]
	}
	return fmt.Sprintf("Layer(%d)", uint8(l))
}

// MarshalText spells the layer by its name.
func (l Layer) MarshalText() ([]byte, error) {
	if l >= layerCount {
		return nil, fmt.Errorf("unknown layer %d", uint8(l))
	}
	return []byte(layerNames[l]), nil
}

// UnmarshalText reads a layer's name.
func (l *Layer) UnmarshalText(b []byte) error {
	for i, name := range layerNames {
		if name == string(b) {
			*l = Layer(i)
			return nil
		}
	}
	return fmt.Errorf("unknown layer %q", b)
}

// Origin says where one value came from.
type Origin struct {
	// Layer is the istiod layer that decided the value.
	Layer Layer `json:"layer"`
	// Resource is the object the value was read from; nil for built-in defaults.
	Resource *Ref `json:"resource,omitempty"`
	// Field is the input path in CRD YAML spelling, with selectors for keyed lists:
	// `spec.trafficPolicy.portLevelSettings[port=9080].connectionPool.tcp.maxConnections`.
	// For MeshConfig it is the MeshConfig field (`connectTimeout`); for defaults it may be empty.
	Field string `json:"field,omitempty"`
	// Position is where Field (or the resource) was read, when it came from a file.
	Position *Position `json:"position,omitempty"`
	// Note is one line of explanation, e.g. why a block was dropped.
	Note string `json:"note,omitempty"`
}

// String is the one-line human spelling: `DestinationRule bookinfo/reviews · spec.x (f.yaml:9:11)`.
func (o Origin) String() string {
	var b strings.Builder
	switch {
	case o.Resource != nil:
		b.WriteString(o.Resource.String())
	default:
		b.WriteString(LayerTitle(o.Layer))
	}
	if o.Field != "" {
		b.WriteString(" · ")
		b.WriteString(o.Field)
	}
	if o.Position != nil {
		b.WriteString(" (")
		b.WriteString(o.Position.String())
		b.WriteString(")")
	}
	return b.String()
}

// LayerTitle is the human name of a layer, used when an origin has no resource.
func LayerTitle(l Layer) string {
	switch l {
	case LayerMeshConfig:
		return "MeshConfig"
	case LayerMeshDefaultTrafficPolicy:
		return "MeshConfig defaultTrafficPolicy"
	case LayerIstioDefault:
		return "Istio default"
	case LayerEnvoyDefault:
		return "Envoy default (not sent)"
	case LayerAutoMTLS:
		return "auto-mTLS"
	case LayerIstiodFlag:
		return "istiod flag"
	case LayerProxy:
		return "client proxy"
	case LayerRegistry:
		return "service registry"
	case LayerStaticPolicy:
		return "istiod static policy"
	default:
		return l.String()
	}
}

// Shadow is a candidate value that lost to the winner, or a block that was dropped.
type Shadow struct {
	Origin Origin `json:"origin"`
	// Value is the losing value in display form; empty for a dropped block.
	Value string `json:"value,omitempty"`
	// Reason says why it lost: "overridden", "dropped: portLevelSettings[9080] replaces the whole policy".
	Reason string `json:"reason,omitempty"`
}

// FieldTrace is the origin of one output field.
type FieldTrace struct {
	// Path is the output path in the generated object's JSON spelling with indexes and map keys
	// in brackets: `circuitBreakers.thresholds[0].maxConnections`,
	// `typedExtensionProtocolOptions[envoy.extensions.upstreams.http.v3.HttpProtocolOptions].commonHttpProtocolOptions.idleTimeout`.
	// A trace on a path covers every leaf below it.
	Path string `json:"path"`
	// Value is the value in display form.
	Value string `json:"value"`
	// NotSent marks a value istiod does not send (Envoy applies it as its own default).
	NotSent bool `json:"notSent,omitempty"`
	// Origin is where the value came from.
	Origin Origin `json:"origin"`
	// Shadowed lists what this value overrode, most recent first.
	Shadowed []Shadow `json:"shadowed,omitempty"`
}

// IsBelow reports whether path p lies strictly below prefix (`a.b.c` and `a.b[0]` lie below `a.b`).
func IsBelow(p, prefix string) bool {
	if len(p) <= len(prefix) || !strings.HasPrefix(p, prefix) {
		return false
	}
	c := p[len(prefix)]
	return c == '.' || c == '['
}

// Covers reports whether a trace at path covers leaf: the same path, or leaf lies below it.
func Covers(path, leaf string) bool { return path == leaf || IsBelow(leaf, path) }
