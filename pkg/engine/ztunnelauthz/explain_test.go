package ztunnelauthz

import (
	"errors"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

func diagIDs(r *explain.Result) []string {
	var out []string
	for _, d := range r.Diagnostics {
		out = append(out, string(d.Severity)+" "+d.ID)
	}
	return out
}

func section(r *explain.Result, title string) *explain.Section {
	for i := range r.Sections {
		if r.Sections[i].Title == title {
			return &r.Sections[i]
		}
	}
	return nil
}

func ztunnelOut(t *testing.T, r *explain.Result) string {
	t.Helper()
	return ztunnelStream(t, r)
}

func explainOne(t *testing.T, snap *model.Snapshot, q Query) *explain.Result {
	t.Helper()
	res, err := Explain(snap, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 {
		t.Fatalf("%d results, want 1", len(res))
	}
	return res[0]
}

var podA = Query{Namespace: "foo", Workload: WorkloadRef{Kind: "pod", Name: "a"}}

func service(ns, name string, port, target int32, kv ...string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Selector: labelsOf(kv...), Ports: []corev1.ServicePort{{Port: port, TargetPort: intstr.FromInt32(target)}}}}
}

// TestExplainDiagnostics pins, per rule of docs/semantics/authz.md, the diagnostics a workload
// gets.
func TestExplainDiagnostics(t *testing.T) {
	pod := newPod("foo", "a", "app", "a")
	rootStrict := peerAuth(rootNs, "default").mode(strict)
	cases := []struct {
		name     string
		objs     []any
		q        Query
		wantDiag []string // "severity ID", all must be present
		noDiag   []string // IDs that must not be present
		wantOut  *string  // -o ztunnel output, when checked
	}{
		{name: "a pod with a sidecar is not captured; said plainly",
			objs:     []any{rootStrict, pod.annotate(sidecarStatusAnno, "{}")},
			wantDiag: []string{"warning A01"}},
		{name: "an istio-proxy container without the status annotation does not stop capture",
			objs:     []any{rootStrict, newPod("foo", "a", "app", "a").container(proxyContainerName)},
			wantDiag: []string{"warning A01"}, wantOut: str(ztunnelStatic)},
		{name: "a pod in an unlabelled namespace is not captured",
			objs:     []any{namespace("foo"), pod},
			wantDiag: []string{"warning A01"}},
		{name: "a pod labelled ambient in an unlabelled namespace is captured",
			objs:   []any{namespace("foo"), newPod("foo", "a", "app", "a", dataplaneModeLabel, dataplaneModeAmbient)},
			noDiag: []string{"A01"}},
		{name: "the dataplane-mode annotation is not read",
			objs:     []any{newPod("foo", "a", "app", "a").annotate(dataplaneModeLabel, dataplaneModeNone)},
			wantDiag: []string{"warning A21"}, noDiag: []string{"A01"}},
		{name: "a tie on creationTimestamp that changes the keys is undecidable",
			objs:     []any{pod, peerAuth("foo", "a-strict").mode(strict), peerAuth("foo", "b-permissive").mode(permissive)},
			wantDiag: []string{"warning A02"}, wantOut: str(ztunnelStatic)},
		{name: "a tie with the same outcome is only informational",
			objs:     []any{pod, peerAuth("foo", "a-strict").mode(strict), peerAuth("foo", "b-strict").mode(strict)},
			wantDiag: []string{"info A02"}},
		{name: "a root-namespace PeerAuthentication with a selector is ignored",
			objs:     []any{pod, peerAuth(rootNs, "sel").mode(strict).selector("app", "a")},
			wantDiag: []string{"warning A03"}, wantOut: str("")},
		{name: "E1: dangling key and the workload is not strict on the STRICT port",
			objs:     []any{pod, rootStrict, peerAuth("foo", "workload").selector("app", "a").mode(permissive).port(9090, strict)},
			wantDiag: []string{"error A05", "warning A04"},
			wantOut:  str("# missing: foo/converted_peer_authentication_workload\n")},
		{name: "E3: the converted exemption is not referenced",
			objs:     []any{pod, peerAuth("foo", "ns").mode(strict), peerAuth("foo", "workload").selector("app", "a").port(9090, disable)},
			wantDiag: []string{"warning A06", "info A16"}, noDiag: []string{"A23", "A05"}},
		{name: "a portLevelMtls key that is a Service port, not a pod port",
			objs: []any{pod, rootStrict, service("foo", "svc", 80, 8080, "app", "a"),
				peerAuth("foo", "workload").selector("app", "a").port(80, permissive)},
			wantDiag: []string{"warning A13"}},
		{name: "a pod without labels lists every selector policy",
			objs:     []any{newPod("foo", "a"), authzPolicy(t, "metadata: {name: sel-b, namespace: foo}\nspec: {selector: {matchLabels: {app: b}}, rules: [{}]}\n")},
			wantDiag: []string{"warning A15"}, wantOut: str("groups:\n- {}\nname: sel-b\nnamespace: foo\nscope: WORKLOAD_SELECTOR\n")},
		{name: "AUDIT is flagged when it would select the pod",
			objs:     []any{pod, authzPolicy(t, "metadata: {name: au, namespace: foo}\nspec: {selector: {matchLabels: {app: a}}, action: AUDIT, rules: [{}]}\n")},
			wantDiag: []string{"warning A10"}, wantOut: str("")},
		{name: "a dry-run policy is flagged",
			objs:     []any{pod, authzPolicy(t, "metadata: {name: d, namespace: foo, annotations: {istio.io/dry-run: \"true\"}}\nspec: {selector: {matchLabels: {app: a}}, rules: [{}]}\n")},
			wantDiag: []string{"warning A11"}, wantOut: str("")},
		{name: "an empty selector policy is a no-op",
			objs:     []any{pod, authzPolicy(t, "metadata: {name: e, namespace: foo}\nspec: {selector: {}, action: DENY, rules: [{}]}\n")},
			wantDiag: []string{"warning A12"}, wantOut: str("")},
		{name: "a policy of another revision is not watched",
			objs:     []any{pod, authzPolicy(t, "metadata: {name: r, namespace: foo, labels: {istio.io/rev: canary}}\nspec: {selector: {matchLabels: {app: a}}, rules: [{}]}\n")},
			q:        Query{Namespace: "foo", Workload: WorkloadRef{Kind: "pod", Name: "a"}, Revision: "stable"},
			wantDiag: []string{"info A22"}, wantOut: str("")},
		{name: "a policy of the same revision is listed",
			objs:    []any{pod, authzPolicy(t, "metadata: {name: r, namespace: foo, labels: {istio.io/rev: stable}}\nspec: {selector: {matchLabels: {app: a}}, rules: [{}]}\n")},
			q:       Query{Namespace: "foo", Workload: WorkloadRef{Kind: "pod", Name: "a"}, Revision: "stable"},
			noDiag:  []string{"A22"},
			wantOut: str("groups:\n- {}\nname: r\nnamespace: foo\nscope: WORKLOAD_SELECTOR\n")},
		{name: "HTTP attributes per rule: ALLOW dropped, DENY stripped",
			objs: []any{pod,
				authzPolicy(t, "metadata: {name: al, namespace: foo}\nspec: {selector: {matchLabels: {app: a}}, rules: [{to: [{operation: {methods: [GET]}}]}]}\n"),
				authzPolicy(t, "metadata: {name: dn, namespace: foo}\nspec: {selector: {matchLabels: {app: a}}, action: DENY, rules: [{to: [{operation: {methods: [GET], ports: [\"80\"]}}]}]}\n")},
			wantDiag: []string{"warning A07", "warning A08", "info A19"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.q
			if q.Workload.Name == "" {
				q = podA
			}
			r := explainOne(t, snapshot(tc.objs...), q)
			got := diagIDs(r)
			for _, w := range tc.wantDiag {
				if !slices.Contains(got, w) {
					t.Errorf("missing diagnostic %s; got %v", w, got)
				}
			}
			for _, id := range tc.noDiag {
				if slices.ContainsFunc(got, func(s string) bool { return strings.HasSuffix(s, " "+id) }) {
					t.Errorf("unexpected diagnostic %s; got %v", id, got)
				}
			}
			for _, d := range r.Diagnostics {
				if len(d.Resources) == 0 && d.ID != string(diag.DisableIsPermissive) {
					t.Errorf("diagnostic %s names no resource: %s", d.ID, d.Message)
				}
			}
			if tc.wantOut != nil {
				if out := ztunnelOut(t, r); out != *tc.wantOut {
					t.Errorf("-o ztunnel:\n%s\nwant:\n%s", out, *tc.wantOut)
				}
			}
			requireEveryFieldTraced(t, r)
			requireDiagnosticsWellFormed(t, r)
		})
	}
}

