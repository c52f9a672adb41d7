package check

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	gen "github.com/mesh-explain/kubectl-mesh-explain/internal/testkit/meshgen"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
)

// TestReuseFindsTheSame explains every host for every class on the generated bench mesh with
// and without taking the namespace default's answers, and requires the same findings; the
// mesh has pods that workloadSelector DestinationRules set apart, so some classes take them.
func TestReuseFindsTheSame(t *testing.T) {
	snap := smallBenchMesh(t)
	ix := index.Build(snap)
	classes := Classes(snap, Clients(snap, nil))
	plan := planReuse(snap, classes)
	if len(plan.base) == 0 {
		t.Fatal("no class takes its namespace default's answers: the comparison proves nothing")
	}
	ign := newIgnorer(snap, nil)
	with, without := newMerger(snap, ign), newMerger(snap, ign)
	hostsWith, err := hostOccurrences(ix, classes, plan, nil, 2, with)
	if err != nil {
		t.Fatal(err)
	}
	taken, relabeled := 0, 0
	for c := range plan.base {
		t := plan.taking(c, c.Members[0].Labels)
		for i := range plan.hosts {
			if a := t.answer(i); a != nil {
				taken++
				if a.names {
					relabeled++
				}
			}
		}
	}
	if taken == 0 || relabeled == 0 {
		t.Fatalf("%d answers taken, %d of them in the class's own words: the comparison proves too little", taken, relabeled)
	}
	hostsWithout, err := hostOccurrences(ix, classes, nil, nil, 2, without)
	if err != nil {
		t.Fatal(err)
	}
	a, b := with.findings(), without.findings()
	// A class that takes every answer of its namespace default in full is listed through the
	// default's `Namespace NS`: its pods must be covered by it, and nothing else differs.
	folded := 0
	if len(a) == len(b) {
		for i := range a {
			for _, c := range b[i].Clients {
				if slices.Contains(a[i].Clients, c) {
					continue
				}
				if ns, ok := podNamespace(c); !ok || !slices.Contains(a[i].Clients, "Namespace "+ns) {
					t.Errorf("%s %s: client %s neither listed nor covered by its namespace in %v", a[i].ID, a[i].Message, c, a[i].Clients)
				}
				folded++
			}
			for _, c := range a[i].Clients {
				if !slices.Contains(b[i].Clients, c) {
					t.Errorf("%s %s: client %s listed, but no class's own answer reports it", a[i].ID, a[i].Message, c)
				}
			}
			a[i].Clients, b[i].Clients = nil, nil
		}
	}
	if folded == 0 {
		t.Error("no pod folded into its namespace: the comparison proves nothing")
	}
	if hostsWith != hostsWithout || !reflect.DeepEqual(a, b) {
		t.Errorf("with the answers taken: %d findings over %d hosts; explained by every class: %d over %d", len(a), hostsWith, len(b), hostsWithout)
		for i := range min(len(a), len(b)) {
			if !reflect.DeepEqual(a[i], b[i]) {
				t.Errorf("first difference:\n%+v\n%+v", a[i], b[i])
				break
			}
		}
	}
	t.Logf("%d classes, %d take answers (%d host answers taken, %d relabeled), %d findings, %d client entries folded into their namespace", len(classes), len(plan.base), taken, relabeled, len(a), folded)
}

// podNamespace is the namespace of a `Pod NS/NAME` client.
func podNamespace(c string) (string, bool) {
	rest, ok := strings.CutPrefix(c, "Pod ")
	if !ok {
		return "", false
	}
	ns, _, ok := strings.Cut(rest, "/")
	return ns, ok
}

// smallBenchMesh is the generated bench mesh at 100 Services over 10 namespaces (200 Pods, 50
// DestinationRules, waypoints in its ambient namespaces), loaded from files.
func smallBenchMesh(t *testing.T) *model.Snapshot {
	t.Helper()
	snap, err := gen.LoadSmall(0.01, 10, 3)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// TestPanicCheckingAClassIsAnError: a panic on a worker that checks a class's hosts ends the
// check with an error naming the clients, not the process.
func TestPanicCheckingAClassIsAnError(t *testing.T) {
	snap := smallBenchMesh(t)
	testHookClass = func(c *Class) {
		if c.Namespace == gen.NamespaceName(1) {
			panic("boom")
		}
	}
	defer func() { testHookClass = nil }()
	_, err := Run(snap, Options{Workers: 2})
	if err == nil || !strings.Contains(err.Error(), "internal error while checking the hosts of clients") ||
		!strings.Contains(err.Error(), gen.NamespaceName(1)) || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("Run = %v, want the panic as an error naming the clients of %s", err, gen.NamespaceName(1))
	}
}

// panicEngine answers for every pod by panicking.
type panicEngine struct{}

func (panicEngine) DataPlane() string                       { return "test" }
func (panicEngine) Applies(*corev1.Pod) bool                { return true }
func (panicEngine) Explain(pod *corev1.Pod) *explain.Result { panic("boom " + pod.Name) }

// TestPanicExplainingAWorkloadReachesTheCaller: a panic of an engine on a workload worker is
// raised again on the caller's goroutine (where the command reports it), not on the worker's.
func TestPanicExplainingAWorkloadReachesTheCaller(t *testing.T) {
	snap := smallBenchMesh(t)
	defer func() {
		if r, ok := recover().(string); !ok || !strings.HasPrefix(r, "boom ") {
			t.Errorf("recovered %v, want the engine's panic on the caller's goroutine", r)
		}
	}()
	workloadAnswers(snap, []WorkloadEngine{panicEngine{}}, nil)
}

// TestRelabelTouchesOnlyTheProxysLabels: relabel rewrites the proxy's labels where the two
// selection diagnostics print them, and nothing else, not even the same labels printed as a
// subset's or a selector's.
func TestRelabelTouchesOnlyTheProxysLabels(t *testing.T) {
	from := map[string]string{"app": "a", "version": "v1"}
	to := map[string]string{"app": "a", "version": "v2"}
	in := []explain.Diagnostic{
		{ID: "D5", Message: "DestinationRule ns/r for h in namespace ns only applies to workloads its workloadSelector selects, and this proxy (labels app=a,version=v1) is not one of them: because ..."},
		{ID: "D6", Message: "DestinationRule ns/s selects workloads with app=a,version=v1, which does not match this proxy's labels (app=a,version=v1); it selects no workload in namespace ns"},
		{ID: "D17", Message: `subset "v1" of h (labels app=a,version=v1) selects no endpoint`},
	}
	want := []string{
		"DestinationRule ns/r for h in namespace ns only applies to workloads its workloadSelector selects, and this proxy (labels app=a,version=v2) is not one of them: because ...",
		"DestinationRule ns/s selects workloads with app=a,version=v1, which does not match this proxy's labels (app=a,version=v2); it selects no workload in namespace ns",
		`subset "v1" of h (labels app=a,version=v1) selects no endpoint`,
	}
	got, _ := newRelabeler(from, to).apply(in)
	for i := range want {
		if got[i].Message != want[i] {
			t.Errorf("%s:\n got %s\nwant %s", in[i].ID, got[i].Message, want[i])
		}
	}
	if in[0].Message == got[0].Message {
		t.Error("relabel changed its input in place, or nothing at all")
	}
}
