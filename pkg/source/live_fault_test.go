package source

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

// faultServer is an API server that serves empty core lists, one object of every Istio kind,
// and the faults set for one resource (its plural, as in the URL path).
type faultServer struct {
	// fault is what the requests for resource meet: "forbidden", "500", "429" (with
	// Retry-After: 1, answered `times` times, then the list), "drop" (the body cut off
	// mid-way), "slow" (no answer until the request is cancelled), "410" (every continue
	// token expires, and every page has one), "huge" (a body of 4 MiB), "401", "v1beta1" (the
	// Istio groups do not serve v1, only v1beta1).
	fault    string
	resource string
	times    int

	mu       sync.Mutex
	requests map[string]int
}

func (s *faultServer) count(resource string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[resource]
}

func (s *faultServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	resource := parts[len(parts)-1]
	if len(parts) >= 2 && parts[len(parts)-2] == "configmaps" {
		resource = "configmaps"
	}
	s.mu.Lock()
	if s.requests == nil {
		s.requests = map[string]int{}
	}
	s.requests[resource]++
	n := s.requests[resource]
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	status := func(code int, reason, msg string) {
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":%q,"reason":%q,"code":%d}`, msg, reason, code)
	}
	if s.fault == "v1beta1" {
		switch {
		case r.URL.Path == "/apis/networking.istio.io":
			fmt.Fprint(w, `{"kind":"APIGroup","apiVersion":"v1","name":"networking.istio.io","versions":[{"groupVersion":"networking.istio.io/v1beta1","version":"v1beta1"},{"groupVersion":"networking.istio.io/v1alpha3","version":"v1alpha3"}]}`)
			return
		case r.URL.Path == "/apis/security.istio.io":
			fmt.Fprint(w, `{"kind":"APIGroup","apiVersion":"v1","name":"security.istio.io","versions":[{"groupVersion":"security.istio.io/v1beta1","version":"v1beta1"}]}`)
			return
		case strings.HasPrefix(r.URL.Path, "/apis/networking.istio.io/v1/"), strings.HasPrefix(r.URL.Path, "/apis/security.istio.io/v1/"):
			status(http.StatusNotFound, "NotFound", "the server could not find the requested resource")
			return
		}
	}
	if strings.Contains(r.URL.Path, "/configmaps/") {
		status(http.StatusNotFound, "NotFound", `configmaps "istio" not found`)
		return
	}
	if resource == s.resource {
		switch s.fault {
		case "forbidden":
			status(http.StatusForbidden, "Forbidden", fmt.Sprintf(`%s is forbidden: User "alice" cannot list resource %q`, resource, resource))
			return
		case "401":
			status(http.StatusUnauthorized, "Unauthorized", "Unauthorized")
			return
		case "500":
			status(http.StatusInternalServerError, "InternalError", "Internal error occurred: etcd is sad")
			return
		case "429":
			if n <= s.times {
				w.Header().Set("Retry-After", "1")
				status(http.StatusTooManyRequests, "TooManyRequests", "Too many requests, please try again later.")
				return
			}
		case "slow":
			<-r.Context().Done()
			return
		case "drop":
			w.Header().Set("Content-Length", "100000")
			w.WriteHeader(http.StatusOK)
			fmt.Fprint(w, `{"kind":"List","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"a`)
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
			if hj, ok := w.(http.Hijacker); ok {
				conn, _, err := hj.Hijack()
				if err == nil {
					conn.Close()
				}
			}
			return
		case "huge":
			fmt.Fprintf(w, `{"kind":"List","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"a","namespace":"b","annotations":{"x":%q}}}]}`,
				strings.Repeat("x", 4<<20))
			return
		case "410":
			if r.URL.Query().Get("continue") != "" {
				status(http.StatusGone, "Expired", "The provided continue parameter is too old")
				return
			}
		}
	}
	cont := ""
	if s.fault == "410" && resource == s.resource {
		cont = "next"
	}
	items := ""
	if group := istioGroupOf(r.URL.Path); group != "" {
		kind := ""
		for _, ki := range kindTable {
			if ki.istio && ki.resource == resource {
				kind = ki.kind
			}
		}
		spec := `{}`
		if kind == KindDestinationRule {
			spec = `{"host":"reviews"}`
		}
		items = fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":"x","namespace":"bookinfo","resourceVersion":"5"},"spec":%s}`,
			group, kind, spec)
	}
	listKind, apiVersion := "List", "v1"
	for _, ki := range kindTable {
		if ki.resource == resource {
			listKind, apiVersion = ki.kind+"List", ki.apiVersion()
		}
	}
	if group := istioGroupOf(r.URL.Path); group != "" {
		apiVersion = group
	}
	fmt.Fprintf(w, `{"kind":%q,"apiVersion":%q,"metadata":{"continue":%q},"items":[%s]}`, listKind, apiVersion, cont, items)
}

