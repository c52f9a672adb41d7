package check_test

import (
	"slices"
	"strings"
	"testing"

	gen "github.com/mesh-explain/kubectl-mesh-explain/internal/testkit/meshgen"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/check"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/envoycluster"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/sidecarauthz"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/waypointauthz"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/ztunnelauthz"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/internal/checktest"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
)

// engineUnion is the union of the answers of the engines' own entry points: Explain of every
// host from every client (a new Explainer per client), sidecarauthz.ExplainPod of every pod with
// a sidecar, ztunnelauthz.Explain of every other ambient pod (but the pods of waypoints and
// injected gateways), waypointauthz.Explain of every waypoint.
func engineUnion(t *testing.T, snap *model.Snapshot) checktest.Union {
	t.Helper()
	ix := index.Build(snap)
	var hosts []string
	for _, s := range ix.Services() {
		if n := len(hosts); n == 0 || hosts[n-1] != s.Hostname {
			hosts = append(hosts, s.Hostname)
		}
	}
	u := checktest.Union{}
	for _, c := range check.Clients(snap, nil) {
		kind := "namespace"
		if c.Ref.Kind == "Pod" {
			kind = "pod"
		}
		proxy, err := ix.Proxy(kind, c.Namespace, c.Ref.Name)
		if err != nil {
			t.Fatal(err)
		}
		e := envoycluster.NewExplainer(ix, proxy)
		for _, h := range hosts {
			res, err := e.Explain(envoycluster.Query{Host: h, Namespace: c.Namespace})
			if err != nil {
				t.Fatalf("%s from %s: %v", h, c.Ref, err)
			}
			if res.Subject.Resource == nil {
				continue
			}
			for _, d := range res.Diagnostics {
				u.Add(d, h, c.Ref.String(), "")
			}
		}
	}
	for _, pod := range snap.Pods {
		var rs []*explain.Result
		typ, _ := model.ProxyType(pod)
		switch {
		case typ == model.ProxyWaypoint || typ == model.ProxyRouter && sidecarauthz.HasSidecar(pod):
			// A waypoint's pod, an injected gateway's: `authz` answers neither as a workload.
		case sidecarauthz.HasSidecar(pod):
			rs = []*explain.Result{sidecarauthz.ExplainPod(snap, pod)}
		case ztunnelauthz.Ambient(snap, pod):
			var err error
			rs, err = ztunnelauthz.Explain(snap, ztunnelauthz.Query{Namespace: pod.Namespace, Workload: ztunnelauthz.WorkloadRef{Kind: "pod", Name: pod.Name}})
			if err != nil {
				t.Fatal(err)
			}
		}
		for _, r := range rs {
			for _, d := range r.Diagnostics {
				u.Add(d, "", "", "Pod "+pod.Namespace+"/"+pod.Name)
			}
		}
	}
	for _, gw := range snap.Gateways {
		if string(gw.Spec.GatewayClassName) != waypointauthz.ClassName {
			continue
		}
		r, err := waypointauthz.Explain(snap, waypointauthz.Query{Namespace: gw.Namespace, Name: gw.Name})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range r.Diagnostics {
			u.AddWaypoint(d, "Gateway "+gw.Namespace+"/"+gw.Name)
		}
	}
	return u
}

