package envoycluster_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/internal/testkit/meshgen"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/envoycluster"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/internal/explaintest"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
)

// The engine benchmarks of docs/performance.md run on the synthetic mesh of hack/meshgen, at
// the scales MESH_EXPLAIN_BENCH_SCALE lists (1 is 10,000 Services), loaded from files as `-f`
// does. Sub-benchmarks are named services=N; hack/meshgen report reads that name.

type benchMesh struct {
	snap    *model.Snapshot
	queries meshgen.Queries
	sizes   meshgen.Sizes
	// every is the index of BenchmarkClusterEveryClusterOfProxy with the number of clusters and
	// diagnostics it builds, built and checked once: -count repeats the measurement, not the
	// check. The checked clusters are not kept: they would be live heap the measured builds'
	// collections scan, which a process that builds every cluster once does not have.
	every    *meshgen.EveryClusterBench
	clusters int
	diags    int
}

var (
	benchMu     sync.Mutex
	benchMeshes = map[float64]*benchMesh{}
)

// meshAt loads the mesh of one scale once per test binary.
func meshAt(b *testing.B, scale float64) *benchMesh {
	b.Helper()
	benchMu.Lock()
	defer benchMu.Unlock()
	if m, ok := benchMeshes[scale]; ok {
		return m
	}
	cfg := meshgen.Config{Seed: 1, Sizes: meshgen.Scaled(scale)}
	snap, m, err := meshgen.LoadSnapshot(cfg)
	if err != nil {
		b.Fatal(err)
	}
	bm := &benchMesh{snap: snap, queries: m.Queries(), sizes: cfg.Sizes}
	benchMeshes[scale] = bm
	return bm
}

// eachScale runs fn as a sub-benchmark per scale.
func eachScale(b *testing.B, fn func(b *testing.B, m *benchMesh)) {
	scales, err := meshgen.BenchScales()
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range scales {
		m := meshAt(b, s)
		b.Run(fmt.Sprintf("services=%d", m.sizes.Services), func(b *testing.B) { fn(b, m) })
	}
}

func clusterQuery(q meshgen.Queries) envoycluster.Query {
	return envoycluster.Query{
		Host:      q.Host,
		Namespace: q.ClientNamespace,
		From:      envoycluster.ProxyRef{Kind: envoycluster.ProxyPod, Namespace: q.ClientNamespace, Name: q.ClientPod},
	}
}

// BenchmarkClusterExplainHost is `cluster HOST --from pod/NAME` once the snapshot is loaded:
// Explain builds its index and explains every port and subset of the host.
func BenchmarkClusterExplainHost(b *testing.B) {
	eachScale(b, func(b *testing.B, m *benchMesh) {
		q := clusterQuery(m.queries)
		res, err := envoycluster.Explain(m.snap, q)
		if err != nil {
			b.Fatal(err)
		}
		explaintest.RequireEveryFieldTraced(b, res)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := envoycluster.Explain(m.snap, q); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(envoycluster.Clusters(res))), "clusters/op")
	})
}

// BenchmarkClusterIndexBuild is the index Explain builds on every call.
func BenchmarkClusterIndexBuild(b *testing.B) {
	eachScale(b, func(b *testing.B, m *benchMesh) {
		b.ReportAllocs()
		for b.Loop() {
			index.Build(m.snap)
		}
	})
}

// BenchmarkClusterEveryClusterOfProxy builds every outbound cluster of one client proxy, for
// every host the proxy can see, with the origin of every field: what istiod's BuildClusters does
// for the proxy (compare conformance/istiorun BenchmarkEveryClusterPaired, which runs this loop
// and Istio's by turns in one process). The index is built once, as istiod builds its
// PushContext once; an Explainer then takes each host through the steps Explain takes for it
// (scope, DestinationRule selection and its diagnostics, host and route diagnostics, mTLS
// inference, one build per port): meshgen.EveryClusterBench.
func BenchmarkClusterEveryClusterOfProxy(b *testing.B) {
	eachScale(b, func(b *testing.B, m *benchMesh) {
		if m.every == nil {
			eb, err := meshgen.NewEveryClusterBench(m.snap, m.queries)
			if err != nil {
				b.Fatal(err)
			}
			built, diags, err := eb.EveryCluster()
			if err != nil {
				b.Fatal(err)
			}
			checkTraced(b, built)
			m.every, m.clusters, m.diags = eb, len(built), diags
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := m.every.EveryCluster(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(m.clusters), "clusters/op")
		b.ReportMetric(float64(m.diags), "diagnostics/op")
	})
}

// checkTraced fails b when a generated cluster has a field without an origin.
func checkTraced(b *testing.B, built []*envoycluster.Built) {
	b.Helper()
	var bad []string
	for _, bc := range built {
		for _, p := range explaintest.Uncovered(explain.Object{Name: bc.Name, Message: bc.Cluster, Origins: bc.Traces()}) {
			bad = append(bad, bc.Name+": "+p)
		}
	}
	if len(bad) > 0 {
		b.Fatalf("%d fields without an origin, e.g.\n%s", len(bad), strings.Join(bad[:min(len(bad), 10)], "\n"))
	}
}
