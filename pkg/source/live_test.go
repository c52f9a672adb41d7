package source

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/durationpb"
	networkingapi "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	istiofake "istio.io/client-go/pkg/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
)

func objMeta(ns, name, rv string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}
}

func liveDR(ns, name, host string, connectTimeout time.Duration) *networkingv1.DestinationRule {
	dr := &networkingv1.DestinationRule{ObjectMeta: objMeta(ns, name, "7")}
	dr.Spec.Host = host
	if connectTimeout > 0 {
		dr.Spec.TrafficPolicy = &networkingapi.TrafficPolicy{ConnectionPool: &networkingapi.ConnectionPoolSettings{
			Tcp: &networkingapi.ConnectionPoolSettings_TCPSettings{ConnectTimeout: durationpb.New(connectTimeout)},
		}}
	}
	return dr
}

func meshConfigMap(mesh string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: objMeta("istio-system", "istio", "3"), Data: map[string]string{"mesh": mesh}}
}

// fakeCluster is a cluster made of client-go and Istio fake clientsets.
type fakeCluster struct {
	kube  *kubefake.Clientset
	istio *istiofake.Clientset
}

func newFakeCluster(kubeObjs, istioObjs []runtime.Object) *fakeCluster {
	return &fakeCluster{kube: kubefake.NewClientset(kubeObjs...), istio: istiofake.NewSimpleClientset(istioObjs...)}
}

func (f *fakeCluster) clients() *clients {
	return &clients{kube: f.kube, istio: f.istio, host: "127.0.0.1:6443", user: "kubeconfig-user"}
}

func (f *fakeCluster) actions() []k8stesting.Action {
	return append(f.kube.Actions(), f.istio.Actions()...)
}

// deny makes every verb on resource fail with err.
func (f *fakeCluster) deny(verb, resource string, err error) {
	f.kube.PrependReactor(verb, resource, func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, err })
	f.istio.PrependReactor(verb, resource, func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, err })
}

func forbidden(group, resource, ns, user string) error {
	where := "at the cluster scope"
	if ns != "" {
		where = fmt.Sprintf("in the namespace %q", ns)
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: group, Resource: resource}, "",
		fmt.Errorf("User %q cannot list resource %q in API group %q %s", user, resource, group, where))
}

func notInstalled(group, resource string) error {
	return apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: resource}, "")
}

var allKindsEverywhere = func() []Read {
	var out []Read
	for _, k := range Kinds() {
		out = append(out, Read{Kind: k})
	}
	return out
}()

