package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// The bounds of live reads. Every request of a command is bounded in time, in the times a
// server may ask it to come back, and in the size of its answer, so a slow, throttling or
// hostile API server costs a clear warning, never a hang or all the memory.
const (
	// DefaultRequestTimeout bounds one request (one page of a list, one get) when
	// --request-timeout is not set or 0: the connection, the answer and reading its body.
	DefaultRequestTimeout = 30 * time.Second
	// maxRetryAfter is how many times one request honours a Retry-After (429 Too Many Requests,
	// or a 5xx that sets it) before its failure is reported.
	maxRetryAfter = 3
	// maxRetryAfterWait is the longest Retry-After honoured; a longer one is reported at once.
	maxRetryAfterWait = 10 * time.Second
	// maxListRestarts is how many times a list whose continue token expired (410 Gone) is read
	// again from the start before the failure is reported.
	maxListRestarts = 3
)

// MaxResponseBytes is the largest body of one API server response read: a page of 500
// objects is a few megabytes, so only a server that ignores the page size, or a hostile one,
// reaches it. A variable for tests.
var MaxResponseBytes int64 = 64 << 20

// ResponseTooLargeError is a response whose body is larger than MaxResponseBytes; reading
// stops there.
type ResponseTooLargeError struct{ Limit int64 }

func (e *ResponseTooLargeError) Error() string {
	return fmt.Sprintf("the response is larger than %s, the limit of one response", byteSize(e.Limit))
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// expiredError is a list whose continue token kept expiring.
type expiredError struct {
	restarts int
	last     error
}

func (e *expiredError) Error() string {
	return fmt.Sprintf("the list changed faster than it could be read: its continue token expired (410 Gone) %d times, "+
		"and it was read again from the start each time", e.restarts+1)
}

func (e *expiredError) Unwrap() error { return e.last }

// guard is the transport of every live request: it bounds the body read and the Retry-Afters
// client-go honours (client-go retries a 429 or 5xx with Retry-After up to ten times, waiting
// as long as the server says).
type guard struct {
	next http.RoundTripper
	// answers counts the responses received, by every guard of the clients.
	answers *atomic.Int64

	mu      sync.Mutex
	retries map[string]int
}

func newGuard(next http.RoundTripper, answers *atomic.Int64) http.RoundTripper {
	return &guard{next: next, answers: answers, retries: map[string]int{}}
}

// WrappedRoundTripper lets client-go reach the transport below (to cancel a request).
func (g *guard) WrappedRoundTripper() http.RoundTripper { return g.next }

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := g.next.RoundTrip(req)
	if err != nil || resp == nil {
		return resp, err
	}
	g.answers.Add(1)
	if ra := resp.Header.Get("Retry-After"); ra != "" && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500) {
		key := req.Method + " " + req.URL.String()
		g.mu.Lock()
		g.retries[key]++
		n := g.retries[key]
		g.mu.Unlock()
		secs, perr := strconv.Atoi(ra)
		if perr != nil || n > maxRetryAfter || time.Duration(secs)*time.Second > maxRetryAfterWait {
			// Without the header client-go reports the answer instead of waiting for another.
			resp.Header.Del("Retry-After")
		}
	}
	if resp.Body != nil {
		resp.Body = &limitedBody{rc: resp.Body, left: MaxResponseBytes, limit: MaxResponseBytes}
	}
	return resp, nil
}

