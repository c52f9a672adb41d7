package envoyrbac

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	rbachttp "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	rbactcp "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	authzpb "istio.io/api/security/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// Filter names (pkg/wellknown) and stat prefixes (authz/model).
const (
	HTTPRBAC     = "envoy.filters.http.rbac"
	HTTPExtAuthz = "envoy.filters.http.ext_authz"
	TCPRBAC      = "envoy.filters.network.rbac"
	TCPExtAuthz  = "envoy.filters.network.ext_authz"

	tcpStatPrefix             = "tcp."
	shadowAllowStatPrefix     = "istio_dry_run_allow_"
	shadowDenyStatPrefix      = "istio_dry_run_deny_"
	extAuthzShadowStatPrefix  = "istio_ext_authz_"
	shadowEffectivePolicyID   = "shadow_effective_policy_id"
	extAuthzMatchPrefix       = "istio-ext-authz"
	badCustomActionSuffix     = "-deny-due-to-bad-CUSTOM-action"
	dryRunAnnotation          = "istio.io/dry-run"
	defaultTrustDomain        = "cluster.local"
	extAuthzDefaultTimeoutSec = 600
)

// Input is what the builder needs besides the policies.
type Input struct {
	// Policies are the AuthorizationPolicies that select the workload, in istiod's order
	// (creationTimestamp, then name; the root namespace first).
	Policies []*securityv1.AuthorizationPolicy
	// TrustDomain and TrustDomainAliases are MeshConfig's.
	TrustDomain        string
	TrustDomainAliases []string
	// ExtensionProviders are MeshConfig extensionProviders.
	ExtensionProviders []*meshv1alpha1.MeshConfig_ExtensionProvider
	// LookupCluster is model.LookupCluster: the outbound cluster of a provider's service.
	LookupCluster func(service string, port int) (hostname, cluster string, err error)
	// UseFilterState matches peer identities in filter state (waypoints) instead of the peer
	// certificate (sidecars).
	UseFilterState bool
	// Origin locates a field of an AuthorizationPolicy; MeshOrigin one of MeshConfig.
	Origin     func(ap *securityv1.AuthorizationPolicy, field, note string) provenance.Origin
	MeshOrigin func(field, note string) provenance.Origin
	// Cache, when set, carries the translation of every rule between the Builds that share it
	// (nil: each Build translates its rules).
	Cache *Cache
}

// Cache keeps each rule's translation (its matchers, what was dropped or why it was skipped)
// for the Builds of one answer that attach the same policy: the translation depends only on
// the rule, the kind of chain, the action, the trust domains and UseFilterState, and the
// matchers are never changed once generated, so the Builds share them. A Build whose trust
// domains or UseFilterState differ from the first Build's does not use the Cache.
type Cache struct {
	key   string
	t     *tracer
	rules map[ruleKey]translated
	desc  map[proto.Message]string
}

type ruleKey struct {
	ap     *securityv1.AuthorizationPolicy
	index  int
	forTCP bool
	action rbacpb.RBAC_Action
}

// translated is one rule's translation: the generated policy, or why it was skipped.
type translated struct {
	gen                   *rbacpb.Policy
	dropped               []Dropped
	skipped, skippedField string
}

// NewCache returns an empty Cache.
func NewCache() *Cache {
	return &Cache{t: newTracer(), rules: map[ruleKey]translated{}, desc: map[proto.Message]string{}}
}

// Filter is one generated filter with the origin of its fields, by path below the filter
// (`typedConfig.rules.policies["ns[foo]-policy[a]-rule[0]"].permissions[0]...`).
type Filter struct {
	// Name is the filter's name (HTTPRBAC, TCPRBAC, HTTPExtAuthz, TCPExtAuthz).
	Name string
	// Config is the typed config (an RBAC or ExtAuthz message); Envoy packs it.
	Config proto.Message
	Traces []provenance.FieldTrace
	// Action is CUSTOM, AUDIT, DENY or ALLOW.
	Action string
	// Provider names the CUSTOM provider; Broken says the provider could not be used and the
	// filter denies what the CUSTOM policies match.
	Provider string
	Broken   string
}

