package source

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

// richVirtualService has routes, mirrors, a delegate and fields the engines do not read.
const richVirtualService = `{
  "hosts": ["reviews", "reviews.other.svc.cluster.local"],
  "gateways": ["mesh", "istio-system/gw"],
  "exportTo": [".", "other"],
  "http": [
    {
      "name": "canary",
      "match": [{"headers": {"x-canary": {"exact": "1"}}, "sourceNamespace": "bookinfo"}, {"uri": {"prefix": "/"}}],
      "route": [
        {"destination": {"host": "reviews", "subset": "v2", "port": {"number": 9080}}, "weight": 90, "headers": {"request": {"set": {"a": "b"}}}},
        {"destination": {"host": "ratings.bookinfo.svc.cluster.local"}, "weight": 10}
      ],
      "mirror": {"host": "mirror", "port": {"number": 80}},
      "mirrors": [{"destination": {"host": "m2", "subset": "s"}, "percentage": {"value": 5}}],
      "retries": {"attempts": 3, "perTryTimeout": "2s", "retryOn": "5xx"},
      "timeout": "3s",
      "fault": {"delay": {"fixedDelay": "1s", "percentage": {"value": 1}}},
      "corsPolicy": {"allowOrigins": [{"exact": "x"}]},
      "rewrite": {"uri": "/v2"}
    },
    {"delegate": {"name": "child", "namespace": "other"}},
    {"route": [{"destination": {"host": "plain"}}]}
  ],
  "tcp": [{"match": [{"port": 5432}], "route": [{"destination": {"host": "db", "port": {"number": 5432}}, "weight": 100}]}],
  "tls": [{"match": [{"sniHosts": ["a.example.com"], "port": 443}], "route": [{"destination": {"host": "a.example.com", "subset": "x"}}]}]
}`

func listedObject(apiVersion, kind, ns, name, spec string) string {
	return fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":%q,"namespace":%q,"resourceVersion":"7","uid":"u-1",`+
		`"creationTimestamp":"2024-01-02T03:04:05Z","labels":{"app":"x"},"generation":2,`+
		`"managedFields":[{"manager":"kubectl","operation":"Update","apiVersion":%q,"fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{}}}}]},`+
		`"spec":%s,"status":{"conditions":[{"type":"Reconciled"}]}}`, apiVersion, kind, name, ns, apiVersion, spec)
}

func TestDecodeLiveMatchesTheFileDecoder(t *testing.T) {
	specs := map[string]string{
		KindServiceEntry:        `{"hosts":["a.example.com"],"ports":[{"number":443,"name":"https","protocol":"TLS"}],"resolution":"DNS","location":"MESH_EXTERNAL"}`,
		KindWorkloadEntry:       `{"address":"10.0.0.9","labels":{"app":"vm"},"ports":{"http":8080}}`,
		KindDestinationRule:     `{"host":"reviews","trafficPolicy":{"connectionPool":{"tcp":{"connectTimeout":"3s","maxConnections":10}},"tls":{"mode":"ISTIO_MUTUAL"}},"subsets":[{"name":"v1","labels":{"version":"v1"}}],"exportTo":["."]}`,
		KindSidecar:             `{"egress":[{"hosts":["./*","istio-system/*"]}],"outboundTrafficPolicy":{"mode":"REGISTRY_ONLY"}}`,
		KindEnvoyFilter:         `{"workloadSelector":{"labels":{"app":"x"}},"configPatches":[{"applyTo":"CLUSTER","match":{"context":"SIDECAR_OUTBOUND"},"patch":{"operation":"MERGE","value":{"connect_timeout":"1s"}}}]}`,
		KindPeerAuthentication:  `{"selector":{"matchLabels":{"app":"x"}},"mtls":{"mode":"STRICT"},"portLevelMtls":{"8080":{"mode":"PERMISSIVE"}}}`,
		KindAuthorizationPolicy: `{"action":"DENY","rules":[{"from":[{"source":{"principals":["cluster.local/ns/a/sa/b"]}}],"to":[{"operation":{"methods":["GET"],"paths":["/x*"]}}],"when":[{"key":"request.headers[x]","values":["1"]}]}]}`,
	}
	for kind, spec := range specs {
		t.Run(kind, func(t *testing.T) {
			ki := kindByName(kind)
			js := listedObject(ki.apiVersion(), kind, "bookinfo", "x", spec)
			got, err := decodeLive(ki, []byte(js))
			if err != nil {
				t.Fatal(err)
			}
			want, problems := ki.decode([]byte(strings.Replace(js, `,"status":{"conditions":[{"type":"Reconciled"}]}`, "", 1)))
			if len(problems) > 0 {
				t.Fatal(problems)
			}
			if len(got.GetManagedFields()) != 0 {
				t.Error("managedFields kept")
			}
			want.SetManagedFields(nil)
			wantJS, err := json.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			gotJS, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if string(gotJS) != string(wantJS) {
				t.Errorf("decodeLive:\n got %s\nwant %s", gotJS, wantJS)
			}
		})
	}
}

