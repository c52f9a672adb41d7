package envoycluster_test

import (
	"fmt"
	"os"
	"testing"

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
