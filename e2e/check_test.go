package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
)

// The exit codes check is documented to return (docs/usage.md).
const (
	exitOK       = 0
	exitUsage    = 64
	exitFindings = 79
)

// checkReport decodes a check -o json document.
func checkReport(t *testing.T, r result) *explain.CheckReport {
	t.Helper()
	var rep explain.CheckReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\nnot a CheckReport: %v\n%s", r, err, r.stdout)
	}
	if rep.Kind != explain.KindCheckReport {
		t.Fatalf("%v\nkind %q", r, rep.Kind)
	}
	return &rep
}

// mustExit fails the test unless r ran and exited with code.
func mustExit(t *testing.T, r result, code int) {
	t.Helper()
	if r.err != nil || r.timedOut || r.code != code {
		t.Fatalf("%v\nwant exit %d (error: %v, timed out: %v)\nstdout:\n%s", r, code, r.err, r.timedOut, r.stdout)
	}
}

// TestCheck runs check through the real kubectl against the apiserver: live it finds what it
// finds offline in the same objects; it exits 79 when something at or above --fail-on is
// found and 0 otherwise, 64 for a wrong command line; a sidecar workload's finding (S02) is
// reported for its pod; and `--overlay --diff` reports the findings a changed file introduces,
// located in that file.
func TestCheck(t *testing.T) {
	dir := filepath.Join(env.root, "e2e", "testdata", "overlay")
	baseFile, changeFile := filepath.Join(dir, "base.yaml"), filepath.Join(dir, "change.yaml")
	c := admin(t)
	c.apply(t, mustDecodeFile(t, baseFile))
	kc := kubeconfig("admin")

	for _, ns := range []string{"bookinfo", "frontend"} {
		live := runPlugin(kc, "check", "-n", ns, "-o", "json", "--fail-on", "never")
		mustSucceed(t, live)
		off := runPlugin(offline(), "check", "-n", ns, "-f", baseFile, "-o", "json", "--fail-on", "never")
		mustSucceed(t, off)
		w, g := findingsJSON(t, checkReport(t, off)), findingsJSON(t, checkReport(t, live))
		if w != g {
			t.Errorf("check -n %s: live (+) differs from offline (-):\n%s", ns, diff(w, g))
		}
		if len(checkReport(t, live).Findings) == 0 {
			t.Errorf("check -n %s: no finding, the comparison proves nothing", ns)
		}
	}

	// The base has warnings (subsets no route uses) and no error.
	mustExit(t, runPlugin(kc, "check", "-n", "bookinfo"), exitOK)
	failed := runPlugin(kc, "check", "-n", "bookinfo", "--fail-on", "warning")
	mustExit(t, failed, exitFindings)
	if !strings.Contains(failed.stderr, "at or above warning") || !strings.Contains(failed.stdout, "D9") {
		t.Errorf("a failed check does not say why:\n%v\n%s", failed, failed.stdout)
	}
	mustExit(t, runPlugin(kc, "check", "-n", "bookinfo", "--fail-on", "warning", "--ignore", "D9"), exitOK)

	// The sidecar of frontend/productpage-v1 gets an ALLOW policy whose only rule is HTTP-only:
	// its sidecar answer has S02 (the TCP chains allow nothing), reported for the workload.
	sidecar := runPlugin(kc, "check", "-n", "frontend", "-o", "json", "--fail-on", "warning")
	mustExit(t, sidecar, exitFindings)
	rep := checkReport(t, sidecar)
	if rep.Scope.DataPlanes["sidecar"] != 1 {
		t.Errorf("check -n frontend: workloads by data plane %v, want the sidecar of productpage-v1", rep.Scope.DataPlanes)
	}
	found := false
	for _, f := range rep.Findings {
		if f.ID == "S02" && slices.Equal(f.Workloads, []string{"Pod frontend/productpage-v1"}) &&
			f.Resource != nil && f.Resource.String() == "AuthorizationPolicy frontend/allow-get" {
			found = true
		}
	}
	if !found {
		t.Errorf("check -n frontend does not report S02 for the sidecar of productpage-v1:\n%s", sidecar.stdout)
	}
	mustExit(t, runPlugin(kc, "check", "-n", "frontend", "--fail-on", "warning", "--ignore", "S02,D9"), exitOK)
	mustExit(t, runPlugin(kc, "check", "-A", "--fail-on", "never"), exitOK)
	mustExit(t, runPlugin(kc, "check", "--diff"), exitUsage)
	mustExit(t, runPlugin(kc, "check", "--fail-on", "sometimes"), exitUsage)

	// The change disables TLS under a STRICT namespace and adds a subset no pod has.
	diffed := runPlugin(kc, "check", "-f", changeFile, "--overlay", "--diff", "-o", "json")
	mustExit(t, diffed, exitFindings)
	rep = checkReport(t, diffed)
	if !rep.Scope.Diff {
		t.Errorf("--diff document without scope.diff")
	}
	want := map[string]bool{"D17": false, "D19": false}
	for _, f := range rep.Findings {
		if f.Change != explain.ChangeAdded {
			t.Errorf("%s %s: change %q, want added (the change removes nothing)", f.ID, f.Message, f.Change)
		}
		if _, ok := want[f.ID]; ok {
			want[f.ID] = true
			// The plugin names files as it was given them, relative to its working directory.
			if f.Position == nil || !strings.HasSuffix(filepath.ToSlash(f.Position.File), "testdata/overlay/change.yaml") {
				t.Errorf("%s is not located in the changed file: %+v", f.ID, f.Position)
			}
		}
		if f.ID == "D9" && (strings.Contains(f.Message, `"v1"`) || strings.Contains(f.Message, `"v2"`)) {
			t.Errorf("a finding of the live state is reported as introduced: %s", f.Message)
		}
	}
	for id, found := range want {
		if !found {
			t.Errorf("--overlay --diff does not report the %s the change introduces:\n%s", id, diffed.stdout)
		}
	}
	table := runPlugin(kc, "check", "-f", changeFile, "--overlay", "--diff", "--fail-on", "never")
	mustExit(t, table, exitOK)
	if !strings.Contains(table.stdout, "CHANGE") || !strings.Contains(table.stdout, "added") {
		t.Errorf("the --diff table does not mark what was added:\n%s", table.stdout)
	}
}