// Rule is what became of one rule of a policy on each kind of chain.
type Rule struct {
	Policy *securityv1.AuthorizationPolicy
	// Index is the rule's index; -1 for a policy without rules (a policy that never matches).
	Index    int
	Name     string
	Action   string
	DryRun   bool
	Provider string
	HTTP     RuleBuild
	TCP      RuleBuild
}

// RuleBuild is the outcome of one rule on HTTP or TCP chains.
type RuleBuild struct {
	// Generated says a policy entry was written.
	Generated bool
	// Skipped is why the rule is not written (an ALLOW rule with an HTTP-only field on TCP, a
	// bad value, an unknown attribute); Field is the input field.
	Skipped, SkippedField string
	// Dropped are the values of a DENY or AUDIT rule that generated nothing: the rule matches
	// more than written.
	Dropped []Dropped
}

// Result is the builder's output.
type Result struct {
	// HTTPCustom and TCPCustom come first in a chain (ext_authz and its shadow RBAC);
	// HTTPLocal and TCPLocal are the AUDIT, DENY and ALLOW RBAC filters, in that order.
	HTTPCustom, HTTPLocal, TCPCustom, TCPLocal []Filter
	Rules                                      []Rule
	// Providers says, per CUSTOM provider used, whether it resolved (empty) or why not.
	Providers map[string]string
	// HTTPOnlyProviders are CUSTOM providers with an HTTP service, not used on TCP chains.
	HTTPOnlyProviders []string
}

// Build is authz.NewBuilder + BuildHTTP + BuildTCP for ALLOW/DENY/AUDIT (builder.Option
// IsCustomBuilder false) and for CUSTOM.
func Build(in Input) *Result {
	res := &Result{Providers: map[string]string{}}
	var custom, deny, allow, audit []*securityv1.AuthorizationPolicy
	for _, ap := range in.Policies {
		switch ap.Spec.GetAction() {
		case authzpb.AuthorizationPolicy_ALLOW:
			allow = append(allow, ap)
		case authzpb.AuthorizationPolicy_DENY:
			deny = append(deny, ap)
		case authzpb.AuthorizationPolicy_AUDIT:
			audit = append(audit, ap)
		case authzpb.AuthorizationPolicy_CUSTOM:
			custom = append(custom, ap)
		}
	}
	b := &builder{in: in, res: res, t: newTracer(), rules: map[string]*Rule{}}
	if td := in.TrustDomain; td != "" {
		b.tds = append([]string{td}, in.TrustDomainAliases...)
	} else {
		b.tds = append([]string{defaultTrustDomain}, in.TrustDomainAliases...)
	}
	if c := in.Cache; c != nil {
		key := strconv.FormatBool(in.UseFilterState) + "\x00" + strings.Join(b.tds, "\x00")
		if c.key == "" {
			c.key = key
		}
		if c.key == key {
			b.cache, b.t = c, c.t
		}
	}
	if len(custom) > 0 {
		b.ext = b.processExtensionProviders()
		for _, forTCP := range []bool{false, true} {
			br := b.build(custom, rbacpb.RBAC_DENY, forTCP, true)
			fs := b.customFilters(br, forTCP)
			if forTCP {
				res.TCPCustom = fs
			} else {
				res.HTTPCustom = fs
			}
		}
	}
	for _, forTCP := range []bool{false, true} {
		var fs []Filter
		for _, step := range []struct {
			ps     []*securityv1.AuthorizationPolicy
			action rbacpb.RBAC_Action
		}{{audit, rbacpb.RBAC_LOG}, {deny, rbacpb.RBAC_DENY}, {allow, rbacpb.RBAC_ALLOW}} {
			if br := b.build(step.ps, step.action, forTCP, false); br != nil {
				fs = append(fs, b.localFilter(br, forTCP))
			}
		}
		if forTCP {
			res.TCPLocal = fs
		} else {
			res.HTTPLocal = fs
		}
	}
	for _, name := range b.order {
		res.Rules = append(res.Rules, *b.rules[name])
	}
	return res
}