func str(s string) *string { return &s }

const ztunnelStatic = "action: DENY\ngroups:\n- rules:\n  - matches:\n    - notPrincipals:\n      - presence: {}\nname: istio_converted_static_strict\nnamespace: istio-system\nscope: WORKLOAD_SELECTOR\n"

func TestNotCapturedIsSaidPlainly(t *testing.T) {
	r := explainOne(t, snapshot(peerAuth(rootNs, "default").mode(strict), newPod("foo", "a", "app", "a", dataplaneModeLabel, dataplaneModeNone)), podA)
	capture := section(r, "Capture")
	if capture == nil || !slices.ContainsFunc(capture.Rows, func(row []string) bool {
		return row[0] == "result" && row[1] == "NOT captured by ztunnel" && strings.Contains(row[2], "=none")
	}) {
		t.Fatalf("capture section does not say the pod is not captured: %+v", capture)
	}
	reading := section(r, "Reading")
	if reading == nil || len(reading.Rows) != 1 || !strings.Contains(reading.Rows[0][4], "not captured by ztunnel") {
		t.Errorf("reading does not say the pod is not captured: %+v", reading)
	}
	// istiod still lists the static policy for the pod.
	if out := ztunnelOut(t, r); out != ztunnelStatic {
		t.Errorf("-o ztunnel:\n%s", out)
	}
}