// istioGroupOf is the group/version of an Istio list path, or "".
func istioGroupOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) >= 3 && parts[0] == "apis" && strings.HasSuffix(parts[1], ".istio.io") {
		return parts[1] + "/" + parts[2]
	}
	return ""
}

// faultReads reads one kind of each family: a core list, Istio lists in two groups.
var faultReads = []Read{
	{Kind: KindService, Namespaces: []string{"bookinfo"}},
	{Kind: KindPod, Namespaces: []string{"bookinfo"}},
	{Kind: KindDestinationRule, Namespaces: []string{"bookinfo"}},
	{Kind: KindVirtualService},
	{Kind: KindPeerAuthentication, Namespaces: []string{"bookinfo"}},
}

// A list that fails on its own leaves its kind incomplete, says why in words, and the other
// kinds are read: one failing list never ends the command, nor blames another kind.
func TestAFailingListLeavesOnlyItsKindIncomplete(t *testing.T) {
	old := MaxResponseBytes
	MaxResponseBytes = 1 << 20
	t.Cleanup(func() { MaxResponseBytes = old })
	tests := []struct {
		fault, resource, kind, timeout string
		want                           string
	}{
		{"forbidden", "virtualservices", KindVirtualService, "", "forbidden: alice cannot list virtualservices.networking.istio.io in all namespaces"},
		{"forbidden", "services", KindService, "", "forbidden: alice cannot list services in namespace bookinfo"},
		{"500", "destinationrules", KindDestinationRule, "", "server error (500): cannot list destinationrules.networking.istio.io in namespace bookinfo: Internal error occurred: etcd is sad"},
		{"500", "pods", KindPod, "", "server error (500): cannot list pods in namespace bookinfo: Internal error occurred: etcd is sad"},
		{"drop", "virtualservices", KindVirtualService, "", "connection lost: cannot list virtualservices.networking.istio.io in all namespaces"},
		{"drop", "services", KindService, "", "connection lost: cannot list services in namespace bookinfo"},
		{"slow", "virtualservices", KindVirtualService, "300ms", "timed out: cannot list virtualservices.networking.istio.io in all namespaces: no complete answer within the request timeout (300ms; --request-timeout changes it)"},
		{"slow", "services", KindService, "300ms", "timed out: cannot list services in namespace bookinfo"},
		{"huge", "virtualservices", KindVirtualService, "", "too large: cannot list virtualservices.networking.istio.io in all namespaces: the response is larger than 1 MiB, the limit of one response"},
		{"huge", "services", KindService, "", "too large: cannot list services in namespace bookinfo: the response is larger than 1 MiB"},
		{"410", "peerauthentications", KindPeerAuthentication, "", "expired: cannot list peerauthentications.security.istio.io in namespace bookinfo: the list changed faster than it could be read: its continue token expired (410 Gone) 4 times"},
		{"410", "services", KindService, "", "expired: cannot list services in namespace bookinfo: the list changed faster than it could be read"},
		{"429", "virtualservices", KindVirtualService, "", "throttled (429): cannot list virtualservices.networking.istio.io in all namespaces: Too many requests, please try again later."},
		{"429", "services", KindService, "", "throttled (429): cannot list services in namespace bookinfo"},
	}
	for _, tt := range tests {
		t.Run(tt.fault+"/"+tt.resource, func(t *testing.T) {
			s := &faultServer{fault: tt.fault, resource: tt.resource, times: 100}
			srv := httptest.NewServer(s)
			defer srv.Close()
			start := time.Now()
			snap, err := Load(t.Context(), Spec{Getter: kubeconfigFlags(t, srv.URL, tt.timeout), Reads: faultReads})
			elapsed := time.Since(start)
			if err != nil {
				t.Fatalf("load failed: %v", err)
			}
			got := snap.Incomplete[tt.kind]
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("incomplete[%s] = %q, want %q...", tt.kind, got, tt.want)
			}
			if strings.Contains(got, "source.") || strings.Contains(got, "Go value") {
				t.Errorf("the message names Go types: %q", got)
			}
			if len(snap.Incomplete) != 1 {
				t.Errorf("incomplete = %v, want only %s", snap.Incomplete, tt.kind)
			}
			if tt.kind != KindDestinationRule && len(snap.DestinationRules) != 1 {
				t.Errorf("%d DestinationRules read, want 1 (the other kinds are read)", len(snap.DestinationRules))
			}
			if elapsed > 10*time.Second {
				t.Errorf("the load took %v", elapsed)
			}
			switch tt.fault {
			case "429":
				// The first request and three retries: Retry-After is honoured a bounded number of times.
				if n := s.count(tt.resource); n != 1+maxRetryAfter {
					t.Errorf("%d requests, want %d", n, 1+maxRetryAfter)
				}
			case "410":
				// The first read and maxListRestarts restarts, each a first page and a continue.
				if n := s.count(tt.resource); n != 2*(1+maxListRestarts) {
					t.Errorf("%d requests, want %d", n, 2*(1+maxListRestarts))
				}
			}
		})
	}
}

