package conformance

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/conformance/compare"
	"github.com/mesh-explain/kubectl-mesh-explain/conformance/istiorun"
)

// TestInboundChainOrder pins the one non-deterministic part of a sidecar's virtualInbound
// listener: with several portLevelMtls ports that no Service exposes, istiod emits their
// passthrough chains in the iteration order of a Go map (authn.Builder.ForPassthrough ranges
// over PortLevelSetting()). Run repeatedly, Istio must produce more than one order, and every
// answer must have the same canonical form (compare.CanonicalInbound), which must also be what
// RunInbound writes. When Istio makes the order stable this test fails, and the canonical
// ordering can go.
func TestInboundChainOrder(t *testing.T) {
	dir := filepath.Join("..", "testdata", "scenarios", "sidecar", "mtls-port-level-several-unexposed-ports")
	sc, err := istiorun.LoadScenario(dir)
	if err != nil {
		t.Fatal(err)
	}
	canonical, err := istiorun.RunInbound(sc)
	if err != nil {
		t.Fatal(err)
	}
	var want any
	if err := json.Unmarshal(canonical, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(compare.CanonicalInbound(want), want) {
		t.Fatal("RunInbound's output is not in the canonical form compare.CanonicalInbound gives")
	}
	orders := map[string]bool{}
	for i := 0; i < 16 && len(orders) < 2; i++ {
		raw, err := istiorun.RunInboundAsSent(sc)
		if err != nil {
			t.Fatal(err)
		}
		var got []any
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		if d := compare.Diff(compare.CanonicalInbound(got), want); len(d) > 0 {
			t.Fatalf("run %d differs from the canonical answer in more than the passthrough order:\n  %v", i, d)
		}
		var ports []any
		for _, c := range got {
			m := c.(map[string]any)
			if fcm, ok := m["filterChainMatch"].(map[string]any); ok && (m["name"] == "virtualInbound" || m["name"] == "virtualInbound-catchall-http") {
				if p, ok := fcm["destinationPort"]; ok {
					ports = append(ports, p)
				}
			}
		}
		if len(ports) < 3 {
			t.Fatalf("expected passthrough chains for the ports 7070, 7071 and 7072, got ports %v", ports)
		}
		b, _ := json.Marshal(ports)
		orders[string(b)] = true
	}
	if len(orders) < 2 {
		t.Fatalf("16 runs of Istio gave one order of the per-port passthrough chains (%v); if istiod now sorts them, drop the canonical ordering (compare.CanonicalInbound, istiorun.CanonicalChainOrder)", orders)
	}
	t.Logf("orders of the per-port passthrough chains seen: %d", len(orders))
}
