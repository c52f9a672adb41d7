package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// exitIncomplete is the plugin's exit code for an answer that lacks something it needed.
const exitIncomplete = 3

// mustIncomplete fails the test unless r printed an answer and exited 3, saying why.
func mustIncomplete(t *testing.T, r result) {
	t.Helper()
	if r.err != nil || r.timedOut || r.code != exitIncomplete || strings.TrimSpace(r.stdout) == "" {
		t.Fatalf("%v\nwant an answer and exit %d (error: %v, timed out: %v)\nstdout:\n%s", r, exitIncomplete, r.err, r.timedOut, r.stdout)
	}
	if !strings.Contains(r.stderr, "the answer is incomplete") {
		t.Fatalf("%v\nstderr does not say the answer is incomplete", r)
	}
}

// faultProxy is the suite's own reverse proxy between kubectl and the apiserver: every request
// goes through inject, which may answer it itself (a fault) or leave it to the apiserver.
type faultProxy struct {
	srv    *httptest.Server
	inject func(w http.ResponseWriter, r *http.Request) bool

	mu       sync.Mutex
	requests map[string]int
}

// newFaultProxy starts a proxy to the suite's apiserver; kc is a kubeconfig (admin's token)
// that reaches the apiserver through it. The proxy speaks TLS: client-go sends no bearer token
// over plain HTTP.
func newFaultProxy(t *testing.T, inject func(w http.ResponseWriter, r *http.Request) bool) (p *faultProxy, kc string) {
	t.Helper()
	data, err := os.ReadFile(kubeconfig("admin"))
	if err != nil {
		t.Fatal(err)
	}
	server := regexp.MustCompile(`server: (\S+)`).FindSubmatch(data)
	token := regexp.MustCompile(`token: (\S+)`).FindSubmatch(data)
	if server == nil || token == nil {
		t.Fatalf("%s: no server or token", kubeconfig("admin"))
	}
	target, err := url.Parse(string(server[1]))
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	rp.FlushInterval = -1
	p = &faultProxy{inject: inject, requests: map[string]int{}}
	p.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.requests[resourceOf(r.URL.Path)]++
		p.mu.Unlock()
		if p.inject != nil && p.inject(w, r) {
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p, writeKubeconfig(t, "proxy", p.srv.URL, string(token[1]))
}

func (p *faultProxy) count(resource string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests[resource]
}

// resourceOf is the resource a request reads (`/api/v1/namespaces/x/services` and
// `/apis/networking.istio.io/v1/virtualservices` give services and virtualservices, a get by
// name its kind's resource), or the group of a discovery request (`/apis/networking.istio.io`).
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) == 2 && parts[0] == "apis":
		return parts[1]
	case len(parts) >= 3 && parts[0] == "apis":
		rest = parts[3:]
	}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		rest = rest[2:]
	}
	if len(rest) == 0 {
		return ""
	}
	return rest[0]
}

// isList reports whether r lists resource (in a namespace or everywhere).
func isList(r *http.Request, resource string) bool {
	return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/"+resource)
}

func writeStatus(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":%q,"reason":%q,"code":%d}`, msg, reason, code)
}

// incompleteDoc is the part of the -o json document the fault tests read.
type incompleteDoc struct {
	Warnings   []string `json:"warnings"`
	Incomplete []string `json:"incomplete"`
}

func decodeDoc(t *testing.T, r result) incompleteDoc {
	t.Helper()
	var doc incompleteDoc
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("%v\nstdout is not the explanation document: %v\n%s", r, err, r.stdout)
	}
	return doc
}

// noCrash fails the test if the plugin panicked (a Go panic or the recovered internal error on
// stderr) or named Go types.
func noCrash(t *testing.T, r result) {
	t.Helper()
	for _, bad := range []string{"panic:", "goroutine ", "internal error", "source.rawPage", "Go value of type"} {
		if strings.Contains(r.stderr, bad) {
			t.Errorf("%v\nstderr contains %q", r, bad)
		}
	}
}

// rbacClusterJSON is the permission fixture's `cluster` question, as a document.
func rbacClusterJSON(extra ...string) []string {
	return append(append(append([]string{}, rbacCluster...), "-o", "json"), extra...)
}

