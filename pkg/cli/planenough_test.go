package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/internal/testkit/scenariogen"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// answersAsEveryObject runs cmd on the objects of dir twice, with what its plan reads and with
// every object, and fails when stdout, stderr or the exit code differ.
func answersAsEveryObject(t *testing.T, dir string, cmd []string) {
	t.Helper()
	want := runWithLoad(t, everyObject(dir), cmd...)
	got := runWithLoad(t, fileCluster(dir, nil), cmd...)
	if got != want {
		t.Errorf("kubectl mesh-explain %s: with the plan's reads:\n%+v\nwith every object:\n%+v", strings.Join(cmd, " "), got, want)
	}
}

// everyObject is a cluster that answers every read with every object of dir, as if the plan
// read the whole cluster.
func everyObject(dir string) LoadFunc {
	return func(ctx context.Context, s source.Spec) (*model.Snapshot, error) {
		s.Getter, s.Files, s.Overlay, s.FilterFiles = nil, []string{dir}, false, false
		s.DestinationRuleInFull, s.VirtualServiceNeeded = nil, nil
		return source.Load(ctx, s)
	}
}

// TestClusterPlanReadsEnough runs the cluster command of every cluster scenario, and of
// meshes whose Services are named a few characters apart, once with what its plan reads and
// once with every object of the folder: the answers must be the same, diagnostics included.
// A plan that reads too little shows here: reading only the host's own Service of its
// namespace made every DestinationRule for a Service named a few characters from the host a
// near miss that matches no service (D1).
func TestClusterPlanReadsEnough(t *testing.T) {
	t.Chdir(repoRoot(t))
	type run struct {
		dir string
		cmd []string
	}
	var runs []run
	for _, dir := range scenarioDirs(t, "cluster") {
		runs = append(runs, run{dir, scenarioArgs(t, dir)})
	}
	near := t.TempDir()
	if err := os.WriteFile(filepath.Join(near, "mesh.yaml"), []byte(nearMissMesh), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{
		{"cluster", "api-v1", "-n", "shop"},
		{"cluster", "api-v1.shop", "-n", "web"},
		{"cluster", "api-v1.shop", "-n", "web", "--from", "pod/web-0"},
	} {
		runs = append(runs, run{near, cmd})
	}
	for _, r := range runs {
		for _, format := range []string{"table", "json"} {
			cmd := append(append([]string{}, r.cmd...), "-o", format)
			name := filepath.Base(r.dir) + "/" + strings.Join(cmd, " ")
			t.Run(name, func(t *testing.T) {
				answersAsEveryObject(t, r.dir, cmd)
			})
		}
	}
	// The mesh's one real near miss is still reported, and the rules for Services that exist
	// are not.
	res := runWithLoad(t, fileCluster(near, nil), "cluster", "api-v1", "-n", "shop", "-o", "json")
	if !strings.Contains(res.stdout, `DestinationRule shop/api-v3 host \"api-v3.shop.svc.cluster.local\" matches no service`) {
		t.Errorf("the near miss api-v3 is not reported:\n%s", res)
	}
	for _, rule := range []string{"shop/api-v2", "web/api-v1", "istio-system/api-v1"} {
		if strings.Contains(res.stdout, "DestinationRule "+rule+" host") {
			t.Errorf("DestinationRule %s, whose Service exists, is reported as matching no service:\n%s", rule, res)
		}
	}
}

// nearMissMesh has Services a few characters apart (api-v1, api-v2 in shop; api-v1 in web and
// in istio-system), a DestinationRule for each, and one for api-v3, which does not exist.
const nearMissMesh = `apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Namespace
metadata: {name: web}
---
apiVersion: v1
kind: Service
metadata: {name: api-v1, namespace: shop}
spec:
  clusterIP: 10.0.0.1
  ports: [{name: http, port: 80}]
  selector: {app: api, version: v1}
---
apiVersion: v1
kind: Service
metadata: {name: api-v2, namespace: shop}
spec:
  clusterIP: 10.0.0.2
  ports: [{name: http, port: 80}]
  selector: {app: api, version: v2}
---
apiVersion: v1
kind: Service
metadata: {name: api-v1, namespace: web}
spec:
  clusterIP: 10.0.0.3
  ports: [{name: http, port: 80}]
  selector: {app: web-api}
---
apiVersion: v1
kind: Service
metadata: {name: api-v1, namespace: istio-system}
spec:
  clusterIP: 10.0.0.4
  ports: [{name: http, port: 80}]
  selector: {app: mesh-api}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-0
  namespace: web
  labels: {app: web}
  annotations: {sidecar.istio.io/status: '{}'}
spec:
  containers: [{name: web, image: web}, {name: istio-proxy, image: proxyv2}]
status: {podIP: 10.1.0.9}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: api-v2, namespace: shop}
spec:
  host: api-v2.shop.svc.cluster.local
  trafficPolicy: {loadBalancer: {simple: ROUND_ROBIN}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: api-v3, namespace: shop}
spec:
  host: api-v3.shop.svc.cluster.local
  trafficPolicy: {loadBalancer: {simple: ROUND_ROBIN}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: api-v1, namespace: web}
spec:
  host: api-v1
  trafficPolicy: {loadBalancer: {simple: RANDOM}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: api-v1, namespace: istio-system}
spec:
  host: api-v1
  trafficPolicy: {loadBalancer: {simple: RANDOM}}
`

// TestAuthzPlanReadsEnough is TestClusterPlanReadsEnough for `authz`: every authz, sidecar and
// waypoint scenario, answered from what its plan reads and from every object of its folder.
// Reading only the pod of pod/NAME left out the pods of the waypoint in front of it, whose
// service account the answer then assumed from the Gateway's name.
func TestAuthzPlanReadsEnough(t *testing.T) {
	t.Chdir(repoRoot(t))
	for _, kind := range []string{"authz", "sidecar", "waypoint"} {
		for _, dir := range scenarioDirs(t, kind) {
			for _, format := range []string{"table", "json"} {
				cmd := append(append([]string{}, scenarioArgs(t, dir)...), "-o", format)
				t.Run(kind+"/"+filepath.Base(dir)+"/"+format, func(t *testing.T) {
					answersAsEveryObject(t, dir, cmd)
				})
			}
		}
	}
}

// TestCheckPlanReadsEnough is TestClusterPlanReadsEnough for `check -n NS`: the namespace of
// every scenario's question, checked from what the plan reads and from every object of the
// folder.
func TestCheckPlanReadsEnough(t *testing.T) {
	t.Chdir(repoRoot(t))
	runs := 0
	for _, kind := range []string{"cluster", "authz", "sidecar", "waypoint"} {
		for _, dir := range scenarioDirs(t, kind) {
			args := scenarioArgs(t, dir)
			i := slices.Index(args, "-n")
			if i < 0 || i+1 >= len(args) {
				continue
			}
			cmd := []string{"check", "-n", args[i+1], "-o", "json", "--fail-on", "never"}
			runs++
			t.Run(kind+"/"+filepath.Base(dir), func(t *testing.T) {
				answersAsEveryObject(t, dir, cmd)
			})
		}
	}
	if runs < 200 {
		t.Errorf("%d scenario folders name a namespace, want most of them", runs)
	}
}

// TestPlansReadEnoughOnGenerated runs the command of generated scenarios of every kind (the
// conformance generator's: random meshes around one question) with what its plan reads and
// with every object, and `check` of the question's namespace likewise: the answers must be the
// same. The scenario folders hold the cases someone thought of; the generator mixes the
// objects that decide a plan's reads (workloadSelector rules in the client namespace, hosts
// defined by ServiceEntries elsewhere, waypoints named from other namespaces) in ways no
// folder does. Without Cluster.SelectorPodReads, cluster seeds 393 and 1055 differ (D6 said a
// selector rule selects no workload of a namespace whose pods were not read).
func TestPlansReadEnoughOnGenerated(t *testing.T) {
	seeds := uint64(500)
	if testing.Short() {
		seeds = 50
	}
	for _, kind := range scenariogen.Kinds {
		for seed := uint64(1); seed <= seeds; seed++ {
			s := scenariogen.Generate(kind, seed)
			dir := t.TempDir()
			if err := s.Write(dir); err != nil {
				t.Fatal(err)
			}
			cmd := strings.Fields(s.Command)
			ns := "default"
			for i, a := range cmd {
				if a == "-n" && i+1 < len(cmd) {
					ns = cmd[i+1]
				}
			}
			for _, c := range [][]string{cmd, {"check", "-n", ns, "--fail-on", "never"}} {
				t.Run(fmt.Sprintf("%s/%d/%s", kind, seed, c[0]), func(t *testing.T) {
					answersAsEveryObject(t, dir, append(slices.Clone(c), "-o", "json"))
				})
			}
		}
	}
}

// When the second phase may not list the client namespace's pods, the answer says Pods are
// incomplete instead of presenting D6's claim as whole.
func TestClusterSelectorPodsDenied(t *testing.T) {
	t.Chdir(repoRoot(t))
	dir := "testdata/scenarios/cluster/d06-selector-dr-selects-other-pods"
	load := fileCluster(dir, func(s source.Spec, snap *model.Snapshot) error {
		for _, r := range s.Reads {
			if r.Kind == source.KindPod && slices.Equal(r.Namespaces, []string{"web"}) {
				why := `pods is forbidden: User "reader" cannot list resource "pods" in API group "" in the namespace "web"`
				snap.Pods = nil
				snap.Incomplete = map[string]string{source.KindPod: why}
				snap.Issues = append(snap.Issues, model.LoadIssue{Severity: "warning", Message: why, Incomplete: []string{source.KindPod}})
			}
		}
		return nil
	})
	r := runWithLoad(t, load, "cluster", "reviews.bookinfo", "-n", "web")
	if r.code != ExitIncomplete || !strings.Contains(r.stderr, `cannot list resource "pods"`) || !strings.Contains(r.stdout, "INCOMPLETE") {
		t.Errorf("cluster -n web without its pods: want exit %d naming the pods, got\n%s", ExitIncomplete, r)
	}
}
