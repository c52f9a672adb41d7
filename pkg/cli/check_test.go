package cli

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/check"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/ztunnelauthz"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/internal/checktest"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// answersUnion asks `cluster HOST -A` for every host from every client sidecar (the default
// sidecar of every namespace, `--from pod/NAME` for every injected pod), and `authz pod/NAME`
// for every ambient pod, each through Main as a user would, and returns the union of their
// diagnostics. Hosts outside a client's scope are not asked about.
func answersUnion(t *testing.T, dir string) checktest.Union {
	t.Helper()
	snap, err := source.LoadFiles([]string{dir}, "default")
	if err != nil {
		t.Fatal(err)
	}
	ix := index.Build(snap)
	var hosts []string
	for _, s := range ix.Services() {
		hosts = append(hosts, s.Hostname)
	}
	hosts = slices.Compact(hosts)
	out := checktest.Union{}
	for _, c := range check.Clients(snap, nil) {
		for _, h := range hosts {
			args := []string{"cluster", h, "-n", c.Namespace, "-A", "-f", dir, "-o", "json"}
			if c.Ref.Kind == "Pod" {
				args = append(args, "--from", "pod/"+c.Ref.Name)
			}
			r := runMain(t, "", args...)
			if r.code != ExitOK {
				t.Fatalf("%s: %v\n%s", dir, args, r)
			}
			var res explain.Result
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
				t.Fatalf("%s: %v: %v", dir, args, err)
			}
			if res.Subject.Resource == nil {
				continue // outside the client's scope
			}
			for _, d := range res.Diagnostics {
				out.Add(d, res.Subject.Host, c.Ref.String(), "")
			}
		}
	}
	for _, pod := range snap.Pods {
		if !ztunnelauthz.Ambient(snap, pod) {
			continue
		}
		args := []string{"authz", "pod/" + pod.Name, "-n", pod.Namespace, "-f", dir, "-o", "json"}
		r := runMain(t, "", args...)
		if r.code != ExitOK {
			t.Fatalf("%s: %v\n%s", dir, args, r)
		}
		var res explain.Result
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
			t.Fatalf("%s: %v: %v", dir, args, err)
		}
		for _, d := range res.Diagnostics {
			out.Add(d, "", "", "Pod "+pod.Namespace+"/"+pod.Name)
		}
	}
	return out
}

// TestCheckEqualsUnionOfAnswers proves on every scenario folder that `check` finds exactly
// what the cluster and authz commands report: every host from every client, every ambient pod.
func TestCheckEqualsUnionOfAnswers(t *testing.T) {
	t.Chdir(repoRoot(t))
	var dirs []string
	for _, kind := range []string{"cluster", "authz"} {
		dirs = append(dirs, scenarioDirs(t, kind)...)
	}
	dirs = append(dirs, "testdata/examples/bookinfo", "testdata/examples/ambient")
	findings := 0
	for _, dir := range dirs {
		r := runMain(t, "", "check", "-f", dir, "-o", "json", "--fail-on", "never")
		if r.code != ExitOK {
			t.Fatalf("%s: %s", dir, r)
		}
		var rep explain.CheckReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if rep.Kind != explain.KindCheckReport || rep.APIVersion != explain.APIVersion {
			t.Fatalf("%s: document %s %s", dir, rep.APIVersion, rep.Kind)
		}
		findings += len(rep.Findings)
		checktest.Compare(t, dir, &rep, answersUnion(t, dir))
	}
	if findings == 0 {
		t.Fatal("no scenario has a finding: the comparison proves nothing")
	}
	t.Logf("%d scenario folders, %d findings", len(dirs), findings)
}
