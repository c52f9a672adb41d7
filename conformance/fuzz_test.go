package conformance

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/conformance/istiorun"
	gen "github.com/mesh-explain/kubectl-mesh-explain/internal/testkit/scenariogen"
)

// FuzzEngineAgreesWithIstio is the differential fuzz target: the fuzzer picks a generated
// scenario (kind and seed) and mutates it by dropping documents (each byte of drop removes the
// document it indexes, modulo the count), which makes meshes the generator never writes: a
// DestinationRule without its Service, a policy without its namespace, a VirtualService
// without its rules. The same folder goes to the engines and to Istio's code, and any
// difference fails. Scenarios Istio's validation rejects, and Istio's known panics, are
// skipped, as in TestEngineAgreesWithIstio.
//
//	go test -run '^$' -fuzz '^FuzzEngineAgreesWithIstio$' -fuzztime 10m .
func FuzzEngineAgreesWithIstio(f *testing.F) {
	for i := range fuzzKinds {
		f.Add(uint64(1+i), uint8(i), []byte{})
		f.Add(uint64(40+i), uint8(i), []byte{3})
		f.Add(uint64(80+i), uint8(i), []byte{1, 5})
	}
	f.Fuzz(func(t *testing.T, seed uint64, k uint8, drop []byte) {
		kind := fuzzKinds[int(k)%len(fuzzKinds)]
		s := gen.Generate(kind, seed)
		for _, b := range drop {
			if len(s.Docs) <= 1 {
				break
			}
			i := int(b) % len(s.Docs)
			s.Docs = append(s.Docs[:i], s.Docs[i+1:]...)
		}
		dir := filepath.Join(t.TempDir(), fmt.Sprint(seed))
		if err := s.Write(dir); err != nil {
			t.Fatal(err)
		}
		var invalid *istiorun.InvalidError
		sc, err := istiorun.LoadScenario(dir)
		if errors.As(err, &invalid) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		want, _, err := istiorun.RunKind(sc, kind)
		if errors.As(err, &invalid) || isKnownIstioPanic(err) {
			return
		}
		got, engErr := runEngine(dir, sc.Command, kind)
		switch {
		case err != nil:
			// Istio has no answer (the pod asked about was dropped): the plugin must not
			// answer either.
			if engErr == nil {
				t.Fatalf("%s seed %d, dropped %v: Istio has no answer (%v) but the plugin answers:\n%s", kind, seed, drop, err, got)
			}
		case engErr != nil:
			// Istio pushes nothing for a host that no Service or ServiceEntry defines; the
			// plugin says it is not found.
			if !noAnswer(want) || !strings.Contains(engErr.Error(), "not found") {
				t.Fatalf("%s seed %d, dropped %v: Istio answers but the plugin fails: %v\nIstio:\n%s", kind, seed, drop, engErr, want)
			}
		default:
			diffs, err := compareOutput(kind, got, want)
			if err != nil {
				t.Fatal(err)
			}
			if len(diffs) > 0 {
				y, _ := s.YAML()
				t.Fatalf("%s seed %d, dropped %v: the engine differs from Istio:\n  %v\ncommand: %s\n%s", kind, seed, drop, diffs, s.Command, y)
			}
		}
	})
}

// noAnswer reports whether Istio's output is empty: no Cluster, no document.
func noAnswer(out []byte) bool {
	switch strings.TrimSpace(string(out)) {
	case "", "[]", "null":
		return true
	}
	return false
}

// fuzzKinds are the generated kinds the differential fuzz target draws from.
var fuzzKinds = []string{"cluster", "authz", "sidecar"}
