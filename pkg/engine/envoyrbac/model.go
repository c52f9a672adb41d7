package envoyrbac

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rbacpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	uritemplate "github.com/envoyproxy/go-control-plane/envoy/extensions/path/match/uri_template/v3"
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	authzpb "istio.io/api/security/v1beta1"
)

// The attribute keys of `when` conditions (pilot/pkg/security/authz/model/model.go).
const (
	attrRequestHeader     = "request.headers"
	attrSrcIP             = "source.ip"
	attrRemoteIP          = "remote.ip"
	attrSrcNamespace      = "source.namespace"
	attrSrcServiceAccount = "source.serviceAccount"
	attrSrcTrustDomain    = "source.trustDomain"
	attrSrcPrincipal      = "source.principal"
	attrRequestPrincipal  = "request.auth.principal"
	attrRequestAudiences  = "request.auth.audiences"
	attrRequestPresenter  = "request.auth.presenter"
	attrRequestClaims     = "request.auth.claims"
	attrDestIP            = "destination.ip"
	attrDestPort          = "destination.port"
	attrConnSNI           = "connection.sni"
	attrEnvoyFilter       = "experimental.envoy.filters."

	methodHeader = ":method"
	pathKey      = "path-matcher"
	hostHeader   = ":authority"
)

// gen names a generator of the model (the generator types of authz/model/generator.go).
type gen int

const (
	genDestIP gen = iota
	genDestPort
	genConnSNI
	genEnvoyFilter
	genSrcIP
	genRemoteIP
	genSrcNamespace
	genSrcTrustDomain
	genSrcServiceAccount
	genSrcPrincipal
	genRequestPrincipal
	genRequestAudiences
	genRequestPresenter
	genRequestHeader
	genRequestClaim
	genHost
	genPath
	genMethod
)

// extended generators build one matcher from all values of a key.
func (g gen) extended() bool {
	switch g {
	case genEnvoyFilter, genRequestPrincipal, genRequestAudiences, genRequestPresenter, genRequestClaim:
		return true
	}
	return false
}

// rule is one condition of a permission or principal: a key with its values and notValues, and
// the input fields they came from (values[i] came from field[vidx[i]]).
type rule struct {
	key               string
	values, notValues []string
	g                 gen
	field, notField   string
	vidx, nvidx       []int
}

type ruleList struct{ rules []*rule }

