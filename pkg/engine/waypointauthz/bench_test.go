package waypointauthz_test

import (
	"fmt"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/internal/testkit/meshgen"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/waypointauthz"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/internal/explaintest"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
)

// BenchmarkWaypointExplain is `authz waypoint/NAME` once the snapshot is loaded: the services,
// filter chains and authorization filters of the waypoint of the synthetic mesh of hack/meshgen
// (docs/performance.md), at the scales MESH_EXPLAIN_BENCH_SCALE lists (1 is 10,000 Services),
// loaded from files as `-f` does. Sub-benchmarks are named services=N; hack/meshgen report reads
// that name.
func BenchmarkWaypointExplain(b *testing.B) {
	scales, err := meshgen.BenchScales()
	if err != nil {
		b.Fatal(err)
	}
	for _, scale := range scales {
		cfg := meshgen.Config{Seed: 1, Sizes: meshgen.Scaled(scale)}
		snap := snapshotAt(b, cfg)
		qs := meshgen.QueriesFor(cfg)
		// The loop measures the table's answer (no protos); the check before it, the document's.
		q := waypointauthz.Query{Namespace: qs.WaypointNamespace, Name: qs.WaypointName}
		b.Run(fmt.Sprintf("services=%d", cfg.Sizes.Services), func(b *testing.B) {
			res, err := waypointauthz.Explain(snap, waypointauthz.Query{Namespace: q.Namespace, Name: q.Name, Protos: true})
			if err != nil {
				b.Fatal(err)
			}
			if len(res.Assumptions) > 0 {
				b.Fatalf("the waypoint %s/%s is answered with assumptions: %v", q.Namespace, q.Name, res.Assumptions)
			}
			explaintest.RequireEveryFieldTraced(b, chainsOf(res))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := waypointauthz.Explain(snap, q); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(res.Objects)), "objects/op")
		})
	}
}

// snapshots are the loaded meshes by scale, kept for the whole test binary so that -count
// repeats the measurement, not the load.
var snapshots = map[meshgen.Sizes]*model.Snapshot{}

func snapshotAt(b *testing.B, cfg meshgen.Config) *model.Snapshot {
	b.Helper()
	if s, ok := snapshots[cfg.Sizes]; ok {
		return s
	}
	s, _, err := meshgen.LoadSnapshot(cfg)
	if err != nil {
		b.Fatal(err)
	}
	snapshots[cfg.Sizes] = s
	return s
}

// chainsOf is res with only its filter chains, the objects -o envoy prints. Every field of a
// chain is traced; the other objects are the chains' filters again, whose Message is only their
// value in the document and whose origins go down to each policy entry, not to every leaf.
func chainsOf(res *explain.Result) *explain.Result {
	c := *res
	c.Objects = nil
	for _, o := range res.Objects {
		if o.Kind == waypointauthz.ChainKind {
			c.Objects = append(c.Objects, o)
		}
	}
	return &c
}
