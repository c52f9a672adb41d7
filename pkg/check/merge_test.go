package check

import (
	"reflect"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/envoycluster"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// TestMergerTakesBatchesInAnyOrder merges the occurrences of every class of the generated bench
// mesh, and of its workloads, in batch order and in reverse order, with some findings silenced
// by --ignore and some by an annotation: the findings must be the same.
func TestMergerTakesBatchesInAnyOrder(t *testing.T) {
	snap := smallBenchMesh(t)
	// Silence D2 on one Service (an annotation on the subject of the answers), and D6 everywhere.
	svc := snap.Services[0]
	if svc.Annotations == nil {
		svc.Annotations = map[string]string{}
	}
	svc.Annotations[IgnoreAnnotation] = "D2,D10"
	ign := newIgnorer(snap, []string{"D6"})

	ix := index.Build(snap)
	classes := Classes(snap, Clients(snap, nil))
	shared := envoycluster.NewSharedBuilds(ix)
	hosts := envoycluster.Hostnames(ix)
	var batches [][]occurrence
	for _, c := range classes {
		occ, _, err := classOccurrences(ix, shared, nil, c, nil, hosts)
		if err != nil {
			t.Fatal(err)
		}
		batches = append(batches, occ)
	}
	wl, _ := workloadOccurrences(snap, WorkloadEngines(snap, ""), nil)
	batches = append(batches, wl)

	inOrder, reversed := newMerger(snap, ign), newMerger(snap, ign)
	for i, b := range batches {
		inOrder.add(i, b)
	}
	for i := len(batches) - 1; i >= 0; i-- {
		reversed.add(i, batches[i])
	}
	a, b := inOrder.findings(), reversed.findings()
	ignored, live := 0, 0
	for _, f := range a {
		if f.Ignored != "" {
			ignored++
		} else {
			live++
		}
	}
	if ignored == 0 || live == 0 {
		t.Fatalf("%d findings silenced, %d not: the comparison proves little", ignored, live)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("in batch order: %d findings; in reverse order: %d", len(a), len(b))
		for i := range min(len(a), len(b)) {
			if !reflect.DeepEqual(a[i], b[i]) {
				t.Errorf("first difference:\n%+v\n%+v", a[i], b[i])
				break
			}
		}
	}
}

// TestCauseIsKey checks that two diagnostics have the same cause (the merger's map key) exactly
// when they have the same key (the string --diff compares), over diagnostics that differ in
// each part a key reads, in the message where the fix makes it irrelevant, and in the number
// and order of their resources, past the two a cause holds.
func TestCauseIsKey(t *testing.T) {
	a := provenance.Ref{Kind: "DestinationRule", Namespace: "ns", Name: "a"}
	b := provenance.Ref{Kind: "DestinationRule", Namespace: "ns", Name: "b"}
	c := provenance.Ref{Kind: "Service", Namespace: "ns", Name: "c"}
	cluster := provenance.Ref{Kind: "Namespace", Name: "ns"}
	var diags []explain.Diagnostic
	for _, id := range []string{"D2", "D6"} {
		for _, sev := range []explain.Severity{explain.SeverityError, explain.SeverityWarning} {
			// No text holds a NUL, key's separator (a fix `\x00m` would spell the key of a
			// diagnostic without a fix whose message is m).
			for _, fix := range []string{"", "fix it"} {
				for _, msg := range []string{"one", "two", "fix it"} {
					for _, rs := range [][]provenance.Ref{nil, {a}, {b}, {a, b}, {b, a}, {a, b, c}, {a, b, cluster}, {a, b, c, cluster}, {a, b, cluster, c}} {
						diags = append(diags, explain.Diagnostic{ID: id, Severity: sev, Fix: fix, Message: msg, Resources: rs})
					}
				}
			}
		}
	}
	for i, x := range diags {
		for _, y := range diags[i:] {
			if same, want := causeOf(x) == causeOf(y), key(x) == key(y); same != want {
				t.Errorf("causes equal %v, keys equal %v:\n%+v\n%+v", same, want, x, y)
			}
		}
	}
}
