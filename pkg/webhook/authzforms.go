package webhook

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	security "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"
)

// allowedTargetRefs is validatePolicyTargetReference's allowedTargetRefs (Service, ServiceEntry,
// Gateway, GatewayClass) as Istio prints it: config.GroupVersionKind's String in a slice.
const allowedTargetRefs = "[core/v1/Service networking.istio.io/v1/ServiceEntry gateway.networking.k8s.io/v1/Gateway gateway.networking.k8s.io/v1/GatewayClass]"

// targetRefIgnored is what istiod does with a policy with targetRefs (and whatever else it has):
// ShouldAttachPolicy (pilot/pkg/model/policyattachment.go) never attaches it to a sidecar by
// its selector, and convertAuthorizationPolicy (pilot/pkg/serviceregistry/ambient/authorization.go)
// leaves it out for ztunnel.
const targetRefIgnored = "istiod reads the policy by its targetRefs and ignores the selector: sidecars and ztunnel get none of it, and a waypoint or gateway takes it only if a reference names it"

// unmatchedTargetRef is what istiod does with a targetRef the webhook rejects.
const unmatchedTargetRef = "istiod keeps the policy as a targetRef policy, so sidecars and ztunnel get none of it; a waypoint or gateway takes it only by a reference that names it, in the policy's own namespace"

// policyTargets is the start of ValidateAuthorizationPolicy: validateOneOfSelectorType,
// validateWorkloadSelector, validatePolicyTargetReference and validatePolicyTargetReferences.
func (l *list) policyTargets(selector map[string]string, hasSelector bool, ref *typev1beta1.PolicyTargetReference, refs []*typev1beta1.PolicyTargetReference) {
	set := 0
	for _, b := range []bool{hasSelector, ref != nil, len(refs) > 0} {
		if b {
			set++
		}
	}
	if set > 1 {
		field := "spec.selector"
		if !hasSelector {
			field = "spec.targetRef"
		}
		l.add(field, "only one of targetRefs or workloadSelector can be set", targetRefIgnored)
	}
	for _, msg := range selectorErrors(selector) {
		l.add("spec.selector.matchLabels", msg, selectorMatchesNothing)
	}
	l.targetRef("spec.targetRef", ref)
	for i, r := range refs {
		l.targetRef(fmt.Sprintf("spec.targetRefs[%d]", i), r)
	}
}

// targetRef is validatePolicyTargetReference: a name, no namespace, and a kind Istio attaches
// policies to (the group compared canonically, "" as "core"; the version not checked).
func (l *list) targetRef(at string, r *typev1beta1.PolicyTargetReference) {
	if r == nil {
		return
	}
	if r.Name == "" {
		l.add(at+".name", "targetRef name must be set", unmatchedTargetRef)
	}
	if r.Namespace != "" {
		l.add(at+".namespace", "targetRef namespace must not be set; cross namespace referencing is not supported", unmatchedTargetRef)
	}
	group := r.Group
	if group == "" {
		group = "core"
	}
	switch group + "/" + r.Kind {
	case "core/Service", "networking.istio.io/ServiceEntry", "gateway.networking.k8s.io/Gateway", "gateway.networking.k8s.io/GatewayClass":
	default:
		l.add(at+".kind", fmt.Sprintf("targetRef must be to one of %s but was %s/%s", allowedTargetRefs, r.Group, r.Kind), unmatchedTargetRef)
	}
}

// serviceAccounts is security.CheckServiceAccount: at most 16 values, each `name` or
// `namespace/name`, without `*`, at most 320 characters. Its first error only.
func (l *list) serviceAccounts(field, key string, values []string) {
	if len(values) > 16 {
		l.add(field, "may not have more than 16 values", asWrittenAuthz)
		return
	}
	for k, v := range values {
		f := fmt.Sprintf("%s[%d]", field, k)
		msg := ""
		switch {
		case v == "":
			msg = "empty value not allowed, found in " + key
		case strings.Contains(v, "*"):
			msg = "wildcard not allowed, found in " + key
		case strings.Count(v, "/") > 1:
			msg = fmt.Sprintf("expected format 'serviceAccount' or 'namespace/serviceAccount', found %q in %s", v, key)
		case len(v) > 320:
			msg = fmt.Sprintf("value cannot exceed 320 characters, found %q in %s", v, key)
		case strings.HasPrefix(v, "/"):
			msg = fmt.Sprintf("expected format 'serviceAccount' or 'namespace/serviceAccount', found empty namespace %q in %s", v, key)
		case strings.HasSuffix(v, "/"):
			msg = fmt.Sprintf("expected format 'serviceAccount' or 'namespace/serviceAccount', found empty serviceAccount %q in %s", v, key)
		}
		if msg != "" {
			l.add(f, msg, asWrittenAuthz)
			return
		}
	}
}