func newRule(g gen, key string, values, notValues []string, field, notField string) *rule {
	return &rule{key: key, values: values, notValues: notValues, g: g, field: field, notField: notField,
		vidx: seq(len(values)), nvidx: seq(len(notValues))}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func (p ruleList) copy() ruleList { return ruleList{rules: append([]*rule{}, p.rules...)} }

func (p *ruleList) insertFront(r *rule) {
	if len(r.values) == 0 && len(r.notValues) == 0 {
		return
	}
	p.rules = append([]*rule{r}, p.rules...)
}

func (p *ruleList) appendLast(r *rule) {
	if len(r.values) == 0 && len(r.notValues) == 0 {
		return
	}
	p.rules = append(p.rules, r)
}

// ruleModel is authz/model Model: the rule's conditions consolidated into permissions (one per
// `to`) and principals (one per `from`).
type ruleModel struct {
	ns          string
	permissions []ruleList
	principals  []ruleList
	// base is the input path of the rule, `spec.rules[2]`.
	base string
}

// newModel is model.New: `when` conditions go last into every permission or principal, the
// `from` and `to` fields first, in the order istiod inserts them.
func newModel(ns, base string, r *authzpb.Rule) (*ruleModel, error) {
	m := &ruleModel{ns: ns, base: base}
	var basePerm, basePrin ruleList
	for j, when := range r.When {
		k := when.GetKey()
		f := fmt.Sprintf("%s.when[%d]", base, j)
		nr := func(g gen) *rule {
			return newRule(g, k, when.GetValues(), when.GetNotValues(), f+".values", f+".notValues")
		}
		switch {
		case k == attrDestIP:
			basePerm.appendLast(nr(genDestIP))
		case k == attrDestPort:
			basePerm.appendLast(nr(genDestPort))
		case k == attrConnSNI:
			basePerm.appendLast(nr(genConnSNI))
		case strings.HasPrefix(k, attrEnvoyFilter):
			basePerm.appendLast(nr(genEnvoyFilter))
		case k == attrSrcIP:
			basePrin.appendLast(nr(genSrcIP))
		case k == attrRemoteIP:
			basePrin.appendLast(nr(genRemoteIP))
		case k == attrSrcNamespace:
			basePrin.appendLast(nr(genSrcNamespace))
		case k == attrSrcTrustDomain:
			basePrin.appendLast(nr(genSrcTrustDomain))
		case k == attrSrcServiceAccount:
			basePrin.appendLast(nr(genSrcServiceAccount))
		case k == attrSrcPrincipal:
			basePrin.appendLast(nr(genSrcPrincipal))
		case k == attrRequestPrincipal:
			basePrin.appendLast(nr(genRequestPrincipal))
		case k == attrRequestAudiences:
			basePrin.appendLast(nr(genRequestAudiences))
		case k == attrRequestPresenter:
			basePrin.appendLast(nr(genRequestPresenter))
		case strings.HasPrefix(k, attrRequestHeader):
			basePrin.appendLast(nr(genRequestHeader))
		case strings.HasPrefix(k, attrRequestClaims):
			basePrin.appendLast(nr(genRequestClaim))
		default:
			return nil, &fieldError{field: f + ".key", err: fmt.Errorf("unknown attribute %s", k)}
		}
	}
	for j, from := range r.From {
		merged := basePrin.copy()
		if s := from.GetSource(); s != nil {
			f := fmt.Sprintf("%s.from[%d].source.", base, j)
			ins := func(g gen, key string, v, nv []string, name, notName string) {
				merged.insertFront(newRule(g, key, v, nv, f+name, f+notName))
			}
			ins(genSrcIP, attrSrcIP, s.IpBlocks, s.NotIpBlocks, "ipBlocks", "notIpBlocks")
			ins(genRemoteIP, attrRemoteIP, s.RemoteIpBlocks, s.NotRemoteIpBlocks, "remoteIpBlocks", "notRemoteIpBlocks")
			ins(genSrcNamespace, attrSrcNamespace, s.Namespaces, s.NotNamespaces, "namespaces", "notNamespaces")
			ins(genSrcTrustDomain, attrSrcTrustDomain, s.TrustDomains, s.NotTrustDomains, "trustDomains", "notTrustDomains")
			ins(genSrcServiceAccount, attrSrcServiceAccount, s.ServiceAccounts, s.NotServiceAccounts, "serviceAccounts", "notServiceAccounts")
			ins(genRequestPrincipal, attrRequestPrincipal, s.RequestPrincipals, s.NotRequestPrincipals, "requestPrincipals", "notRequestPrincipals")
			ins(genSrcPrincipal, attrSrcPrincipal, s.Principals, s.NotPrincipals, "principals", "notPrincipals")
		}
		m.principals = append(m.principals, merged)
	}
	if len(r.From) == 0 {
		m.principals = append(m.principals, basePrin)
	}
	for j, to := range r.To {
		merged := basePerm.copy()
		if o := to.GetOperation(); o != nil {
			f := fmt.Sprintf("%s.to[%d].operation.", base, j)
			ins := func(g gen, key string, v, nv []string, name, notName string) {
				merged.insertFront(newRule(g, key, v, nv, f+name, f+notName))
			}
			ins(genDestPort, attrDestPort, o.Ports, o.NotPorts, "ports", "notPorts")
			ins(genPath, pathKey, o.Paths, o.NotPaths, "paths", "notPaths")
			ins(genMethod, methodHeader, o.Methods, o.NotMethods, "methods", "notMethods")
			ins(genHost, hostHeader, o.Hosts, o.NotHosts, "hosts", "notHosts")
		}
		m.permissions = append(m.permissions, merged)
	}
	if len(r.To) == 0 {
		m.permissions = append(m.permissions, basePerm)
	}
	return m, nil
}

// fieldError is an error of one input field.
type fieldError struct {
	field string
	err   error
}

func (e *fieldError) Error() string { return e.field + ": " + e.err.Error() }

// migrateTrustDomain is Model.MigrateTrustDomain: source principals are rewritten to the mesh
// trust domain and its aliases, trust domains expanded to the aliases.
//
// The rules are changed in place, as istiod does: a `when` condition is one rule shared by the
// principal of every `from` entry (ruleList.copy copies pointers), so a shared source.principal
// condition is rewritten once per entry. With trust domain aliases and two entries, a
// `cluster.local/ns/foo/sa/a` condition becomes four principals (the domain and the alias,
// twice) in each (docs/usage.md, "How a sidecar decides who gets in").
func (m *ruleModel) migrateTrustDomain(tds []string) {
	for _, p := range m.principals {
		for _, r := range p.rules {
			switch r.key {
			case attrSrcPrincipal:
				r.values, r.vidx = replaceTrustDomainAliases(tds, r.values, r.vidx)
				r.notValues, r.nvidx = replaceTrustDomainAliases(tds, r.notValues, r.nvidx)
			case attrSrcTrustDomain:
				r.values, r.vidx = expandTrustDomainAliases(tds, r.values, r.vidx)
				r.notValues, r.nvidx = expandTrustDomainAliases(tds, r.notValues, r.nvidx)
			}
		}
	}
}

// tracer records, for every matcher the model generates, the input field it came from.
type tracer struct {
	perm map[*rbacpb.Permission]leaf
	prin map[*rbacpb.Principal]leaf
	// dropped are the values that generated nothing, with the reason.
	dropped []Dropped
}

// leaf is the origin of one generated matcher: an input field, or a note for istiod's own.
type leaf struct {
	field string
	note  string
	value string
}

// Dropped is an input field that generated no matcher.
type Dropped struct {
	// Field is the input path, `spec.rules[0].to[0].operation.methods[1]`.
	Field string
	// Value is the input value.
	Value string
	// Reason is istiod's error.
	Reason string
}

func newTracer() *tracer {
	return &tracer{perm: map[*rbacpb.Permission]leaf{}, prin: map[*rbacpb.Principal]leaf{}}
}

// generate is Model.Generate. For ALLOW any error skips the rule (a smaller allow); for DENY
// and AUDIT the value is ignored (a wider deny or audit).
func (m *ruleModel) generate(forTCP, useAuthenticated bool, action rbacpb.RBAC_Action, t *tracer) (*rbacpb.Policy, error) {
	var perms []*rbacpb.Permission
	for _, rl := range m.permissions {
		var and []*rbacpb.Permission
		for _, r := range rl.rules {
			ps, err := r.permission(forTCP, action, t)
			if err != nil {
				return nil, err
			}
			and = append(and, ps...)
		}
		if len(and) == 0 {
			any := &rbacpb.Permission{Rule: &rbacpb.Permission_Any{Any: true}}
			t.perm[any] = leaf{field: m.base, note: "no operation or destination condition: any request", value: "any"}
			and = append(and, any)
		}
		perms = append(perms, &rbacpb.Permission{Rule: &rbacpb.Permission_AndRules{AndRules: &rbacpb.Permission_Set{Rules: and}}})
	}
	var prins []*rbacpb.Principal
	for _, rl := range m.principals {
		var and []*rbacpb.Principal
		for _, r := range rl.rules {
			ps, err := r.principal(m.ns, forTCP, useAuthenticated, action, t)
			if err != nil {
				return nil, err
			}
			and = append(and, ps...)
		}
		if len(and) == 0 {
			any := &rbacpb.Principal{Identifier: &rbacpb.Principal_Any{Any: true}}
			t.prin[any] = leaf{field: m.base, note: "no source condition: any caller", value: "any"}
			and = append(and, any)
		}
		prins = append(prins, &rbacpb.Principal{Identifier: &rbacpb.Principal_AndIds{AndIds: &rbacpb.Principal_Set{Ids: and}}})
	}
	return &rbacpb.Policy{Permissions: perms, Principals: prins}, nil
}

func checkError(action rbacpb.RBAC_Action, err error) error {
	if action == rbacpb.RBAC_ALLOW {
		return err
	}
	return nil
}

func (r *rule) drop(t *tracer, field, value string, err error) {
	t.dropped = append(t.dropped, Dropped{Field: field, Value: value, Reason: err.Error()})
}

func (r *rule) permission(forTCP bool, action rbacpb.RBAC_Action, t *tracer) ([]*rbacpb.Permission, error) {
	return conditions(r, action, t, t.perm,
		func(values []string) (*rbacpb.Permission, error) {
			return extendedPermission(r.g, r.key, values, forTCP)
		},
		func(v string) (*rbacpb.Permission, error) { return permission(r.g, r.key, v, forTCP) },
		func(or []*rbacpb.Permission) *rbacpb.Permission {
			return &rbacpb.Permission{Rule: &rbacpb.Permission_OrRules{OrRules: &rbacpb.Permission_Set{Rules: or}}}
		},
		func(p *rbacpb.Permission) *rbacpb.Permission {
			return &rbacpb.Permission{Rule: &rbacpb.Permission_NotRule{NotRule: p}}
		})
}

func (r *rule) principal(ns string, forTCP, useAuthenticated bool, action rbacpb.RBAC_Action, t *tracer) ([]*rbacpb.Principal, error) {
	return conditions(r, action, t, t.prin,
		func(values []string) (*rbacpb.Principal, error) { return extendedPrincipal(r.g, r.key, values, forTCP) },
		func(v string) (*rbacpb.Principal, error) {
			return principal(r.g, ns, r.key, v, forTCP, useAuthenticated)
		},
		func(or []*rbacpb.Principal) *rbacpb.Principal {
			return &rbacpb.Principal{Identifier: &rbacpb.Principal_OrIds{OrIds: &rbacpb.Principal_Set{Ids: or}}}
		},
		func(p *rbacpb.Principal) *rbacpb.Principal {
			return &rbacpb.Principal{Identifier: &rbacpb.Principal_NotId{NotId: p}}
		})
}

// conditions is what rule.permission and rule.principal share (model.go permission and
// principal in Istio): the values, then the notValues wrapped in a NOT; an extended generator
// turns all values into one condition, any other an OR of one per value. A value the generator
// refuses is dropped and, in an ALLOW policy, drops the whole rule (checkError). Every
// condition made is traced to its field in traces.
func conditions[T comparable](r *rule, action rbacpb.RBAC_Action, t *tracer, traces map[T]leaf,
	extended func([]string) (T, error), single func(string) (T, error), or func([]T) T, not func(T) T) ([]T, error) {
	var out []T
	var none T
	for _, neg := range []bool{false, true} {
		values, idx, field := r.values, r.vidx, r.field
		if neg {
			values, idx, field = r.notValues, r.nvidx, r.notField
		}
		if len(values) == 0 {
			continue
		}
		if r.g.extended() {
			p, err := extended(values)
			if err != nil {
				r.drop(t, field, strings.Join(values, ", "), err)
				if err := checkError(action, err); err != nil {
					return nil, &fieldError{field: field, err: err}
				}
			}
			if p != none {
				traces[p] = leaf{field: field, value: strings.Join(values, ", ")}
				if neg {
					p = not(p)
				}
				out = append(out, p)
			}
			continue
		}
		var alternatives []T
		for i, v := range values {
			f := fmt.Sprintf("%s[%d]", field, idx[i])
			p, err := single(v)
			if err != nil {
				r.drop(t, f, v, err)
				if err := checkError(action, err); err != nil {
					return nil, &fieldError{field: f, err: err}
				}
			}
			if p != none {
				traces[p] = leaf{field: f, value: v}
				alternatives = append(alternatives, p)
			}
		}
		if len(alternatives) > 0 {
			p := or(alternatives)
			if neg {
				p = not(p)
			}
			out = append(out, p)
		}
	}
	return out, nil
}

var errUnimplemented = fmt.Errorf("unimplemented")

func httpOnly(key string) error { return fmt.Errorf("%q is HTTP only", key) }

// cidr is util.AddrStrToCidrRange.
func cidr(addr string) (*corev3.CidrRange, error) {
	if addr == "" {
		return nil, fmt.Errorf("empty address")
	}
	var prefix netip.Prefix
	if strings.Contains(addr, "/") {
		p, err := netip.ParsePrefix(addr)
		if err != nil {
			return nil, err
		}
		prefix = p
	} else {
		a, err := netip.ParseAddr(addr)
		if err != nil {
			return nil, err
		}
		prefix = netip.PrefixFrom(a, a.BitLen())
	}
	return &corev3.CidrRange{AddressPrefix: prefix.Addr().String(), PrefixLen: wrapperspb.UInt32(uint32(prefix.Bits()))}, nil
}

// convertToPort is model.convertToPort.
func convertToPort(v string) (uint32, error) {
	p, err := strconv.ParseUint(v, 10, 32)
	if err != nil || p > 65535 {
		return 0, fmt.Errorf("invalid port %s: %v", v, err)
	}
	return uint32(p), nil
}

// permission is the permission method of the non-extended generators.
func permission(g gen, key, value string, forTCP bool) (*rbacpb.Permission, error) {
	switch g {
	case genDestIP:
		c, err := cidr(value)
		if err != nil {
			return nil, err
		}
		return &rbacpb.Permission{Rule: &rbacpb.Permission_DestinationIp{DestinationIp: c}}, nil
	case genDestPort:
		p, err := convertToPort(value)
		if err != nil {
			return nil, err
		}
		return &rbacpb.Permission{Rule: &rbacpb.Permission_DestinationPort{DestinationPort: p}}, nil
	case genConnSNI:
		return &rbacpb.Permission{Rule: &rbacpb.Permission_RequestedServerName{RequestedServerName: stringMatcher(value)}}, nil
	case genHost:
		if forTCP {
			return nil, httpOnly(key)
		}
		return &rbacpb.Permission{Rule: &rbacpb.Permission_Header{Header: hostMatcher(hostHeader, value)}}, nil
	case genPath:
		if forTCP {
			return nil, httpOnly(key)
		}
		if strings.Contains(value, "{*}") || strings.Contains(value, "{**}") {
			tmpl := strings.NewReplacer("{*}", "*", "{**}", "**").Replace(value)
			a, err := anypb.New(&uritemplate.UriTemplateMatchConfig{PathTemplate: tmpl})
			if err != nil {
				return nil, err
			}
			return &rbacpb.Permission{Rule: &rbacpb.Permission_UriTemplate{UriTemplate: &corev3.TypedExtensionConfig{Name: "uri-template", TypedConfig: a}}}, nil
		}
		return &rbacpb.Permission{Rule: &rbacpb.Permission_UrlPath{UrlPath: pathMatcher(value)}}, nil
	case genMethod:
		if forTCP {
			return nil, httpOnly(key)
		}
		return &rbacpb.Permission{Rule: &rbacpb.Permission_Header{Header: headerMatcher(methodHeader, value)}}, nil
	}
	return nil, errUnimplemented
}

// authenticated is principalAuthenticated: the peer certificate's URI SAN, or the peer
// principal in filter state (waypoints).
func authenticated(m *matcherpb.StringMatcher, useAuthenticated bool) *rbacpb.Principal {
	if useAuthenticated {
		return &rbacpb.Principal{Identifier: &rbacpb.Principal_Authenticated_{Authenticated: &rbacpb.Principal_Authenticated{PrincipalName: m}}}
	}
	return &rbacpb.Principal{Identifier: &rbacpb.Principal_FilterState{FilterState: &matcherpb.FilterStateMatcher{
		Key: "io.istio.peer_principal", Matcher: &matcherpb.FilterStateMatcher_StringMatch{StringMatch: m}}}}
}

// principal is the principal method of the non-extended generators.
func principal(g gen, ns, key, value string, forTCP, useAuthenticated bool) (*rbacpb.Principal, error) {
	switch g {
	case genSrcIP:
		c, err := cidr(value)
		if err != nil {
			return nil, err
		}
		return &rbacpb.Principal{Identifier: &rbacpb.Principal_DirectRemoteIp{DirectRemoteIp: c}}, nil
	case genRemoteIP:
		c, err := cidr(value)
		if err != nil {
			return nil, err
		}
		return &rbacpb.Principal{Identifier: &rbacpb.Principal_RemoteIp{RemoteIp: c}}, nil
	case genSrcNamespace:
		parts := strings.Split(value, "*")
		for i, p := range parts {
			parts[i] = regexp.QuoteMeta(p)
		}
		return authenticated(stringMatcherRegex(fmt.Sprintf(".*/ns/%s/.*", strings.Join(parts, ".*"))), useAuthenticated), nil
	case genSrcServiceAccount:
		sns, sa, ok := strings.Cut(value, "/")
		if !ok {
			sns, sa = ns, value
		}
		re := fmt.Sprintf("spiffe://.+/ns/%s/(.+/|)sa/%s(/.+)?", regexp.QuoteMeta(sns), regexp.QuoteMeta(sa))
		return authenticated(stringMatcherRegex(re), useAuthenticated), nil
	case genSrcTrustDomain:
		var m *matcherpb.StringMatcher
		switch {
		case value == "*":
			m = stringMatcherPrefix("spiffe://", false)
		case !strings.Contains(value, "*"):
			m = stringMatcherPrefix("spiffe://"+value+"/", false)
		default:
			parts := strings.SplitN(value, "*", 2)
			m = stringMatcherRegex(fmt.Sprintf("spiffe://%s/.*", regexp.QuoteMeta(parts[0])+"[^/]*"+regexp.QuoteMeta(parts[1])))
		}
		return authenticated(m, useAuthenticated), nil
	case genSrcPrincipal:
		return authenticated(stringMatcherWithPrefix(value, "spiffe://"), useAuthenticated), nil
	case genRequestHeader:
		if forTCP {
			return nil, httpOnly(key)
		}
		name, err := extractNameInBrackets(strings.TrimPrefix(key, attrRequestHeader))
		if err != nil {
			return nil, err
		}
		return &rbacpb.Principal{Identifier: &rbacpb.Principal_Header{Header: headerMatcher(name, value)}}, nil
	}
	return nil, errUnimplemented
}

func extendedPermission(g gen, key string, values []string, _ bool) (*rbacpb.Permission, error) {
	if g != genEnvoyFilter {
		return nil, errUnimplemented
	}
	parts := strings.SplitN(strings.TrimSuffix(strings.TrimPrefix(key, "experimental."), "]"), "[", 2)
	if len(parts) != 2 {
		return nil, fmt.Errorf("invalid key: %v", key)
	}
	ms := []*matcherpb.ValueMatcher{}
	for _, v := range values {
		if strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
			ms = append(ms, &matcherpb.ValueMatcher{MatchPattern: &matcherpb.ValueMatcher_ListMatch{ListMatch: &matcherpb.ListMatcher{
				MatchPattern: &matcherpb.ListMatcher_OneOf{OneOf: &matcherpb.ValueMatcher{
					MatchPattern: &matcherpb.ValueMatcher_StringMatch{StringMatch: stringMatcher(strings.Trim(v, "[]"))}}}}}})
		} else {
			ms = append(ms, &matcherpb.ValueMatcher{MatchPattern: &matcherpb.ValueMatcher_StringMatch{StringMatch: stringMatcher(v)}})
		}
	}
	return &rbacpb.Permission{Rule: &rbacpb.Permission_Metadata{Metadata: metadataValueMatcher(parts[0], parts[1], orMatcher(ms))}}, nil
}

