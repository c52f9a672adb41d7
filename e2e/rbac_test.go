package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The commands the permission tests run on e2e/testdata/rbac: sidecar-side `cluster`
// questions from a pod and from its Deployment, and one ambient `authz` question, so every kind
// the plugin reads is read (the client and reviews pods run on a Node, so `cluster` gets it).
var (
	rbacCluster = []string{"cluster", "reviews.bookinfo.svc.cluster.local", "-n", "frontend", "--from", "pod/productpage-v1"}
	rbacAuthz   = []string{"authz", "pod/httpbin-7d9f", "-n", "ambient-demo"}
	// rbacFromDeployment reads the Deployments of frontend too.
	rbacFromDeployment = []string{"cluster", "reviews.bookinfo.svc.cluster.local", "-n", "frontend", "--from", "deploy/productpage-v1"}
)

// documentedRoles returns the objects of the first ```yaml block of docs/rbac.md: the
// ClusterRole and Role users are told to grant.
func documentedRoles(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.root, "docs", "rbac.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindSubmatch(data)
	if m == nil {
		t.Fatal("docs/rbac.md has no ```yaml block")
	}
	objs, err := decodeObjects(m[1])
	if err != nil {
		t.Fatalf("docs/rbac.md: %v", err)
	}
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetKind())
	}
	if !slices.Contains(kinds, "ClusterRole") {
		t.Fatalf("docs/rbac.md: the first yaml block has %v, want a ClusterRole", kinds)
	}
	return objs
}

// grant binds roles (ClusterRoles and Roles, as decoded from YAML) to user, under names
// prefixed with the user, and returns the roles and bindings to apply.
func grant(user string, roles []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, r := range roles {
		r = r.DeepCopy()
		r.SetName(user + "-" + r.GetName())
		b := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1",
			"metadata":   map[string]any{"name": r.GetName()},
			"roleRef":    map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": r.GetKind(), "name": r.GetName()},
			"subjects":   []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}},
		}}
		if r.GetKind() == "ClusterRole" {
			b.SetKind("ClusterRoleBinding")
		} else {
			b.SetKind("RoleBinding")
			b.SetNamespace(r.GetNamespace())
		}
		out = append(out, r, b)
	}
	return out
}

// withoutResource removes resource from every rule of the roles, and the rules it leaves
// without resources (the apiserver rejects those).
func withoutResource(t *testing.T, roles []*unstructured.Unstructured, resource string) []*unstructured.Unstructured {
	t.Helper()
	removed := false
	var out []*unstructured.Unstructured
	for _, r := range roles {
		r = r.DeepCopy()
		rules, _, _ := unstructured.NestedSlice(r.Object, "rules")
		var keptRules []any
		for _, rule := range rules {
			rm := rule.(map[string]any)
			res, _ := rm["resources"].([]any)
			var kept []any
			for _, x := range res {
				if x == resource {
					removed = true
					continue
				}
				kept = append(kept, x)
			}
			if len(kept) == 0 {
				continue
			}
			rm["resources"] = kept
			keptRules = append(keptRules, rm)
		}
		_ = unstructured.SetNestedSlice(r.Object, keptRules, "rules")
		out = append(out, r)
	}
	if !removed {
		t.Fatalf("the documented roles do not grant %s", resource)
	}
	return out
}

// rbacWorld applies the permission fixture plus objs, and returns nothing: cleanup is
// registered on t.
func rbacWorld(t *testing.T, objs ...*unstructured.Unstructured) {
	t.Helper()
	fixture, err := readObjects(filepath.Join(env.root, "e2e", "testdata", "rbac"))
	if err != nil {
		t.Fatal(err)
	}
	// Namespaces first, then the roles (a Role needs its namespace), then the rest.
	admin(t).apply(t, append(fixture, objs...))
}

// TestLeastPrivilege grants a user exactly the roles of docs/rbac.md and requires the same
// answers cluster-admin gets; the audit log must show that the user only read (get, list or
// watch), was never refused, and never touched Secrets.
func TestLeastPrivilege(t *testing.T) {
	rbacWorld(t, grant("reader", documentedRoles(t))...)
	mark := auditMark(t)

	for _, q := range [][]string{rbacCluster, rbacAuthz, rbacFromDeployment} {
		native := "envoy"
		if q[0] == "authz" {
			native = "ztunnel"
		}
		for _, format := range []string{native, "json"} {
			args := append(append([]string{}, q...), "-o", format)
			want := runPlugin(kubeconfig("admin"), args...)
			mustSucceed(t, want)
			got := runPlugin(kubeconfig("reader"), args...)
			mustSucceed(t, got)
			w, g := want.stdout, got.stdout
			if format == "json" {
				w, g = normaliseJSON(t, w), normaliseJSON(t, g)
			}
			if w != g {
				t.Errorf("%s -o %s: the documented roles give a different answer (+) than cluster-admin (-):\n%s", q[0], format, diff(w, g))
			}
			if strings.Contains(strings.ToLower(got.stderr), "forbidden") {
				t.Errorf("%s -o %s: the documented roles are not enough:\n%s", q[0], format, got.stderr)
			}
		}
	}

	events := auditEvents(t, mark, "reader")
	if len(events) == 0 {
		t.Fatal("the audit log has no request by user reader: is auditing on?")
	}
	gotNode := false
	for _, e := range events {
		if e.ObjectRef.Resource == "nodes" {
			gotNode = gotNode || (e.Verb == "get" && e.ObjectRef.Name == "rbac-node-a")
			if e.Verb != "get" {
				t.Errorf("nodes are only ever read by name, but the plugin's user issued %s %s", e.Verb, e.RequestURI)
			}
		}
		if !slices.Contains([]string{"get", "list", "watch"}, e.Verb) {
			t.Errorf("the plugin's user issued %s %s", e.Verb, e.RequestURI)
		}
		if e.ObjectRef.Resource == "secrets" {
			t.Errorf("the plugin's user touched secrets: %s %s", e.Verb, e.RequestURI)
		}
		if e.ResponseStatus.Code == 403 {
			t.Errorf("the plugin's user was refused %s %s: docs/rbac.md is missing a permission", e.Verb, e.RequestURI)
		}
	}
	if !gotNode {
		t.Error("`cluster` did not get the client pod's Node rbac-node-a: the locality would be unknown")
	}
}

