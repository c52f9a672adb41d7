package conformance

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/conformance/istiorun"
	gen "github.com/mesh-explain/kubectl-mesh-explain/internal/testkit/scenariogen"
)

// TestGeneratedWaypointsReachIstio runs Istio on 200 generated waypoint scenarios and checks
// that every one passes Istio's validation and runs, and that together their answers reach what
// a waypoint can be sent: chains for Services (HTTP and TCP ports), for a ServiceEntry and for a
// Service of another namespace, waypoints with only the direct chains, the network and HTTP
// RBAC and ext_authz filters, RBAC of every action and shadow rules.
func TestGeneratedWaypointsReachIstio(t *testing.T) {
	work := t.TempDir()
	seen := map[string]int{}
	for seed := uint64(1); seed <= 200; seed++ {
		s := gen.Generate("waypoint", seed)
		dir := filepath.Join(work, fmt.Sprint(seed))
		if err := s.Write(dir); err != nil {
			t.Fatal(err)
		}
		sc, err := istiorun.LoadScenario(dir)
		if err != nil {
			t.Fatalf("seed %d: %v\n(scenario in %s)", seed, err, keep(t, s))
		}
		out, err := istiorun.RunWaypoint(sc)
		if err != nil {
			t.Fatalf("seed %d: %v\n(scenario in %s)", seed, err, keep(t, s))
		}
		var chains []struct {
			Name    string `json:"name"`
			Filters []struct {
				Name        string `json:"name"`
				TypedConfig struct {
					Rules *struct {
						Action string `json:"action"`
					} `json:"rules"`
					ShadowRules any `json:"shadowRules"`
				} `json:"typedConfig"`
			} `json:"filters"`
		}
		if err := json.Unmarshal(out, &chains); err != nil {
			t.Fatal(err)
		}
		found := map[string]bool{}
		if len(chains) == 2 {
			found["only the direct chains"] = true
		}
		for _, c := range chains {
			if p := strings.Split(c.Name, "|"); len(p) == 4 {
				found["a "+p[2]+" chain"] = true
				switch {
				case p[3] == "a.example.com":
					found["a ServiceEntry chain"] = true
				case strings.HasSuffix(p[3], ".bar.svc.cluster.local"):
					found["a chain of another namespace"] = true
				}
			}
			for _, f := range c.Filters {
				found[f.Name] = true
				if r := f.TypedConfig.Rules; r != nil {
					action := r.Action
					if action == "" {
						action = "ALLOW" // the RBAC default, left out by protojson
					}
					found["RBAC action "+action] = true
				}
				if f.TypedConfig.ShadowRules != nil {
					found["shadow rules"] = true
				}
			}
		}
		for k := range found {
			seen[k]++
		}
	}
	for _, want := range []string{
		"a http chain", "a tcp chain", "a ServiceEntry chain", "a chain of another namespace", "only the direct chains",
		"envoy.filters.network.rbac", "envoy.filters.network.ext_authz", "envoy.filters.http.rbac", "envoy.filters.http.ext_authz",
		"RBAC action ALLOW", "RBAC action DENY", "RBAC action LOG", "shadow rules",
	} {
		if seen[want] == 0 {
			t.Errorf("none of 200 generated waypoint scenarios gets %s from Istio", want)
		}
	}
	t.Logf("scenarios per feature: %v", seen)
}

// TestUnprogrammedWaypointBindsNothing pins what istiod does with a waypoint Gateway that has
// no status.addresses: the ambient index does not treat it as a waypoint yet
// (gatewayToWaypointTransform in pilot/pkg/serviceregistry/ambient/waypoints.go), so no
// service binds and its main_internal listener has only the direct chains. The want file of
// that folder is istiod's answer once the Gateway is programmed (istiorun.Programmed), which
// must bind the namespace's Services. When Istio starts binding to unprogrammed Gateways this
// test fails, and the assumption can go.
func TestUnprogrammedWaypointBindsNothing(t *testing.T) {
	sc, err := istiorun.LoadScenario(filepath.Join("..", "testdata", "scenarios", "waypoint", "gateway-without-addresses"))
	if err != nil {
		t.Fatal(err)
	}
	names := func(sc *istiorun.Scenario) []string {
		cs, err := istiorun.WaypointChains(sc)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	if got := names(sc); !slices.Equal(got, []string{"direct-tcp", "direct-http"}) {
		t.Errorf("Istio on the Gateway without status.addresses: chains %q, want only direct-tcp and direct-http", got)
	}
	p, err := sc.Programmed()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"inbound-vip|3306|tcp|ratings.app.svc.cluster.local", "inbound-vip|9080|http|reviews.app.svc.cluster.local", "direct-tcp", "direct-http"}
	if got := names(p); !slices.Equal(got, want) {
		t.Errorf("Istio on the programmed Gateway: chains %q, want %q", got, want)
	}
	if p == sc || len(p.Kube) != len(sc.Kube) {
		t.Error("Programmed did not return a changed copy of the scenario")
	}
	again, err := p.Programmed()
	if err != nil || again != p {
		t.Errorf("Programmed on a Gateway with addresses changed the scenario (%v)", err)
	}
}