var matchAny = func() *matcherpb.StringMatcher { return stringMatcherRegex(".+") }

func extendedPrincipal(g gen, key string, values []string, forTCP bool) (*rbacpb.Principal, error) {
	meta := func(m *matcherpb.MetadataMatcher) *rbacpb.Principal {
		return &rbacpb.Principal{Identifier: &rbacpb.Principal_Metadata{Metadata: m}}
	}
	switch g {
	case genRequestPrincipal:
		if forTCP {
			return nil, httpOnly(key)
		}
		var or []*rbacpb.Principal
		for _, value := range values {
			idx := strings.LastIndex(value, "/")
			found := idx >= 0
			iss, sub := "", ""
			if found {
				iss, sub = value[:idx], value[idx+1:]
			} else {
				iss = value
			}
			var mi, ms *matcherpb.StringMatcher
			switch {
			case value == "*":
				mi, ms = matchAny(), matchAny()
			case strings.HasPrefix(value, "*"):
				if found {
					if iss == "*" {
						mi = matchAny()
					} else {
						mi = stringMatcherSuffix(strings.TrimPrefix(iss, "*"), false)
					}
					ms = stringMatcherExact(sub, false)
				} else {
					mi = matchAny()
					ms = stringMatcherSuffix(strings.TrimPrefix(value, "*"), false)
				}
			case strings.HasSuffix(value, "*"):
				if found {
					mi = stringMatcherExact(iss, false)
					if sub == "*" {
						ms = matchAny()
					} else {
						ms = stringMatcherPrefix(strings.TrimSuffix(sub, "*"), false)
					}
				} else {
					mi = stringMatcherPrefix(strings.TrimSuffix(value, "*"), false)
					ms = matchAny()
				}
			default:
				ms = stringMatcherExact(sub, false)
				mi = stringMatcherExact(iss, false)
			}
			or = append(or, &rbacpb.Principal{Identifier: &rbacpb.Principal_AndIds{AndIds: &rbacpb.Principal_Set{Ids: []*rbacpb.Principal{
				meta(metadataStringMatcherForJWTClaim("iss", mi)), meta(metadataStringMatcherForJWTClaim("sub", ms))}}}})
		}
		switch len(or) {
		case 0:
			return nil, nil
		case 1:
			return or[0], nil
		}
		return &rbacpb.Principal{Identifier: &rbacpb.Principal_OrIds{OrIds: &rbacpb.Principal_Set{Ids: or}}}, nil
	case genRequestAudiences, genRequestPresenter:
		if forTCP {
			return nil, httpOnly(key)
		}
		claim := "aud"
		if g == genRequestPresenter {
			claim = "azp"
		}
		return meta(metadataListValueMatcherForJWTClaims([]string{claim}, stringOrMatcher(values))), nil
	case genRequestClaim:
		if forTCP {
			return nil, httpOnly(key)
		}
		claims, err := extractNameInNestedBrackets(strings.TrimPrefix(key, attrRequestClaims))
		if err != nil {
			return nil, err
		}
		return meta(metadataListValueMatcherForJWTClaims(claims, stringOrMatcher(values))), nil
	}
	return nil, errUnimplemented
}

