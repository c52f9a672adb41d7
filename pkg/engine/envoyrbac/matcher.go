package envoyrbac

import (
	"regexp"
	"strings"

	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// The matchers of pilot/pkg/security/authz/matcher (string.go, header.go, metadata.go).

func stringMatcher(v string) *matcherpb.StringMatcher { return stringMatcherWithPrefix(v, "") }

func stringOrMatcher(vs []string) *matcherpb.ValueMatcher {
	ms := []*matcherpb.ValueMatcher{}
	for _, v := range vs {
		ms = append(ms, &matcherpb.ValueMatcher{MatchPattern: &matcherpb.ValueMatcher_StringMatch{StringMatch: stringMatcher(v)}})
	}
	return orMatcher(ms)
}

func orMatcher(ms []*matcherpb.ValueMatcher) *matcherpb.ValueMatcher {
	if len(ms) == 1 {
		return ms[0]
	}
	return &matcherpb.ValueMatcher{MatchPattern: &matcherpb.ValueMatcher_OrMatch{OrMatch: &matcherpb.OrMatcher{ValueMatchers: ms}}}
}

func stringMatcherRegex(regex string) *matcherpb.StringMatcher {
	return &matcherpb.StringMatcher{MatchPattern: &matcherpb.StringMatcher_SafeRegex{SafeRegex: &matcherpb.RegexMatcher{Regex: regex}}}
}

func stringMatcherPrefix(prefix string, ignoreCase bool) *matcherpb.StringMatcher {
	return &matcherpb.StringMatcher{IgnoreCase: ignoreCase, MatchPattern: &matcherpb.StringMatcher_Prefix{Prefix: prefix}}
}

func stringMatcherSuffix(suffix string, ignoreCase bool) *matcherpb.StringMatcher {
	return &matcherpb.StringMatcher{IgnoreCase: ignoreCase, MatchPattern: &matcherpb.StringMatcher_Suffix{Suffix: suffix}}
}

func stringMatcherExact(exact string, ignoreCase bool) *matcherpb.StringMatcher {
	return &matcherpb.StringMatcher{IgnoreCase: ignoreCase, MatchPattern: &matcherpb.StringMatcher_Exact{Exact: exact}}
}

// stringMatcherWithPrefix is StringMatcherWithPrefix: `*` becomes the regex `.+`, a leading
// `*` a suffix match (a regex when prefix is set), a trailing `*` a prefix match.
func stringMatcherWithPrefix(v, prefix string) *matcherpb.StringMatcher {
	switch {
	case v == "*":
		return stringMatcherRegex(".+")
	case strings.HasPrefix(v, "*"):
		if prefix == "" {
			return stringMatcherSuffix(strings.TrimPrefix(v, "*"), false)
		}
		return stringMatcherRegex(prefix + ".*" + regexp.QuoteMeta(strings.TrimPrefix(v, "*")))
	case strings.HasSuffix(v, "*"):
		return stringMatcherPrefix(prefix+strings.TrimSuffix(v, "*"), false)
	default:
		return stringMatcherExact(prefix+v, false)
	}
}

// headerMatcher is HeaderMatcher (case-sensitive); hostMatcher is HostMatcher (case-insensitive).
func headerMatcher(k, v string) *routepb.HeaderMatcher { return headerLike(k, v, false) }

func hostMatcher(k, v string) *routepb.HeaderMatcher { return headerLike(k, v, true) }

func headerLike(k, v string, ignoreCase bool) *routepb.HeaderMatcher {
	var sm *matcherpb.StringMatcher
	switch {
	case v == "*":
		return &routepb.HeaderMatcher{Name: k, HeaderMatchSpecifier: &routepb.HeaderMatcher_PresentMatch{PresentMatch: true}}
	case strings.HasPrefix(v, "*"):
		sm = stringMatcherSuffix(v[1:], ignoreCase)
	case strings.HasSuffix(v, "*"):
		sm = stringMatcherPrefix(v[:len(v)-1], ignoreCase)
	default:
		sm = stringMatcherExact(v, ignoreCase)
	}
	return &routepb.HeaderMatcher{Name: k, HeaderMatchSpecifier: &routepb.HeaderMatcher_StringMatch{StringMatch: sm}}
}

func pathMatcher(path string) *matcherpb.PathMatcher {
	return &matcherpb.PathMatcher{Rule: &matcherpb.PathMatcher_Path{Path: stringMatcher(path)}}
}

func metadataValueMatcher(filter, key string, m *matcherpb.ValueMatcher) *matcherpb.MetadataMatcher {
	return &matcherpb.MetadataMatcher{
		Filter: filter,
		Path:   []*matcherpb.MetadataMatcher_PathSegment{{Segment: &matcherpb.MetadataMatcher_PathSegment_Key{Key: key}}},
		Value:  m,
	}
}

func metadataStringMatcher(filter, key string, m *matcherpb.StringMatcher) *matcherpb.MetadataMatcher {
	return metadataValueMatcher(filter, key, &matcherpb.ValueMatcher{MatchPattern: &matcherpb.ValueMatcher_StringMatch{StringMatch: m}})
}

func metadataListMatcher(filter string, keys []string, value *matcherpb.StringMatcher, extendedJwt bool) *matcherpb.MetadataMatcher {
	return metadataListValueMatcher(filter, keys, &matcherpb.ValueMatcher{MatchPattern: &matcherpb.ValueMatcher_StringMatch{StringMatch: value}}, extendedJwt)
}

func metadataListValueMatcher(filter string, keys []string, value *matcherpb.ValueMatcher, extendedJwt bool) *matcherpb.MetadataMatcher {
	list := &matcherpb.ListMatcher{MatchPattern: &matcherpb.ListMatcher_OneOf{OneOf: value}}
	paths := make([]*matcherpb.MetadataMatcher_PathSegment, 0, len(keys))
	for _, k := range keys {
		paths = append(paths, &matcherpb.MetadataMatcher_PathSegment{Segment: &matcherpb.MetadataMatcher_PathSegment_Key{Key: k}})
	}
	out := &matcherpb.MetadataMatcher{Filter: filter, Path: paths}
	if extendedJwt {
		out.Value = &matcherpb.ValueMatcher{MatchPattern: &matcherpb.ValueMatcher_OrMatch{OrMatch: &matcherpb.OrMatcher{
			ValueMatchers: []*matcherpb.ValueMatcher{{MatchPattern: &matcherpb.ValueMatcher_ListMatch{ListMatch: list}}, value},
		}}}
	} else {
		out.Value = &matcherpb.ValueMatcher{MatchPattern: &matcherpb.ValueMatcher_ListMatch{ListMatch: list}}
	}
	return out
}

// JWT claims live in the dynamic metadata of Envoy's jwt_authn filter (xds/filters).
const (
	jwtFilterName    = "envoy.filters.http.jwt_authn"
	jwtFilterPayload = "payload"
)

func metadataStringMatcherForJWTClaim(claim string, m *matcherpb.StringMatcher) *matcherpb.MetadataMatcher {
	return &matcherpb.MetadataMatcher{
		Filter: jwtFilterName,
		Path: []*matcherpb.MetadataMatcher_PathSegment{
			{Segment: &matcherpb.MetadataMatcher_PathSegment_Key{Key: jwtFilterPayload}},
			{Segment: &matcherpb.MetadataMatcher_PathSegment_Key{Key: claim}},
		},
		Value: &matcherpb.ValueMatcher{MatchPattern: &matcherpb.ValueMatcher_StringMatch{StringMatch: m}},
	}
}

func metadataListValueMatcherForJWTClaims(claims []string, value *matcherpb.ValueMatcher) *matcherpb.MetadataMatcher {
	return metadataListValueMatcher(jwtFilterName, append([]string{jwtFilterPayload}, claims...), value, true)
}