// benchSnapshot is the generated benchmark mesh at a small scale: 40 Services, 80 Pods (60 with
// a sidecar, 20 ambient), 20 DestinationRules, 8 PeerAuthentications and 4
// AuthorizationPolicies over 8 namespaces, and the waypoints of its two ambient namespaces (with
// their Service and pod) and 4 AuthorizationPolicies attached to them.
func benchSnapshot(t *testing.T) *model.Snapshot {
	t.Helper()
	snap, err := gen.LoadSmall(0.004, 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// benchCheck is the check of every namespace of benchSnapshot.
func benchCheck(t *testing.T) (*model.Snapshot, *explain.CheckReport) {
	t.Helper()
	snap := benchSnapshot(t)
	rep, err := check.Run(snap, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return snap, rep
}

// TestRunEqualsUnionOnBenchMesh proves on the generated benchmark mesh, at a small scale, that
// Run finds what every host from every client and every workload reports, and that the classes
// save work.
func TestRunEqualsUnionOnBenchMesh(t *testing.T) {
	snap, rep := benchCheck(t)
	if len(rep.Findings) == 0 {
		t.Fatal("the generated mesh has no finding: the comparison proves nothing")
	}
	checktest.Compare(t, "bench mesh", rep, engineUnion(t, snap))
	if rep.Scope.ClientClasses >= rep.Scope.Clients {
		t.Errorf("%d classes for %d clients: no client shares an answer", rep.Scope.ClientClasses, rep.Scope.Clients)
	}
	for _, dp := range []string{"ambient", "sidecar"} {
		if rep.Scope.DataPlanes[dp] == 0 {
			t.Errorf("no %s workload checked: %v", dp, rep.Scope.DataPlanes)
		}
	}
	if rep.Scope.Workloads != rep.Scope.DataPlanes["ambient"]+rep.Scope.DataPlanes["sidecar"] {
		t.Errorf("%d workloads, by data plane %v", rep.Scope.Workloads, rep.Scope.DataPlanes)
	}
	// The sidecar answers must have something to compare: a finding with an S diagnostic.
	if !slices.ContainsFunc(rep.Findings, func(f explain.Finding) bool { return strings.HasPrefix(f.ID, "S") }) {
		t.Error("no sidecar finding (S) on the generated mesh: the sidecar comparison proves nothing")
	}
	t.Logf("%d hosts, %d clients in %d classes, %d workloads %v: %d findings", rep.Scope.Hosts, rep.Scope.Clients, rep.Scope.ClientClasses, rep.Scope.Workloads, rep.Scope.DataPlanes, len(rep.Findings))
}

// TestNamespaceScope checks that a check of one namespace reports the answers of its clients
// and workloads only.
func TestNamespaceScope(t *testing.T) {
	snap := benchSnapshot(t)
	ns := gen.NamespaceName(2)
	rep, err := check.Run(snap, check.Options{Namespaces: []string{ns}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		for _, c := range f.Clients {
			if c != "Namespace "+ns && !strings.HasPrefix(c, "Pod "+ns+"/") {
				t.Errorf("%s: client %s outside %s", f.ID, c, ns)
			}
		}
		for _, w := range f.Workloads {
			if !strings.HasPrefix(w, "Pod "+ns+"/") {
				t.Errorf("%s: workload %s outside %s", f.ID, w, ns)
			}
		}
	}
}

// TestOneFindingPerSubset checks on the generated mesh that a subset no route uses (D9) is one
// finding whatever the clients it is reported for: the clients of every namespace that has no
// route to it are listed in that one finding.
func TestOneFindingPerSubset(t *testing.T) {
	_, rep := benchCheck(t)
	seen := map[string]bool{}
	several := 0
	for _, f := range rep.Findings {
		if f.ID != "D9" {
			continue
		}
		k := f.Resource.String() + " " + f.Message
		if seen[k] {
			t.Errorf("D9 reported twice for %s", k)
		}
		seen[k] = true
		nss := map[string]bool{}
		for _, c := range f.Clients {
			ns := strings.TrimPrefix(c, "Namespace ")
			if rest, ok := strings.CutPrefix(c, "Pod "); ok {
				ns, _, _ = strings.Cut(rest, "/")
			}
			nss[ns] = true
		}
		if len(nss) > 1 {
			several++
		}
	}
	if several == 0 {
		t.Errorf("no D9 finding lists the clients of several namespaces (%d D9 findings)", len(seen))
	}
	t.Logf("%d D9 findings, %d of them for clients of several namespaces", len(seen), several)
}

// TestUnreadKindsWarn checks that a kind the sidecar answer needs and could not read is a
// warning of the report: the findings it decides may be missing.
func TestUnreadKindsWarn(t *testing.T) {
	snap := benchSnapshot(t)
	if snap.Incomplete == nil {
		snap.Incomplete = map[string]string{}
	}
	snap.Incomplete["RequestAuthentication"] = "forbidden"
	rep, err := check.Run(snap, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "RequestAuthentication objects could not be read (forbidden): findings may be missing"
	if !slices.Contains(rep.Warnings, want) {
		t.Errorf("warnings %q lack %q", rep.Warnings, want)
	}
}
