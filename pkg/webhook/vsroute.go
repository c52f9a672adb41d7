package webhook

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
)

// The rest of validateHTTPRoute (pkg/config/validation/virtualservice.go): header
// manipulations, CORS, fault injection, mirrors, redirect, direct response, retries, rewrite.

// routeAsWritten is what istiod does with most HTTP route values the webhook rejects.
const routeAsWritten = "istiod does not check it and copies it into the Envoy route as written; Envoy may reject the route configuration (the proxy NACKs it) where its own proto rules are stricter"

// supportedRetryOn is supportedRetryOnPolicies (pkg/config/validation/validation.go).
var supportedRetryOn = []string{"5xx", "gateway-error", "reset", "reset-before-request", "connect-failure", "retriable-4xx", "refused-stream",
	"retriable-status-codes", "retriable-headers", "envoy-ratelimited", "http3-post-connect-failure",
	"cancelled", "deadline-exceeded", "internal", "resource-exhausted", "unavailable"}

// supportedCORSMethods is validation.go's supportedCORSMethods.
var supportedCORSMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "CONNECT", "OPTIONS", "TRACE", "*"}

// grpcStatuses is grpc.SupportedGRPCStatus (pkg/util/grpc/codes.go).
var grpcStatuses = []string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
	"PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
	"UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

func isInternalHeader(k string) bool {
	return strings.HasPrefix(k, ":") || strings.EqualFold(k, "host")
}
func isAuthorityHeader(k string) bool {
	return strings.EqualFold(k, ":authority") || strings.EqualFold(k, "host")
}

// headerWithAuthorityOperation is ValidateHTTPHeaderWithAuthorityOperationName.
func headerWithAuthorityOperation(name string) string {
	if name == "" {
		return "header name cannot be empty"
	}
	if isInternalHeader(name) && !isAuthorityHeader(name) {
		return fmt.Sprintf(`invalid header %q: header cannot have ":" prefix`, name)
	}
	return ""
}

// headerOperation is ValidateHTTPHeaderOperationName.
func headerOperation(name string) string {
	switch {
	case name == "":
		return "header name cannot be empty"
	case strings.EqualFold(name, "host"):
		return fmt.Sprintf(`invalid header %q: cannot set Host header`, name)
	case isInternalHeader(name):
		return fmt.Sprintf(`invalid header %q: header cannot have ":" prefix`, name)
	}
	return ""
}

// headerValue is ValidateHTTPHeaderValue: no control characters, and Envoy's %VARIABLE% syntax
// (validateHeaderValue, pkg/config/validation/header_value_validator.go).
func headerValue(v string) string {
	for _, c := range []byte(v) {
		if c <= 0x08 || (c >= 0x0A && c <= 0x1F) || c == 0x7F {
			return fmt.Sprintf("header value configuration %s is invalid", v)
		}
	}
	if msg := headerValueSyntax(v); msg != "" {
		return "header value configuration: " + msg
	}
	return ""
}

// headerValueSyntax is validateHeaderValue's state machine.
func headerValueSyntax(v string) string {
	const (
		literal = iota
		variableName
		expectArray
		expectString
		inString
		expectDelimiterOrEnd
		expectArgsEnd
		expectVariableEnd
	)
	state := literal
	for pos := 0; pos < len(v); pos++ {
		ch := v[pos]
		hasNext := pos+1 < len(v)
		switch state {
		case literal:
			if ch != '%' {
				continue
			}
			if !hasNext {
				return "invalid header configuration. Un-escaped %"
			}
			if v[pos+1] == '%' {
				pos++
				continue
			}
			state = variableName
		case variableName:
			if ch == '%' {
				state = literal
			} else if ch == '(' {
				state = expectArray
			}
		case expectArray:
			if ch == '[' {
				state = expectString
			} else if ch != ' ' {
				state = inString
			}
		case expectDelimiterOrEnd:
			switch {
			case ch == ',':
				state = expectString
			case ch == ']':
				state = expectArgsEnd
			case ch != ' ':
				return "invalid header configuration. Expecting ',', ']', or whitespace"
			}
		case expectString:
			if ch == '"' {
				state = inString
			} else if ch != ' ' {
				return "invalid header configuration. Expecting '\"'"
			}
		case inString:
			switch ch {
			case '\\':
				if !hasNext {
					return "invalid header configuration. Un-terminated backslash in JSON string"
				}
				pos++
			case ')':
				state = expectVariableEnd
			case '"':
				state = expectDelimiterOrEnd
			}
		case expectArgsEnd:
			if ch == ')' {
				state = expectVariableEnd
			} else if ch != ' ' {
				return "invalid header configuration. Expecting ')' or whitespace after '{}', but found '{}'"
			}
		case expectVariableEnd:
			if ch == '%' {
				state = literal
			} else if ch != ' ' {
				return "invalid header configuration. Expecting '%' or whitespace after"
			}
		}
	}
	if state != literal {
		return fmt.Sprintf("invalid header configuration. Un-terminated variable expression '%s'", v)
	}
	return ""
}

