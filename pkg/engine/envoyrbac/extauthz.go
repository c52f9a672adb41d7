package envoyrbac

import (
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rbacpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	extauthzhttp "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	httprbac "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	extauthztcp "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/ext_authz/v3"
	rbachttp "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	meshv1alpha1 "istio.io/api/mesh/v1alpha1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// builtExtAuthz is a resolved extension provider (authz/builder/extauthz.go).
type builtExtAuthz struct {
	index int
	http  *extauthzhttp.ExtAuthz
	tcp   *extauthztcp.ExtAuthz
	err   error
}

// processExtensionProviders is processExtensionProvider: every ext_authz provider of MeshConfig,
// validated and resolved to its cluster; a provider with errors keeps them.
func (b *builder) processExtensionProviders() map[string]*builtExtAuthz {
	resolved := map[string]*builtExtAuthz{}
	for i, p := range b.in.ExtensionProviders {
		var errs []error
		name := p.GetName()
		if name == "" {
			errs = append(errs, fmt.Errorf("extension provider name must not be empty, found empty at index: %d", i))
		} else if _, found := resolved[name]; found {
			errs = append(errs, fmt.Errorf("extension provider name must be unique, found duplicate: %s", name))
		}
		if name != "" {
			if err := validateProviderName(name); err != nil {
				errs = append(errs, fmt.Errorf("invalid provider name %q: %v", name, err))
			}
		}
		var parsed *builtExtAuthz
		var err error
		switch c := p.GetProvider().(type) {
		case *meshv1alpha1.MeshConfig_ExtensionProvider_EnvoyExtAuthzHttp:
			parsed, err = b.buildHTTP(c.EnvoyExtAuthzHttp)
		case *meshv1alpha1.MeshConfig_ExtensionProvider_EnvoyExtAuthzGrpc:
			parsed, err = b.buildGRPC(c.EnvoyExtAuthzGrpc)
		default:
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("failed to parse extension provider %q: %v", name, err))
		}
		if parsed == nil {
			parsed = &builtExtAuthz{}
		}
		parsed.index = i
		parsed.err = errors.Join(errs...)
		resolved[name] = parsed
	}
	return resolved
}

func validateProviderName(name string) error {
	if len(name) > 63 {
		return fmt.Errorf("provider name too long (max 63 characters): %d", len(name))
	}
	for i, c := range name {
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' {
			continue
		}
		if c >= 'A' && c <= 'Z' {
			return fmt.Errorf("uppercase letters not allowed (use lowercase): character %q at position %d", c, i)
		}
		return fmt.Errorf("invalid character %q at position %d (only lowercase letters, digits, and hyphens allowed)", c, i)
	}
	if name[0] == '-' || name[len(name)-1] == '-' {
		return fmt.Errorf("provider name cannot start or end with hyphen")
	}
	return nil
}

func (b *builder) lookup(service string, port uint32) (string, string, error) {
	if port < 1 || port > 65535 {
		return "", "", fmt.Errorf("port must be in the range [1, 65535], found: %d", port)
	}
	if service == "" {
		return "", "", fmt.Errorf("service must not be empty")
	}
	if b.in.LookupCluster == nil {
		return "", "", fmt.Errorf("could not find service %s in Istio service registry", service)
	}
	return b.in.LookupCluster(service, int(port))
}

func parseStatusOnError(status string) (*typev3.HttpStatus, error) {
	if status == "" {
		return nil, nil
	}
	code, err := strconv.ParseInt(status, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("invalid statusOnError %q: %v", status, err)
	}
	if _, ok := typev3.StatusCode_name[int32(code)]; !ok {
		return nil, fmt.Errorf("unsupported statusOnError %s", status)
	}
	return &typev3.HttpStatus{Code: typev3.StatusCode(code)}, nil
}

func timeoutOrDefault(t *durationpb.Duration) *durationpb.Duration {
	if t == nil {
		return &durationpb.Duration{Seconds: extAuthzDefaultTimeoutSec}
	}
	return t
}

func withBody(c *meshv1alpha1.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationRequestBody) *extauthzhttp.BufferSettings {
	if c == nil {
		return nil
	}
	return &extauthzhttp.BufferSettings{MaxRequestBytes: c.MaxRequestBytes, AllowPartialMessage: c.AllowPartialMessage, PackAsBytes: c.PackAsBytes}
}

func generateHeaders(headers []string) *matcherpb.ListStringMatcher {
	if len(headers) == 0 {
		return nil
	}
	var ps []*matcherpb.StringMatcher
	for _, h := range headers {
		p := &matcherpb.StringMatcher{IgnoreCase: true}
		if after, ok := strings.CutPrefix(h, "*"); ok {
			p.MatchPattern = &matcherpb.StringMatcher_Suffix{Suffix: after}
		} else if before, ok := strings.CutSuffix(h, "*"); ok {
			p.MatchPattern = &matcherpb.StringMatcher_Prefix{Prefix: before}
		} else {
			p.MatchPattern = &matcherpb.StringMatcher_Exact{Exact: h}
		}
		ps = append(ps, p)
	}
	return &matcherpb.ListStringMatcher{Patterns: ps}
}

