package sidecarauthz

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/envoyrbac"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/webhook"
)

// Diagnostic IDs of the sidecar answer (the catalogue: pkg/explain/diag, docs/diagnostics.md).
const (
	diagTCPWidened        = diag.SidecarHTTPFieldsWidenOnTCP
	diagTCPAllowDropped   = diag.SidecarAllowDroppedOnTCP
	diagPlaintextIdentity = diag.SidecarIdentityOnPlaintext
	diagProviderMissing   = diag.SidecarCustomProviderUnusable
	diagHTTPProviderTCP   = diag.SidecarHTTPProviderOnTCP
	diagDryRunAllow       = diag.SidecarDryRunAllow
	diagServicePortKey    = diag.SidecarServicePortInPortLevelMtls
	diagPortNoService     = diag.SidecarPortLevelWithoutService
	diagRootSelectorPA    = diag.SidecarRootSelectorPeerAuthentication
	diagTargetRef         = diag.SidecarTargetRefIgnored
	diagBadValue          = diag.SidecarBadValue
	diagInvalidRule       = diag.SidecarInvalidRule
	diagChainOrder        = diag.SidecarChainOrderFromMap
	diagLoad              = diag.SidecarLoadIssue
	diagInboundConflict   = diag.SidecarInboundPortConflict
	diagNoRequestAuthn    = diag.SidecarNoRequestAuthentication
	diagMalformedIdentity = diag.SidecarPrincipalMatchedLiterally
	diagRejected          = diag.SidecarRejectedByValidation
)

// finding is one diagnostic before it goes through the catalogue (diag.ID.At), which gives it
// its ID's spelling.
type finding struct {
	id   diag.ID
	sev  explain.Severity
	msg  string
	fix  string
	refs []provenance.Ref
}

func (f finding) d() explain.Diagnostic { return f.id.At(f.sev, f.msg, f.fix, f.refs...) }

func apRef(ap *securityv1.AuthorizationPolicy) provenance.Ref {
	return provenance.Ref{Kind: "AuthorizationPolicy", Namespace: ap.Namespace, Name: ap.Name}
}

// tcpPorts are the ports with TCP chains: the TCP and sniffed service ports, and "every other
// port" (the catch-all chains, always there).
func (e *explanation) tcpPorts() []string {
	var out []string
	for _, t := range e.targets {
		if toListenerProtocol(t.protocol) != protoHTTP {
			out = append(out, strconv.Itoa(int(t.target)))
		}
	}
	return append(out, "every port no Service exposes (catch-all chains)")
}

// plaintextPorts are the ports whose chains accept plaintext.
func (e *explanation) plaintextPorts() []string {
	var out []string
	for _, t := range e.targets {
		if m, _ := e.pa.forPort(e.snap, t.target); m != ModeStrict {
			out = append(out, strconv.Itoa(int(t.target)))
		}
	}
	if m, _ := e.pa.forPort(e.snap, 0); m != ModeStrict {
		out = append(out, "every port no Service exposes")
	}
	return out
}