type builder struct {
	in    Input
	res   *Result
	t     *tracer
	tds   []string
	ext   map[string]*builtExtAuthz
	rules map[string]*Rule
	order []string
	// policyOf maps an Envoy policy name to the rule it came from.
	policyOf map[string]ruleRef
	// cache is in.Cache when this Build may use it.
	cache *Cache
}

type ruleRef struct {
	ap    *securityv1.AuthorizationPolicy
	index int
}

type builtRule struct {
	action        rbacpb.RBAC_Action
	rules, shadow *rbacpb.RBAC
	providerRules map[string]*rbacpb.RBAC
	providerDry   map[string]*rbacpb.RBAC
	policies      []*securityv1.AuthorizationPolicy
}

// isDryRun reads the istio.io/dry-run annotation as strconv.ParseBool does; a bad value is
// not dry-run.
func isDryRun(ap *securityv1.AuthorizationPolicy) bool {
	v, ok := ap.Annotations[dryRunAnnotation]
	if !ok {
		return false
	}
	b, err := strconv.ParseBool(v)
	return err == nil && b
}

// PolicyName is istiod's name of the Envoy policy of one rule: `ns[NS]-policy[NAME]-rule[N]`,
// prefixed with `istio-ext-authz-PROVIDER-` for CUSTOM policies.
func PolicyName(ns, name string, rule int, provider string, custom bool) string {
	prefix := ""
	if custom {
		if provider != "" {
			prefix = extAuthzMatchPrefix + "-" + provider + "-"
		} else {
			prefix = extAuthzMatchPrefix + "-"
		}
	}
	return fmt.Sprintf("%sns[%s]-policy[%s]-rule[%d]", prefix, ns, name, rule)
}

func actionName(a authzpb.AuthorizationPolicy_Action) string { return a.String() }

func (b *builder) rule(ap *securityv1.AuthorizationPolicy, i int, name, provider string) *Rule {
	if r, ok := b.rules[name]; ok {
		return r
	}
	r := &Rule{Policy: ap, Index: i, Name: name, Action: actionName(ap.Spec.GetAction()), DryRun: isDryRun(ap), Provider: provider}
	b.rules[name] = r
	b.order = append(b.order, name)
	return r
}

func (b *builder) build(policies []*securityv1.AuthorizationPolicy, action rbacpb.RBAC_Action, forTCP, custom bool) *builtRule {
	if len(policies) == 0 {
		return nil
	}
	br := &builtRule{action: action, policies: policies, providerRules: map[string]*rbacpb.RBAC{}, providerDry: map[string]*rbacpb.RBAC{}}
	enforce := &rbacpb.RBAC{Action: action, Policies: map[string]*rbacpb.Policy{}}
	shadow := &rbacpb.RBAC{Action: action, Policies: map[string]*rbacpb.Policy{}}
	hasEnforce, hasDry := false, false
	for _, ap := range policies {
		var cur *rbacpb.RBAC
		provider := ""
		if custom {
			provider = ap.Spec.GetProvider().GetName()
			if _, ok := br.providerRules[provider]; !ok {
				br.providerRules[provider] = &rbacpb.RBAC{Action: action, Policies: map[string]*rbacpb.Policy{}}
				br.providerDry[provider] = &rbacpb.RBAC{Action: action, Policies: map[string]*rbacpb.Policy{}}
			}
			if isDryRun(ap) {
				cur, hasDry = br.providerDry[provider], true
			} else {
				cur, hasEnforce = br.providerRules[provider], true
			}
		} else if isDryRun(ap) {
			cur, hasDry = shadow, true
		} else {
			cur, hasEnforce = enforce, true
		}
		for i, r := range ap.Spec.GetRules() {
			name := PolicyName(ap.Namespace, ap.Name, i, provider, custom)
			rr := b.rule(ap, i, name, provider)
			out := &rr.HTTP
			if forTCP {
				out = &rr.TCP
			}
			if r == nil {
				out.Skipped = "nil rule"
				continue
			}
			tr := b.translate(ap, i, r, forTCP, action)
			if tr.skipped != "" {
				out.Skipped, out.SkippedField = tr.skipped, tr.skippedField
				continue
			}
			out.Dropped = append(out.Dropped, tr.dropped...)
			if gen := tr.gen; gen != nil {
				cur.Policies[name] = gen
				out.Generated = true
				b.mark(name, ap, i)
			}
		}
		if len(ap.Spec.GetRules()) == 0 {
			name := PolicyName(ap.Namespace, ap.Name, 0, provider, custom)
			rr := b.rule(ap, -1, name, provider)
			out := &rr.HTTP
			if forTCP {
				out = &rr.TCP
			}
			out.Generated = true
			cur.Policies[name] = b.matchNever(ap)
			b.mark(name, ap, -1)
		}
	}
	if hasEnforce {
		br.rules = enforce
	}
	if hasDry {
		br.shadow = shadow
	}
	return br
}

