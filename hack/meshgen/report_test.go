package main

import (
	"strings"
	"testing"
)

// A paired benchmark's rounds parse into its two sides, and their ratio is taken round by round.
func TestPairedRatioPerRound(t *testing.T) {
	out := `goos: linux
BenchmarkEveryClusterPaired/services=1000/istio-2         	       3	  100000000 ns/op	      2479 clusters/op
BenchmarkEveryClusterPaired/services=1000/mesh-explain-2  	       3	  150000000 ns/op	      2479 clusters/op
BenchmarkEveryClusterPaired/services=1000/istio#01-2      	       3	  200000000 ns/op	      2479 clusters/op
BenchmarkEveryClusterPaired/services=1000/mesh-explain#01-2         	       3	 180000000 ns/op	      2479 clusters/op
BenchmarkClusterEveryClusterOfProxy/services=1000-2       	       3	 120000000 ns/op
PASS
`
	rs, err := parseBench(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	bs := benchSet{}
	for _, r := range rs {
		k := benchKey{r.name, r.services}
		bs[k] = append(bs[k], r)
	}
	if got := len(bs[benchKey{pairedIstio, 1000}]); got != 2 {
		t.Fatalf("%d Istio rounds, want 2: %+v", got, rs)
	}
	if got := len(bs[benchKey{"ClusterEveryClusterOfProxy", 1000}]); got != 1 {
		t.Fatalf("%d plain results, want 1: %+v", got, rs)
	}
	r, ok := bs.pairedRatio(1000)
	// Rounds: 1.5 and 0.9. Medians taken apart would give 165/150 = 1.1.
	if !ok || r.n != 2 || r.min != 0.9 || r.max != 1.5 || r.median != 1.2 {
		t.Fatalf("paired ratio = %+v, %v; want 0.9 and 1.5 over 2 rounds", r, ok)
	}
}
