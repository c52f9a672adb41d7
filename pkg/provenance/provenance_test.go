package provenance

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestRecorderShadowsEarlierValue(t *testing.T) {
	r := NewRecorder()
	mesh := Origin{Layer: LayerMeshConfig, Field: "connectTimeout"}
	dr := Origin{Layer: LayerDestinationRule, Resource: &Ref{Kind: "DestinationRule", Namespace: "bookinfo", Name: "reviews"},
		Field: "spec.trafficPolicy.connectionPool.tcp.connectTimeout"}
	r.Set("connectTimeout", "10s", mesh)
	r.Set("connectTimeout", "2s", dr)
	got, ok := r.Get("connectTimeout")
	if !ok || got.Value != "2s" || got.Origin.Layer != LayerDestinationRule {
		t.Fatalf("winner = %+v", got)
	}
	if len(got.Shadowed) != 1 || got.Shadowed[0].Value != "10s" || got.Shadowed[0].Origin.Layer != LayerMeshConfig {
		t.Fatalf("shadowed = %+v", got.Shadowed)
	}
	if s := got.Origin.String(); s != "DestinationRule bookinfo/reviews · spec.trafficPolicy.connectionPool.tcp.connectTimeout" {
		t.Fatalf("origin string = %q", s)
	}
}

func TestRecorderDeleteRemovesSubtree(t *testing.T) {
	r := NewRecorder()
	o := Origin{Layer: LayerIstioDefault}
	r.Set("edsClusterConfig.serviceName", "x", o)
	r.Set("edsClusterConfig.edsConfig.ads", "{}", o)
	r.Set("edsClusterConfigX", "y", o)
	r.Delete("edsClusterConfig")
	if got := r.Traces(); len(got) != 1 || got[0].Path != "edsClusterConfigX" {
		t.Fatalf("traces after delete = %+v", got)
	}
}

func TestCovers(t *testing.T) {
	for _, c := range []struct {
		path, leaf string
		want       bool
	}{
		{"a.b", "a.b", true},
		{"a.b", "a.b.c", true},
		{"a.b", "a.b[0].c", true},
		{"a.b", "a.bc", false},
		{"a.b.c", "a.b", false},
	} {
		if got := Covers(c.path, c.leaf); got != c.want {
			t.Errorf("Covers(%q, %q) = %v, want %v", c.path, c.leaf, got, c.want)
		}
	}
}