// wildcardValues is security.CheckWildcardValues: no empty value, at most one `*`, at the start
// or the end. Its first error, with the index of the value.
func wildcardValues(key string, values []string) (int, string) {
	for k, v := range values {
		if v == "" {
			return k, "empty value not allowed, found in " + key
		}
	}
	for k, v := range values {
		n := strings.Count(v, "*")
		if n > 1 {
			return k, fmt.Sprintf("at most one wildcard is allowed, found in %s: %q", key, v)
		}
		if n == 1 && v != "*" && !strings.HasPrefix(v, "*") && !strings.HasSuffix(v, "*") {
			return k, fmt.Sprintf("wildcard is only allowed at the start or end, found in %s: %q", key, v)
		}
	}
	return -1, ""
}

// trustDomains is security.CheckTrustDomainValues: CheckWildcardValues, then no `/`. Its first
// error only.
func (l *list) trustDomains(field, key string, values []string) {
	if k, msg := wildcardValues(key, values); msg != "" {
		l.add(fmt.Sprintf("%s[%d]", field, k), msg, asWrittenAuthz)
		return
	}
	for k, v := range values {
		if strings.Contains(v, "/") {
			l.add(fmt.Sprintf("%s[%d]", field, k), fmt.Sprintf("trust domain must not contain '/', found in %s: %q", key, v), asWrittenAuthz)
			return
		}
	}
}

// validLiteral is security.validLiteral: RFC 3986 pchar.
var validLiteral = regexp.MustCompile("^[a-zA-Z0-9-._~%!$&'()+,;:@=]+$")

// pathTemplateIstiod is what istiod does with a path template the webhook rejects.
const pathTemplateIstiod = "istiod does not check it and builds the path match from what is written (a path with `{*}` or `{**}` becomes a URI template match, which Envoy may reject)"

// pathTemplates is security.CheckValidPathTemplate: `{*}` and `{**}` as whole segments, `{**}`
// last, no other braces, and with a template every segment a valid literal. Its first error.
func (l *list) pathTemplates(field, key string, paths []string) {
	for k, p := range paths {
		hasTemplate := strings.Contains(p, "{*}") || strings.Contains(p, "{**}")
		anySeen := false
		p = strings.Trim(p, "/")
		for _, g := range strings.Split(p, "/") {
			msg := ""
			switch {
			case g == "{*}" && !anySeen:
				continue
			case g == "{**}" && !anySeen:
				anySeen = true
				continue
			case (g == "{**}" || g == "{*}") && anySeen:
				msg = fmt.Sprintf("invalid or unsupported path %s, found in %s. {**} is not the last operator", p, key)
			case strings.ContainsAny(g, "{}"):
				msg = fmt.Sprintf("invalid or unsupported path %s, found in %s. Contains '{' or '}' beyond a supported path template", p, key)
			case hasTemplate && !validLiteral.MatchString(g):
				msg = fmt.Sprintf("invalid or unsupported path %s, found in %s. Contains segment %s with invalid string literal", p, key, g)
			}
			if msg != "" {
				l.add(fmt.Sprintf("%s[%d]", field, k), msg, pathTemplateIstiod)
				return
			}
		}
	}
}