func TestLiveLoadReadsWhatIsAsked(t *testing.T) {
	f := newFakeCluster(
		[]runtime.Object{
			&corev1.Namespace{ObjectMeta: objMeta("", "bookinfo", "1")},
			&corev1.Namespace{ObjectMeta: objMeta("", "other", "1")},
			&corev1.Service{ObjectMeta: objMeta("bookinfo", "reviews", "11")},
			&corev1.Service{ObjectMeta: objMeta("other", "x", "12")},
			&corev1.Pod{ObjectMeta: objMeta("bookinfo", "p", "13"), Status: corev1.PodStatus{PodIP: "10.0.0.1"}},
			&corev1.Pod{ObjectMeta: objMeta("other", "q", "14")},
			&corev1.Secret{ObjectMeta: objMeta("bookinfo", "s", "15")},
			meshConfigMap("connectTimeout: 3s\n"),
		},
		[]runtime.Object{
			liveDR("bookinfo", "reviews", "reviews", 0),
			liveDR("other", "reviews", "reviews", 0),
		},
	)
	reads := []Read{
		{Kind: KindNamespace, Namespaces: []string{"bookinfo", "missing"}},
		{Kind: KindService},
		{Kind: KindPod, Namespaces: []string{"bookinfo"}},
		{Kind: KindDestinationRule, Namespaces: []string{"bookinfo"}},
	}
	snap, err := load(t.Context(), Spec{Reads: reads}, f.clients())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"DestinationRule bookinfo/reviews", "Namespace bookinfo", "Pod bookinfo/p", "Service bookinfo/reviews", "Service other/x"}
	if diff := cmp.Diff(want, keys(snap)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]issue(nil), issues(snap)); diff != "" {
		t.Errorf("issues (-want +got):\n%s", diff)
	}
	if src := snap.Sources[key("Service", "other", "x")]; !src.Live || src.ResourceVersion != "12" || src.Position != nil || src.Overlay {
		t.Errorf("source = %+v, want live at resourceVersion 12", src)
	}
	if snap.Fields != nil {
		t.Error("a live-only snapshot has no field locator")
	}
	if dr := snap.DestinationRules[0]; dr.Kind != "DestinationRule" || dr.APIVersion != "networking.istio.io/v1" {
		t.Errorf("type meta = %q %q", dr.APIVersion, dr.Kind)
	}
	if got := snap.MeshConfigSource.String(); got != "ConfigMap istio-system/istio" {
		t.Errorf("mesh source = %s", got)
	}
	if snap.MeshConfigPosition != nil || snap.MeshConfig.GetConnectTimeout().AsDuration() != 3*time.Second || !snap.MeshConfigUserFields["connectTimeout"] {
		t.Errorf("mesh config = %v at %v, user fields %v", snap.MeshConfig.GetConnectTimeout(), snap.MeshConfigPosition, snap.MeshConfigUserFields)
	}

	// Only get and list, lists paged, never Secrets, and only the mesh ConfigMap by name.
	var calls []string
	for _, a := range f.actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" {
			t.Errorf("verb %s on %s", a.GetVerb(), a.GetResource().Resource)
		}
		switch a := a.(type) {
		case k8stesting.ListAction:
			// Istio's generated fakes do not record list options; the HTTP test checks those.
			if lim := a.(k8stesting.ListActionImpl).ListOptions.Limit; lim != pageSize && a.GetResource().Group == "" {
				t.Errorf("list %s with limit %d, want %d", a.GetResource().Resource, lim, pageSize)
			}
			calls = append(calls, fmt.Sprintf("list %s %s", a.GetResource().Resource, a.GetNamespace()))
		case k8stesting.GetAction:
			calls = append(calls, fmt.Sprintf("get %s %s/%s", a.GetResource().Resource, a.GetNamespace(), a.GetName()))
		}
	}
	wantCalls := []string{
		"get configmaps istio-system/istio",
		"get namespaces /bookinfo",
		"get namespaces /missing",
		"list destinationrules bookinfo",
		"list pods bookinfo",
		"list services ",
	}
	sort.Strings(calls)
	if diff := cmp.Diff(wantCalls, calls); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestLiveListsArePaged(t *testing.T) {
	f := newFakeCluster(nil, nil)
	var continues []string
	f.kube.PrependReactor("list", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		opts := a.(k8stesting.ListActionImpl).ListOptions
		continues = append(continues, opts.Continue)
		switch opts.Continue {
		case "":
			return true, &corev1.ServiceList{ListMeta: metav1.ListMeta{Continue: "page2"}, Items: []corev1.Service{{ObjectMeta: objMeta("a", "one", "1")}}}, nil
		case "page2":
			return true, &corev1.ServiceList{Items: []corev1.Service{{ObjectMeta: objMeta("b", "two", "2")}}}, nil
		}
		return true, nil, fmt.Errorf("unexpected continue %q", opts.Continue)
	})
	snap, err := load(t.Context(), Spec{Reads: []Read{{Kind: KindService}}}, f.clients())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Service a/one", "Service b/two"}, keys(snap)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"", "page2"}, continues); diff != "" {
		t.Errorf("continue tokens (-want +got):\n%s", diff)
	}
}