func (b *builder) buildHTTP(c *meshv1alpha1.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationHttpProvider) (*builtExtAuthz, error) {
	var errs []error
	host, cluster, err := b.lookup(c.Service, c.Port)
	if err != nil {
		errs = append(errs, err)
	}
	status, err := parseStatusOnError(c.StatusOnError)
	if err != nil {
		errs = append(errs, err)
	}
	if c.PathPrefix != "" {
		if _, err := url.Parse(c.PathPrefix); err != nil {
			errs = append(errs, fmt.Errorf("invalid pathPrefix %q: %v", c.PathPrefix, err))
		}
		if !strings.HasPrefix(c.PathPrefix, "/") {
			errs = append(errs, fmt.Errorf("pathPrefix must begin with `/`, found: %q", c.PathPrefix))
		}
	}
	//nolint:staticcheck // IncludeHeadersInCheck is deprecated, and istiod still reads it.
	for _, l := range [][]string{c.IncludeRequestHeadersInCheck, c.IncludeHeadersInCheck, c.HeadersToDownstreamOnDeny, c.HeadersToDownstreamOnAllow, c.HeadersToUpstreamOnAllow} {
		for _, v := range l {
			if v == "*" {
				errs = append(errs, fmt.Errorf("a single wildcard (\"*\") is not supported, change it to either prefix or suffix match"))
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	svc := &extauthzhttp.HttpService{
		PathPrefix: c.PathPrefix,
		ServerUri: &corev3.HttpUri{
			Timeout:          timeoutOrDefault(c.Timeout),
			Uri:              "http://" + host,
			HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: cluster},
		},
	}
	allowed := generateHeaders(c.IncludeRequestHeadersInCheck)
	if allowed == nil {
		//nolint:staticcheck // as istiod does
		allowed = generateHeaders(c.IncludeHeadersInCheck)
	}
	var add []*corev3.HeaderValue
	keys := make([]string, 0, len(c.IncludeAdditionalHeadersInCheck))
	for k := range c.IncludeAdditionalHeadersInCheck {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		add = append(add, &corev3.HeaderValue{Key: k, Value: c.IncludeAdditionalHeadersInCheck[k]})
	}
	if len(add) != 0 {
		svc.AuthorizationRequest = &extauthzhttp.AuthorizationRequest{HeadersToAdd: add}
	}
	if len(c.HeadersToUpstreamOnAllow) > 0 || len(c.HeadersToDownstreamOnDeny) > 0 || len(c.HeadersToDownstreamOnAllow) > 0 {
		svc.AuthorizationResponse = &extauthzhttp.AuthorizationResponse{
			AllowedUpstreamHeaders:        generateHeaders(c.HeadersToUpstreamOnAllow),
			AllowedClientHeaders:          generateHeaders(c.HeadersToDownstreamOnDeny),
			AllowedClientHeadersOnSuccess: generateHeaders(c.HeadersToDownstreamOnAllow),
		}
	}
	h := &extauthzhttp.ExtAuthz{
		StatusOnError:       status,
		FailureModeAllow:    c.FailOpen,
		TransportApiVersion: corev3.ApiVersion_V3,
		Services:            &extauthzhttp.ExtAuthz_HttpService{HttpService: svc},
		WithRequestBody:     withBody(c.IncludeRequestBodyInCheck),
	}
	if allowed != nil {
		h.AllowedHeaders = allowed
	}
	return &builtExtAuthz{http: h}, nil
}

func (b *builder) buildGRPC(c *meshv1alpha1.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationGrpcProvider) (*builtExtAuthz, error) {
	var errs []error
	host, cluster, err := b.lookup(c.Service, c.Port)
	if err != nil {
		errs = append(errs, err)
	}
	status, err := parseStatusOnError(c.StatusOnError)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	grpc := &corev3.GrpcService{
		TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: cluster, Authority: host}},
		Timeout:         timeoutOrDefault(c.Timeout),
	}
	return &builtExtAuthz{
		http: &extauthzhttp.ExtAuthz{
			StatusOnError:       status,
			FailureModeAllow:    c.FailOpen,
			Services:            &extauthzhttp.ExtAuthz_GrpcService{GrpcService: grpc},
			TransportApiVersion: corev3.ApiVersion_V3,
			WithRequestBody:     withBody(c.IncludeRequestBodyInCheck),
		},
		tcp: &extauthztcp.ExtAuthz{
			StatPrefix:          tcpStatPrefix,
			FailureModeAllow:    c.FailOpen,
			TransportApiVersion: corev3.ApiVersion_V3,
			GrpcService:         grpc,
		},
	}, nil
}