// A 429 with Retry-After is honoured: the list is read once the server lets it.
func TestRetryAfterIsHonoured(t *testing.T) {
	s := &faultServer{fault: "429", resource: "destinationrules", times: 2}
	srv := httptest.NewServer(s)
	defer srv.Close()
	snap, err := Load(t.Context(), Spec{Getter: kubeconfigFlags(t, srv.URL, ""), Reads: faultReads})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Incomplete) != 0 || len(snap.DestinationRules) != 1 {
		t.Errorf("incomplete = %v, %d DestinationRules; want the list read after two 429s", snap.Incomplete, len(snap.DestinationRules))
	}
	if n := s.count("destinationrules"); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

// Refused credentials end the command, named as such whatever the other reads meet.
func TestUnauthorizedIsTheFailureReported(t *testing.T) {
	for _, resource := range []string{"virtualservices", "services", "destinationrules"} {
		t.Run(resource, func(t *testing.T) {
			for range 5 {
				s := &faultServer{fault: "401", resource: resource}
				srv := httptest.NewServer(s)
				_, err := Load(t.Context(), Spec{Getter: kubeconfigFlags(t, srv.URL, ""), Reads: faultReads})
				srv.Close()
				if err == nil || err.Error() != "you must be logged in to the server (Unauthorized)" {
					t.Fatalf("err = %v, want the 401", err)
				}
			}
		})
	}
}