// TestFaultForbiddenKinds: each kind `cluster` lists is forbidden in turn. The answer names it
// in the document's warnings and incomplete list and exits 3, except EnvoyFilters (read only
// to warn) and the Services and Pods (without them the host or the --from pod cannot be found:
// a clear error naming the forbidden read, never "not found").
func TestFaultForbiddenKinds(t *testing.T) {
	rbacWorld(t)
	for _, tc := range []struct{ resource, plural string }{
		{"destinationrules", "DestinationRules"},
		{"sidecars", "Sidecars"},
		{"peerauthentications", "PeerAuthentications"},
		{"serviceentries", "ServiceEntries"},
		{"workloadentries", "WorkloadEntries"},
		{"virtualservices", "VirtualServices"},
		{"namespaces", "Namespaces"},
		{"envoyfilters", ""},
		{"services", ""},
		{"pods", ""},
	} {
		t.Run(tc.resource, func(t *testing.T) {
			_, kc := newFaultProxy(t, func(w http.ResponseWriter, r *http.Request) bool {
				if resourceOf(r.URL.Path) != tc.resource {
					return false
				}
				writeStatus(w, http.StatusForbidden, "Forbidden",
					fmt.Sprintf(`%s is forbidden: User "alice" cannot list resource %q`, tc.resource, tc.resource))
				return true
			})
			r := runPluginTimeout(time.Minute, kc, rbacClusterJSON()...)
			noCrash(t, r)
			switch tc.resource {
			case "envoyfilters":
				mustSucceed(t, r)
				if doc := decodeDoc(t, r); len(doc.Incomplete) != 0 {
					t.Errorf("incomplete = %q, want none (EnvoyFilters never make the answer incomplete)", doc.Incomplete)
				}
			case "services", "pods":
				mustExit(t, r, 1)
				// The host's Service is got by name, the client pod's namespace's listed.
				named := strings.Contains(r.stderr, "forbidden: alice cannot list "+tc.resource) ||
					(tc.resource == "services" && strings.Contains(r.stderr, "forbidden: alice cannot get services"))
				if !strings.Contains(r.stderr, "cannot tell whether") || !named || strings.Contains(r.stderr, "not found") {
					t.Errorf("%v\nwant the error to name the forbidden %s list", r, tc.resource)
				}
			default:
				mustIncomplete(t, r)
				doc := decodeDoc(t, r)
				if !strings.Contains(strings.Join(doc.Incomplete, ","), tc.plural) ||
					!strings.Contains(strings.Join(doc.Warnings, "\n"), "forbidden: alice cannot") {
					t.Errorf("incomplete = %q, warnings = %q; want %s named, forbidden", doc.Incomplete, doc.Warnings, tc.plural)
				}
			}
		})
	}
}

// faultCase is one fault of TestFaultLiveReads.
type faultCase struct {
	name     string
	inject   func(http.ResponseWriter, *http.Request) bool
	extra    []string
	warning  string
	within   time.Duration
	requests func(p *faultProxy) string
	// maxRSS bounds the plugin's peak RSS in KiB (0: not checked).
	maxRSS int64
}