func (e *explanation) diagnostics() []explain.Diagnostic {
	var out []explain.Diagnostic
	add := func(id diag.ID, sev explain.Severity, msg, fix string, refs ...provenance.Ref) {
		out = append(out, finding{id: id, sev: sev, msg: msg, fix: fix, refs: refs}.d())
	}
	tcp := strings.Join(e.tcpPorts(), ", ")
	allowOnTCP, allowPolicies := false, []provenance.Ref{}
	for _, r := range e.rbac.Rules {
		ref := apRef(r.Policy)
		if r.Action == "ALLOW" && !r.DryRun {
			allowPolicies = appendRef(allowPolicies, ref)
			allowOnTCP = allowOnTCP || r.TCP.Generated
		}
		for _, d := range r.TCP.Dropped {
			if strings.Contains(d.Reason, "HTTP only") && (r.Action == "DENY" || r.Action == "AUDIT" || r.Action == "CUSTOM") {
				what := "matches more than written"
				if r.Action == "DENY" || r.Action == "CUSTOM" {
					what = "denies more than written (with no other condition left, every connection)"
				}
				add(diagTCPWidened, explain.SeverityWarning,
					fmt.Sprintf("%s: %s is HTTP-only; on the TCP chains (ports %s) istiod drops it from %s rule %s, which then %s", d.Field, d.Value, tcp, r.Action, r.Name, what),
					"restrict the rule to HTTP ports with to.operation.ports, or move the HTTP condition to a policy for an HTTP port", ref)
			}
		}
		if r.TCP.Skipped != "" && r.Action == "ALLOW" && strings.Contains(r.TCP.Skipped, "HTTP only") {
			add(diagTCPAllowDropped, explain.SeverityWarning,
				fmt.Sprintf("%s: HTTP-only field; istiod drops ALLOW rule %s from the TCP chains (ports %s), so it allows nothing there", r.TCP.SkippedField, r.Name, tcp),
				"add an ALLOW rule without HTTP fields for the TCP ports (to.operation.ports), or declare the port as HTTP in the Service (name http-*, appProtocol http)", ref)
		}
		for _, b := range []envoyrbac.RuleBuild{r.HTTP, r.TCP} {
			if b.Skipped != "" && !strings.Contains(b.Skipped, "HTTP only") {
				id := diagBadValue
				if strings.HasPrefix(b.Skipped, "invalid rule") {
					id = diagInvalidRule
				}
				add(id, explain.SeverityError, fmt.Sprintf("%s: %s; istiod skips %s rule %s", b.SkippedField, reasonText(b.Skipped), r.Action, r.Name),
					"fix the value; a rule istiod cannot build is left out (an ALLOW allows less, every other rule with an unknown attribute is lost)", ref)
			}
			for _, d := range b.Dropped {
				if !strings.Contains(d.Reason, "HTTP only") {
					add(diagBadValue, explain.SeverityWarning, fmt.Sprintf("%s: %q: %s; istiod ignores the value in %s rule %s, which then matches more", d.Field, d.Value, reasonText(d.Reason), r.Action, r.Name),
						"fix the value (ports are numbers 0-65535, IPs and CIDRs must parse)", ref)
				}
			}
		}
		if r.Action == "ALLOW" && r.DryRun && r.Index <= 0 {
			add(diagDryRunAllow, explain.SeverityInfo, fmt.Sprintf("metadata.annotations[istio.io/dry-run]: ALLOW policy %s/%s is dry-run: it is logged as shadow rules and enforces nothing", r.Policy.Namespace, r.Policy.Name),
				"remove the annotation (or set it to false) to enforce the policy", ref)
		}
	}
	if len(allowPolicies) > 0 && !allowOnTCP {
		add(diagTCPAllowDropped, explain.SeverityWarning,
			fmt.Sprintf("no ALLOW rule survives on the TCP chains (ports %s): with ALLOW policies present, every TCP connection there is denied, including the catch-all chains of a pod that only serves HTTP", tcp),
			"add an ALLOW rule without HTTP-only fields for the TCP traffic you expect, or make sure no TCP traffic is expected", allowPolicies...)
	}
	out = append(out, e.identityDiagnostics()...)
	out = append(out, e.requestAuthnDiagnostics()...)
	out = append(out, e.principalDiagnostics()...)
	out = append(out, e.providerDiagnostics()...)
	out = append(out, e.peerAuthnDiagnostics()...)
	for _, ap := range e.targetRef {
		add(diagTargetRef, explain.SeverityInfo, fmt.Sprintf("spec.targetRefs: AuthorizationPolicy %s/%s attaches to a gateway or waypoint; the sidecar of pod %s/%s ignores it", ap.Namespace, ap.Name, e.pod.Namespace, e.pod.Name),
			"use spec.selector for a policy the sidecar enforces", apRef(ap))
	}
	for _, t := range e.targets {
		for _, c := range t.conflicts {
			add(diagInboundConflict, explain.SeverityInfo, fmt.Sprintf("Services %s and %s both expose target port %d; istiod builds the port's chains from the older one, %s (protocol %s)", t.svc.Name, c.Name, t.target, t.svc.Name, t.protocol),
				"give the Services the same protocol for the port, or one Service per port",
				provenance.Ref{Kind: "Service", Namespace: t.svc.Namespace, Name: t.svc.Name}, provenance.Ref{Kind: "Service", Namespace: c.Namespace, Name: c.Name})
		}
	}
	out = append(out, e.loadDiagnostics()...)
	out = append(out, e.validationDiagnostics()...)
	return out
}

