package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/internal/golden"
)

// TestOutputGoldens pins the human and document output of both commands for a few scenario
// folders (testdata/golden/cli/<kind>/<scenario>.<format>.golden). -update rewrites them.
func TestOutputGoldens(t *testing.T) {
	t.Chdir(repoRoot(t))
	t.Setenv("COLUMNS", "") // piped: render.DefaultWidth
	for _, dir := range []string{
		"testdata/scenarios/cluster/a10-subsets-eds",
		"testdata/scenarios/cluster/d03a-dr-hidden-by-exportto",
		"testdata/scenarios/cluster/d14a-port-level-drops-top-policy",
		"testdata/scenarios/cluster/gw02-gateway-ignores-sidecar",
		"testdata/scenarios/cluster/gw04-gateway-credentialname",
		"testdata/scenarios/authz/b3-strict-with-exemption",
		"testdata/scenarios/authz/c3-value-conversion",
		"testdata/scenarios/authz/resolve-label-selector",
	} {
		kind := filepath.Base(filepath.Dir(dir))
		for _, format := range []string{"table", "wide", "json", "yaml"} {
			t.Run(kind+"/"+filepath.Base(dir)+"/"+format, func(t *testing.T) {
				args := append(scenarioArgs(t, dir), "-f", dir, "-o", format, "--color", "never")
				r := runMain(t, "", args...)
				if r.code != ExitOK {
					t.Fatalf("kubectl mesh-explain %s\n%s", strings.Join(args, " "), r)
				}
				golden.Assert(t, []byte(r.stdout), filepath.Join("testdata", "golden", "cli", kind, filepath.Base(dir)+"."+format+".golden"))
			})
		}
	}
}

// TestSidecarOutputGoldens pins the table and yaml output of the sidecar answer for two
// scenario folders: a DENY rule widened on TCP chains, and port-level mTLS; and of the waypoint
// answer for four: a Service targetRef, ignored selector policies, a Gateway without addresses,
// a deployed Gateway without its Service.
func TestSidecarOutputGoldens(t *testing.T) {
	t.Chdir(repoRoot(t))
	t.Setenv("COLUMNS", "")
	for _, dir := range []string{
		"testdata/scenarios/sidecar/rbac-deny-http-fields-on-tcp",
		"testdata/scenarios/sidecar/mtls-workload-port-level",
		"testdata/scenarios/waypoint/targetref-service",
		"testdata/scenarios/waypoint/selector-and-namespace-wide-ignored",
		"testdata/scenarios/waypoint/gateway-without-addresses",
		"testdata/scenarios/waypoint/waypoint-service-missing",
	} {
		kind := filepath.Base(filepath.Dir(dir))
		for _, format := range []string{"table", "yaml"} {
			t.Run(kind+"/"+filepath.Base(dir)+"/"+format, func(t *testing.T) {
				args := append(scenarioArgs(t, dir), "-f", dir, "-o", format, "--color", "never")
				r := runMain(t, "", args...)
				if r.code != ExitOK {
					t.Fatalf("kubectl mesh-explain %s\n%s", strings.Join(args, " "), r)
				}
				golden.Assert(t, []byte(r.stdout), filepath.Join("testdata", "golden", "cli", kind, filepath.Base(dir)+"."+format+".golden"))
			})
		}
	}
}

