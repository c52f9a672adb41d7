package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

// podList is a list of n pods with a continue token, as the API server pages it.
func podList(n int, cont string) *corev1.PodList {
	l := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: cont}}
	for i := range n {
		l.Items = append(l.Items, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%04d", i), Namespace: "ns",
			Annotations: map[string]string{"note": strings.Repeat("x", 200)}}})
	}
	return l
}

func TestContinueTokens(t *testing.T) {
	for _, n := range []int{0, 3, 500} {
		for _, cont := range []string{"", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NDJ9"} {
			l := podList(n, cont)

			var pb bytes.Buffer
			if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(l, &pb); err != nil {
				t.Fatal(err)
			}
			got, size, err := drain(bytes.NewReader(pb.Bytes()), "application/vnd.kubernetes.protobuf")
			if err != nil || got != cont || size != int64(pb.Len()) {
				t.Errorf("protobuf, %d items: got %q, %d bytes, %v; want %q, %d bytes", n, got, size, err, cont, pb.Len())
			}

			// Built-in kinds: metadata before items.
			js, err := json.Marshal(l)
			if err != nil {
				t.Fatal(err)
			}
			if got, _, _ := drain(bytes.NewReader(js), "application/json"); got != cont {
				t.Errorf("JSON with metadata first, %d items: got %q, want %q", n, got, cont)
			}

			// Custom resources: keys in alphabetical order, metadata after items.
			var m map[string]any
			if err := json.Unmarshal(js, &m); err != nil {
				t.Fatal(err)
			}
			sorted, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Index(sorted, []byte(`"items"`)) > bytes.LastIndex(sorted, []byte(`"resourceVersion":"42"`)) {
				t.Fatalf("the test list does not put its metadata last")
			}
			if got, _, _ := drain(bytes.NewReader(sorted), "application/json"); got != cont {
				t.Errorf("JSON with metadata last, %d items: got %q, want %q", n, got, cont)
			}
		}
	}
}

func TestPlanMirrorsThePlugin(t *testing.T) {
	a, err := parsePluginArgs(strings.Fields("cluster svc-00000.ns-000.svc.cluster.local -n ns-001 --from pod/client"))
	if err != nil {
		t.Fatal(err)
	}
	reads, err := planFor(a)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, task := range tasksFor(reads, a.istioNamespace) {
		if task.selector != "" {
			paths = append(paths, task.path+"?labelSelector="+task.selector)
			continue
		}
		paths = append(paths, task.path)
	}
	want := []string{
		"/api/v1/namespaces/istio-system", "/api/v1/namespaces/ns-000", "/api/v1/namespaces/ns-001",
		"/api/v1/namespaces/ns-001/services", "/api/v1/namespaces/ns-000/services/svc-00000",
		"/api/v1/namespaces/ns-000/pods", "/api/v1/namespaces/ns-001/pods",
		"/apis/networking.istio.io/v1/serviceentries", "/apis/networking.istio.io/v1/workloadentries",
		"/apis/networking.istio.io/v1/namespaces/istio-system/destinationrules",
		"/apis/networking.istio.io/v1/namespaces/ns-000/destinationrules",
		"/apis/networking.istio.io/v1/namespaces/ns-001/destinationrules",
		"/apis/networking.istio.io/v1/virtualservices",
		"/apis/networking.istio.io/v1/namespaces/istio-system/sidecars",
		"/apis/networking.istio.io/v1/namespaces/ns-000/sidecars",
		"/apis/networking.istio.io/v1/namespaces/ns-001/sidecars",
		"/apis/networking.istio.io/v1alpha3/namespaces/istio-system/envoyfilters",
		"/apis/networking.istio.io/v1alpha3/namespaces/ns-001/envoyfilters",
		"/apis/security.istio.io/v1/namespaces/istio-system/peerauthentications",
		"/apis/security.istio.io/v1/namespaces/ns-000/peerauthentications",
		"/apis/security.istio.io/v1/namespaces/ns-001/peerauthentications",
		"/api/v1/namespaces/istio-system/configmaps/istio",
		"/apis/apps/v1/namespaces/istio-system/deployments?labelSelector=app%3Distiod",
	}
	if strings.Join(paths, "\n") != strings.Join(want, "\n") {
		t.Errorf("cluster reads:\n%s\nwant:\n%s", strings.Join(paths, "\n"), strings.Join(want, "\n"))
	}
}