// headers checks a Headers block: request add/set names may be the authority, request remove
// and response names may not be internal, values follow Envoy's syntax. Istio walks the maps in
// Go's random order; the errors come here by name.
func (l *list) headers(at string, h *networking.Headers) {
	if h == nil {
		return
	}
	ops := []struct {
		field string
		m     map[string]string
		name  func(string) string
	}{
		{"request.add", h.GetRequest().GetAdd(), headerWithAuthorityOperation},
		{"request.set", h.GetRequest().GetSet(), headerWithAuthorityOperation},
		{"response.add", h.GetResponse().GetAdd(), headerOperation},
		{"response.set", h.GetResponse().GetSet(), headerOperation},
	}
	for _, op := range ops[:2] {
		l.headerMap(at, op.field, op.m, op.name)
	}
	for i, name := range h.GetRequest().GetRemove() {
		if msg := headerOperation(name); msg != "" {
			l.add(fmt.Sprintf("%s.request.remove[%d]", at, i), msg, routeAsWritten)
		}
	}
	for _, op := range ops[2:] {
		l.headerMap(at, op.field, op.m, op.name)
	}
	for i, name := range h.GetResponse().GetRemove() {
		if msg := headerOperation(name); msg != "" {
			l.add(fmt.Sprintf("%s.response.remove[%d]", at, i), msg, routeAsWritten)
		}
	}
}

func (l *list) headerMap(at, field string, m map[string]string, name func(string) string) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		f := fmt.Sprintf("%s.%s[%s]", at, field, k)
		if msg := name(k); msg != "" {
			l.add(f, msg, routeAsWritten)
		}
		if msg := headerValue(m[k]); msg != "" {
			l.add(f, msg, routeAsWritten)
		}
	}
}

// authorityRewrite is validateAuthorityRewrite: the authority is set in one place only. Istio
// walks request.set then request.add in Go's random order; here by name.
func (l *list) authorityRewrite(at string, rw *networking.HTTPRewrite, h *networking.Headers) {
	current := rw.GetAuthority()
	for _, m := range []map[string]string{h.GetRequest().GetSet(), h.GetRequest().GetAdd()} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if !isAuthorityHeader(k) {
				continue
			}
			if current != "" {
				l.add(at+".headers", fmt.Sprintf("authority header cannot be set multiple times: have %q, attempting to set %q", current, m[k]), routeAsWritten)
				return
			}
			current = m[k]
		}
	}
}

// percentage is validatePercentage.
func percentage(p *networking.Percent) string {
	if p != nil && (p.Value < 0 || p.Value > 100 || (p.Value > 0 && p.Value < 0.0001)) {
		return fmt.Sprintf("percentage %v is neither 0.0, nor in range [0.0001, 100.0]", p.Value)
	}
	return ""
}

// httpStatus is validateHTTPStatus.
func httpStatus(s int32) string {
	if s < 200 || s > 600 {
		return fmt.Sprintf("HTTP status %d is not in range 200-599", s)
	}
	return ""
}