// oversized answers the lists of resource with a 200 MiB body: it is read up to the 64 MiB
// limit of one response, never whole, and the peak RSS stays under maxRSS KiB.
func oversized(resource, listKind, where string, maxRSS int64) faultCase {
	return faultCase{
		name: "oversized " + resource,
		inject: func(w http.ResponseWriter, r *http.Request) bool {
			if !isList(r, resource) {
				return false
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"kind":%q,"apiVersion":"networking.istio.io/v1","metadata":{},"items":[{"metadata":{"name":"a","annotations":{"x":"`, listKind)
			chunk := strings.Repeat("x", 1<<20)
			for range 200 {
				if _, err := io.WriteString(w, chunk); err != nil {
					return true
				}
			}
			io.WriteString(w, `"}}}]}`)
			return true
		},
		warning: "too large: cannot list " + resource + ".networking.istio.io " + where, within: 30 * time.Second,
		maxRSS: maxRSS,
	}
}

// TestFaultLiveReads: a slow list, throttling, server errors, a connection dropped mid-body, a
// continue token that always expires and an oversized response each end in the named warning
// and exit 3, within a bounded time.
func TestFaultLiveReads(t *testing.T) {
	rbacWorld(t)
	slow := func(resource string) func(http.ResponseWriter, *http.Request) bool {
		return func(w http.ResponseWriter, r *http.Request) bool {
			if !isList(r, resource) {
				return false
			}
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Minute):
			}
			return true
		}
	}
	tests := []faultCase{
		{
			name: "slow list, --request-timeout 2s", inject: slow("virtualservices"), extra: []string{"--request-timeout", "2s"},
			warning: "timed out: cannot list virtualservices.networking.istio.io in all namespaces", within: 15 * time.Second,
		},
		{
			name: "slow list, default request timeout", inject: slow("destinationrules"),
			warning: "timed out: cannot list destinationrules.networking.istio.io in namespace", within: 50 * time.Second,
		},
		{
			name: "slow EnvoyFilter list", inject: slow("envoyfilters"), extra: []string{"--request-timeout", "2s"},
			within: 15 * time.Second,
		},
		{
			name: "429 with Retry-After",
			inject: func(w http.ResponseWriter, r *http.Request) bool {
				if !isList(r, "serviceentries") {
					return false
				}
				w.Header().Set("Retry-After", "1")
				writeStatus(w, http.StatusTooManyRequests, "TooManyRequests", "Too many requests, please try again later.")
				return true
			},
			warning: "throttled (429): cannot list serviceentries.networking.istio.io in all namespaces", within: 20 * time.Second,
			requests: func(p *faultProxy) string {
				// One request and three retries per read (the plan reads at most three times).
				if n := p.count("serviceentries"); n < 4 || n > 12 || n%4 != 0 {
					return fmt.Sprintf("%d ServiceEntry requests, want 4 per read", n)
				}
				return ""
			},
		},
		{
			name: "500s",
			inject: func(w http.ResponseWriter, r *http.Request) bool {
				if !isList(r, "sidecars") {
					return false
				}
				writeStatus(w, http.StatusInternalServerError, "InternalError", "Internal error occurred: etcd is sad")
				return true
			},
			warning: "server error (500): cannot list sidecars.networking.istio.io in namespace", within: 15 * time.Second,
		},
		{
			name: "connection dropped mid-body",
			inject: func(w http.ResponseWriter, r *http.Request) bool {
				if !isList(r, "virtualservices") {
					return false
				}
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Length", "100000")
				w.WriteHeader(http.StatusOK)
				io.WriteString(w, `{"kind":"VirtualServiceList","apiVersion":"networking.istio.io/v1","metadata":{},"items":[{"metadata":{"name":"a`)
				w.(http.Flusher).Flush()
				if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
					conn.Close()
				}
				return true
			},
			warning: "connection lost: cannot list virtualservices.networking.istio.io in all namespaces", within: 15 * time.Second,
		},
		{
			name: "410 on every continue token",
			inject: func(w http.ResponseWriter, r *http.Request) bool {
				if !isList(r, "workloadentries") {
					return false
				}
				if r.URL.Query().Get("continue") != "" {
					writeStatus(w, http.StatusGone, "Expired", "The provided continue parameter is too old")
					return true
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"kind":"WorkloadEntryList","apiVersion":"networking.istio.io/v1","metadata":{"continue":"next"},"items":[]}`)
				return true
			},
			warning: "expired: cannot list workloadentries.networking.istio.io in all namespaces", within: 15 * time.Second,
			requests: func(p *faultProxy) string {
				// Four reads of two pages per list (the plan reads at most three times).
				if n := p.count("workloadentries"); n < 8 || n > 24 || n%8 != 0 {
					return fmt.Sprintf("%d WorkloadEntry requests, want 8 per list", n)
				}
				return ""
			},
		},
		oversized("virtualservices", "VirtualServiceList", "in all namespaces", 400<<10),
		// DestinationRules are listed in three namespaces at once: three bodies at the limit.
		oversized("destinationrules", "DestinationRuleList", "in namespace", 1<<20),
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, kc := newFaultProxy(t, tt.inject)
			r := runPluginTimeout(2*time.Minute, kc, rbacClusterJSON(tt.extra...)...)
			noCrash(t, r)
			if r.elapsed > tt.within {
				t.Errorf("%v\ntook %v, want at most %v", r, r.elapsed, tt.within)
			}
			if tt.warning == "" {
				mustSucceed(t, r)
				return
			}
			mustIncomplete(t, r)
			doc := decodeDoc(t, r)
			if !strings.Contains(strings.Join(doc.Warnings, "\n"), tt.warning) {
				t.Errorf("warnings = %q\nwant one containing %q", doc.Warnings, tt.warning)
			}
			if tt.requests != nil {
				if msg := tt.requests(p); msg != "" {
					t.Error(msg)
				}
			}
			if tt.maxRSS > 0 && r.maxRSS > tt.maxRSS {
				t.Errorf("peak RSS %d MiB, want at most %d MiB", r.maxRSS>>10, tt.maxRSS>>10)
			}
			t.Logf("%s: exit %d in %v, peak RSS %d MiB; incomplete %q", tt.name, r.code, r.elapsed.Round(time.Millisecond), r.maxRSS>>10, doc.Incomplete)
		})
	}
}

// TestFaultIstioServedAtV1beta1: a cluster whose Istio groups do not serve v1 (Istio before
// 1.22) is read at v1beta1, gives the same answer as at v1, and the plugin says which version
// it read.
func TestFaultIstioServedAtV1beta1(t *testing.T) {
	rbacWorld(t)
	want := runPlugin(kubeconfig("admin"), append(append([]string{}, rbacCluster...), "-o", "envoy")...)
	mustSucceed(t, want)
	groups := map[string]string{"networking.istio.io": "v1beta1", "security.istio.io": "v1beta1"}
	p, kc := newFaultProxy(t, func(w http.ResponseWriter, r *http.Request) bool {
		for group, version := range groups {
			switch {
			case r.URL.Path == "/apis/"+group:
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"kind":"APIGroup","apiVersion":"v1","name":%q,"versions":[{"groupVersion":"%s/%s","version":%q}],"preferredVersion":{"groupVersion":"%s/%s","version":%q}}`,
					group, group, version, version, group, version, version)
				return true
			case strings.HasPrefix(r.URL.Path, "/apis/"+group+"/v1/"):
				writeStatus(w, http.StatusNotFound, "NotFound", "the server could not find the requested resource")
				return true
			}
		}
		return false
	})
	r := runPluginTimeout(time.Minute, kc, append(append([]string{}, rbacCluster...), "-o", "envoy")...)
	noCrash(t, r)
	mustSucceed(t, r)
	if r.stdout != want.stdout {
		t.Errorf("at v1beta1: a different answer (+) than at v1 (-):\n%s", diff(want.stdout, r.stdout))
	}
	if !strings.Contains(r.stderr, "DestinationRules were read at networking.istio.io/v1beta1") {
		t.Errorf("%v\nwant a warning naming the version read", r)
	}
	if n := p.count("networking.istio.io"); n != 1 {
		t.Errorf("%d discovery requests for networking.istio.io, want 1", n)
	}
}

