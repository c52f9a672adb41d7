package sidecarauthz

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/envoyrbac"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

func (e *explanation) dataPlaneSection() explain.Section {
	k := model.ObjectKey{Kind: "Pod", Namespace: e.pod.Namespace, Name: e.pod.Name}
	src := e.snap.Origin(provenance.LayerRegistry, k, "metadata.annotations["+AnnotationSidecarStatus+"]").String()
	return explain.Section{Title: DataPlaneSection, Columns: []string{"CHECK", "VALUE", "SOURCE"}, Rows: [][]string{
		{"sidecar", "injected (annotation " + AnnotationSidecarStatus + ")", src},
		{"answer", "the sidecar's inbound listener virtualInbound (not ztunnel)", ""},
	}}
}

func paText(pa *securityv1.PeerAuthentication) string {
	if pa == nil {
		return "(none)"
	}
	return paRef(pa).String()
}

func paModeText(pa *securityv1.PeerAuthentication) string {
	if pa == nil {
		return ""
	}
	if unset(pa.Spec.GetMtls()) {
		return "UNSET (inherits)"
	}
	return string(convertMode(pa.Spec.GetMtls().GetMode()))
}

func portLevelText(pa *securityv1.PeerAuthentication) string {
	if pa == nil {
		return ""
	}
	var ports []uint32
	for p := range pa.Spec.PortLevelMtls {
		ports = append(ports, p)
	}
	slices.Sort(ports)
	var parts []string
	for _, p := range ports {
		parts = append(parts, fmt.Sprintf("%d=%s", p, pa.Spec.PortLevelMtls[p].GetMode()))
	}
	return strings.Join(parts, ", ")
}

func createdText(pa *securityv1.PeerAuthentication) string {
	if pa == nil {
		return ""
	}
	if pa.CreationTimestamp.IsZero() {
		return "(unset)"
	}
	return pa.CreationTimestamp.UTC().Format(time.RFC3339)
}

// peerAuthnSection is the PeerAuthentication chain of the sidecar, in the ambient answer's shape.
func (e *explanation) peerAuthnSection() explain.Section {
	s := explain.Section{Title: "PeerAuthentication", Columns: []string{"LEVEL", "POLICY", "MODE", "PORT-LEVEL MTLS", "CREATED", "ROLE"}}
	for _, lv := range []struct {
		name string
		pa   *securityv1.PeerAuthentication
	}{{"mesh", e.pa.mesh}, {"namespace", e.pa.ns}, {"workload", e.pa.wl}} {
		role := ""
		if lv.pa != nil {
			role = "in effect"
		}
		s.Rows = append(s.Rows, []string{lv.name, paText(lv.pa), paModeText(lv.pa), portLevelText(lv.pa), createdText(lv.pa), role})
	}
	for _, n := range e.pa.ignored {
		s.Rows = append(s.Rows, []string{"", paText(n.pa), paModeText(n.pa), portLevelText(n.pa), createdText(n.pa), n.why})
	}
	from := "no PeerAuthentication sets a mode: PERMISSIVE"
	if e.pa.modeFrom != nil {
		from = "from " + paText(e.pa.modeFrom)
	}
	s.Rows = append(s.Rows, []string{"result", string(e.pa.mode), "", "", "", from})
	return s
}

// portSection lists the ports the sidecar has chains for and how each is protected.
func (e *explanation) portSection() explain.Section {
	s := explain.Section{Title: "Inbound ports", Columns: []string{"PORT", "SERVICE", "PROTOCOL", "MODE", "CHAINS"}}
	count := func(port uint32, passthrough bool) string {
		var parts []string
		for _, c := range e.chains {
			if c.port == port && c.passthrough == passthrough && !c.blackhole {
				parts = append(parts, c.acceptsText())
			}
		}
		return strings.Join(parts, "; ")
	}
	for _, t := range e.targets {
		mode, _ := e.pa.forPort(e.snap, t.target)
		svc := fmt.Sprintf("%s/%s port %d", t.svc.Namespace, t.svc.Name, t.port.Port)
		s.Rows = append(s.Rows, []string{strconv.Itoa(int(t.target)), svc, string(t.protocol), string(mode), count(t.target, false)})
	}
	for _, p := range e.perPortPassthrough {
		mode, _ := e.pa.forPort(e.snap, p)
		s.Rows = append(s.Rows, []string{strconv.Itoa(int(p)), "(none: port-level mTLS only)", "sniffed", string(mode), count(p, true)})
	}
	mode, _ := e.pa.forPort(e.snap, 0)
	s.Rows = append(s.Rows, []string{"other", "(none: catch-all)", "sniffed", string(mode), count(0, true)})
	return s
}

