package check_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/internal/testkit/scenariogen"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/check"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/internal/checktest"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// FuzzEnginesAgreeWithCheck is the engines' fuzz target. The fuzzer picks a generated scenario
// (kind and seed) and edits it (scenariogen's Mutate: documents dropped or copied, fields
// deleted, set to values Istio's validation rejects or to values from elsewhere in the mesh).
// The snapshot is loaded as `-f -` loads it (from JSON, which loads faster than YAML), then every engine answers for everything in it: the
// cluster engine every host from every client, the sidecar and ztunnel engines every pod, the
// waypoint engine every waypoint. None may panic or fail, and check.Run must find exactly the
// union of their diagnostics.
//
//	go test -run '^$' -fuzz '^FuzzEnginesAgreeWithCheck$' -fuzztime 10m ./pkg/check
func FuzzEnginesAgreeWithCheck(f *testing.F) {
	for i := range scenariogen.Kinds {
		f.Add(uint64(1+i), uint8(i), []byte{})
		f.Add(uint64(40+i), uint8(i), []byte{0, 3})
		f.Add(uint64(80+i), uint8(i), []byte{2, 1, 30, 15, 5, 2, 9, 0, 40})
		f.Add(uint64(120+i), uint8(i), []byte{1, 2, 4, 2, 1, 3, 3, 7})
	}
	f.Fuzz(func(t *testing.T, seed uint64, k uint8, edits []byte) {
		s := scenariogen.Generate(scenariogen.Kinds[int(k)%len(scenariogen.Kinds)], seed)
		s.Mutate(edits)
		y, err := s.JSON()
		if err != nil {
			t.Fatal(err)
		}
		snap, err := source.Load(context.Background(), source.Spec{Files: []string{"-"}, Stdin: bytes.NewReader(y), DefaultNamespace: "default"})
		if err != nil {
			t.Fatalf("loading:\n%s\n%v", y, err)
		}
		rep, err := check.Run(snap, check.Options{})
		if err != nil {
			t.Fatalf("check:\n%s\n%v", y, err)
		}
		u := engineUnion(t, snap)
		if checktest.Compare(t, "scenario", rep, u); t.Failed() {
			t.Logf("the scenario:\n%s", y)
		}
	})
}