func TestDecodeLiveVirtualService(t *testing.T) {
	ki := kindByName(KindVirtualService)
	got, err := decodeLive(ki, []byte(listedObject("networking.istio.io/v1", KindVirtualService, "bookinfo", "r", richVirtualService)))
	if err != nil {
		t.Fatal(err)
	}
	vs := got.(*networkingv1.VirtualService)
	if vs.Name != "r" || vs.Namespace != "bookinfo" || vs.ResourceVersion != "7" || vs.CreationTimestamp.IsZero() || vs.ManagedFields != nil {
		t.Errorf("metadata = %+v", vs.ObjectMeta)
	}
	// Decoded in full, as from a file: the weights and the retries too.
	full := &networking.VirtualService{}
	if err := full.UnmarshalJSON([]byte(richVirtualService)); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&vs.Spec, full) || vs.Spec.Http[0].Route[0].Weight != 90 || vs.Spec.Http[0].Retries.GetAttempts() != 3 {
		t.Errorf("spec = %v, want %v", &vs.Spec, full)
	}
}

func TestDecodeLiveRejectsABadSpec(t *testing.T) {
	ki := kindByName(KindDestinationRule)
	_, err := decodeLive(ki, []byte(listedObject(ki.apiVersion(), KindDestinationRule, "bookinfo", "x", `{"trafficPolicy":{"connectionPool":{"tcp":{"connectTimeout":"soon"}}}}`)))
	if err == nil || !strings.Contains(err.Error(), "DestinationRule bookinfo/x") {
		t.Errorf("err = %v, want a decode error naming the object", err)
	}
}

// fakeIstioServer serves DestinationRule lists of n objects per namespace in pages, as the API
// server does, and records the requests.
type fakeIstioServer struct {
	mu       sync.Mutex
	requests []string
	// status, when set, is the answer to every request.
	status int
	n      int
	// expire makes the first request with this continue token fail with 410 Gone.
	expire string
}