// Files mode reads no kubeconfig and contacts no cluster: it works with KUBECONFIG pointing
// at nothing, at garbage, and with --kubeconfig naming a file that does not exist.
func TestFilesModeNeverTouchesAKubeconfig(t *testing.T) {
	t.Chdir(repoRoot(t))
	garbage := filepath.Join(t.TempDir(), "garbage")
	if err := os.WriteFile(garbage, []byte("{this is not a kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	const dir = "testdata/scenarios/cluster/a10-subsets-eds"
	for _, tc := range []struct {
		name, env string
		extra     []string
	}{
		{"KUBECONFIG names a missing file", "/nonexistent/kubeconfig", nil},
		{"KUBECONFIG names a garbage file", garbage, nil},
		{"--kubeconfig names a missing file", "", []string{"--kubeconfig", "/nonexistent/kubeconfig"}},
		{"--context names a missing context", garbage, []string{"--context", "nowhere"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.env)
			args := append(scenarioArgs(t, dir), "-f", dir, "-o", "envoy")
			r := runMain(t, "", append(args, tc.extra...)...)
			if r.code != ExitOK || !strings.HasPrefix(r.stdout, "[\n  {") || r.stderr != "" {
				t.Fatalf("files mode failed:\n%s", r)
			}
		})
	}
	// The same command without -f does need the kubeconfig, and says so.
	t.Setenv("KUBECONFIG", garbage)
	r := runMain(t, "", "cluster", "foo", "-n", "default")
	if r.code == ExitOK || !strings.HasPrefix(r.stderr, "error: ") {
		t.Fatalf("live mode with a garbage kubeconfig did not fail:\n%s", r)
	}
}

func TestNotFoundHostHasAHint(t *testing.T) {
	t.Chdir(repoRoot(t))
	r := runMain(t, "", "cluster", "fooo", "-n", "default", "-f", "testdata/scenarios/cluster/a10-subsets-eds")
	if r.code != ExitError || r.stdout != "" {
		t.Fatalf("got %s", r)
	}
	if want := "error: host \"fooo\" not found (did you mean foo.default.svc.cluster.local?)\n"; r.stderr != want {
		t.Errorf("stderr = %q, want %q", r.stderr, want)
	}
}

func TestInvalidQueryExitsOne(t *testing.T) {
	t.Chdir(repoRoot(t))
	r := runMain(t, "", "cluster", "foo:9999", "-n", "default", "-f", "testdata/scenarios/cluster/a10-subsets-eds")
	if r.code != ExitError || r.stdout != "" || !strings.HasPrefix(r.stderr, "error: ") || !strings.Contains(r.stderr, "9999") {
		t.Fatalf("got %s", r)
	}
}

// Load issues of bad input go to stderr as warnings; stdout stays parseable and the command
// still explains what it could read.
func TestLoadIssuesGoToStderr(t *testing.T) {
	t.Chdir(repoRoot(t))
	const dir = "testdata/scenarios/authz/bad-input-mixed"
	args := append(scenarioArgs(t, dir), "-f", dir)
	for _, format := range []string{"ztunnel", "json", "table"} {
		r := runMain(t, "", append(args, "-o", format)...)
		// The skipped AuthorizationPolicy makes the answer incomplete.
		if r.code != ExitIncomplete {
			t.Fatalf("-o %s: %s", format, r)
		}
		if !strings.HasPrefix(r.stderr, "warning: testdata/scenarios/authz/bad-input-mixed/") {
			t.Errorf("-o %s: no load warning on stderr:\n%s", format, r.stderr)
		}
		for _, line := range strings.Split(r.stderr, "\n") {
			if line != "" && !strings.HasPrefix(line, "warning: ") {
				t.Errorf("-o %s: stderr line is not a warning: %q", format, line)
			}
		}
		// The table names the skipped object in its banner and its warnings; the other
		// formats keep stdout to the answer (-o json in its warnings list).
		if format != "table" && strings.Contains(r.stdout, "warning: testdata/") {
			t.Errorf("-o %s: a load warning reached stdout:\n%s", format, r.stdout)
		}
		if format == "table" && !strings.HasPrefix(r.stdout, "INCOMPLETE: AuthorizationPolicy foo/bad-action could not be read") {
			t.Errorf("-o table: no INCOMPLETE banner:\n%s", r.stdout)
		}
		if format == "json" {
			var doc explain.Result
			if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.Kind != explain.KindAuthzExplanation {
				t.Errorf("-o json is not an explanation document: %v", err)
			}
		}
	}
}

// authz prints one document for pod/NAME, and a List for a selector, a deployment or a
// service, even when it matches one pod, so scripts see one shape per query form.
func TestAuthzListShape(t *testing.T) {
	one := &explain.Result{APIVersion: explain.APIVersion, Kind: explain.KindAuthzExplanation, Subject: explain.Subject{Kind: "Workload", Workload: "pod/a"}}
	two := &explain.Result{APIVersion: explain.APIVersion, Kind: explain.KindAuthzExplanation, Subject: explain.Subject{Kind: "Workload", Workload: "pod/b"}}
	for _, tc := range []struct {
		args     []string
		results  []*explain.Result
		wantKind string
		wantN    int
	}{
		{[]string{"authz", "pod/a"}, []*explain.Result{one}, explain.KindAuthzExplanation, 0},
		{[]string{"authz", "-l", "app=a"}, []*explain.Result{one}, "List", 1},
		{[]string{"authz", "-l", "app=a"}, []*explain.Result{one, two}, "List", 2},
		{[]string{"authz", "deployment/a"}, []*explain.Result{one, two}, "List", 2},
		{[]string{"authz", "svc/a"}, []*explain.Result{one}, "List", 1},
	} {
		f := &fakes{authzResults: tc.results}
		r := runWith(t, f, append(tc.args, "-f", "x.yaml", "-o", "json")...)
		if r.code != ExitOK {
			t.Fatalf("%v: %s", tc.args, r)
		}
		var doc struct {
			APIVersion string            `json:"apiVersion"`
			Kind       string            `json:"kind"`
			Items      []*explain.Result `json:"items"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if doc.Kind != tc.wantKind || len(doc.Items) != tc.wantN || doc.APIVersion != explain.APIVersion {
			t.Errorf("%v: kind %q with %d items, want %q with %d", tc.args, doc.Kind, len(doc.Items), tc.wantKind, tc.wantN)
		}
	}
	f := &fakes{}
	r := runWith(t, f, "authz", "-l", "app=none", "-n", "foo", "-f", "x.yaml")
	if r.code != ExitError || r.stderr != "error: pods matching \"app=none\" in namespace foo not found\n" {
		t.Errorf("empty selector: %s", r)
	}
}

// TestRunExampleLeadsWithDiagnostics pins the start of `make run-example`'s output: after the
// subject, what is wrong comes first, and fields at defaults are counted, not listed.
func TestRunExampleLeadsWithDiagnostics(t *testing.T) {
	t.Chdir(repoRoot(t))
	t.Setenv("COLUMNS", "")
	for _, args := range [][]string{
		{"cluster", "reviews", "-n", "bookinfo", "--from", "pod/productpage-v1", "-f", "testdata/examples/bookinfo"},
		{"authz", "pod/a", "-n", "foo", "-f", "testdata/examples/ambient"},
		{"authz", "waypoint/waypoint", "-n", "bookinfo", "-f", "testdata/examples/waypoint"},
	} {
		r := runMain(t, "", append(args, "--color", "never")...)
		if r.code != ExitOK {
			t.Fatalf("kubectl mesh-explain %s\n%s", strings.Join(args, " "), r)
		}
		lines := strings.SplitN(r.stdout, "\n", 5)
		if len(lines) < 5 || lines[1] != "" || lines[2] != "DIAGNOSTICS" || !strings.HasPrefix(lines[3], "SEVERITY") {
			t.Errorf("kubectl mesh-explain %s does not lead with its diagnostics:\n%s", strings.Join(args, " "), r.stdout)
		}
		if args[0] == "cluster" && !strings.Contains(r.stdout, "more at Istio's or Envoy's defaults: -o wide or --show-defaults lists them") {
			t.Errorf("the cluster table does not count the fields at defaults:\n%s", r.stdout)
		}
		full := runMain(t, "", append(args, "--color", "never", "--show-defaults")...)
		if strings.Contains(full.stdout, "more at Istio's or Envoy's defaults") || len(full.stdout) <= len(r.stdout) && args[0] == "cluster" {
			t.Errorf("--show-defaults does not list the fields at defaults:\n%s", full.stdout)
		}
	}
}

// HOST[:PORT] takes kubectl's svc/NAME for the Service NAME in -n, and nothing else with a slash.
func TestParseHostPort(t *testing.T) {
	for _, tc := range []struct {
		in, host string
		port     uint32
		err      string
	}{
		{in: "reviews", host: "reviews"},
		{in: "Reviews.Bookinfo:9080", host: "reviews.bookinfo", port: 9080},
		{in: "svc/reviews", host: "reviews"},
		{in: "Service/reviews:9080", host: "reviews", port: 9080},
		{in: "services/reviews", host: "reviews"},
		{in: "svc/reviews.bookinfo", err: `svc/NAME names a Service in -n: "reviews.bookinfo" is not a Service name`},
		{in: "svc/", err: `svc/NAME names a Service in -n: "" is not a Service name`},
		{in: "deploy/reviews", err: "a host is a name, not a path or URL"},
		{in: "svc/reviews:http", err: `port "http" is not a number from 1 to 65535`},
	} {
		host, port, err := parseHostPort(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || host != tc.host || port != tc.port {
			t.Errorf("%q: got %q %d %v, want %q %d", tc.in, host, port, err, tc.host, tc.port)
		}
	}
}

// A waypoint is named as waypoint/NAME, or as kubectl names its Gateway.
func TestIsWaypointArg(t *testing.T) {
	for in, want := range map[string]bool{
		"waypoint/w": true, "Waypoints/w": true, "gateway/w": true, "gateways/w": true, "gtw/w": true,
		"pod/w": false, "waypoint": false, "gatewayclass/w": false,
	} {
		if got := isWaypointArg(in); got != want {
			t.Errorf("isWaypointArg(%q) = %v, want %v", in, got, want)
		}
	}
}

// --from deployment/NAME explains the clusters of the deployment's first pod, and says so.
func TestClusterFromDeployment(t *testing.T) {
	t.Chdir(repoRoot(t))
	dir := t.TempDir()
	deploy := `apiVersion: apps/v1
kind: Deployment
metadata: {name: productpage, namespace: bookinfo}
spec:
  selector: {matchLabels: {app: productpage}}
  template: {metadata: {labels: {app: productpage}}, spec: {containers: [{name: c, image: i}]}}
`
	if err := os.WriteFile(filepath.Join(dir, "deploy.yaml"), []byte(deploy), 0o600); err != nil {
		t.Fatal(err)
	}
	files := []string{"-f", "testdata/examples/bookinfo", "-f", dir}
	r := runMain(t, "", append([]string{"cluster", "ratings", "-n", "bookinfo", "--from", "deploy/productpage"}, files...)...)
	if r.code != ExitOK || !strings.Contains(r.stdout, "client proxy:   sidecar of pod bookinfo/productpage-v1 (the pod of deployment productpage)\n") {
		t.Errorf("--from deploy/productpage:\n%s", r)
	}
	r = runMain(t, "", append([]string{"cluster", "ratings", "-n", "bookinfo", "--from", "deployment/nope"}, files...)...)
	if r.code != ExitError || !strings.Contains(r.stderr, "deployment bookinfo/nope not found") {
		t.Errorf("--from deployment/nope:\n%s", r)
	}
	if got, _ := complete(t, append(files, "-n", "bookinfo", "cluster", "ratings", "--from", "deployment/")...); strings.Join(got, " ") != "deployment/productpage" {
		t.Errorf("__complete --from deployment/: got %q", got)
	}
}