func TestDeniedReadsMakeKindsIncomplete(t *testing.T) {
	tests := []struct {
		name           string
		reads          []Read
		deny           func(f *fakeCluster)
		wantObjects    []string
		wantIncomplete map[string]string
		wantAbsent     map[string]string
		wantIssues     []issue
	}{
		{
			name:  "forbidden in one namespace",
			reads: []Read{{Kind: KindPeerAuthentication, Namespaces: []string{"bookinfo"}}, {Kind: KindAuthorizationPolicy}},
			deny: func(f *fakeCluster) {
				f.deny("list", "peerauthentications", forbidden("security.istio.io", "peerauthentications", "bookinfo", "alice"))
			},
			wantObjects:    []string{"AuthorizationPolicy bookinfo/ap"},
			wantIncomplete: map[string]string{"PeerAuthentication": "forbidden: alice cannot list peerauthentications.security.istio.io in namespace bookinfo"},
			wantIssues: []issue{{
				Severity: "warning", Message: "forbidden: alice cannot list peerauthentications.security.istio.io in namespace bookinfo",
				Incomplete: []string{"PeerAuthentication"},
			}},
		},
		{
			name:  "forbidden in all namespaces, user from the kubeconfig",
			reads: []Read{{Kind: KindPod}, {Kind: KindAuthorizationPolicy}},
			deny: func(f *fakeCluster) {
				f.deny("list", "pods", apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC: access denied")))
			},
			wantObjects:    []string{"AuthorizationPolicy bookinfo/ap"},
			wantIncomplete: map[string]string{"Pod": "forbidden: kubeconfig-user cannot list pods in all namespaces"},
			wantIssues: []issue{{
				Severity: "warning", Message: "forbidden: kubeconfig-user cannot list pods in all namespaces", Incomplete: []string{"Pod"},
			}},
		},
		{
			name:  "a get by name forbidden",
			reads: []Read{{Kind: KindPod, Namespaces: []string{"bookinfo"}, Names: []string{"p"}}, {Kind: KindAuthorizationPolicy}},
			deny: func(f *fakeCluster) {
				f.deny("get", "pods", apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p",
					errors.New(`User "carol" cannot get resource "pods" in API group "" in the namespace "bookinfo"`)))
			},
			wantObjects:    []string{"AuthorizationPolicy bookinfo/ap"},
			wantIncomplete: map[string]string{"Pod": "forbidden: carol cannot get pods/p in namespace bookinfo"},
			wantIssues: []issue{{
				Severity: "warning", Message: "forbidden: carol cannot get pods/p in namespace bookinfo", Incomplete: []string{"Pod"},
			}},
		},
		{
			name:  "some Istio CRDs missing",
			reads: []Read{{Kind: KindEnvoyFilter}, {Kind: KindSidecar}, {Kind: KindAuthorizationPolicy}},
			deny: func(f *fakeCluster) {
				f.deny("list", "envoyfilters", notInstalled("networking.istio.io", "envoyfilters"))
				f.deny("list", "sidecars", notInstalled("networking.istio.io", "sidecars"))
			},
			wantObjects: []string{"AuthorizationPolicy bookinfo/ap"},
			wantIncomplete: map[string]string{
				"EnvoyFilter": "the Istio CRDs are not installed in this cluster: EnvoyFilter, Sidecar could not be read",
				"Sidecar":     "the Istio CRDs are not installed in this cluster: EnvoyFilter, Sidecar could not be read",
			},
			wantIssues: []issue{{
				Severity: "warning", Message: "the Istio CRDs are not installed in this cluster: EnvoyFilter, Sidecar could not be read",
				Incomplete: []string{"EnvoyFilter", "Sidecar"},
			}},
		},
		{
			name:  "mesh ConfigMap forbidden: defaults apply",
			reads: []Read{{Kind: KindAuthorizationPolicy}},
			deny: func(f *fakeCluster) {
				f.deny("get", "configmaps", apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "istio",
					errors.New(`User "bob" cannot get resource "configmaps" in API group "" in the namespace "istio-system"`)))
			},
			wantObjects:    []string{"AuthorizationPolicy bookinfo/ap"},
			wantIncomplete: map[string]string{"MeshConfig": "forbidden: bob cannot get configmaps/istio in namespace istio-system; istiod's default MeshConfig is assumed"},
			wantIssues: []issue{{
				Severity: "warning", Resource: "ConfigMap istio-system/istio",
				Message:    "forbidden: bob cannot get configmaps/istio in namespace istio-system; istiod's default MeshConfig is assumed",
				Incomplete: []string{"MeshConfig"},
			}},
		},
		{
			name:  "another server error",
			reads: []Read{{Kind: KindAuthorizationPolicy}, {Kind: KindService, Namespaces: []string{"bookinfo"}}},
			deny: func(f *fakeCluster) {
				f.deny("list", "services", apierrors.NewInternalError(errors.New("etcd is sad")))
			},
			wantObjects: []string{"AuthorizationPolicy bookinfo/ap"},
			wantIncomplete: map[string]string{
				"Service": "server error (500): cannot list services in namespace bookinfo: Internal error occurred: etcd is sad",
			},
			wantIssues: []issue{{
				Severity: "warning", Message: "server error (500): cannot list services in namespace bookinfo: Internal error occurred: etcd is sad",
				Incomplete: []string{"Service"},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeCluster(nil, []runtime.Object{
				&securityv1.AuthorizationPolicy{ObjectMeta: objMeta("bookinfo", "ap", "5")},
				&securityv1.PeerAuthentication{ObjectMeta: objMeta("bookinfo", "pa", "6")},
			})
			tt.deny(f)
			snap, err := load(t.Context(), Spec{Reads: tt.reads}, f.clients())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantObjects, keys(snap)); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantIncomplete, snap.Incomplete); diff != "" {
				t.Errorf("incomplete (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantIssues, issues(snap)); diff != "" {
				t.Errorf("issues (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantAbsent, snap.Absent); diff != "" {
				t.Errorf("absent (-want +got):\n%s", diff)
			}
			if snap.MeshConfig.GetConnectTimeout().AsDuration() != 10*time.Second {
				t.Errorf("mesh config is not the default")
			}
		})
	}
}

