package check

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// TestGroupsShareAnswers explains every host for every class on the generated bench mesh with
// and without the answers shared by plain namespaces (groupPlan), and requires the same
// findings, and that answers were shared.
func TestGroupsShareAnswers(t *testing.T) {
	snap := smallBenchMesh(t)
	ix := index.Build(snap)
	classes := Classes(snap, Clients(snap, nil))
	grouping := planGroups(snap, ix)
	ign := newIgnorer(snap, nil)
	with, without := newMerger(snap, ign), newMerger(snap, ign)
	hostsWith, err := hostOccurrences(ix, classes, planReuse(snap, classes), grouping, 2, with)
	if err != nil {
		t.Fatal(err)
	}
	if grouping.taken == 0 {
		t.Fatal("no answer shared: the comparison proves nothing")
	}
	hostsWithout, err := hostOccurrences(ix, classes, planReuse(snap, classes), nil, 2, without)
	if err != nil {
		t.Fatal(err)
	}
	a, b := with.findings(), without.findings()
	if hostsWith != hostsWithout || !reflect.DeepEqual(a, b) {
		t.Errorf("with shared answers: %d findings over %d hosts; explained by every class: %d over %d", len(a), hostsWith, len(b), hostsWithout)
		for i := range min(len(a), len(b)) {
			if !reflect.DeepEqual(a[i], b[i]) {
				t.Errorf("first difference:\n%+v\n%+v", a[i], b[i])
				break
			}
		}
	}
	t.Logf("%d classes, %d answers made for groups, %d taken from them, %d findings", len(classes), grouping.made, grouping.taken, len(a))
}

// TestNamesNamespace checks the test that keeps an answer naming its namespace from being
// shared.
func TestNamesNamespace(t *testing.T) {
	for _, tc := range []struct {
		d    explain.Diagnostic
		want bool
	}{
		{explain.Diagnostic{Message: "the client namespace ns-1 has none"}, true},
		{explain.Diagnostic{Message: "reviews.ns-1.svc.cluster.local is hidden"}, true},
		{explain.Diagnostic{Fix: "add ns-1"}, true},
		{explain.Diagnostic{Message: "ns-10 and ns-1x and xns-1 and ns-1-a"}, false},
		{explain.Diagnostic{Resources: []provenance.Ref{{Kind: "DestinationRule", Namespace: "ns-1", Name: "a"}}}, true},
		{explain.Diagnostic{Message: "nothing"}, false},
	} {
		if got := namesNamespace(tc.d, "ns-1"); got != tc.want {
			t.Errorf("namesNamespace(%+v, ns-1) = %v, want %v", tc.d, got, tc.want)
		}
	}
}

// TestReplicasShareAnswers checks that the replicas of the generated bench mesh take the
// answer of the first one explained, and that the occurrences are those of every pod's own
// answer.
func TestReplicasShareAnswers(t *testing.T) {
	snap := smallBenchMesh(t)
	// The generator's two pods of a ReplicaSet differ (version, image): give every pod a
	// replica, on another node at another address.
	var pods []*corev1.Pod
	for i, pod := range snap.Pods {
		r := pod.DeepCopy()
		r.Name += "-r"
		r.Spec.NodeName += "-r"
		ip := fmt.Sprintf("10.200.%d.%d", i>>8, i&0xff)
		r.Status.PodIP, r.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
		pods = append(pods, pod, r)
	}
	snap.Pods = pods
	engines := WorkloadEngines(snap, "")
	got, counts, taken := workloadAnswers(snap, engines, nil)
	var want []occurrence
	for _, pod := range snap.Pods {
		i := slices.IndexFunc(engines, func(e WorkloadEngine) bool { return e.Applies(pod) })
		if i < 0 {
			continue
		}
		ref := provenance.Ref{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name}
		diags := engines[i].Explain(pod).Diagnostics
		for k := range diags {
			want = append(want, occurrence{d: &diags[k], workload: ref.String(), subject: &ref})
		}
	}
	if taken == 0 {
		t.Fatal("no pod took the answer of a replica: the comparison proves nothing")
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("with the replicas' answers taken: %d occurrences; every pod explained: %d", len(got), len(want))
		for i := range min(len(got), len(want)) {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("first difference:\n%+v\n%+v", got[i], want[i])
				break
			}
		}
	}
	t.Logf("%v pods, %d took the answer of a replica, %d occurrences", counts, taken, len(got))
}
