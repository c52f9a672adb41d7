package ztunnelauthz

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// ConditionZtunnelAccepted is the status condition istiod writes on an AuthorizationPolicy for
// ztunnel (pilot/pkg/model/service.go ZtunnelAccepted).
const ConditionZtunnelAccepted = "ZtunnelAccepted"

// The status texts of pilot/pkg/serviceregistry/ambient/authorization.go, verbatim.
const (
	httpRuleFmt = "ztunnel does not support HTTP attributes (found: %s). " +
		"In ambient mode you must use a waypoint proxy to enforce HTTP rules. %s"
	httpDenyRuleBoilerplate = "DENY policy with HTTP attributes is enforced without the HTTP rules. " +
		"This will be more restrictive than requested."
	httpAllowRuleBoilerplate = "Within an ALLOW policy, rules matching HTTP attributes are omitted. " +
		"This will be more restrictive than requested."
	dryRunFmt      = "found policy \"%s/%s\" using dry-run annotation, but support for ambient dry-run authorizationPolicies isn't enabled"
	unsupportedFmt = "ztunnel does not support the %s action"
	// attachedMessage is the message of the default condition (service.go GetConditions).
	attachedMessage = "attached to ztunnel"
)

// dryRunAnnotation is annotation.IoIstioDryRun.
const dryRunAnnotation = "istio.io/dry-run"