func TestNoIstioCRDsIsAnError(t *testing.T) {
	f := newFakeCluster(nil, nil)
	for _, ki := range kindTable {
		if ki.istio {
			f.deny("list", ki.resource, notInstalled(ki.group, ki.resource))
		}
	}
	_, err := load(t.Context(), Spec{Reads: allKindsEverywhere}, f.clients())
	want := "the Istio CRDs are not installed in this cluster (install Istio, or pass -f FILE to explain configuration files)"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestUnknownReadKind(t *testing.T) {
	_, err := load(t.Context(), Spec{Reads: []Read{{Kind: "Secret"}}}, newFakeCluster(nil, nil).clients())
	if err == nil || !strings.HasPrefix(err.Error(), `cannot read kind "Secret" (known kinds: Namespace, Service, Pod, Deployment,`) {
		t.Errorf("error = %v", err)
	}
}

func TestOverlayLaysFilesOverTheCluster(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	write(t, "overlay.yaml", `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata:
  name: reviews
  namespace: bookinfo
spec:
  host: reviews
  trafficPolicy:
    connectionPool:
      tcp:
        connectTimeout: 2s
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata:
  name: details
  namespace: bookinfo
spec:
  host: details
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: istio
  namespace: istio-system
data:
  mesh: "connectTimeout: 4s"
`)
	f := newFakeCluster(
		[]runtime.Object{meshConfigMap("connectTimeout: 3s")},
		[]runtime.Object{
			liveDR("bookinfo", "reviews", "reviews", time.Second),
			liveDR("bookinfo", "ratings", "ratings", 0),
		},
	)
	snap, err := load(t.Context(), Spec{Files: []string{"overlay.yaml"}, Overlay: true, Reads: []Read{{Kind: KindDestinationRule}}}, f.clients())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"DestinationRule bookinfo/details", "DestinationRule bookinfo/ratings", "DestinationRule bookinfo/reviews"}, keys(snap)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	for _, dr := range snap.DestinationRules {
		if dr.Name == "reviews" {
			if got := dr.Spec.GetTrafficPolicy().GetConnectionPool().GetTcp().GetConnectTimeout().AsDuration(); got != 2*time.Second {
				t.Errorf("reviews connectTimeout = %v, want the file's 2s", got)
			}
		}
	}
	sources := map[string]string{}
	for k, s := range snap.Sources {
		pos := ""
		if s.Position != nil {
			pos = s.Position.String()
		}
		sources[k.Name] = fmt.Sprintf("live=%v overlay=%v rv=%s pos=%s", s.Live, s.Overlay, s.ResourceVersion, pos)
	}
	wantSources := map[string]string{
		"reviews": "live=false overlay=true rv= pos=overlay.yaml:1:1",
		"details": "live=false overlay=true rv= pos=overlay.yaml:13:1",
		"ratings": "live=true overlay=false rv=7 pos=",
	}
	if diff := cmp.Diff(wantSources, sources); diff != "" {
		t.Errorf("sources (-want +got):\n%s", diff)
	}
	if got := snap.FieldPosition(key("DestinationRule", "bookinfo", "reviews"), "spec.trafficPolicy.connectionPool.tcp.connectTimeout"); got == nil || got.String() != "overlay.yaml:11:9" {
		t.Errorf("overlay field position = %v, want overlay.yaml:11:9", got)
	}
	if got := snap.MeshConfig.GetConnectTimeout().AsDuration(); got != 4*time.Second || snap.MeshConfigPosition.String() != "overlay.yaml:27:3" {
		t.Errorf("mesh connectTimeout = %v at %v, want the file's 4s", got, snap.MeshConfigPosition)
	}
}

