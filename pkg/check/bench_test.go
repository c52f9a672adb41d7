package check_test

import (
	"fmt"
	"testing"

	gen "github.com/mesh-explain/kubectl-mesh-explain/internal/testkit/meshgen"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/check"
)

// BenchmarkCheckRun is `check -A` once the snapshot is loaded, on the synthetic mesh of
// hack/meshgen at the scales MESH_EXPLAIN_BENCH_SCALE lists (1 is 10,000 Services), loaded from
// files as `-f DIR -R` does. Sub-benchmarks are named services=N.
func BenchmarkCheckRun(b *testing.B) {
	scales, err := gen.BenchScales()
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range scales {
		cfg := gen.Config{Seed: 1, Sizes: gen.Scaled(s)}
		snap, _, err := gen.LoadSnapshot(cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("services=%d", cfg.Sizes.Services), func(b *testing.B) {
			b.ReportAllocs()
			var findings int
			for b.Loop() {
				rep, err := check.Run(snap, check.Options{})
				if err != nil {
					b.Fatal(err)
				}
				findings = len(rep.Findings)
			}
			b.ReportMetric(float64(findings), "findings/op")
		})
	}
}