// routeExtras is the rest of validateHTTPRoute, in its order: headers, CORS, fault, mirrors,
// redirect, direct response, retries, rewrite and the authority rewrite.
func (l *list) routeExtras(at string, h *networking.HTTPRoute) {
	l.headers(at+".headers", h.GetHeaders())
	if c := h.GetCorsPolicy(); c != nil {
		ca := at + ".corsPolicy"
		for i, o := range c.GetAllowOrigins() {
			var m string
			switch o.GetMatchType().(type) {
			case *networking.StringMatch_Exact:
				m = o.GetExact()
			case *networking.StringMatch_Prefix:
				m = o.GetPrefix()
			case *networking.StringMatch_Regex:
				m = o.GetRegex()
			}
			f := fmt.Sprintf("%s.allowOrigins[%d]", ca, i)
			if m == "" {
				l.add(f, fmt.Sprintf("'%v' is not a valid match type for CORS allow origins", m), routeAsWritten)
			} else if msg := stringRegexp(o, "corsPolicy.allowOrigins"); msg != "" {
				l.add(f, msg, routeAsWritten)
			}
		}
		for i, m := range c.GetAllowMethods() {
			if !slices.Contains(supportedCORSMethods, m) {
				l.add(fmt.Sprintf("%s.allowMethods[%d]", ca, i), fmt.Sprintf("%q is not a supported HTTP method", m), routeAsWritten)
			}
		}
		for _, hs := range []struct {
			field string
			names []string
		}{{"allowHeaders", c.GetAllowHeaders()}, {"exposeHeaders", c.GetExposeHeaders()}} {
			for i, n := range hs.names {
				f := fmt.Sprintf("%s.%s[%d]", ca, hs.field, i)
				if n == "" {
					l.add(f, "header name cannot be empty", routeAsWritten)
				} else if n != "*" && !headerNameRegexp.MatchString(n) {
					l.add(f, fmt.Sprintf("header name %s is not a valid header name", n), routeAsWritten)
				}
			}
		}
		if c.MaxAge != nil {
			l.checkDuration(ca+".maxAge", c.MaxAge, routeAsWritten)
			if c.MaxAge.Nanos > 0 {
				l.add(ca+".maxAge", "max_age duration is accurate only to seconds precision", routeAsWritten)
			}
		}
	}
	if f := h.GetFault(); f != nil {
		fa := at + ".fault"
		if f.Abort == nil && f.Delay == nil {
			l.add(fa, "HTTP fault injection must have an abort and/or a delay", routeAsWritten)
		}
		if a := f.GetAbort(); a != nil {
			if msg := percentage(a.Percentage); msg != "" {
				l.add(fa+".abort.percentage", msg, routeAsWritten)
			}
			switch a.GetErrorType().(type) {
			case *networking.HTTPFaultInjection_Abort_GrpcStatus:
				if !slices.Contains(grpcStatuses, a.GetGrpcStatus()) {
					l.add(fa+".abort.grpcStatus", fmt.Sprintf("gRPC status %q is not supported. See https://github.com/grpc/grpc/blob/master/doc/statuscodes.md for a list of supported codes, for example 'NOT_FOUND'", a.GetGrpcStatus()), routeAsWritten)
				}
			case *networking.HTTPFaultInjection_Abort_Http2Error:
				l.add(fa+".abort.http2Error", "HTTP/2 abort fault injection not supported yet", routeAsWritten)
			case *networking.HTTPFaultInjection_Abort_HttpStatus:
				if msg := httpStatus(a.GetHttpStatus()); msg != "" {
					l.add(fa+".abort.httpStatus", msg, routeAsWritten)
				}
			}
		}
		if d := f.GetDelay(); d != nil {
			if msg := percentage(d.Percentage); msg != "" {
				l.add(fa+".delay.percentage", msg, routeAsWritten)
			}
			switch v := d.GetHttpDelayType().(type) {
			case *networking.HTTPFaultInjection_Delay_FixedDelay:
				l.checkDuration(fa+".delay.fixedDelay", v.FixedDelay, routeAsWritten)
			case *networking.HTTPFaultInjection_Delay_ExponentialDelay:
				l.checkDuration(fa+".delay.exponentialDelay", v.ExponentialDelay, routeAsWritten)
				l.add(fa+".delay.exponentialDelay", "exponentialDelay not supported yet", routeAsWritten)
			}
		}
	}
	for i, m := range h.GetMirrors() {
		ma := fmt.Sprintf("%s.mirrors[%d]", at, i)
		switch {
		case m == nil:
			l.add(ma, "mirror cannot be null", routeAsWritten)
			continue
		case m.Destination == nil:
			l.add(ma+".destination", "destination is required for mirrors", routeAsWritten)
			continue
		}
		l.destination(ma+".destination", m.Destination)
		if p := m.Percentage; p != nil {
			if p.GetValue() > 100 {
				l.add(ma+".percentage", fmt.Sprintf("mirror percentage must have a max value of 100 (it has %f)", p.GetValue()), routeAsWritten)
			}
			if p.GetValue() < 0 {
				l.add(ma+".percentage", fmt.Sprintf("mirror percentage must have a min value of 0 (it has %f)", p.GetValue()), routeAsWritten)
			}
		}
	}
	if msg := redirect(h.GetRedirect(), h.GetMatch()); msg != "" {
		l.add(at+".redirect", msg, routeAsWritten)
	}
	if d := h.GetDirectResponse(); d != nil {
		size := 0
		switch b := d.GetBody().GetSpecifier().(type) {
		case *networking.HTTPBody_String_:
			size = len(b.String_)
		case *networking.HTTPBody_Bytes:
			size = len(b.Bytes)
		}
		if size > 1024*1024 {
			l.add(at+".directResponse.body", "large direct_responses may impact control plane performance, must be less than 1MB", routeAsWritten)
		}
		if msg := httpStatus(int32(d.Status)); msg != "" {
			l.add(at+".directResponse.status", msg, routeAsWritten)
		}
	}
	if r := h.GetRetries(); r != nil {
		ra := at + ".retries"
		if r.Attempts < 0 {
			l.add(ra+".attempts", "attempts cannot be negative", routeAsWritten)
		}
		if r.Attempts == 0 && (r.PerTryTimeout != nil || r.RetryOn != "" || r.RetryRemoteLocalities != nil) {
			l.add(ra+".attempts", "http retry policy configured when attempts are set to 0 (disabled)", "istiod disables retries for the route: the other retry settings are not used")
		}
		l.checkDuration(ra+".perTryTimeout", r.PerTryTimeout, routeAsWritten)
		if r.RetryOn != "" {
			for _, p := range strings.Split(r.RetryOn, ",") {
				i, _ := strconv.Atoi(p)
				if http.StatusText(i) == "" && !slices.Contains(supportedRetryOn, p) {
					l.add(ra+".retryOn", fmt.Sprintf("%q is not a valid retryOn policy", p), routeAsWritten)
				}
			}
		}
		l.checkDuration(ra+".backoff", r.Backoff, routeAsWritten)
	}
	if rw := h.GetRewrite(); rw != nil {
		msg := ""
		switch {
		case rw.Uri != "" && rw.UriRegexRewrite != nil:
			msg = "rewrite may only contain one of URI or UriRegexRewrite"
		case rw.Uri == "" && rw.UriRegexRewrite == nil && rw.Authority == "":
			msg = "rewrite must specify at least one of URI, UriRegexRewrite, or authority. Only one of URI or UriRegexRewrite may be specified"
		case rw.UriRegexRewrite != nil:
			// validateURIRegexRewrite, joined with errors.Join.
			inner := ""
			if rr := rw.UriRegexRewrite; rr.Match == "" || rr.Rewrite == "" {
				inner = "UriRegexRewrite requires both Rewrite and Match fields to be specified"
			} else {
				inner = stringRegexp(&networking.StringMatch{MatchType: &networking.StringMatch_Regex{Regex: rr.Match}}, "HTTPRewrite.UriRegexRewrite.Match")
			}
			if inner != "" {
				msg = errors.Join(errors.New("UriRegexRewrite has errors"), errors.New(inner)).Error()
			}
		}
		if msg != "" {
			l.add(at+".rewrite", msg, routeAsWritten)
		}
	}
	l.authorityRewrite(at, h.GetRewrite(), h.GetHeaders())
}