// translate is newModel and Model.Generate for rule i of ap, r, from the Cache when it has it.
func (b *builder) translate(ap *securityv1.AuthorizationPolicy, i int, r *authzpb.Rule, forTCP bool, action rbacpb.RBAC_Action) translated {
	k := ruleKey{ap: ap, index: i, forTCP: forTCP, action: action}
	if b.cache != nil {
		if tr, ok := b.cache.rules[k]; ok {
			return tr
		}
	}
	var tr translated
	b.t.dropped = nil
	m, err := newModel(ap.Namespace, fmt.Sprintf("spec.rules[%d]", i), r)
	if err != nil {
		tr.skipped, tr.skippedField = "invalid rule: "+errText(err), errField(err)
	} else {
		m.migrateTrustDomain(b.tds)
		gen, err := m.generate(forTCP, !b.in.UseFilterState, action, b.t)
		if err != nil {
			tr.skipped, tr.skippedField = errText(err), errField(err)
		} else {
			tr.gen, tr.dropped = gen, slices.Clone(b.t.dropped)
		}
	}
	if b.cache != nil {
		b.cache.rules[k] = tr
	}
	return tr
}

// describe is describe(m), from the Cache when it has it.
func (b *builder) describe(m proto.Message) string {
	if b.cache == nil {
		return describe(m)
	}
	d, ok := b.cache.desc[m]
	if !ok {
		d = describe(m)
		b.cache.desc[m] = d
	}
	return d
}

func (b *builder) mark(name string, ap *securityv1.AuthorizationPolicy, i int) {
	if b.policyOf == nil {
		b.policyOf = map[string]ruleRef{}
	}
	b.policyOf[name] = ruleRef{ap: ap, index: i}
}

// matchNever is rbacPolicyMatchNever, the policy of an AuthorizationPolicy without rules.
func (b *builder) matchNever(ap *securityv1.AuthorizationPolicy) *rbacpb.Policy {
	perm := &rbacpb.Permission{Rule: &rbacpb.Permission_NotRule{NotRule: &rbacpb.Permission{Rule: &rbacpb.Permission_Any{Any: true}}}}
	prin := &rbacpb.Principal{Identifier: &rbacpb.Principal_NotId{NotId: &rbacpb.Principal{Identifier: &rbacpb.Principal_Any{Any: true}}}}
	b.t.perm[perm] = leaf{field: "spec.rules", note: "no rules: the policy matches nothing", value: "not any"}
	b.t.prin[prin] = leaf{field: "spec.rules", note: "no rules: the policy matches nothing", value: "not any"}
	return &rbacpb.Policy{Permissions: []*rbacpb.Permission{perm}, Principals: []*rbacpb.Principal{prin}}
}