func TestAuthzPlanGetsThePod(t *testing.T) {
	for _, tc := range []struct {
		args string
		pods string
	}{
		// The pod, and its namespace's waypoint pods (labelled with their Gateway's name).
		{"authz pod/svc-00002-x -n ns-002", "/api/v1/namespaces/ns-002/pods?labelSelector=gateway.networking.k8s.io/gateway-name /api/v1/namespaces/ns-002/pods/svc-00002-x"},
		{"authz -l app=svc-00002 -n ns-002", "/api/v1/namespaces/ns-002/pods"},
		{"authz deployment/svc-00002 -n ns-002", "/api/v1/namespaces/ns-002/pods"},
	} {
		a, err := parsePluginArgs(strings.Fields(tc.args))
		if err != nil {
			t.Fatal(err)
		}
		reads, err := planFor(a)
		if err != nil {
			t.Fatal(err)
		}
		var pods []string
		for _, task := range tasksFor(reads, a.istioNamespace) {
			if task.kind.kind == "Pod" {
				path := task.path
				if task.selector != "" {
					path += "?labelSelector=" + task.selector
				}
				pods = append(pods, path)
			}
		}
		if strings.Join(pods, " ") != tc.pods {
			t.Errorf("%s: pod reads %v, want [%s]", tc.args, pods, tc.pods)
		}
	}
}

func TestCheckPlanReads(t *testing.T) {
	for _, tc := range []struct {
		args string
		want []string
	}{
		{"check -A", []string{
			"/api/v1/namespaces",
			"/api/v1/services",
			"/api/v1/pods",
			"/apis/networking.istio.io/v1/serviceentries",
			"/apis/networking.istio.io/v1/workloadentries",
			"/apis/networking.istio.io/v1/destinationrules",
			"/apis/networking.istio.io/v1/virtualservices",
			"/apis/networking.istio.io/v1/sidecars",
			"/apis/networking.istio.io/v1alpha3/envoyfilters",
			"/apis/security.istio.io/v1/peerauthentications",
			"/apis/security.istio.io/v1/requestauthentications",
			"/apis/security.istio.io/v1/authorizationpolicies",
			"/apis/gateway.networking.k8s.io/v1/gateways",
			"/api/v1/namespaces/istio-system/configmaps/istio",
			"/apis/apps/v1/namespaces/istio-system/deployments?labelSelector=app%3Distiod",
		}},
		{"check -n ns-003 --fail-on never", []string{
			"/api/v1/namespaces",
			"/api/v1/services",
			"/api/v1/pods",
			"/apis/networking.istio.io/v1/serviceentries",
			"/apis/networking.istio.io/v1/workloadentries",
			"/apis/networking.istio.io/v1/destinationrules",
			"/apis/networking.istio.io/v1/virtualservices",
			"/apis/networking.istio.io/v1/namespaces/istio-system/sidecars",
			"/apis/networking.istio.io/v1/namespaces/ns-003/sidecars",
			"/apis/networking.istio.io/v1alpha3/namespaces/istio-system/envoyfilters",
			"/apis/networking.istio.io/v1alpha3/namespaces/ns-003/envoyfilters",
			"/apis/security.istio.io/v1/peerauthentications",
			"/apis/security.istio.io/v1/namespaces/istio-system/requestauthentications",
			"/apis/security.istio.io/v1/namespaces/ns-003/requestauthentications",
			"/apis/security.istio.io/v1/namespaces/istio-system/authorizationpolicies",
			"/apis/security.istio.io/v1/namespaces/ns-003/authorizationpolicies",
			"/apis/gateway.networking.k8s.io/v1/gateways",
			"/api/v1/namespaces/istio-system/configmaps/istio",
			"/apis/apps/v1/namespaces/istio-system/deployments?labelSelector=app%3Distiod",
		}},
	} {
		a, err := parsePluginArgs(strings.Fields(tc.args))
		if err != nil {
			t.Fatal(err)
		}
		reads, err := planFor(a)
		if err != nil {
			t.Fatal(err)
		}
		var paths []string
		for _, task := range tasksFor(reads, a.istioNamespace) {
			paths = append(paths, task.path)
		}
		if strings.Join(paths, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s reads:\n%s\nwant:\n%s", tc.args, strings.Join(paths, "\n"), strings.Join(tc.want, "\n"))
		}
	}
}

