package istiorun

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"istio.io/istio/pkg/kube/krt"

	gen "github.com/mesh-explain/kubectl-mesh-explain/internal/testkit/scenariogen"
)

// Each RunKind's fake servers register their krt collections with krt's GlobalDebugHandler;
// a run must not keep the collections of the runs before it (a long loop would keep every
// run's servers).
func TestRunKindKeepsNoEarlierRun(t *testing.T) {
	collections := func() int {
		b, err := json.Marshal(krt.GlobalDebugHandler)
		if err != nil {
			t.Fatal(err)
		}
		var l []json.RawMessage
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatal(err)
		}
		return len(l)
	}
	var counts []int
	for i := range 2 {
		dir := filepath.Join(t.TempDir(), "cluster")
		if err := gen.Generate("cluster", 7).Write(dir); err != nil {
			t.Fatal(err)
		}
		sc, err := LoadScenario(dir)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := RunKind(sc, "cluster"); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		counts = append(counts, collections())
	}
	if counts[0] == 0 || counts[1] != counts[0] {
		t.Errorf("debug collections after each run: %v, want the same number, not none", counts)
	}
}