func TestRecorderTakeTracesSortsAndEmpties(t *testing.T) {
	r := NewRecorderSize(2)
	o := Origin{Layer: LayerIstioDefault}
	for _, p := range []string{"name", "type", "connectTimeout", "circuitBreakers.thresholds[0]", "altStatName", "lbPolicy", "commonLbConfig"} {
		r.Set(p, p, o)
	}
	r.Set("type", "EDS", Origin{Layer: LayerRegistry})
	r.Shadow("metadata", Shadow{Value: "x"})
	want := r.Traces()
	got := r.TakeTraces()
	if len(got) != len(want) {
		t.Fatalf("TakeTraces returned %d traces, Traces %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Path != want[i].Path || got[i].Value != want[i].Value || len(got[i].Shadowed) != len(want[i].Shadowed) {
			t.Errorf("trace %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if r.Len() != 0 || len(r.Traces()) != 0 {
		t.Fatalf("recorder not empty after TakeTraces: %d", r.Len())
	}
	r.Set("name", "again", o)
	if got, ok := r.Get("name"); !ok || got.Value != "again" {
		t.Fatalf("recorder unusable after TakeTraces: %+v", got)
	}
}

// mapRecorder is the Recorder as a map of current traces: the semantics the log must fold to.
type mapRecorder struct{ traces map[string]*FieldTrace }

func (m *mapRecorder) set(path, value string, o Origin, notSent bool) {
	t := &FieldTrace{Path: path, Value: value, NotSent: notSent, Origin: o}
	if prev, ok := m.traces[path]; ok {
		t.Shadowed = append([]Shadow{{Origin: prev.Origin, Value: prev.Value, Reason: "overridden"}}, prev.Shadowed...)
	}
	m.traces[path] = t
}

func (m *mapRecorder) shadow(path string, s Shadow) {
	t, ok := m.traces[path]
	if !ok {
		t = &FieldTrace{Path: path}
		m.traces[path] = t
	}
	t.Shadowed = append(t.Shadowed, s)
}

func (m *mapRecorder) delete(path string) {
	for p := range m.traces {
		if p == path || IsBelow(p, path) {
			delete(m.traces, p)
		}
	}
}

func TestRecorderFoldsLikeAMap(t *testing.T) {
	paths := []string{"a", "a.b", "a.b[0]", "a.c", "b", "ab", "c.d.e"}
	// One Recorder for every run, each seed's script run twice: the second run, and seeds whose
	// scripts record the same paths, read through the Recorder's remembered sort orders.
	r := NewRecorder()
	for run := 0; run < 400; run++ {
		seed := run / 2
		m := &mapRecorder{traces: map[string]*FieldTrace{}}
		next := xorshift(uint32(seed*2654435761 + 1))
		for step := 0; step < 20; step++ {
			p := paths[next(len(paths))]
			o := Origin{Layer: LayerIstioDefault, Note: fmt.Sprint(seed, step)}
			switch next(6) {
			case 0, 1:
				r.Set(p, fmt.Sprint(step), o)
				m.set(p, fmt.Sprint(step), o, false)
			case 2:
				r.SetNotSent(p, "default", o)
				m.set(p, "default", o, true)
			case 3:
				s := Shadow{Origin: o, Value: "lost", Reason: "dropped"}
				r.Shadow(p, s)
				m.shadow(p, s)
			case 4:
				r.Delete(p)
				m.delete(p)
			case 5:
				got, ok := r.Get(p)
				want, wok := m.traces[p]
				if ok != wok || (ok && !reflect.DeepEqual(*got, *want)) {
					t.Fatalf("seed %d step %d: Get(%q) = %+v, want %+v", seed, step, p, got, want)
				}
			}
		}
		var want []FieldTrace
		for _, p := range slices.Sorted(maps.Keys(m.traces)) {
			want = append(want, *m.traces[p])
		}
		// EachValue: every path with a value once, holding its last value; no shadow-only path.
		values := map[string]FieldTrace{}
		r.EachValue(func(v *FieldTrace) {
			if prev, dup := values[v.Path]; dup {
				t.Fatalf("seed %d: EachValue gave %q twice: %+v and %+v", seed, v.Path, prev, *v)
			}
			values[v.Path] = *v
		})
		for _, w := range want {
			got, ok := values[w.Path]
			if w.Origin.Layer == LayerNone {
				if ok {
					t.Fatalf("seed %d: EachValue gave shadow-only path %q: %+v", seed, w.Path, got)
				}
				continue
			}
			if !ok || got.Value != w.Value || got.NotSent != w.NotSent || got.Origin != w.Origin {
				t.Fatalf("seed %d: EachValue(%q) = %+v (%v), want the value of %+v", seed, w.Path, got, ok, w)
			}
			delete(values, w.Path)
		}
		if len(values) > 0 {
			t.Fatalf("seed %d: EachValue gave paths Traces does not have: %v", seed, values)
		}
		if got := r.Traces(); !reflect.DeepEqual(got, want) && (len(got) != 0 || len(want) != 0) {
			t.Fatalf("seed %d: Traces = %+v\nwant %+v", seed, got, want)
		}
		if got := r.TakeTraces(); !reflect.DeepEqual(got, want) && (len(got) != 0 || len(want) != 0) {
			t.Fatalf("seed %d: TakeTraces = %+v\nwant %+v", seed, got, want)
		}
	}
}

func TestLayersAreSpelledByName(t *testing.T) {
	docs, err := os.ReadFile("../../docs/origins.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, l := range Layers() {
		name := l.String()
		if name == "" || seen[name] {
			t.Fatalf("layer %d has the name %q, empty or taken", uint8(l), name)
		}
		seen[name] = true
		if !strings.Contains(string(docs), "`"+name+"`") {
			t.Errorf("docs/origins.md does not list the layer `%s`", name)
		}
		js, err := json.Marshal(Origin{Layer: l})
		if err != nil || string(js) != `{"layer":"`+name+`"}` {
			t.Errorf("%s as JSON: %s (%v)", name, js, err)
		}
		var back Origin
		if err := json.Unmarshal(js, &back); err != nil || back.Layer != l {
			t.Errorf("%s from JSON: %v (%v)", name, back.Layer, err)
		}
	}
	if js, err := json.Marshal(Origin{}); err != nil || string(js) != `{"layer":""}` {
		t.Errorf("no layer as JSON: %s (%v)", js, err)
	}
	var o Origin
	if err := json.Unmarshal([]byte(`{"layer":"destinationrule-sub"}`), &o); err == nil || !strings.Contains(err.Error(), `unknown layer "destinationrule-sub"`) {
		t.Errorf("an unknown layer name: %v", err)
	}
	if _, err := json.Marshal(Origin{Layer: layerCount}); err == nil {
		t.Error("a layer out of range marshals")
	}
}

// TakeShared keeps each object's traces against the template of its paths: expanded, they are
// what Traces returns, whether a trace is the template's, patched (value and Resource) or the
// object's own; the traces returned are the caller's to change; and an object that records
// what its template did keeps nothing of its own. Objects are taken on several goroutines at
// once against one Templates.
func TestTakeSharedKeepsTheTraces(t *testing.T) {
	refs := []*Ref{{Kind: "Service", Namespace: "a", Name: "x"}, {Kind: "Service", Namespace: "b", Name: "y"}}
	pos := &Position{File: "f.yaml", Line: 3}
	shapes := [][]string{{"a", "b", "c.d", "c.e"}, {"a", "b"}, {"name", "type", "x[0].y"}}
	record := func(r *Recorder, seed int) {
		next := xorshift(uint32(seed*2654435761 + 7))
		for _, p := range shapes[seed%len(shapes)] {
			o := Origin{Layer: LayerDestinationRule, Field: "spec." + p}
			switch next(8) {
			case 0:
				o.Resource = refs[next(len(refs))]
			case 1:
				o.Note = "note"
			case 2:
				o.Position = pos
			case 3:
				r.Shadow(p, Shadow{Origin: o, Value: fmt.Sprint("lost", next(3)), Reason: "dropped"})
			}
			value := "v"
			if next(4) == 0 {
				value = fmt.Sprint(next(3))
			}
			if next(6) == 0 {
				r.SetNotSent(p, value, o)
			} else {
				r.Set(p, value, o)
			}
			if next(10) == 0 {
				r.Set(p, "again", o)
			}
			if next(20) == 0 {
				r.Set(p+".gone", "x", o)
				r.Delete(p + ".gone")
			}
		}
	}
	var ts Templates
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			r := NewRecorder()
			var kept []SharedTraces
			var want [][]FieldTrace
			for i := range 300 {
				seed := g*1000 + i
				record(r, seed)
				want = append(want, r.Traces())
				kept = append(kept, r.TakeShared(&ts))
				if r.Len() != 0 {
					errs <- fmt.Errorf("seed %d: the Recorder holds %d entries after TakeShared", seed, r.Len())
					return
				}
				// The same script twice against fresh templates: the second is all its
				// template's.
				var fresh Templates
				record(r, seed)
				r.TakeShared(&fresh)
				record(r, seed)
				again := r.TakeShared(&fresh)
				if len(again.own) != 0 || len(again.patches) != 0 || again.template == nil {
					errs <- fmt.Errorf("seed %d: recorded again, %d entries of its own and %d patched, want none", seed, len(again.own), len(again.patches))
					return
				}
			}
			for i, s := range kept {
				got := s.Traces()
				if !reflect.DeepEqual(got, want[i]) {
					errs <- fmt.Errorf("object %d: TakeShared keeps %+v\nwant %+v", i, got, want[i])
					return
				}
				for j := range got {
					got[j].Value = "changed"
					for k := range got[j].Shadowed {
						got[j].Shadowed[k].Value = "changed"
					}
				}
			}
			for i, s := range kept {
				if got := s.Traces(); !reflect.DeepEqual(got, want[i]) {
					errs <- fmt.Errorf("object %d: changing the traces returned changed those kept: %+v", i, got)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if ts.n == 0 || ts.n >= 4*300 {
		t.Fatalf("%d templates for %d objects", ts.n, 4*300)
	}
	var zero SharedTraces
	if !zero.IsZero() || zero.Traces() != nil {
		t.Fatal("the zero SharedTraces holds traces")
	}
}

// xorshift returns a pseudo-random source from seed x: next(n) is in [0, n).
func xorshift(x uint32) func(n int) int {
	return func(n int) int {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		return int(x % uint32(n))
	}
}