func TestProxyContainerAloneIsCaptured(t *testing.T) {
	r := explainOne(t, snapshot(newPod("foo", "a", "app", "a").container(proxyContainerName)), podA)
	if s := section(r, "Capture"); s == nil || !slices.ContainsFunc(s.Rows, func(row []string) bool { return row[0] == "result" && row[1] == "captured by ztunnel" }) {
		t.Errorf("capture: %+v", s)
	}
}

func TestScopePoliciesAreObjectsButNotKeys(t *testing.T) {
	r := explainOne(t, snapshot(newPod("foo", "a", "app", "a"),
		authzPolicy(t, "metadata: {name: ns-wide, namespace: foo}\nspec: {rules: [{from: [{source: {namespaces: [bar]}}]}]}\n"),
		authzPolicy(t, "metadata: {name: mesh-wide, namespace: istio-system}\nspec: {action: DENY, rules: [{from: [{source: {namespaces: [evil]}}]}]}\n"),
		authzPolicy(t, "metadata: {name: other-ns, namespace: bar}\nspec: {rules: [{}]}\n"),
	), podA)
	var names []string
	for _, o := range r.Objects {
		if !slices.Contains(o.Summary, explain.Summary{Name: SummaryAttachment, Value: AttachmentScope}) {
			t.Errorf("%s is not marked as applying by scope: %+v", o.Name, o.Summary)
		}
		names = append(names, o.Name)
	}
	if want := []string{"foo/ns-wide", "istio-system/mesh-wide"}; !slices.Equal(names, want) {
		t.Errorf("objects %v, want %v", names, want)
	}
	if out := ztunnelOut(t, r); out != "" {
		t.Errorf("scope policies were printed as keys:\n%s", out)
	}
	reading := section(r, "Reading")
	if reading == nil {
		t.Fatal("no reading")
	}
	row := reading.Rows[0]
	if !strings.Contains(row[3], "denied: no ALLOW policy matches") || !strings.Contains(row[4], "namespace bar") {
		t.Errorf("reading of port %s: %q / %q", row[0], row[3], row[4])
	}
}

