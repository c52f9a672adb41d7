package render

import (
	"fmt"
	"io"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// largeClusterResult is a host with n subset clusters of about 45 fields each: every origin
// shape of clusterResult, long paths and long origins that wrap, notes and shadows.
func largeClusterResult(t testing.TB, n int) *explain.Result {
	t.Helper()
	r := clusterResult(t)
	base := r.Objects[0]
	var objects []explain.Object
	for i := range n {
		o := base
		o.Name = fmt.Sprintf("outbound|9080|v%d|reviews.bookinfo.svc.cluster.local", i+1)
		o.Summary = append([]explain.Summary(nil), base.Summary...)
		o.Origins = nil
		for k := 0; len(o.Origins) < 45; k++ {
			for _, f := range base.Origins {
				f.Path = fmt.Sprintf("%s%s", f.Path, suffix(k))
				if k%3 == 1 {
					f.Origin = drOrigin(provenance.LayerSubset,
						fmt.Sprintf("spec.subsets[name=v%d].trafficPolicy.connectionPool.http.h2UpgradePolicy", i+1), drFile(20+k, 7))
				}
				o.Origins = append(o.Origins, f)
			}
		}
		objects = append(objects, o)
	}
	r.Objects = objects
	return r
}

func suffix(k int) string {
	if k == 0 {
		return ""
	}
	return fmt.Sprintf(".extra%d", k)
}

// BenchmarkTableClusterResult prints a host of 8 clusters in every human format and json, and
// (json-large) a document of megabytes, 400 clusters of 45 traces, the size of a waypoint's
// answer in the bench mesh, whose objects writeJSON encodes and indents on every core.
func BenchmarkTableClusterResult(b *testing.B) {
	for _, bc := range []struct {
		name     string
		format   string
		o        Options
		clusters int
	}{
		{"table", FormatTable, noColor, 8},
		{"wide", FormatWide, noColor, 8},
		{"table-color", FormatTable, Options{Color: ColorAlways, Width: 120}, 8},
		{"json", FormatJSON, noColor, 8},
		{"json-large", FormatJSON, noColor, 400},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := largeClusterResult(b, bc.clusters)
			p, err := For(bc.format, bc.o)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Print(io.Discard, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