func extractNameInBrackets(s string) (string, error) {
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		return "", fmt.Errorf("expecting format [<NAME>], but found %s", s)
	}
	return strings.TrimPrefix(strings.TrimSuffix(s, "]"), "["), nil
}

func extractNameInNestedBrackets(s string) ([]string, error) {
	var claims []string
	findEnd := func(begin int) int {
		if begin >= len(s) || s[begin] != '[' {
			return -1
		}
		for i := begin + 1; i < len(s); i++ {
			if s[i] == '[' {
				return -1
			}
			if s[i] == ']' {
				return i
			}
		}
		return -1
	}
	for begin := 0; begin < len(s); {
		end := findEnd(begin)
		if end == -1 {
			ret, err := extractNameInBrackets(s)
			if err != nil {
				return nil, err
			}
			return []string{ret}, nil
		}
		claims = append(claims, s[begin+1:end])
		begin = end + 1
	}
	return claims, nil
}

// replaceTrustDomainAliases is trustdomain Bundle.ReplaceTrustDomainAliases, keeping for each
// output principal the index of the input it came from.
func replaceTrustDomainAliases(tds, principals []string, idx []int) ([]string, []int) {
	var out []string
	var oidx []int
	for i, p := range principals {
		parts := strings.Split(p, "/")
		if len(parts) != 5 || parts[0] == "*" {
			out, oidx = append(out, p), append(oidx, idx[i])
			continue
		}
		td := parts[0]
		if !tdStringMatch(td, tds) && td != "cluster.local" {
			out, oidx = append(out, p), append(oidx, idx[i])
			continue
		}
		var seen []string
		for _, t := range tds {
			np := p
			if !suffixMatch(t, td) {
				np = t + "/" + strings.Join(parts[1:], "/")
			}
			if !contains(seen, np) {
				seen = append(seen, np)
			}
		}
		for _, np := range seen {
			out, oidx = append(out, np), append(oidx, idx[i])
		}
	}
	return out, oidx
}

// expandTrustDomainAliases is Bundle.ExpandTrustDomainAliases (duplicates removed, first kept).
func expandTrustDomainAliases(tds, values []string, idx []int) ([]string, []int) {
	var out []string
	var oidx []int
	add := func(v string, i int) {
		if !contains(out, v) {
			out, oidx = append(out, v), append(oidx, i)
		}
	}
	for i, v := range values {
		if contains(tds, v) {
			for _, t := range tds {
				add(t, idx[i])
			}
		} else {
			add(v, idx[i])
		}
	}
	return out, oidx
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func tdStringMatch(a string, list []string) bool {
	for _, s := range list {
		if a == s || s == "*" || prefixMatch(a, s) || prefixMatch(s, a) || suffixMatch(a, s) || suffixMatch(s, a) {
			return true
		}
	}
	return false
}

func prefixMatch(a, pattern string) bool {
	if !strings.HasSuffix(pattern, "*") {
		return false
	}
	return strings.HasPrefix(a, strings.TrimSuffix(pattern, "*"))
}

func suffixMatch(a, pattern string) bool {
	if !strings.HasPrefix(pattern, "*") {
		return false
	}
	return strings.HasSuffix(a, strings.TrimPrefix(pattern, "*"))
}