// The waypoint's reads are pkg/plan Waypoint's: every Namespace (their labels bind), the
// Gateways, Services, pods, ServiceEntries, WorkloadEntries and AuthorizationPolicies (those of
// the root namespace too) of the waypoint's namespace, and in every namespace the Services,
// pods, ServiceEntries and WorkloadEntries labelled istio.io/use-waypoint.
func TestWaypointPlanReads(t *testing.T) {
	a, err := parsePluginArgs(strings.Fields("authz waypoint/waypoint -n ns-002 -o json"))
	if err != nil {
		t.Fatal(err)
	}
	reads, err := planFor(a)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, task := range tasksFor(reads, a.istioNamespace) {
		if task.selector != "" {
			paths = append(paths, task.path+"?labelSelector="+task.selector)
			continue
		}
		paths = append(paths, task.path)
	}
	want := []string{
		"/api/v1/namespaces",
		"/api/v1/namespaces/ns-002/services",
		"/api/v1/services?labelSelector=istio.io/use-waypoint",
		"/api/v1/namespaces/ns-002/pods",
		"/api/v1/pods?labelSelector=istio.io/use-waypoint",
		"/apis/networking.istio.io/v1/namespaces/ns-002/serviceentries",
		"/apis/networking.istio.io/v1/serviceentries?labelSelector=istio.io/use-waypoint",
		"/apis/networking.istio.io/v1/namespaces/ns-002/workloadentries",
		"/apis/networking.istio.io/v1/workloadentries?labelSelector=istio.io/use-waypoint",
		"/apis/security.istio.io/v1/namespaces/istio-system/authorizationpolicies",
		"/apis/security.istio.io/v1/namespaces/ns-002/authorizationpolicies",
		"/apis/gateway.networking.k8s.io/v1/namespaces/ns-002/gateways",
		"/api/v1/namespaces/istio-system/configmaps/istio",
		"/apis/apps/v1/namespaces/istio-system/deployments?labelSelector=app%3Distiod",
	}
	if strings.Join(paths, "\n") != strings.Join(want, "\n") {
		t.Errorf("waypoint reads:\n%s\nwant:\n%s", strings.Join(paths, "\n"), strings.Join(want, "\n"))
	}
}

// TestBareKindsCoverThePlans checks that every kind the plans read has a REST resource here:
// a kind missing from bareKinds would silently drop its reads from the comparison.
func TestBareKindsCoverThePlans(t *testing.T) {
	for _, args := range []string{
		"cluster svc-00000.ns-000.svc.cluster.local -n ns-001 --from pod/p",
		"authz pod/p -n ns-002",
		"authz waypoint/waypoint -n ns-002",
		"check -A",
		"check -n ns-003",
	} {
		a, err := parsePluginArgs(strings.Fields(args))
		if err != nil {
			t.Fatal(err)
		}
		reads, err := planFor(a)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reads {
			if !slices.ContainsFunc(bareKinds, func(k bareKind) bool { return k.kind == r.Kind }) {
				t.Errorf("%s: the plan reads %s, which the bare reads do not know", args, r.Kind)
			}
		}
	}
}
