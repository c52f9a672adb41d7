package parallel

import (
	"sync/atomic"
	"testing"
)

// TestEachCallsEveryIndexOnce: every index once, whatever the number of workers.
func TestEachCallsEveryIndexOnce(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, 1000} {
		calls := make([]atomic.Int32, n)
		Each(n, func(i int) { calls[i].Add(1) })
		for i := range calls {
			if c := calls[i].Load(); c != 1 {
				t.Fatalf("n %d: index %d called %d times", n, i, c)
			}
		}
	}
}

// TestEachRaisesAPanicOnTheCaller: a panic of a call is raised again on the caller's goroutine.
func TestEachRaisesAPanicOnTheCaller(t *testing.T) {
	defer func() {
		if r := recover(); r != "boom" {
			t.Errorf("recovered %v, want the call's panic", r)
		}
	}()
	Each(100, func(i int) {
		if i == 37 {
			panic("boom")
		}
	})
	t.Error("Each returned after a call panicked")
}