// kubeconfigFlags returns cli-runtime ConfigFlags for a kubeconfig that points at server.
func kubeconfigFlags(t *testing.T, server, timeout string) *genericclioptions.ConfigFlags {
	t.Helper()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	write(t, kc, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: %q}
users:
- name: u
  user: {token: not-a-real-token}
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
`, server))
	f := genericclioptions.NewConfigFlags(false)
	f.KubeConfig = &kc
	if timeout != "" {
		f.Timeout = &timeout
	}
	return f
}

func TestClusterErrorsSpeakKubectl(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()

	unauthorized := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`)
	}))
	defer unauthorized.Close()

	slow := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()

	tests := []struct {
		name    string
		flags   *genericclioptions.ConfigFlags
		want    string
		timeout bool
	}{
		{"connection refused", kubeconfigFlags(t, "https://"+closed, ""), "the connection to the server " + closed + " was refused - did you specify the right host or port?", false},
		{"unauthorized", kubeconfigFlags(t, unauthorized.URL, ""), "you must be logged in to the server (Unauthorized)", false},
		{"request timeout", kubeconfigFlags(t, slow.URL, "500ms"), "unable to connect to the server: ", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := Load(t.Context(), Spec{Getter: tt.flags, Reads: allKindsEverywhere})
			if err == nil {
				t.Fatal("want an error")
			}
			// A server that never answers ends the load after one request timeout, not after
			// every read has waited out its own (four at a time).
			if elapsed := time.Since(start); tt.timeout && elapsed > 1500*time.Millisecond {
				t.Errorf("the load took %v with a 500ms request timeout", elapsed)
			}
			var ce *ClusterError
			if !errors.As(err, &ce) {
				t.Errorf("error %T is not a *ClusterError", err)
			}
			t.Logf("error: %v", err)
			if tt.timeout {
				if !strings.HasPrefix(err.Error(), tt.want) || !strings.Contains(err.Error(), "Timeout") {
					t.Errorf("error = %q, want %q... naming the timeout", err, tt.want)
				}
				return
			}
			if err.Error() != tt.want {
				t.Errorf("error = %q, want %q", err, tt.want)
			}
		})
	}
}

func TestFilesModeNeverContactsTheCluster(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	snap, err := Load(t.Context(), Spec{Files: []string{"testdata/files"}, Getter: kubeconfigFlags(t, srv.URL, ""), Reads: allKindsEverywhere})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Sources) == 0 {
		t.Fatal("nothing loaded")
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the cluster in files mode", n)
	}
}

func TestLiveModeAgainstAnHTTPServer(t *testing.T) {
	// A minimal API server: core lists are empty, the networking group has one DestinationRule,
	// the security group is not installed, and the mesh ConfigMap does not exist.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method != http.MethodGet:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case strings.HasPrefix(r.URL.Path, "/apis/security.istio.io/"), strings.Contains(r.URL.Path, "/configmaps/"):
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","code":404}`)
		case r.URL.Path == "/apis/networking.istio.io/v1/destinationrules":
			if r.URL.Query().Get("limit") != "500" {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			fmt.Fprint(w, `{"kind":"DestinationRuleList","apiVersion":"networking.istio.io/v1","metadata":{"resourceVersion":"9"},"items":[
				{"apiVersion":"networking.istio.io/v1","kind":"DestinationRule","metadata":{"name":"reviews","namespace":"bookinfo","resourceVersion":"8"},
				 "spec":{"host":"reviews","trafficPolicy":{"connectionPool":{"tcp":{"connectTimeout":"1m"}}}}}]}`)
		default:
			fmt.Fprint(w, `{"kind":"List","apiVersion":"v1","metadata":{},"items":[]}`)
		}
	}))
	defer srv.Close()
	reads := []Read{{Kind: KindService}, {Kind: KindDestinationRule}, {Kind: KindPeerAuthentication}}
	snap, err := Load(t.Context(), Spec{Getter: kubeconfigFlags(t, srv.URL, ""), Reads: reads})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.DestinationRules) != 1 || snap.DestinationRules[0].Spec.GetTrafficPolicy().GetConnectionPool().GetTcp().GetConnectTimeout().AsDuration() != time.Minute {
		t.Fatalf("destination rules = %v", snap.DestinationRules)
	}
	if src := snap.Sources[key("DestinationRule", "bookinfo", "reviews")]; src != (model.Source{Live: true, ResourceVersion: "8"}) {
		t.Errorf("source = %+v", src)
	}
	want := []issue{{
		Severity: "warning", Message: "the Istio CRDs are not installed in this cluster: PeerAuthentication could not be read",
		Incomplete: []string{"PeerAuthentication"},
	}}
	if diff := cmp.Diff(want, issues(snap)); diff != "" {
		t.Errorf("issues (-want +got):\n%s", diff)
	}
	if snap.MeshConfigSource != nil {
		t.Errorf("mesh source = %v, want none (the ConfigMap does not exist)", snap.MeshConfigSource)
	}
}

