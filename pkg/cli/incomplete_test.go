package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

const drDenied = "forbidden: alice cannot list destinationrules.networking.istio.io in namespace default"

// An answer without a kind it needed (here the DestinationRules) names it in the document's
// warnings and incomplete list, in a banner at the top of the table, and exits 3; with
// --allow-partial it exits 0.
func TestIncompleteReadsAreInTheAnswer(t *testing.T) {
	t.Chdir(repoRoot(t))
	const dir = "testdata/scenarios/cluster/a10-subsets-eds"
	load := deniedCluster(dir, map[string]string{"DestinationRule": drDenied})
	args := scenarioArgs(t, dir)

	r := runWithLoad(t, load, append(args, "-o", "json")...)
	if r.code != ExitIncomplete {
		t.Fatalf("-o json: got %s", r)
	}
	var doc explain.Result
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	wantWarning := "DestinationRules could not be read (" + drDenied + "): the answer may be incomplete"
	if !reflect.DeepEqual(doc.Incomplete, []string{"DestinationRules"}) || !reflect.DeepEqual(doc.Warnings, []string{wantWarning}) {
		t.Errorf("incomplete = %q, warnings = %q; want [DestinationRules], [%q]", doc.Incomplete, doc.Warnings, wantWarning)
	}
	if !strings.HasSuffix(r.stderr, incompleteLine("DestinationRules")) {
		t.Errorf("stderr does not end with the incomplete line:\n%s", r.stderr)
	}

	r = runWithLoad(t, load, append(args, "-o", "table")...)
	banner := "INCOMPLETE: DestinationRules could not be read; what follows may differ from what istiod pushes (see WARNINGS)\n"
	if r.code != ExitIncomplete || !strings.HasPrefix(r.stdout, banner) || !strings.Contains(r.stdout, "warning: DestinationRules could not be read (forbidden: alice") {
		t.Errorf("-o table: got %s", r)
	}

	for _, format := range []string{"json", "table", "envoy", "yaml", "wide"} {
		if r := runWithLoad(t, load, append(args, "-o", format, "--allow-partial")...); r.code != ExitOK {
			t.Errorf("-o %s --allow-partial: got %s", format, r)
		}
	}
}

// EnvoyFilters are read only to warn that one may patch the Clusters: without them the answer
// is whole.
func TestUnreadEnvoyFiltersNeverFailTheAnswer(t *testing.T) {
	t.Chdir(repoRoot(t))
	const dir = "testdata/scenarios/cluster/a10-subsets-eds"
	denied := "timed out: cannot list envoyfilters.networking.istio.io in namespace default: no complete answer within the request timeout (2s; --request-timeout changes it)"
	load := deniedCluster(dir, map[string]string{"EnvoyFilter": denied})
	r := runWithLoad(t, load, append(scenarioArgs(t, dir), "-o", "table")...)
	if r.code != ExitOK || strings.Contains(r.stdout, "INCOMPLETE") {
		t.Fatalf("got %s", r)
	}
}

// `check` follows the same rule: incomplete exits 3, findings at or above --fail-on exit 79.
func TestCheckIncomplete(t *testing.T) {
	t.Chdir(repoRoot(t))
	const dir = "testdata/scenarios/cluster/a10-subsets-eds"
	load := deniedCluster(dir, map[string]string{"DestinationRule": drDenied})
	r := runWithLoad(t, load, "check", "-n", "default", "-o", "json", "--fail-on", "never")
	if r.code != ExitIncomplete {
		t.Fatalf("got %s", r)
	}
	var rep explain.CheckReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rep.Incomplete, []string{"DestinationRules"}) || !strings.Contains(strings.Join(rep.Warnings, "\n"), drDenied) {
		t.Errorf("incomplete = %q, warnings = %q", rep.Incomplete, rep.Warnings)
	}
	r = runWithLoad(t, load, "check", "-n", "default", "--fail-on", "never")
	if r.code != ExitIncomplete || !strings.HasPrefix(r.stdout, "INCOMPLETE: DestinationRules could not be read") {
		t.Errorf("-o table: got %s", r)
	}
	if r := runWithLoad(t, load, "check", "-n", "default", "--fail-on", "never", "--allow-partial"); r.code != ExitOK {
		t.Errorf("--allow-partial: got %s", r)
	}
}