// whenKeyIstiod is what istiod does with a `when` key the webhook rejects: the sidecar RBAC
// builder (pilot/pkg/security/authz/builder/builder.go) skips a rule authzmodel.New cannot
// build, and convertAuthorizationPolicy reads a key outside its layer-4 set as an HTTP
// attribute ztunnel cannot check.
const whenKeyIstiod = "a sidecar gets none of the rule (istiod skips a rule it cannot build); for ztunnel the key is an HTTP attribute: an ALLOW rule holding it matches nothing, and in a DENY rule the condition matches every connection"

// attribute is security.ValidateAttribute for a `when` key and one of its value lists: the
// error text (a multierror's, as Istio formats it, for the IP and port checks), whether it is
// about the key, and what istiod does.
func attribute(key string, values []string, action security.AuthorizationPolicy_Action) (string, bool, string) {
	for _, v := range values {
		if v == "" {
			return "empty value not allowed, found in " + key, false, asWrittenAuthz
		}
	}
	switch {
	case strings.HasPrefix(key, "request.headers"), strings.HasPrefix(key, "request.auth.claims"), strings.HasPrefix(key, "experimental.envoy.filters."):
		if msg := mapKey(key); msg != "" {
			return msg, true, whenKeyIstiod
		}
	case key == "source.ip", key == "remote.ip", key == "destination.ip":
		if errs := ipErrors(values); len(errs) > 0 {
			return multierrorText(errs), false, valueLeftOut(action)
		}
	case key == "destination.port":
		var errs []string
		for _, p := range values {
			n, err := strconv.ParseUint(p, 10, 32)
			if err != nil || n > 65535 {
				errs = append(errs, fmt.Sprintf("bad port (%s): %v", p, err))
			}
		}
		if len(errs) > 0 {
			return multierrorText(errs), false, valueLeftOut(action)
		}
	case key == "source.serviceAccount":
		var l list
		l.serviceAccounts("", key, values)
		if len(l) > 0 {
			return l[0].Webhook, false, asWrittenAuthz
		}
	case key == "source.trustDomain":
		if _, msg := wildcardValues(key, values); msg != "" {
			return msg, false, asWrittenAuthz
		}
	case key == "source.namespace", key == "source.principal", key == "request.auth.principal", key == "request.auth.audiences",
		key == "request.auth.presenter", key == "connection.sni":
	case key == "destination.namespace":
		return fmt.Sprintf("attribute %s is replaced by the metadata.namespace", key), true, whenKeyIstiod
	case strings.HasPrefix(key, "destination.labels"):
		return fmt.Sprintf("attribute %s is replaced by the workload selector", key), true, whenKeyIstiod
	case key == "destination.name", key == "destination.user":
		return fmt.Sprintf("deprecated attribute %s: only supported in v1alpha1", key), true, whenKeyIstiod
	default:
		return "unknown attribute: " + key, true, whenKeyIstiod
	}
	return "", false, ""
}

// mapKey is security.validateMapKey: `a[b]` with a non-empty b.
func mapKey(key string) string {
	open := strings.Index(key, "[")
	if strings.HasSuffix(key, "]") && open > 0 && open < len(key)-2 {
		return ""
	}
	return fmt.Sprintf("bad key (%s): should have format a[b]", key)
}

// ipErrors is security.ValidateIPs, one text per bad value.
func ipErrors(ips []string) []string {
	var out []string
	for _, v := range ips {
		if strings.Contains(v, "/") {
			if _, err := netip.ParsePrefix(v); err != nil {
				out = append(out, fmt.Sprintf("bad CIDR range (%s): %v", v, err))
			}
		} else if _, err := netip.ParseAddr(v); err != nil {
			out = append(out, fmt.Sprintf("bad IP address (%s)", v))
		}
	}
	return out
}

// multierrorText is how hashicorp/go-multierror's default ListFormatFunc writes errs, which is
// what Istio's "invalid `value` for `key`" error embeds.
func multierrorText(errs []string) string {
	if len(errs) == 1 {
		return fmt.Sprintf("1 error occurred:\n\t* %s\n\n", errs[0])
	}
	points := make([]string, len(errs))
	for i, e := range errs {
		points[i] = "* " + e
	}
	return fmt.Sprintf("%d errors occurred:\n\t%s\n\n", len(errs), strings.Join(points, "\n\t"))
}