func TestWaypointPoliciesShownApart(t *testing.T) {
	r := explainOne(t, snapshot(newPod("foo", "a", "app", "a"), service("foo", "a", 80, 8080, "app", "a"),
		authzPolicy(t, "metadata: {name: wp, namespace: foo}\nspec: {targetRefs: [{kind: Service, group: \"\", name: a}], rules: [{to: [{operation: {methods: [GET]}}]}]}\n")), podA)
	s := section(r, "Waypoint policies (enforced by the waypoint, never by ztunnel)")
	if s == nil || len(s.Rows) != 1 || !strings.Contains(s.Rows[0][3], "selects this pod") {
		t.Fatalf("waypoint policy section: %+v", s)
	}
	if len(r.Objects) != 0 {
		t.Errorf("a waypoint policy became a ztunnel object: %+v", r.Objects)
	}
}

func TestReadingPerPort(t *testing.T) {
	r := explainOne(t, snapshot(newPod("foo", "a", "app", "a"),
		peerAuth(rootNs, "default").mode(strict),
		peerAuth("foo", "workload").selector("app", "a").port(9090, permissive),
		authzPolicy(t, "metadata: {name: allow, namespace: foo}\nspec: {selector: {matchLabels: {app: a}}, rules: [{from: [{source: {principals: [cluster.local/ns/bar/sa/web]}}], to: [{operation: {ports: [\"8080\"]}}]}]}\n"),
	), podA)
	reading := section(r, "Reading")
	if reading == nil {
		t.Fatal("no reading")
	}
	byPort := map[string][]string{}
	for _, row := range reading.Rows {
		byPort[strings.Fields(row[0])[0]] = row
	}
	if row := byPort["8080"]; row == nil || !strings.HasPrefix(row[2], "rejected by foo/converted_peer_authentication_workload") ||
		!strings.Contains(row[4], "principal cluster.local/ns/bar/sa/web") {
		t.Errorf("port 8080: %q", row)
	}
	if row := byPort["9090"]; row == nil || row[2] != "accepted" || !strings.HasPrefix(row[1], "PERMISSIVE") ||
		row[3] != "denied: no ALLOW policy matches" || !strings.HasPrefix(row[4], "nobody") {
		t.Errorf("port 9090: %q", row)
	}
}