func errText(err error) string {
	if fe, ok := err.(*fieldError); ok {
		return fe.err.Error()
	}
	return err.Error()
}

func errField(err error) string {
	if fe, ok := err.(*fieldError); ok {
		return fe.field
	}
	return ""
}

func shadowStatPrefix(r *rbacpb.RBAC) string {
	switch r.GetAction() {
	case rbacpb.RBAC_ALLOW:
		return shadowAllowStatPrefix
	case rbacpb.RBAC_DENY:
		return shadowDenyStatPrefix
	}
	return ""
}

func rbacActionName(a rbacpb.RBAC_Action) string {
	switch a {
	case rbacpb.RBAC_LOG:
		return "AUDIT"
	case rbacpb.RBAC_DENY:
		return "DENY"
	}
	return "ALLOW"
}

// localFilter is buildHTTP / buildTCP for ALLOW, DENY and AUDIT.
func (b *builder) localFilter(br *builtRule, forTCP bool) Filter {
	f := Filter{Action: rbacActionName(br.action)}
	var cfg proto.Message
	name := HTTPRBAC
	if forTCP {
		name = TCPRBAC
		cfg = &rbactcp.RBAC{Rules: br.rules, StatPrefix: tcpStatPrefix, ShadowRules: br.shadow, ShadowRulesStatPrefix: shadowStatPrefix(br.shadow)}
	} else {
		cfg = &rbachttp.RBAC{Rules: br.rules, ShadowRules: br.shadow, ShadowRulesStatPrefix: shadowStatPrefix(br.shadow)}
	}
	f.Name, f.Config = name, cfg
	f.Traces = append(f.Traces, b.rbacTraces("typedConfig.rules", br.rules, br.policies, false)...)
	f.Traces = append(f.Traces, b.rbacTraces("typedConfig.shadowRules", br.shadow, br.policies, true)...)
	return f
}

// Envoy is the filter as istiod sends it: Name, with Config packed in an Any. Packing
// marshals Config (a waypoint's RBAC filters are megabytes), so Build leaves it to the
// answers that print the filter (-o envoy and the document), once per filter. The packed
// bytes are deterministic (map keys sorted): two filters of the same content pack the same,
// which lets an answer print such filters once.
func (f Filter) Envoy() *listenerv3.Filter {
	a := &anypb.Any{}
	err := anypb.MarshalFrom(a, f.Config, proto.MarshalOptions{Deterministic: true})
	if err != nil {
		panic(fmt.Sprintf("packing %s: %v", f.Name, err))
	}
	return &listenerv3.Filter{Name: f.Name, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: a}}
}

// origin is the origin of an AuthorizationPolicy field.
func (b *builder) origin(ap *securityv1.AuthorizationPolicy, field, note string) provenance.Origin {
	if b.in.Origin != nil {
		return b.in.Origin(ap, field, note)
	}
	ref := provenance.Ref{Kind: "AuthorizationPolicy", Namespace: ap.Namespace, Name: ap.Name}
	return provenance.Origin{Layer: provenance.LayerAuthorizationPolicy, Resource: &ref, Field: field, Note: note}
}

func (b *builder) meshOrigin(field, note string) provenance.Origin {
	if b.in.MeshOrigin != nil {
		return b.in.MeshOrigin(field, note)
	}
	return provenance.Origin{Layer: provenance.LayerMeshConfig, Field: field, Note: note}
}