func (s *fakeIstioServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Accept"))
	expire := s.expire != "" && r.URL.Query().Get("continue") == s.expire
	if expire {
		s.expire = ""
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	status := func(code int, reason, msg string) {
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":%q,"reason":%q,"code":%d}`, msg, reason, code)
	}
	switch {
	case s.status == http.StatusForbidden:
		status(s.status, "Forbidden", `destinationrules.networking.istio.io is forbidden: User "alice" cannot list resource "destinationrules" in API group "networking.istio.io" in the namespace "bookinfo"`)
		return
	case s.status == http.StatusNotFound:
		status(s.status, "NotFound", "the server could not find the requested resource")
		return
	case expire:
		status(http.StatusGone, "Expired", "The provided continue parameter is too old")
		return
	}
	ns := strings.Split(r.URL.Path, "/")[5]
	limit, start := 0, 0
	fmt.Sscan(r.URL.Query().Get("limit"), &limit)
	fmt.Sscan(r.URL.Query().Get("continue"), &start)
	if limit == 0 {
		limit = s.n
	}
	end := min(start+limit, s.n)
	kind := KindDestinationRule
	if strings.Split(r.URL.Path, "/")[6] == "virtualservices" {
		kind = KindVirtualService
	}
	var items []string
	for i := start; i < end; i++ {
		if kind == KindVirtualService {
			spec := fmt.Sprintf(`{"hosts":["h-%04d"],"http":[{"route":[{"destination":{"host":"h-%04d","subset":"v1"}}]}]}`, i, i)
			items = append(items, listedObject("networking.istio.io/v1", kind, ns, fmt.Sprintf("vs-%04d", i), spec))
			continue
		}
		items = append(items, listedObject("networking.istio.io/v1", kind, ns, fmt.Sprintf("dr-%04d", i), `{"host":"h"}`))
	}
	cont := ""
	if end < s.n {
		cont = fmt.Sprint(end)
	}
	fmt.Fprintf(w, `{"apiVersion":"networking.istio.io/v1","items":[%s],"kind":"%sList","metadata":{"continue":%q,"resourceVersion":"9"}}`,
		strings.Join(items, ","), kind, cont)
}

func rawClients(t *testing.T, s *fakeIstioServer) *clients {
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	istio, err := istioclient.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return &clients{kube: fake.NewClientset(), istio: istio, host: "127.0.0.1:6443", user: "kubeconfig-user"}
}

func TestListRawReadsEveryPage(t *testing.T) {
	s := &fakeIstioServer{n: 1203}
	snap, err := load(t.Context(), Spec{Reads: []Read{{Kind: KindDestinationRule, Namespaces: []string{"bookinfo"}}}}, rawClients(t, s))
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.DestinationRules) != 1203 {
		t.Fatalf("%d DestinationRules, want 1203", len(snap.DestinationRules))
	}
	dr := snap.DestinationRules[1202]
	if dr.Name != "dr-1202" || dr.Spec.GetHost() != "h" || dr.Kind != KindDestinationRule || dr.ManagedFields != nil {
		t.Errorf("last DestinationRule = %+v", dr)
	}
	// The requests are the Istio clientset's: same path, query and Accept header.
	want := []string{
		"GET /apis/networking.istio.io/v1/namespaces/bookinfo/destinationrules?limit=500 application/json, */*",
		"GET /apis/networking.istio.io/v1/namespaces/bookinfo/destinationrules?continue=500&limit=500 application/json, */*",
		"GET /apis/networking.istio.io/v1/namespaces/bookinfo/destinationrules?continue=1000&limit=500 application/json, */*",
	}
	if diff := cmp.Diff(want, s.requests); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// TestPanicFetchingTheNextPageFailsTheList: a panic on the goroutine that fetches a list's
// next page fails that list, named, instead of ending the process; the other kinds load.
func TestPanicFetchingTheNextPageFailsTheList(t *testing.T) {
	testHookPrefetch = func(opts metav1.ListOptions) {
		if opts.Continue == "1000" {
			panic("boom")
		}
	}
	defer func() { testHookPrefetch = nil }()
	s := &fakeIstioServer{n: 1203}
	c := rawClients(t, s)
	c.kube = fake.NewClientset(&corev1.Service{ObjectMeta: objMeta("bookinfo", "reviews", "11")})
	snap, err := load(t.Context(), Spec{Reads: []Read{{Kind: KindDestinationRule, Namespaces: []string{"bookinfo"}}, {Kind: KindService}}}, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.DestinationRules) != 0 {
		t.Errorf("%d DestinationRules from a failed list", len(snap.DestinationRules))
	}
	if len(snap.Services) != 1 {
		t.Errorf("%d Services, want the one listed", len(snap.Services))
	}
	if why := snap.Incomplete[KindDestinationRule]; !strings.Contains(why, "internal error: boom") {
		t.Errorf("Incomplete[DestinationRule] = %q, want the panic named; issues: %v", why, issues(snap))
	}
}

func TestListRawRestartsAnExpiredList(t *testing.T) {
	s := &fakeIstioServer{n: 700, expire: "500"}
	snap, err := load(t.Context(), Spec{Reads: []Read{{Kind: KindDestinationRule, Namespaces: []string{"bookinfo"}}}}, rawClients(t, s))
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.DestinationRules) != 700 {
		t.Fatalf("%d DestinationRules, want 700", len(snap.DestinationRules))
	}
	if got := s.requests[len(s.requests)-1]; got != "GET /apis/networking.istio.io/v1/namespaces/bookinfo/destinationrules application/json, */*" {
		t.Errorf("last request %q, want the list without paging", got)
	}
}