// filterMatcherForProvider is generateFilterMatcherForProvider: ext_authz runs only when the
// shadow RBAC matched a policy of this provider.
func filterMatcherForProvider(filter, provider string) *matcherpb.MetadataMatcher {
	return &matcherpb.MetadataMatcher{
		Filter: filter,
		Path:   []*matcherpb.MetadataMatcher_PathSegment{{Segment: &matcherpb.MetadataMatcher_PathSegment_Key{Key: extAuthzShadowStatPrefix + shadowEffectivePolicyID}}},
		Value: &matcherpb.ValueMatcher{MatchPattern: &matcherpb.ValueMatcher_StringMatch{StringMatch: &matcherpb.StringMatcher{
			MatchPattern: &matcherpb.StringMatcher_Prefix{Prefix: extAuthzMatchPrefix + "-" + provider}}}},
	}
}

// badCustomDeny is getBadCustomDenyRules: the CUSTOM policies' rules turned into DENY rules.
func badCustomDeny(r *rbacpb.RBAC) *rbacpb.RBAC {
	out := &rbacpb.RBAC{Action: rbacpb.RBAC_DENY, Policies: map[string]*rbacpb.Policy{}}
	for k, p := range r.GetPolicies() {
		out.Policies[k+badCustomActionSuffix] = p
	}
	return out
}

// customFilters is buildHTTP / buildTCP with IsCustomBuilder: per provider, sorted, a shadow
// RBAC filter and the provider's ext_authz; a provider that cannot be used gets a DENY filter.
func (b *builder) customFilters(br *builtRule, forTCP bool) []Filter {
	rbacName, extName := HTTPRBAC, HTTPExtAuthz
	if forTCP {
		rbacName, extName = TCPRBAC, TCPExtAuthz
	}
	newRBAC := func(rules, shadow *rbacpb.RBAC, shadowPrefix string) proto.Message {
		if forTCP {
			return &rbachttp.RBAC{Rules: rules, StatPrefix: tcpStatPrefix, ShadowRules: shadow, ShadowRulesStatPrefix: shadowPrefix}
		}
		return &httprbac.RBAC{Rules: rules, ShadowRules: shadow, ShadowRulesStatPrefix: shadowPrefix}
	}
	providers := sortedProviders(br)
	var out []Filter
	deny := func(p, why string) {
		cfg := newRBAC(badCustomDeny(br.providerRules[p]), nil, "")
		f := Filter{Name: rbacName, Config: cfg, Action: "CUSTOM", Provider: p, Broken: why}
		f.Traces = b.rbacTraces("typedConfig.rules", cfg.(interface{ GetRules() *rbacpb.RBAC }).GetRules(), br.policies, false)
		out = append(out, f)
		b.res.Providers[p] = why
	}
	if len(providers) > 1 {
		for _, p := range providers {
			deny(p, fmt.Sprintf("multiple CUSTOM authorization providers per workload (%s) need PILOT_ENABLE_MULTIPLE_CUSTOM_AUTHZ_PROVIDERS, which is off", strings.Join(providers, ", ")))
		}
		return out
	}
	for _, p := range providers {
		ext, err := getExtAuthz(b.ext, p)
		if err != nil {
			deny(p, err.Error())
			continue
		}
		b.res.Providers[p] = ""
		if forTCP && ext.tcp == nil {
			b.res.HTTPOnlyProviders = append(b.res.HTTPOnlyProviders, p)
			continue
		}
		rules := br.providerRules[p]
		var dry *rbacpb.RBAC
		if d := br.providerDry[p]; d != nil && len(d.Policies) > 0 {
			dry = d
		}
		cfg := newRBAC(dry, rules, extAuthzShadowStatPrefix)
		f := Filter{Name: rbacName, Config: cfg, Action: "CUSTOM", Provider: p}
		f.Traces = append(f.Traces, b.rbacTraces("typedConfig.shadowRules", rules, br.policies, false)...)
		f.Traces = append(f.Traces, b.rbacTraces("typedConfig.rules", dry, br.policies, true)...)
		var ecfg proto.Message
		if forTCP {
			e := proto.Clone(ext.tcp).(*extauthztcp.ExtAuthz)
			e.FilterEnabledMetadata = filterMatcherForProvider(TCPRBAC, p)
			ecfg = e
		} else {
			e := proto.Clone(ext.http).(*extauthzhttp.ExtAuthz)
			e.FilterEnabledMetadata = filterMatcherForProvider(HTTPRBAC, p)
			ecfg = e
		}
		ef := Filter{Name: extName, Config: ecfg, Action: "CUSTOM", Provider: p,
			Traces: []provenance.FieldTrace{{Path: "typedConfig", Value: p,
				Origin: b.meshOrigin(fmt.Sprintf("extensionProviders[%d]", ext.index), "the CUSTOM provider named by spec.provider.name")}}}
		out = append(out, f, ef)
	}
	return out
}

func getExtAuthz(resolved map[string]*builtExtAuthz, provider string) (*builtExtAuthz, error) {
	if resolved == nil {
		return nil, fmt.Errorf("extension provider is either invalid or undefined")
	}
	ret, ok := resolved[provider]
	if !ok {
		var li []string
		for p := range resolved {
			li = append(li, p)
		}
		sort.Strings(li)
		return nil, fmt.Errorf("available providers are %v but found %q", li, provider)
	}
	if ret.err != nil {
		return nil, fmt.Errorf("found errors in provider %s: %v", provider, ret.err)
	}
	return ret, nil
}