// TestFaultAPIServerStopsMidRun: the API server goes away after the first requests (the proxy
// stops listening and drops every connection). The command ends promptly with a clear error,
// or with the answer it could read and exit 3 naming the reads that were cut off; never a hang.
func TestFaultAPIServerStopsMidRun(t *testing.T) {
	rbacWorld(t)
	var (
		mu      sync.Mutex
		n       int
		stopped bool
		p       *faultProxy
	)
	p, kc := newFaultProxy(t, func(w http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		n++
		if n > 3 && !stopped {
			stopped = true
			p.srv.Listener.Close()
		}
		stop := stopped
		mu.Unlock()
		if !stop {
			return false
		}
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
		return true
	})
	r := runPluginTimeout(time.Minute, kc, rbacClusterJSON()...)
	noCrash(t, r)
	if r.timedOut || r.elapsed > 20*time.Second {
		t.Fatalf("%v\ntook %v", r, r.elapsed)
	}
	switch r.code {
	case 1:
		if !strings.Contains(r.stderr, "error: the connection to the server") && !strings.Contains(r.stderr, "error: unable to connect to the server") {
			t.Errorf("%v\nwant kubectl's connection error", r)
		}
	case exitIncomplete:
		mustIncomplete(t, r)
		if !strings.Contains(r.stderr, "connection lost: ") {
			t.Errorf("%v\nwant the reads cut off named", r)
		}
	default:
		t.Errorf("%v\nwant exit 1 or 3", r)
	}
	t.Logf("exit %d in %v:\n%s", r.code, r.elapsed.Round(time.Millisecond), r.stderr)
}