// validationDiagnostics: what Istio's validation rejects in the policies that select the pod,
// in its PeerAuthentications and in the RequestAuthentications that select it (S18).
func (e *explanation) validationDiagnostics() []explain.Diagnostic {
	var out []explain.Diagnostic
	for _, ap := range e.selected {
		out = append(out, e.x.rejected(ap)...)
	}
	for _, pa := range []*securityv1.PeerAuthentication{e.pa.mesh, e.pa.ns, e.pa.wl} {
		if pa != nil {
			ref := provenance.Ref{Kind: "PeerAuthentication", Namespace: pa.Namespace, Name: pa.Name}
			out = append(out, webhook.Diagnostics(diagRejected, ref, webhook.PeerAuthentication(webhook.Meta{Name: pa.Name, Namespace: pa.Namespace, Annotations: pa.Annotations}, &pa.Spec))...)
		}
	}
	for _, ra := range e.requestAuthentications() {
		ref := provenance.Ref{Kind: "RequestAuthentication", Namespace: ra.Namespace, Name: ra.Name}
		out = append(out, webhook.Diagnostics(diagRejected, ref, webhook.RequestAuthentication(webhook.Meta{Name: ra.Name, Namespace: ra.Namespace, Annotations: ra.Annotations, Labels: ra.Labels}, &ra.Spec))...)
	}
	return out
}

func appendRef(list []provenance.Ref, r provenance.Ref) []provenance.Ref {
	if slices.Contains(list, r) {
		return list
	}
	return append(list, r)
}

// identityDiagnostics: principal and namespace conditions on ports that accept plaintext.
func (e *explanation) identityDiagnostics() []explain.Diagnostic {
	plain := e.plaintextPorts()
	if len(plain) == 0 {
		return nil
	}
	var out []explain.Diagnostic
	for _, ap := range e.selected {
		if envoyrbac.IsDryRun(ap) {
			continue
		}
		action := ap.Spec.GetAction().String()
		for i, r := range ap.Spec.GetRules() {
			for j, f := range r.GetFrom() {
				s := f.GetSource()
				base := fmt.Sprintf("spec.rules[%d].from[%d].source.", i, j)
				pos := len(s.GetPrincipals()) > 0 || len(s.GetNamespaces()) > 0 || len(s.GetServiceAccounts()) > 0
				neg := len(s.GetNotPrincipals()) > 0 || len(s.GetNotNamespaces()) > 0 || len(s.GetNotServiceAccounts()) > 0
				switch {
				case action == "DENY" && neg:
					out = append(out, finding{id: diagPlaintextIdentity, sev: explain.SeverityWarning,
						msg: fmt.Sprintf("%snotPrincipals/notNamespaces: on ports that accept plaintext (%s) a caller without mutual TLS has no identity, so this DENY rule blocks every plaintext caller", base, strings.Join(plain, ", ")),
						fix: "make the ports STRICT, or say what the rule means with principals of the callers to block", refs: []provenance.Ref{apRef(ap)}}.d())
				case pos && action != "DENY":
					out = append(out, finding{id: diagPlaintextIdentity, sev: explain.SeverityInfo,
						msg: fmt.Sprintf("%sprincipals/namespaces: on ports that accept plaintext (%s) a caller without mutual TLS has no identity and never matches this %s rule", base, strings.Join(plain, ", "), action),
						fix: "make the ports STRICT (PeerAuthentication) so every caller presents an identity", refs: []provenance.Ref{apRef(ap)}}.d())
				}
			}
		}
	}
	return out
}

