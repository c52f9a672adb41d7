package conformance

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/conformance/istiorun"
)

// knownIstioPanics are the functions of the pinned Istio that panic on valid input. The
// generator can produce such inputs; they have no Istio answer to compare with.
var knownIstioPanics = []string{
	// DNS ServiceEntry whose endpoints are in several localities (one without), with a
	// DestinationRule localityLbSetting.failoverPriority and outlierDetection:
	// "index out of range" in loadbalancer.applyFailoverPriorityPerLocality.
	"loadbalancer.applyFailoverPriorityPerLocality",
}

func isKnownIstioPanic(err error) bool {
	var p *istiorun.PanicError
	if !errors.As(err, &p) {
		return false
	}
	for _, fn := range knownIstioPanics {
		if strings.Contains(p.Stack, fn) {
			return true
		}
	}
	return false
}

// TestKnownIstioPanics checks that the pinned Istio still panics on the inputs kept in
// testdata/istio-panics. When it stops (after an Istio update), the folder becomes an ordinary
// scenario and the entry in knownIstioPanics goes.
func TestKnownIstioPanics(t *testing.T) {
	root := filepath.Join("testdata", "istio-panics")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		t.Run(e.Name(), func(t *testing.T) {
			sc, err := istiorun.LoadScenario(dir)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = istiorun.Run(sc)
			if !isKnownIstioPanic(err) {
				t.Fatalf("Istio no longer panics here as recorded (got %v): move %s to the scenarios", err, dir)
			}
		})
	}
}
