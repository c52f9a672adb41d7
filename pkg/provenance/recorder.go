package provenance

import (
	"slices"
	"strings"
	"sync"
)

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
	// mu guards keys, orders and nOrder, which reads fill: a Recorder that is no longer
	// written (a policy of the pool every ztunnel answer shares) can be read concurrently.
	mu sync.Mutex
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
	r.mu.Lock()
	defer r.mu.Unlock()
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

// Traces returns the recorded traces sorted by path, so every output is deterministic.
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