// providerDiagnostics: CUSTOM providers that do not resolve, and HTTP providers on TCP chains.
func (e *explanation) providerDiagnostics() []explain.Diagnostic {
	var out []explain.Diagnostic
	var names []string
	for p := range e.rbac.Providers {
		names = append(names, p)
	}
	slices.Sort(names)
	for _, p := range names {
		why := e.rbac.Providers[p]
		if why == "" {
			continue
		}
		var refs []provenance.Ref
		for _, ap := range e.selected {
			if ap.Spec.GetAction().String() == "CUSTOM" && ap.Spec.GetProvider().GetName() == p {
				refs = appendRef(refs, apRef(ap))
			}
		}
		field := "spec.provider.name"
		if p == "" {
			field = "spec.provider"
		}
		out = append(out, finding{id: diagProviderMissing, sev: explain.SeverityError,
			msg: fmt.Sprintf("%s: CUSTOM provider %q cannot be used (%s): istiod fails closed and denies every request the CUSTOM rules match", field, p, why),
			fix: "define the provider in MeshConfig extensionProviders (envoyExtAuthzHttp or envoyExtAuthzGrpc, with a service that exists), or fix the name", refs: refs}.d())
	}
	for _, p := range e.rbac.HTTPOnlyProviders {
		var refs []provenance.Ref
		for _, ap := range e.selected {
			if ap.Spec.GetProvider().GetName() == p {
				refs = appendRef(refs, apRef(ap))
			}
		}
		out = append(out, finding{id: diagHTTPProviderTCP, sev: explain.SeverityWarning,
			msg: fmt.Sprintf("spec.provider.name: provider %q is an HTTP ext_authz service; istiod adds nothing for it on the TCP chains (ports %s), so the CUSTOM policy is not enforced there", p, strings.Join(e.tcpPorts(), ", ")),
			fix: "use an envoyExtAuthzGrpc provider to cover TCP, or add a DENY or ALLOW policy for the TCP ports", refs: refs}.d())
	}
	return out
}

// peerAuthnDiagnostics: port-level keys that name a Service port, keys no Service exposes,
// the map order of their chains, and root-namespace policies with a selector.
func (e *explanation) peerAuthnDiagnostics() []explain.Diagnostic {
	var out []explain.Diagnostic
	if wl := e.pa.wl; wl != nil {
		var keys []uint32
		for p := range wl.Spec.PortLevelMtls {
			keys = append(keys, p)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if slices.ContainsFunc(e.targets, func(t *target) bool { return t.target == k }) {
				continue
			}
			for _, t := range e.targets {
				if uint32(t.port.Port) == k && t.target != k {
					out = append(out, finding{id: diagServicePortKey, sev: explain.SeverityWarning,
						msg: fmt.Sprintf("spec.portLevelMtls[%d]: %d is the port of Service %s, whose target port on the pod is %d; port-level mTLS is keyed by the pod's port, so port %d keeps the workload mode %s", k, k, t.svc.Name, t.target, t.target, e.pa.mode),
						fix: fmt.Sprintf("use the key %d", t.target), refs: []provenance.Ref{paRef(wl)}}.d())
				}
			}
			out = append(out, finding{id: diagPortNoService, sev: explain.SeverityInfo,
				msg: fmt.Sprintf("spec.portLevelMtls[%d]: no Service exposes port %d of pod %s/%s; istiod adds catch-all chains for it with mode %s", k, k, e.pod.Namespace, e.pod.Name, e.pa.perPort[k]),
				fix: "expose the port in a Service, or remove the key", refs: []provenance.Ref{paRef(wl)}}.d())
		}
		if len(e.perPortPassthrough) > 1 {
			out = append(out, finding{id: diagChainOrder, sev: explain.SeverityInfo,
				msg: fmt.Sprintf("spec.portLevelMtls: ports %s have no Service; istiod adds their catch-all chains in the order of a Go map, which changes between pushes: the order shown (by port) is one of them", joinPorts(e.perPortPassthrough)),
				fix: "nothing to fix for Envoy (the chains match different ports); compare chains by port, not by position", refs: []provenance.Ref{paRef(wl)}}.d())
		}
	}
	for _, n := range e.pa.ignored {
		if n.pa.Namespace == e.root && len(n.pa.Spec.GetSelector().GetMatchLabels()) > 0 {
			out = append(out, finding{id: diagRootSelectorPA, sev: explain.SeverityWarning,
				msg: fmt.Sprintf("spec.selector: PeerAuthentication %s/%s is in the root namespace and has a selector: istiod never uses it for pod %s/%s", n.pa.Namespace, n.pa.Name, e.pod.Namespace, e.pod.Name),
				fix: "put a workload policy in the workload's namespace, or remove the selector for a mesh-wide policy", refs: []provenance.Ref{paRef(n.pa)}}.d())
		}
	}
	return out
}