func TestLiveGetsNamedPodsAndServices(t *testing.T) {
	f := newFakeCluster([]runtime.Object{
		&corev1.Service{ObjectMeta: objMeta("a", "s", "5")},
		&corev1.Service{ObjectMeta: objMeta("a", "t", "6")},
		&corev1.Pod{ObjectMeta: objMeta("a", "p", "1")},
		&corev1.Pod{ObjectMeta: objMeta("a", "other", "2")},
		&corev1.Pod{ObjectMeta: objMeta("b", "p", "3")},
		&corev1.Pod{ObjectMeta: objMeta("b", "q", "4")},
	}, nil)
	reads := []Read{
		{Kind: KindPod, Namespaces: []string{"a", "b"}, Names: []string{"p", "gone"}},
		{Kind: KindPod, Namespaces: []string{"b"}},
		{Kind: KindService, Namespaces: []string{"a"}, Names: []string{"s"}},
	}
	snap, err := load(t.Context(), Spec{Reads: reads}, f.clients())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Pod a/p", "Pod b/p", "Pod b/q", "Service a/s"}, keys(snap)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if len(snap.Issues) != 0 || len(snap.Incomplete) != 0 {
		t.Errorf("a pod that is not there is not a problem: issues %+v, incomplete %v", snap.Issues, snap.Incomplete)
	}
	var calls []string
	for _, a := range f.actions() {
		switch a := a.(type) {
		case k8stesting.ListAction:
			calls = append(calls, fmt.Sprintf("list %s %s", a.GetResource().Resource, a.GetNamespace()))
		case k8stesting.GetAction:
			calls = append(calls, fmt.Sprintf("get %s %s/%s", a.GetResource().Resource, a.GetNamespace(), a.GetName()))
		}
	}
	sort.Strings(calls)
	want := []string{"get configmaps istio-system/istio", "get pods a/gone", "get pods a/p", "get services a/s", "list pods b"}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}

	_, err = load(t.Context(), Spec{Reads: []Read{{Kind: KindDestinationRule, Namespaces: []string{"a"}, Names: []string{"x"}}}}, f.clients())
	if err == nil || err.Error() != "cannot read DestinationRule by name in a namespace" {
		t.Errorf("error = %v, want that DestinationRules cannot be read by name", err)
	}
}

// TestPanicWhileReadingIsAnIssueNamingTheKind: a read that panics on its goroutine is reported
// as that kind not read, and the other kinds are still loaded.
func TestPanicWhileReadingIsAnIssueNamingTheKind(t *testing.T) {
	f := newFakeCluster(
		[]runtime.Object{&corev1.Service{ObjectMeta: objMeta("bookinfo", "reviews", "11")}},
		[]runtime.Object{liveDR("bookinfo", "reviews", "reviews", 0)},
	)
	testHookRun = func(t *readTask) {
		if t.kind != nil && t.kind.kind == KindDestinationRule {
			panic("boom")
		}
	}
	defer func() { testHookRun = nil }()
	snap, err := load(t.Context(), Spec{Reads: []Read{{Kind: KindService}, {Kind: KindDestinationRule, Namespaces: []string{"bookinfo"}}}}, f.clients())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Service bookinfo/reviews"}, keys(snap)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if _, ok := snap.Incomplete["MeshConfig"]; ok {
		t.Errorf("the MeshConfig read failed too: %v", issues(snap))
	}
	if why := snap.Incomplete[KindDestinationRule]; !strings.Contains(why, "internal error: boom") {
		t.Errorf("Incomplete[DestinationRule] = %q, want the panic named; issues: %v", why, issues(snap))
	}
}
