package envoycluster_test

import (
	"fmt"
	"os"
	"testing"

	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/mesh-explain/kubectl-mesh-explain/hack/meshgen/gen"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/envoycluster"
)

// TestMain fails the run when any test's builds wrote to the sub-messages that built clusters
// share (the TLS, proxy protocol, subset and load-balancer cases of the package's tests
// included): a write there would change every other cluster.
func TestMain(m *testing.M) {
	code := m.Run()
	if changed := envoycluster.SharedMessagesChanged(); len(changed) > 0 {
		for _, c := range changed {
			fmt.Fprintln(os.Stderr, "shared message changed by a build:", c)
		}
		code = 1
	}
	os.Exit(code)
}

// Building every cluster of a proxy in a generated mesh (every kind of DestinationRule
// layering, TLS mode and resolution the generator makes) leaves the shared sub-messages as they
// were made.
func TestBuildsLeaveSharedMessagesUnchanged(t *testing.T) {
	snap, m, err := gen.LoadSnapshot(gen.Config{Seed: 1, Sizes: gen.Scaled(0.02)})
	if err != nil {
		t.Fatal(err)
	}
	eb, err := gen.NewEveryClusterBench(snap, m.Queries())
	if err != nil {
		t.Fatal(err)
	}
	built, _, err := eb.EveryCluster()
	if err != nil {
		t.Fatal(err)
	}
	if len(built) < 100 {
		t.Fatalf("%d clusters built, want a mesh's worth", len(built))
	}
	for _, c := range envoycluster.SharedMessagesChanged() {
		t.Error(c)
	}
}

// The index's DestinationRule entries share the lists and messages of the rules read (only a
// merge copies them): indexing and building every cluster of a proxy leaves the rules as read.
func TestBuildsLeaveDestinationRulesUnchanged(t *testing.T) {
	snap, m, err := gen.LoadSnapshot(gen.Config{Seed: 1, Sizes: gen.Scaled(0.02)})
	if err != nil {
		t.Fatal(err)
	}
	before := make([]*networking.DestinationRule, len(snap.DestinationRules))
	for i, dr := range snap.DestinationRules {
		before[i] = proto.Clone(&dr.Spec).(*networking.DestinationRule)
	}
	eb, err := gen.NewEveryClusterBench(snap, m.Queries())
	if err != nil {
		t.Fatal(err)
	}
	e := envoycluster.NewExplainer(eb.Index, eb.Proxy)
	merged := 0
	for _, h := range e.Hosts() {
		hc, err := e.Host(h)
		if err != nil {
			t.Fatal(err)
		}
		if r := hc.Selection.Rule; r != nil && len(r.From) > 1 {
			merged++
		}
	}
	if merged == 0 {
		t.Fatal("the mesh has no merged DestinationRules: the test would not see a merge write to a rule")
	}
	for i, dr := range snap.DestinationRules {
		if !proto.Equal(before[i], &dr.Spec) {
			t.Errorf("DestinationRule %s/%s changed:\n%v\nwant\n%v", dr.Namespace, dr.Name, &dr.Spec, before[i])
		}
	}
}
