package envoycluster_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/mesh-explain/kubectl-mesh-explain/internal/testkit/meshgen"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/envoycluster"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/internal/explaintest"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
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
	snap, queries := smallMesh(t)
	eb := everyClusterBench(t, snap, queries)
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
	snap, queries := smallMesh(t)
	before := make([]*networking.DestinationRule, len(snap.DestinationRules))
	for i, dr := range snap.DestinationRules {
		before[i] = proto.Clone(&dr.Spec).(*networking.DestinationRule)
	}
	eb := everyClusterBench(t, snap, queries)
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

// The clusters of an Explainer keep their traces against those of earlier clusters with the
// same paths: expanded, every cluster of a generated mesh has the traces it has when each is
// kept whole.
func TestTracesKeptAgainstTemplatesAreWhole(t *testing.T) {
	snap, queries := smallMesh(t)
	eb := everyClusterBench(t, snap, queries)
	compact, whole := envoycluster.NewExplainer(eb.Index, eb.Proxy), envoycluster.NewExplainer(eb.Index, eb.Proxy)
	clusters, traces, shadowed := 0, 0, 0
	for _, h := range compact.Hosts() {
		hc, err := compact.Host(h)
		if err != nil {
			t.Fatal(err)
		}
		hw, err := whole.HostWholeTraces(h)
		if err != nil {
			t.Fatal(err)
		}
		if len(hc.Clusters) != len(hw.Clusters) {
			t.Fatalf("%s: %d clusters against templates, %d whole", h, len(hc.Clusters), len(hw.Clusters))
		}
		for i := range hc.Clusters {
			c, w := &hc.Clusters[i], &hw.Clusters[i]
			if c.Origins != nil || w.Origins == nil && w.Cluster != nil {
				t.Fatalf("%s: Origins filled in %v against templates, %v whole", c.Name, c.Origins != nil, w.Origins != nil)
			}
			got := c.Traces()
			if d := cmp.Diff(w.Origins, got); d != "" {
				t.Fatalf("%s: traces against templates differ from whole (-whole +templates):\n%s", c.Name, d)
			}
			clusters++
			traces += len(got)
			for _, tr := range got {
				if len(tr.Shadowed) > 0 {
					shadowed++
				}
			}
		}
	}
	if clusters < 100 || shadowed == 0 {
		t.Fatalf("%d clusters, %d traces with shadows: the mesh does not exercise the templates", clusters, shadowed)
	}
	t.Logf("%d clusters, %d traces (%d with shadows)", clusters, traces, shadowed)
}

// Every traced value of every cluster of a generated mesh that is a number, a boolean, a
// duration, a percentage or an enum is the value of the field it names: the typed setters
// write both at once, and this holds them to it.
func TestTracesMatchClusters(t *testing.T) {
	snap, queries := smallMesh(t)
	eb := everyClusterBench(t, snap, queries)
	ex := envoycluster.NewExplainer(eb.Index, eb.Proxy)
	clusters, compared := 0, 0
	for _, h := range ex.Hosts() {
		hc, err := ex.Host(h)
		if err != nil {
			t.Fatal(err)
		}
		hc.ResolvePositions()
		for _, c := range hc.Clusters {
			if c.Cluster == nil {
				continue
			}
			clusters++
			bad, n := explaintest.TraceMismatches(explain.Object{Name: c.Name, Message: c.Cluster, Origins: c.Origins})
			compared += n
			for _, b := range bad {
				t.Errorf("%s: %s", c.Name, b)
			}
		}
	}
	if clusters < 100 || compared < 10*clusters {
		t.Fatalf("%d traced values compared over %d clusters: the mesh does not exercise the check", compared, clusters)
	}
	t.Logf("%d traced values of %d clusters equal their fields", compared, clusters)
}

// smallMesh is the generated mesh of the tests (200 Services) and its queries.
func smallMesh(t *testing.T) (*model.Snapshot, meshgen.Queries) {
	t.Helper()
	snap, m, err := meshgen.LoadSnapshot(meshgen.Config{Seed: 1, Sizes: meshgen.Scaled(0.02)})
	if err != nil {
		t.Fatal(err)
	}
	return snap, m.Queries()
}

// everyClusterBench is the index of snap and the client proxy of queries in it.
func everyClusterBench(t *testing.T, snap *model.Snapshot, queries meshgen.Queries) *meshgen.EveryClusterBench {
	t.Helper()
	eb, err := meshgen.NewEveryClusterBench(snap, queries)
	if err != nil {
		t.Fatal(err)
	}
	return eb
}