// `check` needs the Gateways for its waypoints and for the waypoint findings of ambient pods
// (W09, W10): Gateways that cannot be read (forbidden) make the report incomplete; a cluster
// without the Gateway API CRDs has no waypoint, and its report is whole.
func TestCheckUnreadGateways(t *testing.T) {
	t.Chdir(repoRoot(t))
	const dir = "testdata/scenarios/authz/waypoint-allow-clients-only"
	decode := func(r result) explain.CheckReport {
		t.Helper()
		var rep explain.CheckReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("%v: %s", err, r)
		}
		for _, f := range rep.Findings {
			if f.ID == "W09" {
				t.Errorf("W09 without the Gateway: %+v", f)
			}
		}
		return rep
	}
	denied := "forbidden: alice cannot list gateways.gateway.networking.k8s.io at the cluster scope"
	r := runWithLoad(t, deniedCluster(dir, map[string]string{"Gateway": denied}), "check", "-o", "json", "--fail-on", "never")
	if r.code != ExitIncomplete || !strings.Contains(r.stderr, denied) || strings.Contains(r.stderr, "Gatewaies") {
		t.Fatalf("Gateways forbidden: got %s", r)
	}
	if rep := decode(r); !slices.Contains(rep.Incomplete, "Gateways") {
		t.Errorf("Gateways forbidden: incomplete = %q, want Gateways", rep.Incomplete)
	}
	absent := fileCluster(dir, func(_ source.Spec, snap *model.Snapshot) error {
		snap.Gateways = nil
		snap.Absent = map[string]string{"Gateway": "the Gateway API CRDs are not installed in this cluster"}
		return nil
	})
	r = runWithLoad(t, absent, "check", "-o", "json", "--fail-on", "never")
	if r.code != ExitOK {
		t.Fatalf("no Gateway API: got %s", r)
	}
	if rep := decode(r); len(rep.Incomplete) > 0 {
		t.Errorf("no Gateway API: incomplete = %q, want none", rep.Incomplete)
	}
	// The same folder with its Gateway: check reports W09.
	r = runMain(t, "", "check", "-f", dir, "-o", "json", "--fail-on", "never")
	if r.code != ExitOK || !strings.Contains(r.stdout, `"W09"`) {
		t.Errorf("with the Gateway: got %s", r)
	}
}

// "not found" is said only when the list that would have found the subject was read: a
// forbidden Services (or Pods) list is an error naming the forbidden list.
func TestNotFoundOnlyWhenTheListWasRead(t *testing.T) {
	t.Chdir(repoRoot(t))
	const dir = "testdata/scenarios/cluster/a10-subsets-eds"
	svcDenied := "forbidden: alice cannot list services in namespace default"
	load := fileCluster(dir, nil)
	denied := deniedCluster(dir, map[string]string{"Service": svcDenied})
	if r := runWithLoad(t, load, "cluster", "reviewz", "-n", "default"); r.code != ExitError || !strings.Contains(r.stderr, `host "reviewz" not found`) {
		t.Fatalf("readable Services: got %s", r)
	}
	r := runWithLoad(t, denied, "cluster", "reviewz", "-n", "default")
	want := `error: cannot tell whether host "reviewz" exists: Services could not be read (` + svcDenied + ")\n"
	if r.code != ExitError || !strings.HasSuffix(r.stderr, want) || strings.Contains(r.stderr, "not found") {
		t.Errorf("got %s\nwant stderr ending %q", r, want)
	}

	podDenied := "forbidden: alice cannot list pods in namespace default"
	denied = deniedCluster(dir, map[string]string{"Pod": podDenied})
	r = runWithLoad(t, denied, "cluster", "foo", "-n", "default", "--from", "pod/nope")
	want = "error: cannot tell whether pod default/nope exists: Pods could not be read (" + podDenied + ")\n"
	if r.code != ExitError || !strings.HasSuffix(r.stderr, want) {
		t.Errorf("got %s\nwant stderr ending %q", r, want)
	}

	denied = deniedCluster(dir, map[string]string{"Service": svcDenied})
	r = runWithLoad(t, denied, "authz", "svc/nope", "-n", "default")
	want = "error: cannot tell whether service default/nope exists: Services could not be read (" + svcDenied + ")\n"
	if r.code != ExitError || !strings.HasSuffix(r.stderr, want) {
		t.Errorf("got %s\nwant stderr ending %q", r, want)
	}
}

// A file object skipped as malformed is part of the answer it changes: named in the document,
// the banner and the exit code (here the only DestinationRule of the host, so the answer
// would otherwise read "no DestinationRule applies" and exit 0).
func TestSkippedObjectsMakeTheAnswerIncomplete(t *testing.T) {
	t.Chdir(repoRoot(t))
	const dir = "testdata/scenarios/cluster/a10-subsets-eds"
	tmp := t.TempDir()
	for _, f := range []string{"namespaces.yaml", "workloads.yaml"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dr := "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: foo, namespace: default}\n" +
		"spec:\n  host: foo\n  trafficPolicy:\n    connectionPool:\n      tcp:\n        connectTimeout: notaduration\n"
	if err := os.WriteFile(filepath.Join(tmp, "dr.yaml"), []byte(dr), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runMain(t, "", "cluster", "foo", "-n", "default", "-f", tmp, "-o", "json")
	if r.code != ExitIncomplete {
		t.Fatalf("got %s", r)
	}
	var doc explain.Result
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(doc.Incomplete, []string{"DestinationRule default/foo"}) ||
		!strings.Contains(strings.Join(doc.Warnings, "\n"), "DestinationRule default/foo") {
		t.Errorf("incomplete = %q, warnings = %q", doc.Incomplete, doc.Warnings)
	}
}