func TestListRawDegrades(t *testing.T) {
	reads := []Read{{Kind: KindDestinationRule, Namespaces: []string{"bookinfo"}}, {Kind: KindService, Namespaces: []string{"bookinfo"}}}
	t.Run("forbidden", func(t *testing.T) {
		snap, err := load(t.Context(), Spec{Reads: reads}, rawClients(t, &fakeIstioServer{status: http.StatusForbidden}))
		if err != nil {
			t.Fatal(err)
		}
		want := "forbidden: alice cannot list destinationrules.networking.istio.io in namespace bookinfo"
		if got := snap.Incomplete[KindDestinationRule]; got != want {
			t.Errorf("incomplete = %q, want %q", got, want)
		}
	})
	t.Run("missing CRD", func(t *testing.T) {
		_, err := load(t.Context(), Spec{Reads: reads}, rawClients(t, &fakeIstioServer{status: http.StatusNotFound}))
		if err == nil || !strings.Contains(err.Error(), "the Istio CRDs are not installed") {
			t.Errorf("err = %v, want the missing-CRD error", err)
		}
	})
}

// A DestinationRule with every lookup field and more: what the light decoding keeps and drops.
const richDestinationRule = `{"host":"reviews","exportTo":[".","istio-system"],"workloadSelector":{"matchLabels":{"app":"x"}},` +
	`"trafficPolicy":{"connectionPool":{"tcp":{"maxConnections":10}},"tls":{"mode":"ISTIO_MUTUAL"},` +
	`"portLevelSettings":[{"port":{"number":9080},"loadBalancer":{"simple":"ROUND_ROBIN"}}]},` +
	`"subsets":[{"name":"v1","labels":{"version":"v1"}}]}`

func TestDecodeDestinationRuleInPartOrInFull(t *testing.T) {
	ki := kindByName(KindDestinationRule)
	decode := func(t *testing.T, spec string, inFull func(namespace, host string) bool) *networkingv1.DestinationRule {
		t.Helper()
		env := &liveEnvelope[json.RawMessage]{}
		if err := json.Unmarshal([]byte(listedObject(ki.apiVersion(), KindDestinationRule, "bookinfo", "x", spec)), env); err != nil {
			t.Fatal(err)
		}
		o, err := decodeDestinationRule(ki, env, inFull)
		if err != nil {
			t.Fatal(err)
		}
		return o.(*networkingv1.DestinationRule)
	}
	full := &networking.DestinationRule{}
	if err := full.UnmarshalJSON([]byte(richDestinationRule)); err != nil {
		t.Fatal(err)
	}
	var asked []string
	inFull := func(namespace, host string) bool {
		asked = append(asked, namespace+"/"+host)
		return host == "reviews"
	}
	got := decode(t, richDestinationRule, inFull)
	if !proto.Equal(&got.Spec, full) {
		t.Errorf("a rule that may apply is decoded in part:\n got %v\nwant %v", &got.Spec, full)
	}
	if diff := cmp.Diff([]string{"bookinfo/reviews"}, asked); diff != "" {
		t.Errorf("asked (-want +got):\n%s", diff)
	}

	other := strings.Replace(richDestinationRule, `"host":"reviews"`, `"host":"ratings"`, 1)
	got = decode(t, other, inFull)
	want := &networking.DestinationRule{Host: "ratings", ExportTo: full.ExportTo, WorkloadSelector: full.WorkloadSelector}
	if !proto.Equal(&got.Spec, want) {
		t.Errorf("a rule that cannot apply:\n got %v\nwant %v", &got.Spec, want)
	}
	if got.Name != "x" || got.Namespace != "bookinfo" || got.CreationTimestamp.IsZero() || got.ManagedFields != nil || got.Kind != KindDestinationRule {
		t.Errorf("metadata = %+v %+v", got.TypeMeta, got.ObjectMeta)
	}

	// Lookup fields that do not read as expected: the full decoder decides, and reports.
	env := &liveEnvelope[json.RawMessage]{}
	if err := json.Unmarshal([]byte(listedObject(ki.apiVersion(), KindDestinationRule, "bookinfo", "x", `{"host":["a"]}`)), env); err != nil {
		t.Fatal(err)
	}
	if _, err := decodeDestinationRule(ki, env, inFull); err == nil || !strings.Contains(err.Error(), "DestinationRule bookinfo/x") {
		t.Errorf("err = %v, want the full decoder's error naming the object", err)
	}
}

