package conformance

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	securitybeta "istio.io/api/security/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"istio.io/istio/pilot/pkg/config/kube/crd"
	"istio.io/istio/pilot/pkg/features"
	"istio.io/istio/pilot/pkg/serviceregistry/ambient"
	"istio.io/istio/pkg/config"
	"istio.io/istio/pkg/config/mesh"
	"istio.io/istio/pkg/config/schema/gvk"
	"istio.io/istio/pkg/kube/krt"
	"istio.io/istio/pkg/test"
	"istio.io/istio/pkg/util/protomarshal"
	"istio.io/istio/pkg/workloadapi/security"

	"github.com/mesh-explain/kubectl-mesh-explain/conformance/istiorun"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/ztunnelauthz"
)

// ambientGoldensDir is where Istio keeps its TestRBACConvert golden pairs, relative to the
// directory of the istio.io/istio module this module requires.
const ambientGoldensDir = "pilot/pkg/serviceregistry/ambient/testdata"

// wantGoldenPairs is the number of pairs in ambientGoldensDir at the pinned Istio version: 3
// AuthorizationPolicy pairs and 19 PeerAuthentication pairs. A new pin that changes it is
// reviewed here.
const wantGoldenPairs = 22

// ambientGoldens returns the directory of Istio's golden pairs inside the istio.io/istio
// module the build uses (the module cache holds it: the test binary was built from it).
func ambientGoldens(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "istio.io/istio").Output()
	if err != nil {
		t.Fatalf("go list -m istio.io/istio: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		t.Fatal("go list -m istio.io/istio: the module has no directory (run go mod download istio.io/istio)")
	}
	return filepath.Join(dir, filepath.FromSlash(ambientGoldensDir))
}

// rbacRootNamespace is the root namespace TestRBACConvert passes to every conversion.
const rbacRootNamespace = "istio-system"

// goldenPair is one `X-in.yaml` input of the golden set, parsed as TestRBACConvert parses it.
type goldenPair struct {
	Name   string
	Golden string // the expected output, as stored
	Kind   config.GroupVersionKind
	// For an AuthorizationPolicy file: the first document.
	AP *securityv1.AuthorizationPolicy
	// For a PeerAuthentication file: the arguments of the single conversion call.
	PA, NsParent, RootParent *securityv1.PeerAuthentication
	// All the PeerAuthentications of the file (for the PolicyCollections path).
	AllPAs []*securityv1.PeerAuthentication
}

