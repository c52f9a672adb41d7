// Package provenance is the vocabulary of origins: which resource, layer and field a value came
// from, where that resource was read, and what it shadowed.
//
// It owns: Ref, Position, Layer, Origin, FieldTrace and Recorder.
// It may import: the standard library only. Every other package may import it.
package provenance

import (
	"fmt"
	"sort"
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
// docs/origins.md; keep the two in step.
type Layer string

// The layers. The cluster layers follow shared/spec/cluster.md §0.1; the authz layers follow
// shared/spec/authz.md.
const (
	// LayerRegistry: derived from a Service, ServiceEntry, Pod or WorkloadEntry.
	LayerRegistry Layer = "registry"
	// LayerMeshConfig: a MeshConfig field (user value or istiod's mesh default).
	LayerMeshConfig Layer = "meshconfig"
	// LayerMeshDefaultTrafficPolicy: MeshConfig defaultTrafficPolicy (connectionPool, outlierDetection).
	LayerMeshDefaultTrafficPolicy Layer = "mesh-default-traffic-policy"
	// LayerDestinationRule: DestinationRule spec.trafficPolicy (top level).
	LayerDestinationRule Layer = "destinationrule"
	// LayerPortLevel: DestinationRule spec.trafficPolicy.portLevelSettings[port=N].
	LayerPortLevel Layer = "destinationrule-port"
	// LayerSubset: DestinationRule spec.subsets[name=S] (labels or trafficPolicy).
	LayerSubset Layer = "destinationrule-subset"
	// LayerSubsetPortLevel: DestinationRule spec.subsets[name=S].trafficPolicy.portLevelSettings[port=N].
	LayerSubsetPortLevel Layer = "destinationrule-subset-port"
	// LayerAutoMTLS: ISTIO_MUTUAL synthesized by auto-mTLS from PeerAuthentication inference.
	LayerAutoMTLS Layer = "auto-mtls"
	// LayerIstioDefault: a value istiod writes whatever the configuration says.
	LayerIstioDefault Layer = "istio-default"
	// LayerEnvoyDefault: not sent by istiod; Envoy applies its own default.
	LayerEnvoyDefault Layer = "envoy-default"
	// LayerProxy: taken from the client proxy (namespace, labels, IPs, metadata).
	LayerProxy Layer = "proxy"
	// LayerIstiodFlag: an istiod feature flag at its default.
	LayerIstiodFlag Layer = "istiod-flag"
	// LayerSidecar: a Sidecar resource.
	LayerSidecar Layer = "sidecar"
	// LayerPeerAuthentication: a PeerAuthentication field.
	LayerPeerAuthentication Layer = "peerauthentication"
	// LayerAuthorizationPolicy: an AuthorizationPolicy field.
	LayerAuthorizationPolicy Layer = "authorizationpolicy"
	// LayerStaticPolicy: istiod's static istio_converted_static_strict policy.
	LayerStaticPolicy Layer = "istio-static-policy"
)

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
		return string(l)
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

// Recorder collects FieldTraces while an engine builds an object. Engines write a value's origin
// at the moment they write the value, never afterwards.
type Recorder struct {
	order  []string
	traces map[string]*FieldTrace
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{traces: map[string]*FieldTrace{}} }

// Set records that path now holds value from origin. An earlier value at the same path becomes
// a Shadow of the new one.
func (r *Recorder) Set(path, value string, origin Origin) {
	r.set(path, value, origin, false)
}

// SetNotSent records a field istiod leaves out, with the default Envoy applies.
func (r *Recorder) SetNotSent(path, value string, origin Origin) {
	r.set(path, value, origin, true)
}

func (r *Recorder) set(path, value string, origin Origin, notSent bool) {
	prev, ok := r.traces[path]
	t := &FieldTrace{Path: path, Value: value, NotSent: notSent, Origin: origin}
	if ok {
		t.Shadowed = append([]Shadow{{Origin: prev.Origin, Value: prev.Value, Reason: "overridden"}}, prev.Shadowed...)
	} else {
		r.order = append(r.order, path)
	}
	r.traces[path] = t
}

// Shadow records a candidate for path that did not win (a dropped block, a losing resource).
// It attaches to the trace at path, creating a placeholder if the path has no value yet.
func (r *Recorder) Shadow(path string, s Shadow) {
	t, ok := r.traces[path]
	if !ok {
		t = &FieldTrace{Path: path}
		r.traces[path] = t
		r.order = append(r.order, path)
	}
	t.Shadowed = append(t.Shadowed, s)
}

// Delete removes path and every path below it (a field istiod removed again, e.g. the
// eds_cluster_config of a cluster turned ORIGINAL_DST).
func (r *Recorder) Delete(path string) {
	kept := r.order[:0]
	for _, p := range r.order {
		if p == path || IsBelow(p, path) {
			delete(r.traces, p)
			continue
		}
		kept = append(kept, p)
	}
	r.order = kept
}

// Get returns the trace at path.
func (r *Recorder) Get(path string) (*FieldTrace, bool) {
	t, ok := r.traces[path]
	return t, ok
}

// Traces returns the recorded traces sorted by path (deterministic output, R9).
func (r *Recorder) Traces() []FieldTrace {
	out := make([]FieldTrace, 0, len(r.order))
	for _, p := range r.order {
		if t := r.traces[p]; t != nil {
			out = append(out, *t)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
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
