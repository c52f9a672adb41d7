package envoycluster

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
	loader "github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// TestExplainerMatchesExplain explains every host of every cluster scenario twice: with Explain,
// which builds a new index per call, and with one Explainer per scenario, which keeps the index
// and the proxy's scope across hosts. The results must be identical, and Host must give the
// clusters of Explain once its positions are resolved.
func TestExplainerMatchesExplain(t *testing.T) {
	root := scenarioRoot(t)
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	hosts := 0
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if _, err := os.Stat(filepath.Join(dir, "args")); !e.IsDir() || err != nil {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			q := scenarioQuery(t, dir)
			snap, err := loader.LoadFiles(scenarioFiles(t, dir), q.Namespace)
			if err != nil {
				t.Fatalf("loading: %v", err)
			}
			ix := index.Build(snap)
			proxy, err := queryProxy(ix, q)
			if err != nil {
				t.Fatal(err)
			}
			ex := NewExplainer(ix, proxy)
			// The index shares its merged rules with every selection: building must only read
			// them.
			before := map[*index.Service]*networking.DestinationRule{}
			for _, svc := range ix.Services() {
				if r := ix.DestinationRule(proxy, svc).Rule; r != nil {
					before[svc] = proto.Clone(r.Spec).(*networking.DestinationRule)
				}
			}
			defer func() {
				for svc, want := range before {
					if got := ix.DestinationRule(proxy, svc).Rule.Spec; !proto.Equal(want, got) {
						t.Errorf("%s: explaining changed the index's DestinationRule:\n%v\nwas\n%v", svc.Hostname, got, want)
					}
				}
			}()
			for _, h := range ex.Hosts() {
				hosts++
				hq := Query{Host: h, Namespace: q.Namespace, From: q.From}
				want, wantErr := Explain(snap, hq)
				got, gotErr := ex.Explain(hq)
				if !sameError(wantErr, gotErr) {
					t.Fatalf("%s: Explain error %v, Explainer error %v", h, wantErr, gotErr)
				}
				if wantErr != nil {
					continue
				}
				if d := cmp.Diff(resultJSON(t, want), resultJSON(t, got)); d != "" {
					t.Errorf("%s: Explainer differs from Explain (-Explain +Explainer):\n%s", h, d)
				}
				hc, err := ex.Host(h)
				if err != nil {
					t.Fatalf("%s: Host: %v", h, err)
				}
				checkHostClusters(t, h, hc, want)
				// The traces kept against templates are the traces the builds recorded.
				hcWhole, err := NewExplainer(ix, proxy).host(h, 0, "", slowPaths{wholeTraces: true})
				if err != nil {
					t.Fatalf("%s: Host with whole traces: %v", h, err)
				}
				hcWhole.ResolvePositions()
				for i := range hcWhole.Clusters {
					if d := cmp.Diff(hcWhole.Clusters[i].Origins, hc.Clusters[i].Origins); d != "" {
						t.Errorf("%s: origins of %s kept whole and against templates differ (-whole +templates):\n%s", h, hc.Clusters[i].Name, d)
					}
				}
				// Positions looked up while building are the ones resolved afterwards.
				hcNow, err := NewExplainer(ix, proxy).host(h, 0, "", slowPaths{positionsNow: true})
				if err != nil {
					t.Fatalf("%s: Host with positions now: %v", h, err)
				}
				if len(hcNow.Clusters) != len(hc.Clusters) {
					t.Fatalf("%s: %d clusters with positions now, %d deferred", h, len(hcNow.Clusters), len(hc.Clusters))
				}
				for i := range hc.Clusters {
					if d := cmp.Diff(hcNow.Clusters[i].Traces(), hc.Clusters[i].Origins); d != "" {
						t.Errorf("%s: origins of %s with positions now and resolved differ (-now +resolved):\n%s", h, hc.Clusters[i].Name, d)
					}
				}
			}
		})
	}
	if hosts == 0 {
		t.Fatal("no hosts explained")
	}
}

// checkHostClusters compares the clusters of Host with the objects of Explain: before
// ResolvePositions the origins lack only positions, after it they are the same.
func checkHostClusters(t *testing.T, host string, hc *HostClusters, want *explain.Result) {
	t.Helper()
	byName := map[string]explain.Object{}
	for _, o := range want.Objects {
		byName[o.Name] = o
	}
	var built []*Built
	for i := range hc.Clusters {
		if hc.Clusters[i].Cluster != nil {
			built = append(built, &hc.Clusters[i])
		}
	}
	if len(built) != len(want.Objects) {
		t.Fatalf("%s: Host built %d clusters, Explain %d", host, len(built), len(want.Objects))
	}
	withoutPositions := func(ts []provenance.FieldTrace) []provenance.FieldTrace {
		out := slices.Clone(ts)
		for i := range out {
			out[i].Origin.Position = nil
			out[i].Shadowed = slices.Clone(out[i].Shadowed)
			for j := range out[i].Shadowed {
				out[i].Shadowed[j].Origin.Position = nil
			}
		}
		return out
	}
	for _, bc := range built {
		o, ok := byName[bc.Name]
		if !ok {
			t.Fatalf("%s: Host built %s, which Explain does not", host, bc.Name)
		}
		if bc.Origins != nil {
			t.Errorf("%s: %s has its Origins filled in before ResolvePositions", host, bc.Name)
		}
		if d := cmp.Diff(withoutPositions(o.Origins), withoutPositions(bc.Traces())); d != "" {
			t.Errorf("%s: origins of %s differ beyond positions (-Explain +Host):\n%s", host, bc.Name, d)
		}
	}
	hc.ResolvePositions()
	for _, bc := range built {
		if d := cmp.Diff(byName[bc.Name].Origins, bc.Origins); d != "" {
			t.Errorf("%s: resolved origins of %s differ (-Explain +Host):\n%s", host, bc.Name, d)
		}
	}
	for _, bc := range hc.Clusters {
		for _, ft := range bc.Origins {
			placeholder := ft.Origin.Position == deferred || ft.Origin.Position == deferredName
			for _, sh := range ft.Shadowed {
				placeholder = placeholder || sh.Origin.Position == deferred || sh.Origin.Position == deferredName
			}
			if placeholder {
				t.Errorf("%s: %s %s keeps the placeholder position after ResolvePositions", host, bc.Name, ft.Path)
			}
		}
	}
}

func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var ia, ib *explain.InvalidQueryError
	if errors.As(a, &ia) != errors.As(b, &ib) {
		return false
	}
	return a.Error() == b.Error()
}

func resultJSON(t *testing.T, r *explain.Result) string {
	t.Helper()
	js, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(js)
}