// TestFaultObjectsChangedBetweenPages: the DestinationRules of bookinfo are listed one object a
// page (the proxy sets limit=1), and before the second page is asked for, the first object is
// changed and the second deleted. A list read through its continue token is one snapshot (the
// first page's resourceVersion), so the answer must be the one from before the change, whole,
// with exit 0: the deleted rule's subset still there, the changed field still at its old value.
// A second run, straight to the API server, shows that the change was made.
func TestFaultObjectsChangedBetweenPages(t *testing.T) {
	last := &unstructured.Unstructured{}
	last.SetAPIVersion("networking.istio.io/v1")
	last.SetKind("DestinationRule")
	last.SetNamespace("bookinfo")
	last.SetName("zz-reviews-v9")
	last.Object["spec"] = map[string]any{
		"host":    "reviews.bookinfo.svc.cluster.local",
		"subsets": []any{map[string]any{"name": "v9", "labels": map[string]any{"version": "v9"}}},
	}
	rbacWorld(t, last)
	args := append(append([]string{}, rbacCluster...), "-o", "envoy")
	before := runPlugin(kubeconfig("admin"), args...)
	mustSucceed(t, before)
	for _, want := range []string{"outbound|9080|v9|reviews", `"consecutive5xx": 3`} {
		if !strings.Contains(before.stdout, want) {
			t.Fatalf("%v\nthe answer before the change lacks %s", before, want)
		}
	}

	drs := admin(t).dyn.Resource(schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1", Resource: "destinationrules"}).Namespace("bookinfo")
	const path = "/apis/networking.istio.io/v1/namespaces/bookinfo/destinationrules"
	var (
		mu             sync.Mutex
		pages, changed int
		changeErr      error
	)
	change := func() error {
		ctx := context.Background()
		dr, err := drs.Get(ctx, "reviews", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := unstructured.SetNestedField(dr.Object, int64(9), "spec", "trafficPolicy", "outlierDetection", "consecutive5xxErrors"); err != nil {
			return err
		}
		if _, err := drs.Update(ctx, dr, metav1.UpdateOptions{}); err != nil {
			return err
		}
		return drs.Delete(ctx, last.GetName(), metav1.DeleteOptions{})
	}
	_, kc := newFaultProxy(t, func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || r.URL.Path != path {
			return false
		}
		q := r.URL.Query()
		q.Set("limit", "1")
		r.URL.RawQuery = q.Encode()
		mu.Lock()
		defer mu.Unlock()
		pages++
		if q.Get("continue") != "" && changed == 0 {
			changed++
			changeErr = change()
		}
		return false
	})
	r := runPluginTimeout(time.Minute, kc, args...)
	noCrash(t, r)
	mustSucceed(t, r)
	mu.Lock()
	if changeErr != nil || changed != 1 || pages < 2 {
		t.Fatalf("the change between pages was not made: %d pages, %d changes, %v", pages, changed, changeErr)
	}
	requests := pages
	mu.Unlock()
	t.Logf("exit %d in %v, %d DestinationRule requests", r.code, r.elapsed.Round(time.Millisecond), requests)
	if r.stdout != before.stdout {
		t.Errorf("the answer read across the change (+) differs from the one before it (-):\n%s", diff(before.stdout, r.stdout))
	}

	after := runPlugin(kubeconfig("admin"), args...)
	mustSucceed(t, after)
	if strings.Contains(after.stdout, "outbound|9080|v9|reviews") || !strings.Contains(after.stdout, `"consecutive5xx": 9`) {
		t.Errorf("%v\nthe answer after the change does not show it", after)
	}
}
