package index

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/meshhost"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// TestSelectWorkloadsMatchesAScan checks the label index against a scan of every workload of
// the namespace, for random workloads and selectors (with labels no workload has, and empty).
func TestSelectWorkloadsMatchesAScan(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	keys, values := []string{"app", "version", "tier", "team"}, []string{"a", "b", "c", ""}
	label := func() map[string]string {
		l := map[string]string{}
		for _, k := range keys {
			if r.IntN(3) > 0 {
				l[k] = values[r.IntN(len(values))]
			}
		}
		if len(l) == 0 && r.IntN(2) == 0 {
			return nil
		}
		return l
	}
	ix := &Index{workloads: map[string][]*workload{}, workloadsByLabel: map[string]map[labelKV][]*workload{},
		workloadByRef: map[provenance.Ref]*workload{}}
	for i := range 300 {
		ns := []string{"x", "y"}[i%2]
		ix.addWorkload(&workload{namespace: ns, name: fmt.Sprint(i), labels: label(),
			ref: provenance.Ref{Kind: "Pod", Namespace: ns, Name: fmt.Sprint(i)}})
	}
	for range 2000 {
		ns := []string{"x", "y", "z"}[r.IntN(3)]
		sel := label()
		if r.IntN(5) == 0 {
			sel = map[string]string{"app": "none"}
		}
		var want []*workload
		for _, w := range ix.workloads[ns] {
			if meshhost.LabelsSubsetOf(sel, w.labels) {
				want = append(want, w)
			}
		}
		if got := ix.selectWorkloads(ns, sel); !slices.Equal(got, want) {
			t.Fatalf("selectWorkloads(%s, %v): %d workloads, a scan finds %d", ns, sel, len(got), len(want))
		}
	}
}