// A cluster whose Istio groups serve v1beta1 and not v1 (Istio before 1.22) is read at
// v1beta1, with one discovery request per group, and the load says so.
func TestIstioKindsAreReadAtTheServedVersion(t *testing.T) {
	s := &faultServer{fault: "v1beta1"}
	srv := httptest.NewServer(s)
	defer srv.Close()
	snap, err := Load(t.Context(), Spec{Getter: kubeconfigFlags(t, srv.URL, ""), Reads: faultReads})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Incomplete) != 0 {
		t.Errorf("incomplete = %v", snap.Incomplete)
	}
	if len(snap.DestinationRules) != 1 || snap.DestinationRules[0].Spec.GetHost() != "reviews" || len(snap.VirtualServices) != 1 || len(snap.PeerAuthentications) != 1 {
		t.Fatalf("read %d DestinationRules, %d VirtualServices, %d PeerAuthentications; want one each",
			len(snap.DestinationRules), len(snap.VirtualServices), len(snap.PeerAuthentications))
	}
	var msgs []string
	for _, is := range snap.Issues {
		msgs = append(msgs, is.Message)
	}
	want := []string{
		"DestinationRules were read at networking.istio.io/v1beta1: the cluster does not serve networking.istio.io/v1 (Istio before 1.22 serves v1beta1)",
		"VirtualServices were read at networking.istio.io/v1beta1: the cluster does not serve networking.istio.io/v1 (Istio before 1.22 serves v1beta1)",
		"PeerAuthentications were read at security.istio.io/v1beta1: the cluster does not serve security.istio.io/v1 (Istio before 1.22 serves v1beta1)",
	}
	if strings.Join(msgs, "\n") != strings.Join(want, "\n") {
		t.Errorf("issues:\n%s\nwant:\n%s", strings.Join(msgs, "\n"), strings.Join(want, "\n"))
	}
	if s.count("networking.istio.io") != 1 || s.count("security.istio.io") != 1 {
		t.Errorf("discovery requests: %d networking, %d security; want one each", s.count("networking.istio.io"), s.count("security.istio.io"))
	}
}

// With --overlay, a file object skipped as malformed does not let the live object stand in
// silently: the load warns that the what-if for it could not be applied.
func TestOverlaySkippedObjectSaysTheLiveOneStands(t *testing.T) {
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
        connectTimeout: notaduration
`)
	f := newFakeCluster(nil, []runtime.Object{liveDR("bookinfo", "reviews", "reviews", time.Second)})
	snap, err := load(t.Context(), Spec{Files: []string{"overlay.yaml"}, Overlay: true, Reads: []Read{{Kind: KindDestinationRule}}}, f.clients())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, is := range snap.Issues {
		if is.Severity == "warning" {
			got = append(got, is.String())
		}
	}
	want := "overlay.yaml:11:9: DestinationRule bookinfo/reviews: the what-if for this object could not be applied: its file definition is skipped, so the live object is used"
	if len(got) != 1 || got[0] != want {
		t.Errorf("warnings = %q, want [%q]", got, want)
	}
}

// Progress is reported once per read, ending at every read done, with the objects returned.
func TestProgressCountsEveryRead(t *testing.T) {
	srv := httptest.NewServer(&faultServer{})
	defer srv.Close()
	var (
		mu   sync.Mutex
		seen []Progress
	)
	snap, err := Load(t.Context(), Spec{Getter: kubeconfigFlags(t, srv.URL, ""), Reads: faultReads, Progress: func(p Progress) {
		mu.Lock()
		seen = append(seen, p)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) == 0 {
		t.Fatal("no progress reported")
	}
	total := seen[0].Total
	maxDone, maxObjects := 0, 0
	for _, p := range seen {
		if p.Total != total {
			t.Errorf("total changed: %+v", seen)
		}
		maxDone, maxObjects = max(maxDone, p.Done), max(maxObjects, p.Objects)
	}
	if len(seen) != total || maxDone != total {
		t.Errorf("%d reports, last done %d, of %d reads", len(seen), maxDone, total)
	}
	if maxObjects < len(snap.DestinationRules) || maxObjects == 0 {
		t.Errorf("%d objects reported; the snapshot has %d DestinationRules", maxObjects, len(snap.DestinationRules))
	}
}