func joinPorts(ps []uint32) string {
	var s []string
	for _, p := range ps {
		s = append(s, strconv.Itoa(int(p)))
	}
	return strings.Join(s, ", ")
}

// loadDiagnostics reports the load problems with objects that matter to this pod.
func (e *explanation) loadDiagnostics() []explain.Diagnostic {
	var out []explain.Diagnostic
	for _, is := range e.snap.Issues {
		if !is.AffectsPod(podAnswerKinds, e.pod.Namespace, e.root) {
			continue
		}
		sev := explain.SeverityWarning
		if is.Severity == string(explain.SeverityError) {
			sev = explain.SeverityError
		}
		d := finding{id: diagLoad, sev: sev, msg: is.Describe(), fix: "fix the object; everything else is explained without it"}.d()
		if is.Resource != nil {
			d.Resources = []provenance.Ref{*is.Resource}
		}
		out = append(out, d)
	}
	return out
}

// podAnswerKinds are the kinds whose load problems can change this answer.
var podAnswerKinds = []string{"AuthorizationPolicy", "PeerAuthentication", "Pod", "Namespace", "Service", "Deployment"}

// sortDiagnostics orders by severity, ID, then message, dropping exact duplicates.
func sortDiagnostics(ds []explain.Diagnostic) []explain.Diagnostic {
	slices.SortStableFunc(ds, func(a, b explain.Diagnostic) int {
		return cmp.Or(cmp.Compare(a.Severity.Rank(), b.Severity.Rank()), cmp.Compare(a.ID, b.ID), cmp.Compare(a.Message, b.Message))
	})
	return slices.CompactFunc(ds, func(a, b explain.Diagnostic) bool {
		return a.ID == b.ID && a.Severity == b.Severity && a.Message == b.Message && a.Fix == b.Fix && slices.Equal(a.Resources, b.Resources)
	})
}

// requestAuthenticated reports whether a RequestAuthentication selects the pod.
func (e *explanation) requestAuthenticated() bool {
	return len(e.requestAuthentications()) > 0
}

// requestAuthentications are the RequestAuthentications that select the pod: of its namespace
// or the root namespace, without targetRefs, whose selector is absent or matches
// (getConfigsForWorkload with ShouldAttachPolicy).
func (e *explanation) requestAuthentications() []*securityv1.RequestAuthentication {
	var out []*securityv1.RequestAuthentication
	for _, ra := range e.ras {
		if ra.Namespace != e.pod.Namespace && ra.Namespace != e.root {
			continue
		}
		if len(ra.Spec.GetTargetRefs()) > 0 || ra.Spec.GetTargetRef() != nil { //nolint:staticcheck // read as istiod reads it
			continue
		}
		if sel := ra.Spec.GetSelector(); sel == nil || subsetOf(sel.GetMatchLabels(), e.pod.Labels) {
			out = append(out, ra)
		}
	}
	return out
}

