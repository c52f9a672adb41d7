// Package provenance is the vocabulary of origins: which resource, layer and field a value came
// from, where that resource was read, and what it shadowed.
//
// It owns: Ref, Position, Layer, Origin, FieldTrace, Recorder, and the traces kept against
// templates (Templates, SharedTraces).
// It may import: the standard library only. Every other package may import it.
package provenance

import (
	"fmt"
	"slices"
	"strings"
	"sync"
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

// The layers. The cluster layers follow shared/spec/cluster.md §0.1; the authz layers follow
// shared/spec/authz.md.
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

// Recorder collects FieldTraces while an engine builds an object. Engines write a value's origin
// at the moment they write the value, never afterwards.
//
// It keeps what is recorded as a log, in order, and folds the entries of a path (values that
// override each other, shadows) only when the traces are read: most paths are set once.
type Recorder struct {
	// log holds one entry per Set, SetNotSent and Shadow call. A Shadow entry has only Path and
	// its one Shadow; shadows marks those entries (nil while there is none).
	log     []FieldTrace
	shadows []bool
	// keys is the buffer of sorted, kept for the next read.
	keys []sortKey
	// orders are the sorted orders of the path sequences read, by their fingerprint (shape):
	// objects of one kind record the same paths in the same order, so most reads reuse an order
	// instead of sorting again.
	orders map[uint64][]*pathOrder
	nOrder int
	// differ is TakeShared's buffer of the entries that differ from a template's.
	differ []int32
}

// orderMemo is the number of path sequences a Recorder remembers the order of; beyond it the
// Recorder forgets them all and starts again.
const orderMemo = 1024

// pathOrder is the sorted order of one sequence of log paths.
type pathOrder struct {
	paths []string
	order []int32
	// repeated: some path occurs more than once.
	repeated bool
}

// matches reports whether the log has exactly the paths of o, in order.
func (o *pathOrder) matches(log []FieldTrace) bool {
	if len(o.paths) != len(log) || o.order == nil {
		return false
	}
	for i := range log {
		if log[i].Path != o.paths[i] {
			return false
		}
	}
	return true
}

// sortKey is one log entry as sorted sorts it.
type sortKey struct {
	path string
	i    int32
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{} }

// NewRecorderSize returns an empty Recorder with room for n entries.
func NewRecorderSize(n int) *Recorder { return &Recorder{log: make([]FieldTrace, 0, n)} }

// Reset empties the Recorder, keeping its buffers for the next object. The entries beyond the
// new length are not cleared: the next object's entries overwrite them, and a pooled Recorder
// is itself dropped by the collections that empty its pool.
func (r *Recorder) Reset() {
	r.log = r.log[:0]
	r.shadows = nil
}

// Set records that path now holds value from origin. An earlier value at the same path becomes
// a Shadow of the new one.
func (r *Recorder) Set(path, value string, origin Origin) {
	r.add(FieldTrace{Path: path, Value: value, Origin: origin}, false)
}

// SetNotSent records a field istiod leaves out, with the default Envoy applies.
func (r *Recorder) SetNotSent(path, value string, origin Origin) {
	r.add(FieldTrace{Path: path, Value: value, NotSent: true, Origin: origin}, false)
}

// Shadow records a candidate for path that did not win (a dropped block, a losing resource).
// It attaches to the trace at path, creating a placeholder if the path has no value yet.
func (r *Recorder) Shadow(path string, s Shadow) {
	r.add(FieldTrace{Path: path, Shadowed: []Shadow{s}}, true)
}

func (r *Recorder) add(t FieldTrace, shadow bool) {
	if shadow && r.shadows == nil {
		r.shadows = make([]bool, len(r.log), cap(r.log))
	}
	r.log = append(r.log, t)
	if r.shadows != nil {
		r.shadows = append(r.shadows, shadow)
	}
}

func (r *Recorder) isShadow(i int) bool { return r.shadows != nil && r.shadows[i] }

// fold replays the entries at indexes idx (all of one path, in recording order) into the trace
// of the path.
func (r *Recorder) fold(idx []int32) FieldTrace {
	var cur FieldTrace
	for n, i := range idx {
		cur = r.step(cur, n == 0, int(i))
	}
	return cur
}

// step applies log entry i to cur, the trace of its path so far (first: there is none yet).
func (r *Recorder) step(cur FieldTrace, first bool, i int) FieldTrace {
	e := r.log[i]
	switch {
	case r.isShadow(i):
		if first {
			cur = FieldTrace{Path: e.Path}
		}
		cur.Shadowed = append(cur.Shadowed, e.Shadowed...)
		return cur
	case first:
		return e
	}
	shadowed := make([]Shadow, 0, 1+len(cur.Shadowed))
	shadowed = append(shadowed, Shadow{Origin: cur.Origin, Value: cur.Value, Reason: "overridden"})
	e.Shadowed = append(shadowed, cur.Shadowed...)
	return e
}

// Delete removes path and every path below it (a field istiod removed again, e.g. the
// eds_cluster_config of a cluster turned ORIGINAL_DST).
func (r *Recorder) Delete(path string) {
	kept := 0
	for i, t := range r.log {
		if t.Path == path || IsBelow(t.Path, path) {
			continue
		}
		r.log[kept] = t
		if r.shadows != nil {
			r.shadows[kept] = r.shadows[i]
		}
		kept++
	}
	clear(r.log[kept:])
	r.log = r.log[:kept]
	if r.shadows != nil {
		r.shadows = r.shadows[:kept]
	}
}

// Get returns the trace at path.
func (r *Recorder) Get(path string) (*FieldTrace, bool) {
	var idx []int32
	for i := range r.log {
		if r.log[i].Path == path {
			idx = append(idx, int32(i))
		}
	}
	if len(idx) == 0 {
		return nil, false
	}
	t := r.fold(idx)
	return &t, true
}

// Len is the number of entries recorded (values and shadows).
func (r *Recorder) Len() int { return len(r.log) }

// sorted returns the indexes of the log sorted by path, entries of one path in recording order,
// and whether every path has exactly one entry, a value. The indexes are the Recorder's: read
// them, never write them.
func (r *Recorder) sorted() ([]int32, bool) {
	noShadows := r.shadows == nil || !slices.Contains(r.shadows, true)
	k := shape(r.log)
	for _, o := range r.orders[k] {
		if o.matches(r.log) {
			return o.order, noShadows && !o.repeated
		}
	}
	n := len(r.log)
	if cap(r.keys) < n {
		r.keys = make([]sortKey, n, cap(r.log))
	}
	keys := r.keys[:n]
	for i := range keys {
		keys[i] = sortKey{path: r.log[i].Path, i: int32(i)}
	}
	slices.SortFunc(keys, func(a, b sortKey) int {
		if c := strings.Compare(a.path, b.path); c != 0 {
			return c
		}
		return int(a.i) - int(b.i)
	})
	if r.orders == nil || r.nOrder >= orderMemo {
		r.orders, r.nOrder = map[uint64][]*pathOrder{}, 0
	}
	o := &pathOrder{paths: make([]string, n), order: make([]int32, n)}
	r.orders[k] = append(r.orders[k], o)
	r.nOrder++
	for i := range keys {
		o.paths[i] = r.log[i].Path
		o.order[i] = keys[i].i
		if i > 0 && keys[i].path == keys[i-1].path {
			o.repeated = true
		}
	}
	clear(keys)
	return o.order, noShadows && !o.repeated
}

// folded returns the traces sorted by path, given sorted: each path's entries folded into one
// trace, written in place into the result (a path set once is copied as it is).
func (r *Recorder) folded(order []int32) []FieldTrace {
	n := 0
	for i := range order {
		if i == 0 || r.log[order[i]].Path != r.log[order[i-1]].Path {
			n++
		}
	}
	out := make([]FieldTrace, n)
	w := 0
	for i := 0; i < len(order); {
		j := i + 1
		for j < len(order) && r.log[order[j]].Path == r.log[order[i]].Path {
			j++
		}
		if k := int(order[i]); j == i+1 && !r.isShadow(k) {
			out[w] = r.log[k]
		} else {
			out[w] = r.fold(order[i:j])
		}
		w++
		i = j
	}
	return out
}

// EachValue calls fn with the value every path holds at the end (its last Set or SetNotSent;
// paths that only have shadows are left out), in the order the values were recorded: what
// Traces returns without the shadows, neither sorted nor copied. fn reads t and must not keep
// it. Meant for small recorders: it compares every entry with the ones after it.
func (r *Recorder) EachValue(fn func(t *FieldTrace)) {
	for i := range r.log {
		if r.isShadow(i) {
			continue
		}
		last := true
		for j := i + 1; j < len(r.log) && last; j++ {
			last = r.isShadow(j) || r.log[j].Path != r.log[i].Path
		}
		if last {
			fn(&r.log[i])
		}
	}
}

// Traces returns the recorded traces sorted by path (deterministic output, R9).
func (r *Recorder) Traces() []FieldTrace {
	order, single := r.sorted()
	if !single {
		return r.folded(order)
	}
	out := make([]FieldTrace, len(order))
	for i, j := range order {
		out[i] = r.log[j]
	}
	return out
}

// TakeTraces returns the recorded traces sorted by path, as Traces does, and leaves the Recorder
// empty. The caller owns the slice; the Recorder keeps its buffers for the next object.
func (r *Recorder) TakeTraces() []FieldTrace {
	out := r.Traces()
	r.Reset()
	return out
}

// TakeShared returns the recorded traces, as TakeTraces does, kept against the templates ts:
// the log of an earlier object that recorded the same paths in the same order. Only the
// entries that differ from the template's are kept; the first object of a sequence of paths
// becomes its template, with its sorted order. Objects of one kind built from similar inputs
// (the clusters of a mesh) record mostly the same entries, so most of an object's traces are
// its template's, and they are sorted and folded only when they are read (SharedTraces.Traces).
// The Recorder is left empty.
func (r *Recorder) TakeShared(ts *Templates) SharedTraces {
	defer r.Reset()
	k := shape(r.log)
	tpl := ts.find(k, r)
	if tpl == nil {
		order, single := r.sorted()
		tpl = &template{log: slices.Clone(r.log), order: slices.Clone(order), single: single}
		if r.shadows != nil && slices.Contains(r.shadows, true) {
			tpl.shadows = slices.Clone(r.shadows)
		}
		ts.add(k, tpl)
		return SharedTraces{template: tpl}
	}
	// differ lists the entries that differ from the template's: patched ones (value and
	// resource only) as i, the others as -1-i.
	differ := r.differ[:0]
	patched := 0
	for i := range r.log {
		switch compareEntry(&r.log[i], &tpl.log[i]) {
		case traceIsSame:
		case traceIsPatched:
			differ = append(differ, int32(i))
			patched++
		default:
			differ = append(differ, -1-int32(i))
		}
	}
	r.differ = differ[:0]
	out := SharedTraces{template: tpl}
	if patched > 0 {
		out.patches = make([]tracePatch, 0, patched)
	}
	if n := len(differ) - patched; n > 0 {
		out.own, out.at = make([]FieldTrace, 0, n), make([]int32, 0, n)
	}
	for _, i := range differ {
		if i >= 0 {
			out.patches = append(out.patches, tracePatch{value: r.log[i].Value, resource: r.log[i].Origin.Resource, at: i})
			continue
		}
		out.own, out.at = append(out.own, r.log[-1-i]), append(out.at, -1-i)
	}
	return out
}

// How a log entry compares with the template's at its index.
const (
	traceIsSame = iota
	// traceIsPatched: only the value or the origin's Resource differ.
	traceIsPatched
	traceIsOther
)

// compareEntry compares log entry a with b, the template's entry of the same path and kind. A
// shadow entry holds one Shadow.
func compareEntry(a, b *FieldTrace) int {
	if len(a.Shadowed) != len(b.Shadowed) || a.NotSent != b.NotSent || a.Path != b.Path {
		return traceIsOther
	}
	if len(a.Shadowed) > 0 {
		if len(a.Shadowed) == 1 && a.Shadowed[0] == b.Shadowed[0] {
			return traceIsSame
		}
		return traceIsOther
	}
	ao, bo := &a.Origin, &b.Origin
	if ao.Layer != bo.Layer || ao.Field != bo.Field || ao.Position != bo.Position || ao.Note != bo.Note {
		return traceIsOther
	}
	if a.Value == b.Value && ao.Resource == bo.Resource {
		return traceIsSame
	}
	return traceIsPatched
}

// SharedTraces are the traces of one object, kept as a template's log and the entries that
// differ from it (TakeShared). The zero value holds no traces.
type SharedTraces struct {
	template *template
	// patches are the entries that differ from the template's only in the value and the
	// origin's Resource; own are the others, at the indexes at.
	patches []tracePatch
	own     []FieldTrace
	at      []int32
}

// template is the log of the first object of a sequence of paths (and shadow entries), with
// its sorted order: Recorder.sorted's.
type template struct {
	log     []FieldTrace
	shadows []bool
	order   []int32
	single  bool
}

// tracePatch is the value and origin Resource of log entry at of a template.
type tracePatch struct {
	value    string
	resource *Ref
	at       int32
}

// IsZero reports whether s was never taken from a Recorder.
func (s SharedTraces) IsZero() bool { return s.template == nil }

// Traces returns the traces sorted by path, as TakeTraces would have returned them: a new
// slice the caller owns (its Shadowed lists too), nil when s is zero.
func (s SharedTraces) Traces() []FieldTrace {
	t := s.template
	if t == nil {
		return nil
	}
	log := slices.Clone(t.log)
	for _, p := range s.patches {
		log[p.at].Value, log[p.at].Origin.Resource = p.value, p.resource
	}
	for k, i := range s.at {
		log[i] = s.own[k]
	}
	if t.single {
		out := make([]FieldTrace, len(t.order))
		for i, j := range t.order {
			out[i] = log[j]
		}
		return out
	}
	r := Recorder{log: log, shadows: t.shadows}
	return r.folded(t.order)
}

// Templates are the logs of earlier objects that TakeShared keeps later objects against, one
// per sequence of paths. It is safe for concurrent use; the zero value is ready to use.
type Templates struct {
	mu     sync.Mutex
	shapes map[uint64][]*template
	n      int
}

// maxTemplates bounds the templates one Templates holds; objects of further sequences of paths
// become templates that are not kept.
const maxTemplates = 4096

// shape is a fingerprint of the paths of a log; matches compares the paths themselves.
func shape(log []FieldTrace) uint64 {
	h := uint64(len(log))
	for i := range log {
		p := log[i].Path
		h = h*1099511628211 + uint64(len(p))
		if len(p) > 0 {
			h = h*1099511628211 + uint64(p[len(p)-1])
		}
	}
	return h
}

// find returns the template of fingerprint k whose log has the paths and shadow entries of r's.
func (ts *Templates) find(k uint64, r *Recorder) *template {
	ts.mu.Lock()
	candidates := ts.shapes[k]
	ts.mu.Unlock()
	for _, t := range candidates {
		if t.matches(r) {
			return t
		}
	}
	return nil
}

func (t *template) matches(r *Recorder) bool {
	if len(t.log) != len(r.log) {
		return false
	}
	for i := range t.log {
		if t.log[i].Path != r.log[i].Path || (t.shadows != nil && t.shadows[i]) != r.isShadow(i) {
			return false
		}
	}
	return true
}

// add keeps t as a template of fingerprint k while there is room.
func (ts *Templates) add(k uint64, t *template) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.n >= maxTemplates {
		return
	}
	if ts.shapes == nil {
		ts.shapes = map[uint64][]*template{}
	}
	ts.shapes[k] = append(ts.shapes[k], t)
	ts.n++
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