func TestResolveWorkloads(t *testing.T) {
	two := []any{newPod("foo", "a-1", "app", "a"), newPod("foo", "a-2", "app", "a"), newPod("foo", "b", "app", "b")}
	snap := snapshot(two...)
	snap.Deployments = []*appsv1.Deployment{{ObjectMeta: metav1.ObjectMeta{Namespace: "foo", Name: "a"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labelsOf("app", "a")}}}}
	names := func(q Query) ([]string, error) {
		res, err := Explain(snap, q)
		var out []string
		for _, r := range res {
			out = append(out, r.Subject.Workload)
		}
		return out, err
	}
	if got, err := names(Query{Namespace: "foo", Workload: WorkloadRef{Kind: "deployment", Name: "a"}}); err != nil || !slices.Equal(got, []string{"pod/a-1", "pod/a-2"}) {
		t.Errorf("deployment/a: %v %v", got, err)
	}
	snap.Services = []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "foo", Name: "b"}, Spec: corev1.ServiceSpec{Selector: labelsOf("app", "b")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "foo", Name: "c"}, Spec: corev1.ServiceSpec{Selector: labelsOf("app", "c")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "foo", Name: "external"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "bar", Name: "a"}, Spec: corev1.ServiceSpec{Selector: labelsOf("app", "a")}},
	}
	if got, err := names(Query{Namespace: "foo", Workload: WorkloadRef{Kind: "svc", Name: "b"}}); err != nil || !slices.Equal(got, []string{"pod/b"}) {
		t.Errorf("svc/b: %v %v", got, err)
	}
	var nfs *explain.NotFoundError
	if _, err := names(Query{Namespace: "foo", Workload: WorkloadRef{Kind: "service", Name: "a"}}); !errors.As(err, &nfs) ||
		nfs.What != "service foo/a" || nfs.Hint != "services in foo: b, c, external" {
		t.Errorf("service/a is in bar only: %v", err)
	}
	if _, err := names(Query{Namespace: "foo", Workload: WorkloadRef{Kind: "service", Name: "c"}}); !errors.As(err, &nfs) ||
		nfs.What != "pods of service foo/c" || !strings.Contains(nfs.Hint, "app=c") {
		t.Errorf("service/c selects no pod: %v", err)
	}
	var iqs *explain.InvalidQueryError
	if _, err := names(Query{Namespace: "foo", Workload: WorkloadRef{Kind: "service", Name: "external"}}); !errors.As(err, &iqs) || !strings.Contains(iqs.Message, "no selector") {
		t.Errorf("service/external has no selector: %v", err)
	}
	if got, err := names(Query{Namespace: "foo", Selector: "app=b"}); err != nil || !slices.Equal(got, []string{"pod/b"}) {
		t.Errorf("-l app=b: %v %v", got, err)
	}
	var nf *explain.NotFoundError
	if _, err := names(Query{Namespace: "foo", Workload: WorkloadRef{Kind: "pod", Name: "nope"}}); !errors.As(err, &nf) || !strings.Contains(nf.Hint, "a-1") {
		t.Errorf("missing pod: %v", err)
	}
	var iq *explain.InvalidQueryError
	if _, err := names(Query{Namespace: "foo", Workload: WorkloadRef{Kind: "statefulset", Name: "x"}}); !errors.As(err, &iq) {
		t.Errorf("unsupported kind: %v", err)
	}
	if _, err := names(Query{Namespace: "foo", Selector: "app in (("}); !errors.As(err, &iq) {
		t.Errorf("bad selector: %v", err)
	}
	// Without the Deployment object, pods owned by its ReplicaSets are used.
	p := newPod("foo", "web-5d8f-x", "app", "web", "pod-template-hash", "5d8f")
	p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-5d8f"}}
	res, err := Explain(snapshot(p), Query{Namespace: "foo", Workload: WorkloadRef{Kind: "deploy", Name: "web"}})
	if err != nil || len(res) != 1 {
		t.Errorf("deployment via ReplicaSet: %v %v", res, err)
	}
}

func TestLoadIssuesBecomeDiagnostics(t *testing.T) {
	snap := snapshot(newPod("foo", "a", "app", "a"))
	ref := provenance.Ref{Kind: "AuthorizationPolicy", Namespace: "foo", Name: "bad"}
	snap.Issues = []model.LoadIssue{
		{Severity: "error", Resource: &ref, Field: "spec.action", Message: `invalid value "FOO"`},
		{Severity: "error", Resource: &provenance.Ref{Kind: "AuthorizationPolicy", Namespace: "elsewhere", Name: "x"}, Message: "unrelated"},
	}
	snap.Incomplete = map[string]string{"PeerAuthentication": "forbidden"}
	r := explainOne(t, snap, podA)
	var msgs []string
	for _, d := range r.Diagnostics {
		if d.ID == string(diag.LoadIssue) {
			msgs = append(msgs, d.Message)
		}
	}
	if !slices.Equal(msgs, []string{`spec.action: invalid value "FOO"`}) {
		t.Errorf("load diagnostics %v", msgs)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "PeerAuthentication") {
		t.Errorf("warnings %v", r.Warnings)
	}
}

func TestMissingKeyObject(t *testing.T) {
	r := explainOne(t, snapshot(newPod("foo", "a", "app", "a"), peerAuth(rootNs, "default").mode(strict), peerAuth("foo", "ns"),
		peerAuth("foo", "workload").selector("app", "a").port(9090, permissive)), podA)
	if len(r.Objects) != 1 || !r.Objects[0].Missing || r.Objects[0].Name != "foo/converted_peer_authentication_workload" {
		t.Fatalf("objects: %+v", r.Objects)
	}
	if !r.Objects[0].Listed || r.Objects[0].Value != nil {
		t.Errorf("the dangling key is not a Listed object without a value: %+v", r.Objects[0])
	}
	if o := r.Objects[0].Origins; len(o) != 1 || o[0].Origin.Field != "spec.portLevelMtls" {
		t.Errorf("origins: %+v", o)
	}
}
