package provenance

import (
	"slices"
	"sync"
)

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