// TestMissingNodePermission: without get on Nodes, `cluster` still answers (exit 3, incomplete; the same
// Clusters here, since reviews is an EDS cluster) with a warning that the locality is unknown,
// on stderr and in the warnings of -o json.
func TestMissingNodePermission(t *testing.T) {
	// nopa is the kube-env.sh user for missing permissions: each test grants it what it needs,
	// and cleanup takes the grant back.
	const user = "nopa"
	rbacWorld(t, grant(user, withoutResource(t, documentedRoles(t), "nodes"))...)

	args := append(append([]string{}, rbacCluster...), "-o", "envoy")
	want := runPlugin(kubeconfig("admin"), args...)
	mustSucceed(t, want)
	r := runPlugin(kubeconfig(user), args...)
	mustIncomplete(t, r)
	if r.stdout != want.stdout {
		t.Errorf("cluster without Nodes: a different answer (+) than cluster-admin's (-):\n%s", diff(want.stdout, r.stdout))
	}
	if !mentionsUnknownLocality(r.stderr) {
		t.Errorf("cluster without Nodes: want a warning that the locality is unknown on stderr, got:\n%s", r.stderr)
	}

	r = runPlugin(kubeconfig(user), append(append([]string{}, rbacCluster...), "-o", "json")...)
	mustIncomplete(t, r)
	var doc struct {
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("-o json: %v", err)
	}
	if !slices.ContainsFunc(doc.Warnings, mentionsUnknownLocality) {
		t.Errorf("cluster -o json without Nodes: want a warning that the locality is unknown, got %q", doc.Warnings)
	}
}

func mentionsUnknownLocality(s string) bool {
	return strings.Contains(s, "locality") && strings.Contains(s, "unknown") && strings.Contains(s, "nodes")
}

// TestMissingPeerAuthenticationPermission: without list on PeerAuthentications, `cluster`
// still answers (exit 3, incomplete) with a warning that the mTLS inference is incomplete, while `authz`,
// which cannot be answered without them, exits non-zero and says why.
func TestMissingPeerAuthenticationPermission(t *testing.T) {
	rbacWorld(t, grant("nopa", withoutResource(t, documentedRoles(t), "peerauthentications"))...)

	r := runPlugin(kubeconfig("nopa"), append(append([]string{}, rbacCluster...), "-o", "envoy")...)
	mustIncomplete(t, r)
	if !mentionsPeerAuthn(r.stderr) {
		t.Errorf("cluster without PeerAuthentications: want a warning naming them on stderr, got:\n%s", r.stderr)
	}

	r = runPlugin(kubeconfig("nopa"), append(append([]string{}, rbacCluster...), "-o", "json")...)
	mustIncomplete(t, r)
	var doc struct {
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("-o json: %v", err)
	}
	if !slices.ContainsFunc(doc.Warnings, mentionsPeerAuthn) {
		t.Errorf("cluster -o json without PeerAuthentications: want a warning naming them, got %q", doc.Warnings)
	}

	r = runPlugin(kubeconfig("nopa"), append(append([]string{}, rbacAuthz...), "-o", "ztunnel")...)
	if r.code == 0 {
		t.Errorf("authz without PeerAuthentications must fail, got exit 0 with:\n%s", r.stdout)
	}
	if !mentionsPeerAuthn(r.stderr) {
		t.Errorf("authz without PeerAuthentications: want an error naming them, got:\n%s", r.stderr)
	}
}

func mentionsPeerAuthn(s string) bool {
	return strings.Contains(strings.ToLower(s), "peerauthentication")
}

// auditEvent is the part of an audit.k8s.io/v1 Event the tests look at.
type auditEvent struct {
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	Stage string `json:"stage"`
}

// auditMark is the current size of the audit log; auditEvents reads what came after it.
func auditMark(t *testing.T) int64 {
	t.Helper()
	fi, err := os.Stat(filepath.Join(env.kubeDir, "audit.log"))
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	return fi.Size()
}

// auditEvents returns the completed requests logged after mark, by user (all users when
// user is ""). The apiserver writes an event when the response is complete; a short wait lets
// the last ones land.
func auditEvents(t *testing.T, mark int64, user string) []auditEvent {
	t.Helper()
	time.Sleep(500 * time.Millisecond)
	f, err := os.Open(filepath.Join(env.kubeDir, "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(mark, 0); err != nil {
		t.Fatal(err)
	}
	var out []auditEvent
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 16<<20)
	for s.Scan() {
		var e auditEvent
		if err := json.Unmarshal(s.Bytes(), &e); err != nil {
			t.Fatalf("audit log line is not JSON: %v", err)
		}
		if e.Stage != "ResponseComplete" && e.Stage != "Panic" {
			continue
		}
		if user == "" || e.User.Username == user {
			out = append(out, e)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func (e auditEvent) String() string {
	return fmt.Sprintf("%s %s %s (%d)", e.User.Username, e.Verb, e.RequestURI, e.ResponseStatus.Code)
}