// redirect is validateHTTPRedirect: its first error, or "".
func redirect(r *networking.HTTPRedirect, matches []*networking.HTTPMatchRequest) string {
	if r == nil {
		return ""
	}
	if r.Uri != "" && r.PrefixRewrite != "" {
		return "redirect may only specify one of uri or prefix_rewrite"
	}
	if r.PrefixRewrite != "" {
		for _, m := range matches {
			if _, isPrefix := m.GetUri().GetMatchType().(*networking.StringMatch_Prefix); m.GetUri() != nil && !isPrefix {
				return "redirect prefix_rewrite requires all URI matches to use prefix match type"
			}
		}
	}
	if r.Uri == "" && r.PrefixRewrite == "" && r.Authority == "" && r.RedirectPort == nil && r.Scheme == "" {
		return "redirect must specify URI, authority, scheme, or port"
	}
	if r.RedirectCode != 0 && (r.RedirectCode < 300 || r.RedirectCode > 399) {
		return fmt.Sprintf("%d is not a valid redirect code, must be 3xx", r.RedirectCode)
	}
	if r.Scheme != "" && r.Scheme != "http" && r.Scheme != "https" {
		return `invalid redirect scheme, must be "http" or "https"`
	}
	if r.GetPort() > 0 {
		return portNumber(int(r.GetPort()))
	}
	return ""
}