// requestAuthnDiagnostics: request principal conditions with no RequestAuthentication selecting
// the workload. Without one the sidecar validates no JWT, so no request has a request principal.
func (e *explanation) requestAuthnDiagnostics() []explain.Diagnostic {
	if _, unread := e.snap.Incomplete["RequestAuthentication"]; unread || e.requestAuthenticated() {
		return nil
	}
	var out []explain.Diagnostic
	for _, ap := range e.selected {
		action := ap.Spec.GetAction().String()
		for i, r := range ap.Spec.GetRules() {
			for j, f := range r.GetFrom() {
				s := f.GetSource()
				base := fmt.Sprintf("spec.rules[%d].from[%d].source.", i, j)
				if len(s.GetRequestPrincipals()) > 0 {
					what := "never matches on HTTP chains"
					if action == "DENY" {
						what = "never matches on HTTP chains: it denies nothing there"
					}
					out = append(out, finding{id: diagNoRequestAuthn, sev: explain.SeverityWarning,
						msg:  fmt.Sprintf("%srequestPrincipals: no RequestAuthentication selects pod %s/%s, so no request carries a validated JWT and this %s rule %s", base, e.pod.Namespace, e.pod.Name, action, what),
						fix:  "add a RequestAuthentication that selects the workload (its namespace, or the root namespace)",
						refs: []provenance.Ref{apRef(ap)}}.d())
				}
				if len(s.GetNotRequestPrincipals()) > 0 {
					out = append(out, finding{id: diagNoRequestAuthn, sev: explain.SeverityWarning,
						msg:  fmt.Sprintf("%snotRequestPrincipals: no RequestAuthentication selects pod %s/%s, so no request carries a validated JWT and this condition matches every request (%s)", base, e.pod.Namespace, e.pod.Name, action),
						fix:  "add a RequestAuthentication that selects the workload (its namespace, or the root namespace)",
						refs: []provenance.Ref{apRef(ap)}}.d())
				}
			}
		}
	}
	return out
}

// reasonText rewrites istiod's port error (`invalid port 99999: <nil>`) into words.
func reasonText(r string) string {
	if strings.HasPrefix(r, "invalid port ") {
		v, _, _ := strings.Cut(strings.TrimPrefix(r, "invalid port "), ":")
		return fmt.Sprintf("%s is not a port number (0-65535)", v)
	}
	return r
}

// principalDiagnostics: principals istiod matches literally although they look like patterns
// or carry a scheme: `*` only works at the start or the end, and istiod adds `spiffe://`
// itself.
func (e *explanation) principalDiagnostics() []explain.Diagnostic {
	var out []explain.Diagnostic
	check := func(ap *securityv1.AuthorizationPolicy, field string, vals []string) {
		for k, v := range vals {
			var why string
			switch {
			case strings.HasPrefix(v, "spiffe://"):
				why = "starts with spiffe://, which istiod adds itself: the match is spiffe://" + v + ", which no certificate carries"
			case strings.Contains(strings.TrimSuffix(strings.TrimPrefix(v, "*"), "*"), "*"):
				why = "has a `*` inside; istiod supports `*` only as a whole value, a prefix or a suffix, so it is matched literally and no identity matches"
			default:
				continue
			}
			out = append(out, finding{id: diagMalformedIdentity, sev: explain.SeverityWarning,
				msg:  fmt.Sprintf("%s[%d]: principal %q %s", field, k, v, why),
				fix:  "write `<trust domain>/ns/<namespace>/sa/<service account>`, with `*` only at the start or the end (or use namespaces / serviceAccounts)",
				refs: []provenance.Ref{apRef(ap)}}.d())
		}
	}
	for _, ap := range e.selected {
		for i, r := range ap.Spec.GetRules() {
			for j, f := range r.GetFrom() {
				base := fmt.Sprintf("spec.rules[%d].from[%d].source.", i, j)
				check(ap, base+"principals", f.GetSource().GetPrincipals())
				check(ap, base+"notPrincipals", f.GetSource().GetNotPrincipals())
			}
		}
	}
	return out
}
