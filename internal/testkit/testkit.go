package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	networkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
)

// Add appends each object to the list of s that holds its kind; nil objects are skipped. It
// panics on a kind a Snapshot does not hold: a test that builds one is wrong.
func Add(s *model.Snapshot, objs ...any) {
	for _, o := range objs {
		switch o := o.(type) {
		case nil:
		case *corev1.Namespace:
			s.Namespaces = append(s.Namespaces, o)
		case *corev1.Service:
			s.Services = append(s.Services, o)
		case *corev1.Pod:
			s.Pods = append(s.Pods, o)
		case *corev1.Node:
			s.Nodes = append(s.Nodes, o)
		case *appsv1.Deployment:
			s.Deployments = append(s.Deployments, o)
		case *networkingv1.ServiceEntry:
			s.ServiceEntries = append(s.ServiceEntries, o)
		case *networkingv1.WorkloadEntry:
			s.WorkloadEntries = append(s.WorkloadEntries, o)
		case *networkingv1.DestinationRule:
			s.DestinationRules = append(s.DestinationRules, o)
		case *networkingv1.VirtualService:
			s.VirtualServices = append(s.VirtualServices, o)
		case *networkingv1.Sidecar:
			s.Sidecars = append(s.Sidecars, o)
		case *networkingv1alpha3.EnvoyFilter:
			s.EnvoyFilters = append(s.EnvoyFilters, o)
		case *securityv1.PeerAuthentication:
			s.PeerAuthentications = append(s.PeerAuthentications, o)
		case *securityv1.AuthorizationPolicy:
			s.AuthorizationPolicies = append(s.AuthorizationPolicies, o)
		case *gatewayv1.Gateway:
			s.Gateways = append(s.Gateways, o)
		default:
			panic(fmt.Sprintf("testkit.Add: a Snapshot holds no %T", o))
		}
	}
}

// Snapshot is a Snapshot of objs (see Add), sorted as a load sorts it.
func Snapshot(objs ...any) *model.Snapshot {
	s := &model.Snapshot{}
	Add(s, objs...)
	s.Sort()
	return s
}

// RepoRoot walks up from the working directory (a test's package directory) to the module
// root, the directory with go.mod. Scenario and golden paths are relative to it.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// ScenarioDirs lists the scenario folders of a kind (cluster, authz) under root's
// testdata/scenarios (docs/scenarios.md), as slash-separated paths relative to root, in name
// order.
func ScenarioDirs(t testing.TB, root, kind string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, "testdata", "scenarios", kind))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, "testdata/scenarios/"+kind+"/"+e.Name())
		}
	}
	return out
}

// Args is a scenario's `args` file (docs/scenarios.md): `#` lines describe the scenario, the
// first of them is its title; the first other line is the command line after
// `kubectl mesh-explain`.
type Args struct {
	Title   string
	Command []string
}

// ReadArgs reads the `args` file of the scenario folder dir.
func ReadArgs(dir string) (Args, error) {
	data, err := os.ReadFile(filepath.Join(dir, "args"))
	if err != nil {
		return Args{}, err
	}
	var a Args
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case strings.HasPrefix(line, "#"):
			if a.Title == "" {
				a.Title = strings.TrimSpace(strings.TrimPrefix(line, "#"))
			}
		case a.Command == nil:
			a.Command = strings.Fields(line)
		}
	}
	if len(a.Command) == 0 {
		return Args{}, fmt.Errorf("%s/args has no command line", dir)
	}
	return a, nil
}

// ScenarioArgs is the command line of the scenario folder dir (ReadArgs), failing t when the
// args file is missing or has none.
func ScenarioArgs(t testing.TB, dir string) []string {
	t.Helper()
	a, err := ReadArgs(dir)
	if err != nil {
		t.Fatalf("scenario args: %v", err)
	}
	return a.Command
}
