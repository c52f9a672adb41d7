package main

import (
	"strings"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/internal/testkit/meshgen"
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

// The waypoint step has its rows: live (table and json) against its bare reads, offline, and its
// engine benchmark.
func TestReportShowsTheWaypoint(t *testing.T) {
	sample := func(ms int64) Sample { return Sample{WallNanos: ms * 1e6, MaxRSSKiB: 40 << 10} }
	bare := &BareResult{Requests: 10, Bytes: 50 << 10, ReadNanos: 20e6}
	r := &Results{Scale: 0.1, Repeat: 2, Sizes: meshgen.Scaled(0.1), Steps: []Step{
		{Name: stepName("authz-waypoint", modeLive, "table"), Verb: "authz-waypoint", Mode: modeLive, Output: "table", Samples: []Sample{sample(120), sample(130)}},
		{Name: stepName("authz-waypoint", modeLive, "json"), Verb: "authz-waypoint", Mode: modeLive, Output: "json", Samples: []Sample{sample(110), sample(140)}},
		{Name: stepName("authz-waypoint", modeBare, ""), Verb: "authz-waypoint", Mode: modeBare,
			Samples: []Sample{{WallNanos: 100e6, Bare: bare}, {WallNanos: 100e6, Bare: bare}}},
		{Name: stepName("authz-waypoint", modeOffline, "table"), Verb: "authz-waypoint", Mode: modeOffline, Output: "table", Samples: []Sample{sample(300), sample(320)}},
	}}
	bench := "BenchmarkWaypointExplain/services=1000-2   \t     100\t   3188404 ns/op\t 26.00 objects/op\t 1100719 B/op\t 16158 allocs/op\n"
	rs, err := parseBench(strings.NewReader(bench))
	if err != nil {
		t.Fatal(err)
	}
	bs := benchSet{}
	for _, b := range rs {
		bs[benchKey{b.name, b.services}] = append(bs[benchKey{b.name, b.services}], b)
	}
	var out strings.Builder
	writeReport(&out, []*Results{r}, bs)
	for _, want := range []string{
		"| `authz waypoint/NAME` | 125 ms (120 ms–130 ms) | 100 ms (100 ms–100 ms) | 1.25 (1.20–1.30) | 10 |",
		"| `authz waypoint/NAME -o json` | 125 ms (110 ms–140 ms) | 100 ms (100 ms–100 ms) | 1.25 (1.10–1.40) | 10 |",
		"| `authz waypoint/NAME` | 310 ms (300 ms–320 ms) |",
		"| WaypointExplain | 3.19 ms |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report has no line with %q:\n%s", want, out.String())
		}
	}
}