// policySection lists the AuthorizationPolicies that select the pod and what became of each rule.
func (e *explanation) policySection() explain.Section {
	s := explain.Section{Title: "Authorization policies", Columns: []string{"ENVOY POLICY", "ACTION", "HTTP CHAINS", "TCP CHAINS"}}
	for _, r := range e.rbac.Rules {
		action := r.Action
		if r.DryRun {
			action += " (dry-run)"
		}
		if r.Provider != "" {
			action += " " + r.Provider
		}
		s.Rows = append(s.Rows, []string{r.Name, action, buildText(r, r.HTTP, false), buildText(r, r.TCP, true)})
	}
	if len(e.rbac.Rules) == 0 {
		s.Rows = append(s.Rows, []string{"(none)", "", "no AuthorizationPolicy selects the pod: everything that passes mTLS is allowed", ""})
	}
	return s
}

func buildText(r envoyrbac.Rule, b envoyrbac.RuleBuild, tcp bool) string {
	switch {
	case b.Skipped != "" && b.SkippedField != "":
		return "dropped: " + b.SkippedField + ": " + b.Skipped
	case b.Skipped != "":
		return "dropped: " + b.Skipped
	case len(b.Dropped) > 0:
		var f []string
		for _, d := range b.Dropped {
			f = append(f, d.Field)
		}
		return "widened: ignored " + strings.Join(f, ", ")
	case r.Index < 0:
		return "matches nothing (no rules)"
	case b.Generated:
		return "as written"
	}
	return ""
}

// notAppliedSection lists the policies of the pod's and the root namespace with targetRefs,
// which a sidecar never applies.
func (e *explanation) notAppliedSection() *explain.Section {
	if len(e.targetRef) == 0 {
		return nil
	}
	s := explain.Section{Title: "Not applied to the sidecar", Columns: []string{"POLICY", "WHY"}}
	for _, ap := range e.targetRef {
		s.Rows = append(s.Rows, []string{"AuthorizationPolicy " + ap.Namespace + "/" + ap.Name, "spec.targetRefs: policies with targetRefs attach to gateways and waypoints, never to a sidecar"})
	}
	return &s
}

// readingSection is the plain reading, per port: plaintext accepted or rejected, what the
// policies let in or block.
func (e *explanation) readingSection() explain.Section {
	s := explain.Section{Title: "Reading", Columns: []string{"PORT", "READING"}}
	read := func(port uint32, lp listenerProtocol) string {
		mode, _ := e.pa.forPort(e.snap, port)
		var parts []string
		switch mode {
		case ModeStrict:
			parts = append(parts, "plaintext rejected: only mutual TLS from a mesh workload gets in")
		case ModePermissive:
			parts = append(parts, "plaintext accepted (PERMISSIVE): callers without a sidecar get in with no identity")
		default:
			parts = append(parts, "plaintext only (DISABLE): mutual TLS is not terminated, no caller has an identity")
		}
		parts = append(parts, e.policyReading(lp)...)
		return strings.Join(parts, "; ")
	}
	for _, t := range e.targets {
		s.Rows = append(s.Rows, []string{fmt.Sprintf("%d (%s)", t.target, t.protocol), read(t.target, toListenerProtocol(t.protocol))})
	}
	for _, p := range e.perPortPassthrough {
		s.Rows = append(s.Rows, []string{fmt.Sprintf("%d (no Service)", p), read(p, protoAuto)})
	}
	s.Rows = append(s.Rows, []string{"other ports", read(0, protoAuto)})
	return s
}

// policyReading says what the policies do on a chain kind; for sniffed ports both kinds apply.
func (e *explanation) policyReading(lp listenerProtocol) []string {
	kinds := []bool{true, false}
	switch lp {
	case protoHTTP:
		kinds = []bool{true}
	case protoTCP:
		kinds = []bool{false}
	}
	var out []string
	for _, http := range kinds {
		var deny, allow, custom []string
		allowPolicies := 0
		for _, r := range e.rbac.Rules {
			b := r.TCP
			if http {
				b = r.HTTP
			}
			if r.DryRun && r.Action != "CUSTOM" {
				continue
			}
			label := r.Policy.Namespace + "/" + r.Policy.Name
			if r.Index >= 0 {
				label += " rule " + strconv.Itoa(r.Index)
			}
			switch r.Action {
			case "ALLOW":
				allowPolicies++
				if b.Generated {
					allow = appendUnique(allow, label)
				}
			case "DENY":
				if b.Generated {
					deny = appendUnique(deny, label)
				}
			case "CUSTOM":
				if b.Generated {
					custom = appendUnique(custom, label)
				}
			}
		}
		kind := "TCP"
		if http {
			kind = "HTTP"
		}
		var parts []string
		if len(custom) > 0 {
			parts = append(parts, "CUSTOM asks the provider about what "+strings.Join(custom, ", ")+" match")
		}
		if len(deny) > 0 {
			parts = append(parts, "DENY blocks what "+strings.Join(deny, ", ")+" match")
		}
		switch {
		case allowPolicies > 0 && len(allow) == 0:
			parts = append(parts, "ALLOW policies exist but none applies here: nothing is allowed")
		case len(allow) > 0:
			parts = append(parts, "ALLOW lets in only what "+strings.Join(allow, ", ")+" match")
		default:
			parts = append(parts, "no ALLOW policy: everything not denied is allowed")
		}
		out = append(out, kind+": "+strings.Join(parts, "; "))
	}
	return out
}

func appendUnique(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