// rbacTraces records the origin of every policy, permission and principal of r.
func (b *builder) rbacTraces(prefix string, r *rbacpb.RBAC, policies []*securityv1.AuthorizationPolicy, dry bool) []provenance.FieldTrace {
	if r == nil {
		return nil
	}
	var out []provenance.FieldTrace
	first := policies[0]
	for _, ap := range policies {
		if isDryRun(ap) == dry {
			first = ap
			break
		}
	}
	actionNote := ""
	if dry {
		actionNote = "dry-run (annotation " + dryRunAnnotation + "): shadow rules, evaluated and logged, never enforced"
		out = append(out, provenance.FieldTrace{Path: prefix, Value: "shadow", Origin: b.origin(first, "metadata.annotations["+dryRunAnnotation+"]", actionNote)})
	}
	out = append(out, provenance.FieldTrace{Path: prefix + ".action", Value: r.GetAction().String(), Origin: b.origin(first, "spec.action", "")})
	names := make([]string, 0, len(r.Policies))
	for n := range r.Policies {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := r.Policies[n]
		ref, ok := b.policyOf[strings.TrimSuffix(n, badCustomActionSuffix)]
		if !ok {
			continue
		}
		pp := prefix + `.policies["` + n + `"]`
		field := "spec.rules"
		if ref.index >= 0 {
			field = fmt.Sprintf("spec.rules[%d]", ref.index)
		}
		out = append(out, provenance.FieldTrace{Path: pp, Value: ref.ap.Namespace + "/" + ref.ap.Name, Origin: b.origin(ref.ap, field, "")})
		for i, perm := range p.Permissions {
			out = b.walkPerm(out, fmt.Sprintf("%s.permissions[%d]", pp, i), perm, ref.ap)
		}
		for i, prin := range p.Principals {
			out = b.walkPrin(out, fmt.Sprintf("%s.principals[%d]", pp, i), prin, ref.ap)
		}
	}
	return out
}

func (b *builder) walkPerm(out []provenance.FieldTrace, path string, p *rbacpb.Permission, ap *securityv1.AuthorizationPolicy) []provenance.FieldTrace {
	if l, ok := b.t.perm[p]; ok {
		return append(out, provenance.FieldTrace{Path: path, Value: b.describe(p), Origin: b.origin(ap, l.field, l.note)})
	}
	switch r := p.Rule.(type) {
	case *rbacpb.Permission_AndRules:
		for i, c := range r.AndRules.Rules {
			out = b.walkPerm(out, fmt.Sprintf("%s.andRules.rules[%d]", path, i), c, ap)
		}
	case *rbacpb.Permission_OrRules:
		for i, c := range r.OrRules.Rules {
			out = b.walkPerm(out, fmt.Sprintf("%s.orRules.rules[%d]", path, i), c, ap)
		}
	case *rbacpb.Permission_NotRule:
		out = b.walkPerm(out, path+".notRule", r.NotRule, ap)
	}
	return out
}

func (b *builder) walkPrin(out []provenance.FieldTrace, path string, p *rbacpb.Principal, ap *securityv1.AuthorizationPolicy) []provenance.FieldTrace {
	if l, ok := b.t.prin[p]; ok {
		return append(out, provenance.FieldTrace{Path: path, Value: b.describe(p), Origin: b.origin(ap, l.field, l.note)})
	}
	switch r := p.Identifier.(type) {
	case *rbacpb.Principal_AndIds:
		for i, c := range r.AndIds.Ids {
			out = b.walkPrin(out, fmt.Sprintf("%s.andIds.ids[%d]", path, i), c, ap)
		}
	case *rbacpb.Principal_OrIds:
		for i, c := range r.OrIds.Ids {
			out = b.walkPrin(out, fmt.Sprintf("%s.orIds.ids[%d]", path, i), c, ap)
		}
	case *rbacpb.Principal_NotId:
		out = b.walkPrin(out, path+".notId", r.NotId, ap)
	}
	return out
}

// sortedProviders returns the providers of a CUSTOM build, sorted (maps.Keys + sort.Strings).
func sortedProviders(br *builtRule) []string {
	var out []string
	for p := range br.providerRules {
		out = append(out, p)
	}
	for p := range br.providerDry {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// IsDryRun reports whether istiod treats the policy as dry-run (annotation istio.io/dry-run,
// read with strconv.ParseBool; a value that does not parse is not dry-run).
func IsDryRun(ap *securityv1.AuthorizationPolicy) bool { return isDryRun(ap) }