// limitedBody fails with a *ResponseTooLargeError once more than limit bytes are read.
type limitedBody struct {
	rc    io.ReadCloser
	left  int64
	limit int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, &ResponseTooLargeError{Limit: b.limit}
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, &ResponseTooLargeError{Limit: b.limit}
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// goTypeRE matches what Go's decoders say about Go types (`Go value of type
// source.rawPage[...]`), which mean nothing to a user.
var goTypeRE = regexp.MustCompile(`(?:into )?Go (?:value of type|struct field) \S+(?: of type \S+)?`)

// userText is an error's message without Go type names.
func userText(err error) string {
	msg := goTypeRE.ReplaceAllString(err.Error(), "into the expected value")
	return strings.ReplaceAll(msg, "unexpected error when reading response body. Please retry. Original error: ", "")
}

// readFailure names a failed read for a warning: what went wrong, then what was read.
// `forbidden: alice cannot list X in namespace N` is kubectl's wording; the others are
// `throttled: cannot list X in namespace N: ...` and so on. where is a namespace, "" for all
// namespaces, or "-" for a cluster-scoped object.
func readFailure(c *clients, err error, verb, what, where string) string {
	scope := " in all namespaces"
	switch where {
	case "-":
		scope = ""
	case "":
	default:
		scope = " in namespace " + where
	}
	if apierrors.IsForbidden(err) {
		user := c.user
		if m := forbiddenUserRE.FindStringSubmatch(err.Error()); m != nil {
			user = m[1]
		}
		if user == "" {
			user = "the current user"
		}
		return fmt.Sprintf("forbidden: %s cannot %s %s%s", user, verb, what, scope)
	}
	read := fmt.Sprintf("cannot %s %s%s", verb, what, scope)
	var tooLarge *ResponseTooLargeError
	var expired *expiredError
	var ne interface{ Timeout() bool }
	switch {
	case errors.As(err, &tooLarge):
		return fmt.Sprintf("too large: %s: %v", read, tooLarge)
	case errors.As(err, &expired):
		return fmt.Sprintf("expired: %s: %v", read, expired)
	case apierrors.IsUnauthorized(err):
		return fmt.Sprintf("unauthorized: %s: %s", read, userText(err))
	case apierrors.IsTooManyRequests(err):
		return fmt.Sprintf("throttled (429): %s: %s", read, userText(err))
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("not found: %s: %s", read, userText(err))
	case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err), errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		timeout := DefaultRequestTimeout
		if c.timeout > 0 {
			timeout = c.timeout
		}
		return fmt.Sprintf("timed out: %s: no complete answer within the request timeout (%s; --request-timeout changes it)", read, timeout)
	case apiStatus(err):
		var status apierrors.APIStatus
		errors.As(err, &status)
		if code := status.Status().Code; code >= 500 {
			return fmt.Sprintf("server error (%d): %s: %s", code, read, userText(err))
		}
		return fmt.Sprintf("%s: %s", read, userText(err))
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), strings.Contains(err.Error(), "connection reset"),
		strings.Contains(err.Error(), "broken pipe"), strings.Contains(err.Error(), "use of closed network connection"):
		return fmt.Sprintf("connection lost: %s: the answer was cut off (%s)", read, userText(err))
	}
	return fmt.Sprintf("%s: %s", read, userText(err))
}

// servedVersion returns the version of ki's group the cluster serves that the plugin can read
// ki at, other than ki's own (v1): v1beta1, then v1alpha3. One discovery request per group,
// whatever the number of kinds and namespaces read; "" when there is none or discovery fails.
func (c *clients) servedVersion(ctx context.Context, ki *kindInfo) string {
	if c.kube == nil {
		return ""
	}
	rc := c.kube.Discovery().RESTClient()
	if rc == nil {
		return ""
	}
	if r, ok := rc.(*rest.RESTClient); ok && r == nil {
		return ""
	}
	c.discoveryMu.Lock()
	defer c.discoveryMu.Unlock()
	if c.served == nil {
		c.served = map[string][]string{}
	}
	versions, done := c.served[ki.group]
	if !done {
		raw, err := rc.Get().AbsPath("/apis", ki.group).Do(ctx).Raw()
		var g metav1.APIGroup
		if err == nil && json.Unmarshal(raw, &g) == nil {
			for _, v := range g.Versions {
				versions = append(versions, v.Version)
			}
		}
		c.served[ki.group] = versions
	}
	for _, v := range ki.versions[1:] {
		if slices.Contains(versions, v) && c.istioRESTAt(ki.group+"/"+v) != nil {
			return v
		}
	}
	return ""
}

// silent is true for a request that timed out against a server that has not answered one
// request yet: a server that accepts connections and never says a word is not there to read,
// and every other read would wait out the timeout too. A timeout once the server has answered
// is one slow read.
func (c *clients) silent(err error) bool {
	if err == nil || c.answers == nil || c.answers.Load() > 0 || apiStatus(err) {
		return false
	}
	var ne interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// plural spells a kind in the plural: DestinationRules, ServiceEntries, AuthorizationPolicies.
func plural(kind string) string {
	if strings.HasSuffix(kind, "y") && !strings.HasSuffix(kind, "ay") && !strings.HasSuffix(kind, "ey") {
		return strings.TrimSuffix(kind, "y") + "ies"
	}
	return kind + "s"
}

// Plural spells a kind in the plural, as warnings do: DestinationRules, ServiceEntries.
func Plural(kind string) string { return plural(kind) }