// Status is the ZtunnelAccepted condition istiod writes on an AuthorizationPolicy
// (WorkloadAuthorization.GetConditions). Status is the condition status: true when the policy
// was converted (even with a warning), false when it was rejected.
type Status struct {
	Type    string `json:"type"`
	Status  bool   `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// String is `True Accepted: attached to ztunnel`.
func (s *Status) String() string {
	st := "False"
	if s.Status {
		st = "True"
	}
	return fmt.Sprintf("%s %s: %s", st, s.Reason, s.Message)
}

// finding is a fact about one input policy that a Result turns into a Diagnostic.
type finding struct {
	id diag.ID
	// field is the input field in CRD spelling, or "" for the whole policy.
	field   string
	message string
	fix     string
}

// ConvertAuthorizationPolicy converts an AuthorizationPolicy to its ztunnel policy and returns
// the ZtunnelAccepted condition istiod writes for it. Both are nil for a targetRef policy (it is
// for a waypoint, and istiod writes no ztunnel condition). It reproduces
// convertAuthorizationPolicy in pilot/pkg/serviceregistry/ambient/authorization.go with
// istiod's default feature flags (ambient dry-run support off).
func ConvertAuthorizationPolicy(rootNamespace string, ap *securityv1.AuthorizationPolicy) (*Authorization, *Status) {
	c := convertAuthorizationPolicy(nil, rootNamespace, ap)
	return c.auth, c.status
}

// apConversion is the result of converting one AuthorizationPolicy, with origins and findings.
type apConversion struct {
	auth     *Authorization
	status   *Status
	rec      *provenance.Recorder
	findings []finding
	dryRun   bool
	// targetRefs is set for waypoint policies (never converted).
	targetRefs []*typev1beta1.PolicyTargetReference
}

func apKey(ap *securityv1.AuthorizationPolicy) model.ObjectKey {
	return model.ObjectKey{Kind: "AuthorizationPolicy", Namespace: ap.Namespace, Name: ap.Name}
}

// targetRefsOf is model.GetTargetRefs: targetRefs, or the single deprecated targetRef.
func targetRefsOf(spec *v1beta1.AuthorizationPolicy) []*typev1beta1.PolicyTargetReference {
	refs := spec.GetTargetRefs()
	if len(refs) == 0 && spec.GetTargetRef() != nil {
		refs = []*typev1beta1.PolicyTargetReference{spec.GetTargetRef()}
	}
	return refs
}

func convertAuthorizationPolicy(snap *model.Snapshot, rootNamespace string, obj *securityv1.AuthorizationPolicy) *apConversion {
	c := &apConversion{}
	pol := &obj.Spec
	o := originOf{snap: snap, layer: provenance.LayerAuthorizationPolicy, key: apKey(obj)}

	// 1. A dry-run policy is not sent.
	if c.dryRunSkips(obj) {
		return c
	}
	// 2. targetRef(s): a waypoint policy; no ztunnel Authorization and no ztunnel condition.
	if refs := targetRefsOf(pol); len(refs) > 0 {
		c.targetRefs = refs
		return c
	}
	// 3. Scope, 4. action.
	a := &Authorization{Name: obj.Name, Namespace: obj.Namespace}
	var scopeOrigin provenance.Origin
	a.Scope, scopeOrigin = c.scope(pol, rootNamespace, obj.Namespace, o)
	var ok bool
	if a.Action, ok = c.action(pol); !ok {
		return c
	}
	rec := provenance.NewRecorder()
	rec.Set("name", a.Name, o.at("metadata.name", ""))
	if a.Namespace != "" {
		rec.Set("namespace", a.Namespace, o.at("metadata.namespace", ""))
	}
	rec.Set("scope", a.Scope.String(), scopeOrigin)
	if pol.Action == v1beta1.AuthorizationPolicy_ALLOW {
		rec.Set("action", a.Action.String(), o.at("spec.action", "ALLOW (the default when spec.action is unset)"))
	} else {
		rec.Set("action", a.Action.String(), o.at("spec.action", ""))
	}
	// A DENY policy without rules (it never fires) is reported with Istio's validation (A25).
	// 5. One group per kept rule, in spec order.
	groups, l7 := c.rules(a.Action, pol.Rules, obj.Namespace, o)
	a.Groups = build(groups, rec)
	if a.Action == ActionAllow && len(a.Groups) == 0 {
		msg := "ALLOW policy has no rules: wherever it applies, every connection is denied (allow-nothing)"
		if len(pol.Rules) > 0 {
			msg = "every rule of this ALLOW policy was dropped: wherever it applies, every connection is denied"
		}
		c.findings = append(c.findings, finding{id: diag.AllowNothing, field: "spec.rules", message: msg,
			fix: "add rules that admit the intended peers with L4 fields, or delete the policy if deny-all is not intended"})
	}
	c.auth = a
	c.rec = rec
	// 6. The ZtunnelAccepted condition.
	if len(l7) > 0 {
		boilerplate := httpAllowRuleBoilerplate
		if a.Action == ActionDeny {
			boilerplate = httpDenyRuleBoilerplate
		}
		c.status = &Status{Type: ConditionZtunnelAccepted, Status: true, Reason: "UnsupportedValue",
			Message: fmt.Sprintf(httpRuleFmt, strings.Join(l7, ", "), boilerplate)}
	} else {
		c.status = &Status{Type: ConditionZtunnelAccepted, Status: true, Reason: "Accepted", Message: attachedMessage}
	}
	return c
}

// dryRunSkips reads the dry-run annotation (strconv.ParseBool; a parse error is only logged and
// the policy enforced) and reports whether the policy is left out of what ztunnel gets.
func (c *apConversion) dryRunSkips(obj *securityv1.AuthorizationPolicy) bool {
	if val := obj.Annotations[dryRunAnnotation]; val != "" {
		b, err := strconv.ParseBool(val)
		if err != nil {
			c.findings = append(c.findings, finding{id: diag.DryRun,
				field:   "metadata.annotations[" + dryRunAnnotation + "]",
				message: fmt.Sprintf("value %q is not a boolean, so istiod enforces the policy (not dry-run)", val),
				fix:     `write "true" or "false"`})
		}
		c.dryRun = b
	}
	if !c.dryRun {
		return false
	}
	c.status = &Status{Type: ConditionZtunnelAccepted, Status: false, Reason: "UnsupportedValue",
		Message: fmt.Sprintf(dryRunFmt, obj.Namespace, obj.Name)}
	c.findings = append(c.findings, finding{id: diag.DryRun,
		field:   "metadata.annotations[" + dryRunAnnotation + "]",
		message: "dry-run policy is not sent to ztunnel at all (AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY is off by default), so it is neither enforced nor logged",
		fix:     "remove the annotation to enforce it, or enable AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY on istiod"})
	return true
}

// scope is the policy's scope and where it comes from: a selector (even an empty one) gives
// WORKLOAD_SELECTOR, no selector in the root namespace GLOBAL, otherwise NAMESPACE.
func (c *apConversion) scope(pol *v1beta1.AuthorizationPolicy, rootNamespace, ns string, o originOf) (Scope, provenance.Origin) {
	switch {
	case pol.GetSelector() != nil:
		if len(pol.GetSelector().GetMatchLabels()) == 0 {
			c.findings = append(c.findings, finding{id: diag.EmptySelector,
				field:   "spec.selector",
				message: "empty selector: the policy is WORKLOAD_SELECTOR-scoped but no workload lists it (an empty label map reads back as nil), so it has no effect",
				fix:     "remove spec.selector to apply the policy to the whole namespace, or add matchLabels"})
		}
		return ScopeWorkloadSelector, o.at("spec.selector", "a selector, even an empty one, gives WORKLOAD_SELECTOR")
	case rootNamespace == ns:
		return ScopeGlobal, o.at("metadata.namespace", "no selector in the root namespace: applies mesh-wide")
	default:
		return ScopeNamespace, o.at("metadata.namespace", "no selector: applies to the whole namespace")
	}
}

// action is the ztunnel action; AUDIT and CUSTOM (and anything else) are not sent, and ok is
// false with the condition and finding recorded.
func (c *apConversion) action(pol *v1beta1.AuthorizationPolicy) (a Action, ok bool) {
	switch pol.Action {
	case v1beta1.AuthorizationPolicy_ALLOW:
		return ActionAllow, true
	case v1beta1.AuthorizationPolicy_DENY:
		return ActionDeny, true
	}
	c.status = &Status{Type: ConditionZtunnelAccepted, Status: false, Reason: "UnsupportedValue",
		Message: fmt.Sprintf(unsupportedFmt, pol.Action)}
	fix := "attach the policy to a waypoint with targetRefs, or use ALLOW or DENY"
	if pol.Action != v1beta1.AuthorizationPolicy_AUDIT && pol.Action != v1beta1.AuthorizationPolicy_CUSTOM {
		fix = "use ALLOW or DENY"
	}
	c.findings = append(c.findings, finding{id: diag.UnsupportedAction, field: "spec.action",
		message: fmt.Sprintf("action %s is not supported by ztunnel: the policy is not sent and has no effect on this workload", pol.Action),
		fix:     fix})
	return a, false
}

// rules converts every rule, keeping the groups of the rules that survive and the sorted HTTP
// attributes found in any of them.
func (c *apConversion) rules(action Action, rules []*v1beta1.Rule, ns string, o originOf) ([]*groupBuilder, []string) {
	l7 := map[string]bool{}
	var groups []*groupBuilder
	for i, rule := range rules {
		hr := handleRule(action, rule, ns, i, o)
		c.findings = append(c.findings, hr.findings...)
		for _, k := range hr.l7 {
			l7[k] = true
		}
		if hr.group != nil {
			groups = append(groups, hr.group)
		}
	}
	found := make([]string, 0, len(l7))
	for k := range l7 {
		found = append(found, k)
	}
	slices.Sort(found)
	return groups, found
}

type ruleResult struct {
	group    *groupBuilder
	l7       []string
	findings []finding
}

// httpOperations and httpSources list the HTTP-only fields of an Operation or a Source, by
// field name (authorization.go httpOperations, httpSources).
func httpOperations(op *v1beta1.Operation) []string {
	var out []string
	for _, f := range []struct {
		name string
		v    []string
	}{{"hosts", op.GetHosts()}, {"notHosts", op.GetNotHosts()}, {"methods", op.GetMethods()},
		{"notMethods", op.GetNotMethods()}, {"paths", op.GetPaths()}, {"notPaths", op.GetNotPaths()}} {
		if len(f.v) > 0 {
			out = append(out, f.name)
		}
	}
	return out
}

func httpSources(s *v1beta1.Source) []string {
	var out []string
	for _, f := range []struct {
		name string
		v    []string
	}{{"remoteIpBlocks", s.GetRemoteIpBlocks()}, {"notRemoteIpBlocks", s.GetNotRemoteIpBlocks()},
		{"requestPrincipals", s.GetRequestPrincipals()}, {"notRequestPrincipals", s.GetNotRequestPrincipals()}} {
		if len(f.v) > 0 {
			out = append(out, f.name)
		}
	}
	return out
}

// l4WhenKeys are the `when` keys ztunnel understands, and the Match fields they fill.
var l4WhenKeys = map[string][2]string{
	"source.ip":        {"sourceIps", "notSourceIps"},
	"source.namespace": {"namespaces", "notNamespaces"},
	"source.principal": {"principals", "notPrincipals"},
	"destination.ip":   {"destinationIps", "notDestinationIps"},
	"destination.port": {"destinationPorts", "notDestinationPorts"},
}

// handleRule converts spec.rules[i] into one Group: a to-clause, a from-clause, then one
// clause per `when` (authorization.go handleRule). An ALLOW rule with any HTTP attribute is
// dropped; a DENY rule keeps everything except the HTTP parts.
func handleRule(action Action, rule *v1beta1.Rule, ruleNs string, i int, o originOf) ruleResult {
	rc := &ruleConversion{action: action, ruleNs: ruleNs, o: o, rp: fmt.Sprintf("spec.rules[%d]", i), httpFound: map[string]bool{}}
	if rule == nil {
		rule = &v1beta1.Rule{}
		rc.find(diag.InvalidRule, rc.rp, "rule is null; treated as an empty rule (matches everything)", "remove the null entry")
	}
	rc.gb = &groupBuilder{origin: o.at(rc.rp, "")}
	if len(rule.To) > 0 {
		rc.gb.rules = append(rc.gb.rules, rc.toClause(rule.To))
	}
	if len(rule.From) > 0 {
		rc.gb.rules = append(rc.gb.rules, rc.fromClause(rule.From))
	}
	for k, when := range rule.When {
		rc.gb.rules = append(rc.gb.rules, rc.whenClause(k, when))
	}
	return rc.result()
}

// ruleConversion is the state of one handleRule: the group being built, the findings, and the
// bookkeeping for the plain-language judgement of HTTP attributes
// (docs/semantics/authz.md#degenerate-rules).
type ruleConversion struct {
	action Action
	ruleNs string
	o      originOf
	rp     string // "spec.rules[i]"

	gb        *groupBuilder
	findings  []finding
	httpFound map[string]bool
	// strippedEntries are the to/from entries that lost HTTP fields and kept L4 ones;
	// lostEntries those left empty.
	strippedEntries, lostEntries []string
}

func (rc *ruleConversion) find(id diag.ID, field, message, fix string) {
	rc.findings = append(rc.findings, finding{id: id, field: field, message: message, fix: fix})
}

// httpEntry records the HTTP fields an entry had, and whether it kept anything else.
func (rc *ruleConversion) httpEntry(ep string, problems []string, mb *matchBuilder) {
	for _, p := range problems {
		rc.httpFound[p] = true
	}
	switch {
	case len(problems) == 0:
	case mb.m.IsEmpty():
		rc.lostEntries = append(rc.lostEntries, ep)
	default:
		rc.strippedEntries = append(rc.strippedEntries, ep)
	}
}

// toClause is one match per operation (alternatives); only ports are L4.
func (rc *ruleConversion) toClause(tos []*v1beta1.Rule_To) *rulesBuilder {
	o := rc.o
	cl := &rulesBuilder{origin: o.at(rc.rp+".to", "one clause; its operations are alternatives")}
	for j, to := range tos {
		ep := fmt.Sprintf("%s.to[%d].operation", rc.rp, j)
		op := to.GetOperation()
		if op == nil {
			rc.find(diag.InvalidRule, ep, "operation is missing (rejected by Istio validation); treated as empty", "add an operation or remove the entry")
			op = &v1beta1.Operation{}
		}
		mb := &matchBuilder{m: &Match{}, origin: o.at(ep, "")}
		rc.findings = append(rc.findings, addPorts(mb, "destinationPorts", op.GetPorts(), ep+".ports", o)...)
		rc.findings = append(rc.findings, addPorts(mb, "notDestinationPorts", op.GetNotPorts(), ep+".notPorts", o)...)
		problems := httpOperations(op)
		rc.httpEntry(ep, problems, mb)
		if len(problems) == 0 && len(op.GetPorts())+len(op.GetNotPorts()) == 0 {
			rc.find(diag.InvalidRule, ep, "operation sets no field (rejected by Istio validation); it becomes an empty match that ztunnel skips",
				"add ports, or remove the entry")
		}
		cl.matches = append(cl.matches, mb)
	}
	return cl
}

// fromClause is one match per source; remoteIpBlocks and requestPrincipals are HTTP,
// trustDomains are neither mapped nor reported by istiod.
func (rc *ruleConversion) fromClause(froms []*v1beta1.Rule_From) *rulesBuilder {
	o := rc.o
	cl := &rulesBuilder{origin: o.at(rc.rp+".from", "one clause; its sources are alternatives")}
	for j, from := range froms {
		ep := fmt.Sprintf("%s.from[%d].source", rc.rp, j)
		src := from.GetSource()
		if src == nil {
			rc.find(diag.InvalidRule, ep, "source is missing (rejected by Istio validation); treated as empty", "add a source or remove the entry")
			src = &v1beta1.Source{}
		}
		mb := &matchBuilder{m: &Match{}, origin: o.at(ep, "")}
		rc.findings = append(rc.findings, addIPs(mb, "sourceIps", src.GetIpBlocks(), ep+".ipBlocks", o)...)
		rc.findings = append(rc.findings, addIPs(mb, "notSourceIps", src.GetNotIpBlocks(), ep+".notIpBlocks", o)...)
		addStrings(mb, "namespaces", src.GetNamespaces(), ep+".namespaces", o)
		addStrings(mb, "notNamespaces", src.GetNotNamespaces(), ep+".notNamespaces", o)
		rc.findings = append(rc.findings, addServiceAccounts(mb, "serviceAccounts", src.GetServiceAccounts(), rc.ruleNs, ep+".serviceAccounts", o)...)
		rc.findings = append(rc.findings, addServiceAccounts(mb, "notServiceAccounts", src.GetNotServiceAccounts(), rc.ruleNs, ep+".notServiceAccounts", o)...)
		rc.findings = append(rc.findings, checkPrincipals(src.GetPrincipals(), ep+".principals")...)
		rc.findings = append(rc.findings, checkPrincipals(src.GetNotPrincipals(), ep+".notPrincipals")...)
		addStrings(mb, "principals", src.GetPrincipals(), ep+".principals", o)
		addStrings(mb, "notPrincipals", src.GetNotPrincipals(), ep+".notPrincipals", o)
		rc.trustDomains(ep, src, mb)
		rc.httpEntry(ep, httpSources(src), mb)
		cl.matches = append(cl.matches, mb)
	}
	return cl
}

// trustDomains reports a source's trustDomains, which the conversion drops without a status.
func (rc *ruleConversion) trustDomains(ep string, src *v1beta1.Source, mb *matchBuilder) {
	if len(src.GetTrustDomains())+len(src.GetNotTrustDomains()) == 0 {
		return
	}
	f := ep + ".trustDomains"
	if len(src.GetTrustDomains()) == 0 {
		f = ep + ".notTrustDomains"
	}
	msg := "trustDomains are silently ignored by ztunnel conversion (no status)"
	if rc.action == ActionAllow {
		msg += ": this ALLOW source admits identities from any trust domain"
	} else {
		msg += ": this DENY source fires for identities from any trust domain"
	}
	if mb.m.IsEmpty() {
		msg += "; the source has nothing else, so it becomes an empty match that ztunnel skips"
	}
	rc.find(diag.ValueDroppedSilently, f, msg, "express the trust domain in principals (`<td>/ns/<ns>/sa/<sa>`), or enforce it on a waypoint")
}

// whenClause is the clause of one condition; values fill the positive field and notValues the
// negative field of the same match; any other key is HTTP and leaves an empty match.
func (rc *ruleConversion) whenClause(k int, when *v1beta1.Condition) *rulesBuilder {
	o := rc.o
	wp := fmt.Sprintf("%s.when[%d]", rc.rp, k)
	if when == nil {
		when = &v1beta1.Condition{}
	}
	fields, l4 := l4WhenKeys[when.GetKey()]
	mb := &matchBuilder{m: &Match{}, origin: o.at(wp, "")}
	if !l4 {
		rc.httpFound[when.GetKey()] = true
	} else {
		for n, f := range [2]struct {
			vals  []string
			field string
		}{{when.GetValues(), wp + ".values"}, {when.GetNotValues(), wp + ".notValues"}} {
			switch fields[n] {
			case "sourceIps", "notSourceIps", "destinationIps", "notDestinationIps":
				rc.findings = append(rc.findings, addIPs(mb, fields[n], f.vals, f.field, o)...)
			case "destinationPorts", "notDestinationPorts":
				rc.findings = append(rc.findings, addPorts(mb, fields[n], f.vals, f.field, o)...)
			default:
				if fields[n] == "principals" || fields[n] == "notPrincipals" {
					rc.findings = append(rc.findings, checkPrincipals(f.vals, f.field)...)
				}
				addStrings(mb, fields[n], f.vals, f.field, o)
			}
		}
	}
	return &rulesBuilder{origin: o.at(wp, "one clause per condition"), matches: []*matchBuilder{mb}}
}

// result judges the rule: what happens to HTTP attributes depends on the action. An ALLOW
// rule is dropped whole (never matches), a DENY rule keeps its L4 parts. The status text says
// "more restrictive" in both cases; for DENY that is not always true, so each rule is judged
// here.
func (rc *ruleConversion) result() ruleResult {
	res := ruleResult{findings: rc.findings}
	for k := range rc.httpFound {
		res.l7 = append(res.l7, k)
	}
	slices.Sort(res.l7)
	if len(res.l7) > 0 {
		attrs := strings.Join(res.l7, ", ")
		if rc.action == ActionAllow {
			res.findings = append(res.findings, finding{id: diag.HTTPFieldsInAllow, field: rc.rp,
				message: fmt.Sprintf("rule dropped: it uses HTTP attributes (%s) that ztunnel cannot enforce, so the connections it would allow are denied here", attrs),
				fix:     "move the HTTP conditions to a waypoint policy (targetRefs), keeping only L4 fields in this rule"})
			return res // ALLOW: the whole rule is dropped
		}
		msg := fmt.Sprintf("HTTP attributes (%s) are stripped at ztunnel", attrs)
		switch lost, stripped := rc.lostEntries, rc.strippedEntries; {
		case !groupCanFire(rc.gb):
			msg += ": a clause is left with only empty matches, so this rule can never fire (no-op)"
		case len(lost) > 0 && len(stripped) > 0:
			msg += fmt.Sprintf(": %s lost its alternative (weaker than written) and %s now fires on L4 fields alone (broader than written)",
				strings.Join(lost, ", "), strings.Join(stripped, ", "))
		case len(lost) > 0:
			msg += fmt.Sprintf(": the alternative %s became an empty match and is lost, so this rule denies less than written",
				strings.Join(lost, ", "))
		case len(stripped) > 0:
			msg += fmt.Sprintf(": %s now fires on its L4 fields alone, so this rule denies more than written",
				strings.Join(stripped, ", "))
		}
		res.findings = append(res.findings, finding{id: diag.HTTPFieldsInDeny, field: rc.rp, message: msg,
			fix: "enforce HTTP conditions on a waypoint policy (targetRefs)"})
	} else if !groupCanFire(rc.gb) {
		verb := "match"
		if rc.action == ActionDeny {
			verb = "fire"
		}
		res.findings = append(res.findings, finding{id: diag.RuleNeverMatches, field: rc.rp,
			message: fmt.Sprintf("rule can never %s at ztunnel: a clause has only empty matches after unsupported values were dropped", verb),
			fix:     "write numeric ports and valid IPs, or remove the rule"})
	}
	res.group = rc.gb
	return res
}

// groupCanFire is ztunnel's evaluation of a Group independent of the connection: a Group
// with no clauses always matches; otherwise every clause needs at least one non-empty match.
func groupCanFire(gb *groupBuilder) bool {
	for _, r := range gb.rules {
		if len(r.matches) == 0 {
			continue
		}
		ok := false
		for _, m := range r.matches {
			if !m.m.IsEmpty() {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// addStrings is stringToMatch: `*` is presence, a leading `*` a suffix, a trailing `*` a
// prefix, anything else exact (checked in that order).
func addStrings(mb *matchBuilder, field string, vals []string, path string, o originOf) {
	for k, v := range vals {
		var sm *StringMatch
		switch {
		case v == "*":
			sm = Presence()
		case strings.HasPrefix(v, "*"):
			sm = Suffix(strings.TrimPrefix(v, "*"))
		case strings.HasSuffix(v, "*"):
			sm = Prefix(strings.TrimSuffix(v, "*"))
		default:
			sm = Exact(v)
		}
		mb.addString(field, sm, o.at(fmt.Sprintf("%s[%d]", path, k), ""))
	}
}

// addServiceAccounts is stringToServiceAccountMatch: `ns/sa` split at the first `/`, a bare
// `sa` gets the policy's own namespace.
func addServiceAccounts(mb *matchBuilder, field string, vals []string, ruleNs, path string, o originOf) []finding {
	var fs []finding
	for k, v := range vals {
		f := fmt.Sprintf("%s[%d]", path, k)
		ns, sa, ok := strings.Cut(v, "/")
		note := ""
		if !ok {
			ns, sa = ruleNs, v
			note = "bare service account: namespace is the policy's own"
		}
		if strings.Contains(v, "*") || strings.Count(v, "/") > 1 || sa == "" || ns == "" {
			fs = append(fs, finding{id: diag.MalformedPrincipal, field: f,
				message: fmt.Sprintf("service account %q is malformed (Istio validation rejects `*`, more than one `/` and empty parts); ztunnel compares it literally", v),
				fix:     "write `namespace/serviceaccount` or a bare `serviceaccount`"})
		}
		mb.addServiceAccount(field, &ServiceAccountMatch{Namespace: ns, ServiceAccount: sa}, o.at(f, note))
	}
	return fs
}

// checkPrincipals flags principals that can never match as written.
func checkPrincipals(vals []string, path string) []finding {
	var fs []finding
	for k, v := range vals {
		f := fmt.Sprintf("%s[%d]", path, k)
		switch {
		case strings.HasPrefix(v, "spiffe://"):
			fs = append(fs, finding{id: diag.MalformedPrincipal, field: f,
				message: fmt.Sprintf("principal %q starts with spiffe://, but ztunnel compares principals against `<td>/ns/<ns>/sa/<sa>` without the scheme, so it never matches exactly", v),
				fix:     fmt.Sprintf("write %q", strings.TrimPrefix(v, "spiffe://"))})
		case v == "":
			fs = append(fs, finding{id: diag.MalformedPrincipal, field: f,
				message: "empty principal: it becomes exact \"\" and never matches a peer identity", fix: "remove it or write `<td>/ns/<ns>/sa/<sa>`"})
		case v != "*" && strings.Contains(strings.TrimSuffix(strings.TrimPrefix(v, "*"), "*"), "*"):
			fs = append(fs, finding{id: diag.MalformedPrincipal, field: f,
				message: fmt.Sprintf("principal %q has a `*` inside; only one leading or trailing `*` is a wildcard, the rest is compared literally", v),
				fix:     "use a single leading or trailing `*`"})
		}
	}
	return fs
}

// addPorts is stringToPort: base-10 integers up to 65535; anything else is dropped without
// any status.
func addPorts(mb *matchBuilder, field string, vals []string, path string, o originOf) []finding {
	var fs []finding
	for k, v := range vals {
		f := fmt.Sprintf("%s[%d]", path, k)
		p, err := strconv.ParseUint(v, 10, 32)
		if err != nil || p > 65535 {
			why := "is not a port number (named ports are not resolved)"
			if err == nil {
				why = "is out of range (above 65535)"
			}
			fs = append(fs, finding{id: diag.ValueDroppedSilently, field: f,
				message: fmt.Sprintf("port %q %s: ztunnel conversion drops it silently (no status)", v, why),
				fix:     "write the numeric container port"})
			continue
		}
		mb.addPort(field, uint32(p), o.at(f, ""))
	}
	return fs
}

// addIPs is stringToIP: an address gets the full length, a CIDR keeps the address as written
// (not masked) and its prefix length; unparsable and empty strings are dropped silently.
func addIPs(mb *matchBuilder, field string, vals []string, path string, o originOf) []finding {
	var fs []finding
	for k, v := range vals {
		f := fmt.Sprintf("%s[%d]", path, k)
		if v == "" {
			fs = append(fs, finding{id: diag.ValueDroppedSilently, field: f,
				message: "empty IP is dropped silently", fix: "remove the empty entry"})
			continue
		}
		var addr netip.Addr
		var bits uint32
		if strings.Contains(v, "/") {
			pfx, err := netip.ParsePrefix(v)
			if err != nil {
				fs = append(fs, finding{id: diag.ValueDroppedSilently, field: f,
					message: fmt.Sprintf("IP block %q does not parse: ztunnel conversion drops it silently (no status)", v),
					fix:     "write an IP address or a CIDR"})
				continue
			}
			addr, bits = pfx.Addr(), uint32(pfx.Bits())
		} else {
			a, err := netip.ParseAddr(v)
			if err != nil {
				fs = append(fs, finding{id: diag.ValueDroppedSilently, field: f,
					message: fmt.Sprintf("IP %q does not parse: ztunnel conversion drops it silently (no status)", v),
					fix:     "write an IP address or a CIDR"})
				continue
			}
			addr, bits = a, uint32(a.BitLen())
		}
		mb.addAddress(field, &Address{Address: addr.AsSlice(), Length: bits}, o.at(f, ""))
	}
	return fs
}
