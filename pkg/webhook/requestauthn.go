package webhook

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"

	"github.com/lestrrat-go/jwx/jwk"
	security "istio.io/api/security/v1beta1"
)

// raAsWritten is what istiod does with most RequestAuthentication values the webhook rejects.
const raAsWritten = "istiod does not check it and builds the sidecar's JWT authentication filter from the rule as written"

// jwksAsWritten is what happens to an inline JWKS the webhook cannot parse
// (pilot/pkg/security/authn policy_applier.go and model BuildLocalJwks pass it through).
const jwksAsWritten = "istiod passes the text unchecked to the sidecar's JWT authentication filter as its inline JWKS; " +
	"Envoy rejects a listener whose inline JWKS it cannot read (\"invalid local jwks\"), so the sidecar keeps the inbound listener it had, or has none"

// strictHeaderName is validation.go's validStrictHeaderNameRegex.
var strictHeaderName = regexp.MustCompile("^[-_A-Za-z0-9]+$")

// RequestAuthentication returns what ValidateRequestAuthentication rejects, after the metadata
// checks: the selector and targetRefs (as for an AuthorizationPolicy, without its prefix), then
// each JWT rule (validateJwtRule), the inline `jwks` parsed with the JWK library Istio uses
// (github.com/lestrrat-go/jwx v1, at the version Istio pins). Its warnings are not reported.
func RequestAuthentication(m Meta, spec *security.RequestAuthentication) []Problem {
	if ps := checkMetadata(m, false, ""); ps != nil {
		return ps
	}
	var l list
	l.policyTargets(spec.GetSelector().GetMatchLabels(), spec.GetSelector() != nil, spec.GetTargetRef(), spec.GetTargetRefs())
	for i, r := range spec.GetJwtRules() {
		if r == nil {
			continue
		}
		at := fmt.Sprintf("spec.jwtRules[%d]", i)
		for j, a := range r.Audiences {
			if a == "" {
				l.add(fmt.Sprintf("%s.audiences[%d]", at, j), "audience must be non-empty string", raAsWritten)
			}
		}
		if r.Issuer == "" && r.JwksUri == "" {
			l.add(at+".issuer", "issuer or jwksUri must be non-empty string", raAsWritten)
		}
		if r.JwksUri != "" {
			if msg := jwksURI(r.JwksUri); msg != "" {
				l.add(at+".jwksUri", msg, raAsWritten)
			}
		}
		if r.Jwks != "" {
			// The JWK library and version Istio's validation parses with, for its words.
			if _, err := jwk.Parse([]byte(r.Jwks)); err != nil {
				l.add(at+".jwks", fmt.Sprintf("jwks parse error: %v", err), jwksAsWritten)
			}
		}
		for j, h := range r.FromHeaders {
			f := fmt.Sprintf("%s.fromHeaders[%d]", at, j)
			if h == nil {
				l.add(f, "location header name must be non-null", raAsWritten)
				continue
			}
			if h.Name == "" {
				l.add(f+".name", "location header name must be non-empty string", raAsWritten)
			}
		}
		for j, p := range r.FromParams {
			if p == "" {
				l.add(fmt.Sprintf("%s.fromParams[%d]", at, j), "location query must be non-empty string", raAsWritten)
			}
		}
		for j, c := range r.FromCookies {
			if c == "" {
				l.add(fmt.Sprintf("%s.fromCookies[%d]", at, j), "cookie name must be non-empty string", raAsWritten)
			}
		}
		for j, o := range r.OutputClaimToHeaders {
			f := fmt.Sprintf("%s.outputClaimToHeaders[%d]", at, j)
			switch {
			case o == nil:
				l.add(f, "outputClaimToHeaders must not be null", raAsWritten)
			case o.Claim == "" || o.Header == "":
				l.add(f, "outputClaimToHeaders header and claim value must be non-empty string", raAsWritten)
			case !strictHeaderName.MatchString(o.Header):
				l.add(f+".header", fmt.Sprintf("header name %s is not a valid header name", o.Header), raAsWritten)
			}
		}
		l.checkDuration(at+".timeout", r.Timeout, raAsWritten)
	}
	return l
}

// jwksURI is security.ParseJwksURI's errors: a URL, with scheme http or https, and a port that
// is a number.
func jwksURI(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return err.Error()
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Sprintf("URI scheme %q is not supported", u.Scheme)
	}
	if p := u.Port(); p != "" {
		if _, err := strconv.Atoi(p); err != nil {
			return err.Error()
		}
	}
	return ""
}
