// Package parallel runs independent pieces of one answer's work on every core.
//
// It owns: Each. It may import: the standard library only.
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Each calls fn(i) for every i from 0 to n-1 on up to GOMAXPROCS goroutines, each taking the
// next i in turn, and returns when every call is done. A panic in fn would end the process
// from a worker: it is recovered there, the calls not yet started are skipped, and the panic
// of the lowest i is raised again on the caller's goroutine, where the command reports it.
func Each(n int, fn func(i int)) {
	if n <= 0 {
		return
	}
	panics := make([]any, n)
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n && !failed.Load(); i = int(next.Add(1) - 1) {
				func() {
					defer func() {
						if r := recover(); r != nil {
							panics[i] = r
							failed.Store(true)
						}
					}()
					fn(i)
				}()
			}
		})
	}
	wg.Wait()
	for _, p := range panics {
		if p != nil {
			panic(p)
		}
	}
}
