package source

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"

	"istio.io/client-go/pkg/clientset/versioned/scheme"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// listAll reads every page of a list. When a continue token expires mid-way, the list is
// restarted without paging, as client-go's pager does, at most maxListRestarts times. Istio
// kinds are read as raw JSON (at version, or at the kind's own version when version is "") and
// each page is decoded while the next one is read. A selector lists only the objects that match
// it (a label selector, as the API server takes it).
func listAll(ctx context.Context, c *clients, ki *kindInfo, ns, selector, version string) ([]object, error) {
	if ki.istio {
		if version == "" {
			version = ki.versions[0]
		}
		if rc := c.istioRESTAt(ki.group + "/" + version); rc != nil {
			return listRaw(ctx, rc, ki, ns, selector, c.ruleInFull, c.vsNeeded)
		}
	}
	opts := metav1.ListOptions{Limit: pageSize, LabelSelector: selector}
	var out []object
	restarts := 0
	for {
		page, cont, err := ki.list(ctx, c, ns, opts)
		if err != nil {
			if apierrors.IsResourceExpired(err) && opts.Continue != "" {
				if restarts == maxListRestarts {
					return nil, &expiredError{restarts: restarts, last: err}
				}
				restarts++
				opts, out = metav1.ListOptions{LabelSelector: selector}, nil
				continue
			}
			return nil, err
		}
		for _, o := range page {
			o.SetManagedFields(nil)
		}
		out = append(out, page...)
		if cont == "" {
			return out, nil
		}
		opts.Continue = cont
	}
}

// istioRESTAt is the REST client of the Istio clientset that serves a group and version, or
// nil (a fake clientset has none).
func (c *clients) istioRESTAt(apiVersion string) rest.Interface {
	if c.istio == nil {
		return nil
	}
	var rc rest.Interface
	switch apiVersion {
	case "networking.istio.io/v1":
		rc = c.istio.NetworkingV1().RESTClient()
	case "networking.istio.io/v1beta1":
		rc = c.istio.NetworkingV1beta1().RESTClient()
	case "networking.istio.io/v1alpha3":
		rc = c.istio.NetworkingV1alpha3().RESTClient()
	case "security.istio.io/v1":
		rc = c.istio.SecurityV1().RESTClient()
	case "security.istio.io/v1beta1":
		rc = c.istio.SecurityV1beta1().RESTClient()
	}
	if r, ok := rc.(*rest.RESTClient); ok && r == nil {
		return nil
	}
	return rc
}

// rawPage is one page of a list, read in one pass, each item read into I: a liveEnvelope
// (metadata decoded, the spec undecoded JSON), or the
// item's undecoded JSON.
type rawPage[I any] struct {
	Metadata struct {
		Continue string `json:"continue,omitempty"`
	} `json:"metadata"`
	Items []I `json:"items"`
	// buf, for a page of whole items, holds the body they are slices of (from itemBuffers).
	buf *[]byte
}

// fetchPage issues the request the Istio clientset's List issues (same path, query and Accept
// header) and reads the body into a rawPage.
func fetchPage[I any](ctx context.Context, rc rest.Interface, ki *kindInfo, ns string, opts metav1.ListOptions) (*rawPage[I], error) {
	// Stream, not Do: Do reads the whole body with io.ReadAll, which grows a new buffer for
	// every page, before decoding it; a failure's Status body becomes the same API error either
	// way (forbidden with the server's message, expired), as the clientset's Into reports it.
	body, err := rc.Get().
		Namespace(ns).
		Resource(ki.resource).
		VersionedParams(&opts, scheme.ParameterCodec).
		Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	p := &rawPage[I]{}
	if items, ok := any(&p.Items).(*[]json.RawMessage); ok {
		// Whole items, left undecoded: split by their structure, not decoded key by key.
		p.buf = itemBuffers.Get().(*[]byte)
		var err error
		if p.Metadata.Continue, *items, err = readItemPage(body, p.buf); err != nil {
			itemBuffers.Put(p.buf)
			return nil, pageError(err)
		}
		return p, nil
	}
	if err := decodePage(body, p); err != nil {
		return nil, pageError(err)
	}
	return p, nil
}

// decodePage decodes the JSON document r holds into v with pageJSON as it is read: what is
// decoded copies what it keeps (strings, raw specs) out of the decoder's small buffer. Like
// Unmarshal it rejects malformed or truncated JSON and a second value after the document.
func decodePage(r io.Reader, v any) error {
	rr := &recordingReader{r: r}
	br := bufio.NewReader(rr)
	// A list page is an object: the decoder would read `null` as an empty list.
	for off := 0; ; off++ {
		c, err := br.ReadByte()
		if err != nil {
			if rr.err != nil {
				return rr.err
			}
			return errTruncated
		}
		if c == ' ' || c == '\t' || c == '\r' || c == '\n' {
			continue
		}
		if c != '{' {
			return fmt.Errorf("invalid JSON at offset %d: want '{', found %q", off, c)
		}
		_ = br.UnreadByte()
		break
	}
	dec := pageJSON.NewDecoder(br)
	if err := dec.Decode(v); err != nil {
		if rr.err != nil {
			// The body could not be read (cut off, too large, timed out): that is the failure,
			// not the JSON it left unfinished.
			return rr.err
		}
		return err
	}
	if dec.More() {
		return errors.New("more data after the list")
	}
	return nil
}