// findingsJSON is the findings of a report as normalised JSON (positions dropped: a live
// object has none).
func findingsJSON(t *testing.T, rep *explain.CheckReport) string {
	t.Helper()
	b, err := json.Marshal(rep.Findings)
	if err != nil {
		t.Fatal(err)
	}
	return normaliseJSON(t, string(b))
}

// TestCheckWaypoint checks a waypoint live: `check -n app` reports for the waypoint app/waypoint
// what it reports offline on the same objects, the policy of namespace other that the waypoint
// ignores included. On a cluster without the Gateway API (its group answers 404) there is no
// waypoint to check, and the check is whole: no warning, no incomplete exit.
func TestCheckWaypoint(t *testing.T) {
	dir := filepath.Join(env.root, "testdata", "scenarios", "waypoint", "use-waypoint-namespace-allowed")
	objs, err := readObjects(dir)
	if err != nil {
		t.Fatal(err)
	}
	extra := filepath.Join(t.TempDir(), "other-policies.yaml")
	if err := os.WriteFile(extra, []byte(`apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata:
  name: details-by-selector
  namespace: other
spec:
  selector:
    matchLabels:
      app: details
  action: DENY
  rules:
  - from:
    - source:
        namespaces: ["untrusted"]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	c := admin(t)
	c.apply(t, append(objs, mustDecodeFile(t, extra)...))
	kc := kubeconfig("admin")

	// The same cluster answers `authz svc/NAME` (the pods the Service selects) and completes
	// waypoint/ from its Gateways.
	svc := runPlugin(kc, "authz", "svc/reviews", "-n", "app", "-o", "json")
	mustSucceed(t, svc)
	var list struct {
		Kind  string            `json:"kind"`
		Items []*explain.Result `json:"items"`
	}
	if err := json.Unmarshal([]byte(svc.stdout), &list); err != nil || list.Kind != "List" || len(list.Items) != 1 ||
		list.Items[0].Subject.Workload != "pod/reviews-v1" {
		t.Errorf("authz svc/reviews -n app: want a List of pod/reviews-v1 (%v)\n%s", err, svc)
	}
	elsewhere := runPlugin(kc, "authz", "svc/details", "-n", "app")
	if elsewhere.code == 0 || !strings.Contains(elsewhere.stderr, "did you mean -n other? service/details is in namespace other") {
		t.Errorf("authz svc/details -n app: want a not-found error that names namespace other\n%s", elsewhere)
	}
	comp := runPlugin(kc, "__complete", "authz", "-n", "app", "waypoint/")
	mustSucceed(t, comp)
	if !strings.HasPrefix(comp.stdout, "waypoint/waypoint\n") {
		t.Errorf("__complete authz -n app waypoint/: want waypoint/waypoint\n%s", comp)
	}

	live := runPlugin(kc, "check", "-n", "app", "-o", "json", "--fail-on", "never")
	mustSucceed(t, live)
	off := runPlugin(offline(), "check", "-n", "app", "-f", dir, "-f", extra, "-o", "json", "--fail-on", "never")
	mustSucceed(t, off)
	rep := checkReport(t, live)
	if w, g := findingsJSON(t, checkReport(t, off)), findingsJSON(t, rep); w != g {
		t.Errorf("check -n app: live (+) differs from offline (-):\n%s", diff(w, g))
	}
	if rep.Scope.Waypoints != 1 {
		t.Errorf("check -n app: %d waypoints checked, want app/waypoint", rep.Scope.Waypoints)
	}
	if !slices.ContainsFunc(rep.Findings, func(f explain.Finding) bool {
		return f.ID == "W01" && f.Resource != nil && f.Resource.String() == "AuthorizationPolicy other/details-by-selector" &&
			slices.Equal(f.Waypoints, []string{"Gateway app/waypoint"})
	}) {
		t.Errorf("check -n app does not report W01 for other/details-by-selector at waypoint app/waypoint:\n%s", live.stdout)
	}

	_, nogw := newFaultProxy(t, func(w http.ResponseWriter, r *http.Request) bool {
		if strings.HasPrefix(r.URL.Path, "/apis/gateway.networking.k8s.io") {
			writeStatus(w, http.StatusNotFound, "NotFound", "the server could not find the requested resource")
			return true
		}
		return false
	})
	r := runPluginTimeout(time.Minute, nogw, "check", "-n", "app", "-o", "json", "--fail-on", "never")
	noCrash(t, r)
	mustSucceed(t, r)
	rep = checkReport(t, r)
	if rep.Scope.Waypoints != 0 || len(rep.Incomplete) > 0 || strings.Contains(r.stderr, "could not be read") {
		t.Errorf("without the Gateway API: %d waypoints, incomplete %q, want none and no warning\n%s", rep.Scope.Waypoints, rep.Incomplete, r)
	}
	wp := runPluginTimeout(time.Minute, nogw, "authz", "waypoint/waypoint", "-n", "app")
	noCrash(t, wp)
	if wp.code == 0 || !strings.Contains(wp.stderr, "the Gateway API CRDs are not installed") {
		t.Errorf("authz waypoint/waypoint without the Gateway API: want a not-found error that says why\n%s", wp)
	}
}