// loadGoldenPairs discovers and parses the pairs exactly as TestRBACConvert does: every file
// whose name contains "-in.yaml", golden name with every "-in" removed, documents parsed and
// validated by crd.ParseInputs, the first document's kind picking the branch, root namespace
// istio-system, only name, namespace and spec passed on.
func loadGoldenPairs(t *testing.T) []goldenPair {
	t.Helper()
	dir := ambientGoldens(t)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []goldenPair
	for _, e := range entries {
		name := e.Name()
		if !strings.Contains(name, "-in.yaml") {
			continue
		}
		in, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		golden, err := os.ReadFile(filepath.Join(dir, strings.ReplaceAll(name, "-in", "")))
		if err != nil {
			t.Fatal(err)
		}
		cfgs, _, err := crd.ParseInputs(string(in))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(cfgs) == 0 {
			t.Fatalf("%s: no documents", name)
		}
		p := goldenPair{Name: name, Golden: string(golden), Kind: cfgs[0].GroupVersionKind}
		switch cfgs[0].GroupVersionKind {
		case gvk.AuthorizationPolicy:
			p.AP = &securityv1.AuthorizationPolicy{
				ObjectMeta: metav1.ObjectMeta{Name: cfgs[0].Name, Namespace: cfgs[0].Namespace},
			}
			proto.Merge(&p.AP.Spec, cfgs[0].Spec.(*securitybeta.AuthorizationPolicy))
		case gvk.PeerAuthentication:
			pas := make([]*securityv1.PeerAuthentication, len(cfgs))
			for i, c := range cfgs {
				pas[i] = &securityv1.PeerAuthentication{
					ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace},
				}
				proto.Merge(&pas[i].Spec, c.Spec.(*securitybeta.PeerAuthentication))
			}
			p.AllPAs = pas
			if len(cfgs) == 1 {
				p.PA = pas[0]
				break
			}
			var workload, ns, root *config.Config
			var workloadPA, nsPA, rootPA *securityv1.PeerAuthentication
			for i := range cfgs {
				c := &cfgs[i]
				sel := c.Spec.(*securitybeta.PeerAuthentication).GetSelector()
				switch {
				case c.Namespace == rbacRootNamespace:
					if sel != nil {
						t.Fatalf("%s: unexpected selector in mesh-level policy %s", name, c.Name)
					}
					if root == nil || c.GetCreationTimestamp().Before(root.GetCreationTimestamp()) {
						root, rootPA = c, pas[i]
					}
				case sel != nil:
					if workload != nil {
						t.Fatalf("%s: multiple workload-level policies %s and %s", name, workload.Name, c.Name)
					}
					workload, workloadPA = c, pas[i]
				default:
					if ns == nil || c.GetCreationTimestamp().Before(ns.GetCreationTimestamp()) {
						ns, nsPA = c, pas[i]
					}
				}
			}
			if workloadPA == nil {
				// As TestRBACConvert: the namespace policy is converted, without parents.
				p.PA = nsPA
			} else {
				p.PA, p.NsParent, p.RootParent = workloadPA, nsPA, rootPA
			}
		default:
			t.Fatalf("%s: unexpected kind %v", name, cfgs[0].GroupVersionKind)
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// sameAsGolden is pilot/test/util.Compare: both sides trimmed, then equal.
func sameAsGolden(got, golden string) bool {
	return strings.TrimSpace(got) == strings.TrimSpace(golden)
}

// TestUpstreamAmbientGoldens replays Istio's 22 TestRBACConvert golden pairs
// (pilot/pkg/serviceregistry/ambient/testdata in the istio.io/istio module, harness
// ambientindex_test.go TestRBACConvert) through the project's converter, and (as a check of
// this harness) through Istio's own conversion, which is reachable only through the exported
// ambient.PolicyCollections.
func TestUpstreamAmbientGoldens(t *testing.T) {
	pairs := loadGoldenPairs(t)
	if len(pairs) != wantGoldenPairs {
		t.Fatalf("found %d golden pairs in the istio.io/istio module's %s, want %d", len(pairs), ambientGoldensDir, wantGoldenPairs)
	}
	for _, variant := range []struct {
		name         string
		multicluster bool
	}{{name: "base"}, {name: "multicluster (enabled but unused)", multicluster: true}} {
		t.Run(variant.name, func(t *testing.T) {
			if variant.multicluster {
				test.SetForTest(t, &features.EnableAmbientMultiNetwork, true)
			}
			for _, p := range pairs {
				t.Run("project/"+p.Name, func(t *testing.T) {
					var a *ztunnelauthz.Authorization
					if p.AP != nil {
						a, _ = ztunnelauthz.ConvertAuthorizationPolicy(rbacRootNamespace, p.AP)
					} else {
						a = ztunnelauthz.ConvertPeerAuthentication(rbacRootNamespace, p.PA, p.NsParent, p.RootParent)
					}
					got := ""
					if a != nil {
						y, err := a.YAML()
						if err != nil {
							t.Fatal(err)
						}
						got = string(y)
					}
					if !sameAsGolden(got, p.Golden) {
						t.Errorf("project converter differs from Istio's golden\n--- got\n%s\n--- want\n%s", got, p.Golden)
					}
				})
				t.Run("istio/"+p.Name, func(t *testing.T) {
					got, err := istioPolicyCollectionsConvert(t, p)
					if err != nil {
						t.Fatal(err)
					}
					if !sameAsGolden(got, p.Golden) {
						t.Errorf("Istio's PolicyCollections differs from its own golden\n--- got\n%s\n--- want\n%s", got, p.Golden)
					}
				})
			}
		})
	}
}

// istioPolicyCollectionsConvert runs Istio's convertAuthorizationPolicy / convertPeerAuthentication
// through ambient.PolicyCollections (they are unexported) on the pair's objects and returns the
// converted policy as protomarshal.ToYAML prints it, "" for none. PolicyCollections picks the
// parents itself (oldest namespace and root policy without a selector), which for these inputs
// is the same choice the golden harness makes.
func istioPolicyCollectionsConvert(t *testing.T, p goldenPair) (string, error) {
	istiorun.ConfigureLogging()
	stop := test.NewStop(t)
	opts := krt.NewOptionsBuilder(stop, "goldens", krt.GlobalDebugHandler)
	var aps []*securityv1.AuthorizationPolicy
	if p.AP != nil {
		aps = append(aps, p.AP)
	}
	apc := krt.NewStaticCollection[*securityv1.AuthorizationPolicy](nil, aps, opts.WithName("aps")...)
	pac := krt.NewStaticCollection[*securityv1.PeerAuthentication](nil, p.AllPAs, opts.WithName("pas")...)
	mc := krt.NewStatic[ambient.MeshConfig](&ambient.MeshConfig{MeshConfig: mesh.DefaultMeshConfig()}, true, opts.WithName("mesh")...)
	wps := krt.NewStaticCollection[ambient.Waypoint](nil, nil, opts.WithName("waypoints")...)
	authz, all := ambient.PolicyCollections(apc, pac, mc, wps, opts, ambient.FeatureFlags{
		DefaultAllowFromWaypoint:              features.DefaultAllowFromWaypoint,
		EnableK8SServiceSelectWorkloadEntries: features.EnableK8SServiceSelectWorkloadEntries,
	})
	authz.WaitUntilSynced(stop)
	all.WaitUntilSynced(stop)
	var found []*security.Authorization
	if p.AP != nil {
		for _, w := range authz.List() {
			if w.Authorization != nil {
				found = append(found, w.Authorization)
			}
		}
	} else {
		for _, w := range all.List() {
			if w.Authorization != nil && strings.HasPrefix(w.Authorization.Name, "converted_peer_authentication_") {
				found = append(found, w.Authorization)
			}
		}
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return protomarshal.ToYAML(found[0])
	default:
		t.Fatalf("PolicyCollections produced %d policies for one input", len(found))
	}
	return "", nil
}
