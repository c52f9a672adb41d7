package heaptune

// A command that reads a cluster allocates mostly what it keeps (the objects read, the index
// built over them), so the collections the runtime runs while the heap is small (at 4 MiB, then
// each time it doubles) find little garbage, and their marking competes for the machine with
// the API server the command waits for. AdjustStartingHeap raises GOGC until the live heap nears
// a starting size, then gives GOGC back its value: a command whose heap stays under the size
// collects once or not at all, and one that grows past it collects as it would have. The Go
// compiler does the same (cmd/compile/internal/base/startheap.go, AdjustStartingHeap), whose
// reading of the collector this follows in a simpler form.

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// AdjustStartingHeap sets GOGC so that the heap goal after each collection is about size
// bytes, until a collection finds a live heap of at least half of size; GOGC is then what it
// was before (GOGC from the environment, or 100). It does nothing when GOGC is off or already
// at least as generous, or when the runtime does not report its heap goal. The command calls it
// once, before cli.Main; Main itself leaves the collector alone, so tests that call it do too.
func AdjustStartingHeap(size uint64) {
	sample := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	prev := debug.SetGCPercent(100)
	debug.SetGCPercent(prev)
	goal := sample[0].Value.Uint64()
	if prev < 0 || goal == 0 || size <= goal {
		return
	}
	// The goal after a collection is live × (1 + GOGC/100).
	live := goal * 100 / uint64(100+prev)
	if live == 0 {
		return
	}
	gogc := gogcFor(size, live, prev)
	if gogc <= prev {
		return
	}
	debug.SetGCPercent(gogc)
	eachGC(func() bool {
		metrics.Read(sample)
		goal := sample[0].Value.Uint64()
		live := goal * 100 / uint64(100+gogc)
		if live >= size/2 || live == 0 {
			debug.SetGCPercent(prev)
			return false
		}
		gogc = gogcFor(size, live, prev)
		debug.SetGCPercent(gogc)
		return true
	})
}

// heapMinimum is the runtime's smallest heap goal at GOGC 100 (defaultHeapMinimum in
// runtime/mgcpacer.go); the goal is never under heapMinimum × GOGC/100.
const heapMinimum = 4 << 20

// gogcFor is the GOGC that sets the goal to size for a live heap of live bytes, never below
// floor: the goal is the larger of live × (1 + GOGC/100) and heapMinimum × GOGC/100, so for
// a small live heap the second decides it.
func gogcFor(size, live uint64, floor int) int {
	return max(min(int(100*size/live)-100, int(100*size/heapMinimum)), floor)
}

// eachGC calls fn after each collection until fn returns false: the finalizer of an object
// nothing refers to runs after the collection that finds it unreachable, and arms the next.
func eachGC(fn func() bool) {
	type sentinel [32]byte // past the tiny allocator, so that it has a finalizer of its own
	var finalizer func(*sentinel)
	finalizer = func(p *sentinel) {
		if fn() {
			runtime.SetFinalizer(p, finalizer)
		}
	}
	runtime.SetFinalizer(new(sentinel), finalizer)
}