func TestListRawDecodesInFullOnlyWhatSpecAsks(t *testing.T) {
	s := &fakeIstioServer{n: 3}
	var asked []string
	inFull := func(namespace, host string) bool {
		asked = append(asked, namespace+"/"+host)
		return false
	}
	snap, err := load(t.Context(), Spec{Reads: []Read{{Kind: KindDestinationRule, Namespaces: []string{"bookinfo"}}}, DestinationRuleInFull: inFull}, rawClients(t, s))
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.DestinationRules) != 3 || snap.DestinationRules[0].Spec.GetHost() != "h" {
		t.Fatalf("DestinationRules = %v", snap.DestinationRules)
	}
	if diff := cmp.Diff([]string{"bookinfo/h", "bookinfo/h", "bookinfo/h"}, asked); diff != "" {
		t.Errorf("Spec.DestinationRuleInFull asked (-want +got):\n%s", diff)
	}
}

// TestListRawLeavesOutWhatSpecDoesNotNeed: with Spec.VirtualServiceNeeded, every listed
// VirtualService, of every page, is offered to it whole as the list holds it, and only those it
// keeps are decoded, whole and intact once the bodies of later pages reuse their buffer;
// without it every one is.
func TestListRawLeavesOutWhatSpecDoesNotNeed(t *testing.T) {
	reads := []Read{{Kind: KindVirtualService, Namespaces: []string{"bookinfo"}}}
	var offered int
	needed := func(listed []byte) bool {
		offered++
		if !strings.HasPrefix(string(listed), `{"apiVersion":"networking.istio.io/v1","kind":"VirtualService","metadata":{"name":"vs-`) ||
			!strings.HasSuffix(string(listed), `"status":{"conditions":[{"type":"Reconciled"}]}}`) {
			t.Errorf("offered %s, want the whole listed object", listed)
		}
		return strings.Contains(string(listed), `"host":"h-0007"`) || strings.Contains(string(listed), `"host":"h-1112"`)
	}
	snap, err := load(t.Context(), Spec{Reads: reads, VirtualServiceNeeded: needed}, rawClients(t, &fakeIstioServer{n: 1203}))
	if err != nil {
		t.Fatal(err)
	}
	if offered != 1203 {
		t.Errorf("%d VirtualServices offered, want 1203", offered)
	}
	var names []string
	for _, vs := range snap.VirtualServices {
		names = append(names, vs.Name)
	}
	if diff := cmp.Diff([]string{"vs-0007", "vs-1112"}, names); diff != "" {
		t.Fatalf("VirtualServices kept (-want +got):\n%s", diff)
	}
	for i, h := range []string{"h-0007", "h-1112"} {
		vs := snap.VirtualServices[i]
		want := &networking.VirtualService{Hosts: []string{h}, Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{
			{Destination: &networking.Destination{Host: h, Subset: "v1"}}}}}}
		if !proto.Equal(&vs.Spec, want) || vs.Namespace != "bookinfo" || vs.Kind != KindVirtualService || vs.ManagedFields != nil ||
			vs.CreationTimestamp.IsZero() || vs.Labels["app"] != "x" || vs.UID != "u-1" {
			t.Errorf("kept VirtualService = %+v %+v %v", vs.TypeMeta, vs.ObjectMeta, &vs.Spec)
		}
	}

	all, err := load(t.Context(), Spec{Reads: reads}, rawClients(t, &fakeIstioServer{n: 1203}))
	if err != nil {
		t.Fatal(err)
	}
	if len(all.VirtualServices) != 1203 || all.VirtualServices[1112].Spec.GetHosts()[0] != "h-1112" {
		t.Errorf("without VirtualServiceNeeded: %d VirtualServices", len(all.VirtualServices))
	}
}