// recordingReader keeps the first error of its reader other than io.EOF: the JSON decoder
// reports a body cut off as a syntax error, in words that lose the cause.
type recordingReader struct {
	r   io.Reader
	err error
}

func (r *recordingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF && r.err == nil {
		r.err = err
	}
	return n, err
}

type pageResult[I any] struct {
	page *rawPage[I]
	err  error
}

// listRaw reads every page of an Istio kind, decoding each page while the next is in flight.
// ruleInFull is Spec.DestinationRuleInFull, vsNeeded Spec.VirtualServiceNeeded.
func listRaw(ctx context.Context, rc rest.Interface, ki *kindInfo, ns, selector string, ruleInFull func(namespace, host string) bool, vsNeeded func(listed []byte) bool) ([]object, error) {
	switch {
	case ki.kind == KindVirtualService && vsNeeded != nil:
		return listPages(ctx, rc, ki, ns, selector, func(ki *kindInfo, item *json.RawMessage) (object, error) {
			return decodeNeededVirtualService(ki, *item, vsNeeded)
		})
	case ki.kind == KindDestinationRule && ruleInFull != nil:
		return listPages(ctx, rc, ki, ns, selector, func(ki *kindInfo, env *liveEnvelope[json.RawMessage]) (object, error) {
			return decodeDestinationRule(ki, env, ruleInFull)
		})
	}
	return listPages(ctx, rc, ki, ns, selector, decodeEnvelope)
}

// listPages reads every page of a list, decoding each item with decode; an item decode
// returns nil for is left out.
func listPages[I any](ctx context.Context, rc rest.Interface, ki *kindInfo, ns, selector string, decode func(*kindInfo, *I) (object, error)) ([]object, error) {
	opts := metav1.ListOptions{Limit: pageSize, LabelSelector: selector}
	var out []object
	restarts := 0
	page, err := fetchPage[I](ctx, rc, ki, ns, opts)
	for {
		if err != nil {
			if apierrors.IsResourceExpired(err) && opts.Continue != "" {
				if restarts == maxListRestarts {
					return nil, &expiredError{restarts: restarts, last: err}
				}
				restarts++
				opts, out = metav1.ListOptions{LabelSelector: selector}, nil
				page, err = fetchPage[I](ctx, rc, ki, ns, opts)
				continue
			}
			return nil, err
		}
		var next chan pageResult[I]
		if cont := page.Metadata.Continue; cont != "" {
			opts.Continue = cont
			next = make(chan pageResult[I], 1)
			go func(opts metav1.ListOptions) {
				var r pageResult[I]
				defer func() {
					// A panic on this goroutine would end the process: it fails the list.
					if p := recover(); p != nil {
						r = pageResult[I]{err: fmt.Errorf("internal error: %v", p)}
					}
					next <- r
				}()
				if testHookPrefetch != nil {
					testHookPrefetch(opts)
				}
				r.page, r.err = fetchPage[I](ctx, rc, ki, ns, opts)
			}(opts)
		}
		for i := range page.Items {
			o, err := decode(ki, &page.Items[i])
			if err != nil {
				if next != nil {
					<-next
				}
				return nil, err
			}
			if o != nil {
				out = append(out, o)
			}
		}
		if page.buf != nil {
			// What was kept of the items is decoded, copied out of the body.
			clear(page.Items)
			itemBuffers.Put(page.buf)
		}
		if next == nil {
			return out, nil
		}
		r := <-next
		page, err = r.page, r.err
	}
}

// testHookPrefetch, when set, is called on the goroutine that fetches a list's next page,
// before it does; tests use it to make that goroutine panic.
var testHookPrefetch func(opts metav1.ListOptions)

// pageError is the error of a page whose body could not be read or decoded: a body cut off or
// too large is said as such; a malformed one without the Go types it was decoded into.
func pageError(err error) error {
	var tooLarge *ResponseTooLargeError
	if errors.As(err, &tooLarge) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var ne interface{ Timeout() bool }
	var oe *net.OpError
	if errors.As(err, &ne) && ne.Timeout() || errors.As(err, &oe) {
		return err
	}
	return &malformedError{msg: decodeText(err), cause: err}
}

// decodeText is a decoder's message without the Go types and fields it names on the way to the
// failure (`source.rawPage[...].Items: ...: Name: unexpected EOF`): the parts of the message
// that are words, not Go paths.
func decodeText(err error) string {
	var keep []string
	for _, part := range strings.Split(userText(err), ": ") {
		// jsoniter puts the type it was reading right before its words, with a dot
		// (`source.rawPage[...].expected end of string, found '+'`).
		part = goTypePrefixRE.ReplaceAllString(part, "")
		if strings.Contains(part, " ") || len(keep) == 0 && !strings.ContainsAny(part, ".[]") {
			keep = append(keep, part)
		}
	}
	if len(keep) == 0 {
		return "malformed JSON"
	}
	return strings.Join(keep, ": ")
}

// goTypePrefixRE matches a Go type (generic, or package.Type, exported or not:
// `source.liveMeta`) and the dot that joins it to the decoder's words.
var goTypePrefixRE = regexp.MustCompile(`^(?:\S*\]|[a-z][\w/.-]*\.[A-Za-z_]\w*)\.`)

// malformedError is a list page that is not the JSON list it should be.
type malformedError struct {
	msg   string
	cause error
}

func (e *malformedError) Error() string { return "the answer is not a valid list: " + e.msg }

func (e *malformedError) Unwrap() error { return e.cause }
