package ztunnelauthz

import (
	"fmt"
	"slices"
	"strings"
	"time"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/meshhost"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// chain is the effective PeerAuthentication of one workload
// (docs/semantics/authz.md#the-effective-peerauthentication).
type chain struct {
	root string
	// candidates are fetchPeerAuthentications' picks, in snapshot (name) order.
	candidates []*securityv1.PeerAuthentication
	// winners per level, nil when the level has none.
	mesh, ns, wl *securityv1.PeerAuthentication
	// ties per level: the candidates that share the winner's creationTimestamp.
	ties map[paLevel][]*securityv1.PeerAuthentication
	// losers: candidates that lost on creationTimestamp or are ignored, with the reason.
	losers []paNote
	// notCandidates: PeerAuthentications that look relevant but are not candidates.
	notCandidates []paNote
	keys          paKeys
}

type paNote struct {
	pa    *securityv1.PeerAuthentication
	level paLevel
	why   string
}

// fetchCandidates is workloads.go fetchPeerAuthentications: every root-namespace policy whose
// selector is exactly nil, plus every policy of the workload's namespace that has no selector
// or whose matchLabels are a subset of the workload's labels.
func fetchCandidates(root string, pas []*securityv1.PeerAuthentication, ns string, lbls map[string]string) []*securityv1.PeerAuthentication {
	var out []*securityv1.PeerAuthentication
	for _, pa := range pas {
		sel := pa.Spec.GetSelector()
		switch {
		case pa.Namespace == root && sel == nil:
			out = append(out, pa)
		case pa.Namespace != ns:
		case sel == nil || meshhost.LabelsSubsetOf(sel.GetMatchLabels(), lbls):
			out = append(out, pa)
		}
	}
	return out
}

// buildChain picks, per level, the oldest candidate (convertedSelectorPeerAuthentications keeps
// the first it sees among equal creationTimestamps; that order comes from an informer and is
// unknown offline, so ties are recorded and the name-sorted first is the guess), then computes
// the keys from the three winners.
func buildChain(p *pool, pod *corev1.Pod) *chain {
	c := &chain{root: p.root, ties: map[paLevel][]*securityv1.PeerAuthentication{}}
	c.candidates = fetchCandidates(p.root, p.pas, pod.Namespace, pod.Labels)
	byLevel := map[paLevel][]*securityv1.PeerAuthentication{}
	for _, pa := range c.candidates {
		lv := levelOf(p.root, pa)
		if lv == levelIgnored {
			c.losers = append(c.losers, paNote{pa: pa, level: lv, why: "ignored: a root-namespace PeerAuthentication with a selector is never a workload policy in ambient"})
			continue
		}
		byLevel[lv] = append(byLevel[lv], pa)
	}
	pick := func(lv paLevel) *securityv1.PeerAuthentication {
		win, ties := oldest(byLevel[lv])
		if len(ties) > 0 {
			c.ties[lv] = ties
		}
		for _, pa := range byLevel[lv] {
			switch {
			case pa == win:
			case slices.Contains(ties, pa):
				c.losers = append(c.losers, paNote{pa: pa, level: lv, why: fmt.Sprintf("tied with %s on creationTimestamp: istiod keeps whichever it sees first, undecidable offline (guessed %s)", win.Name, win.Name)})
			default:
				c.losers = append(c.losers, paNote{pa: pa, level: lv, why: fmt.Sprintf("lost: %s is older", win.Name)})
			}
		}
		return win
	}
	c.mesh, c.ns, c.wl = pick(levelMesh), pick(levelNamespace), pick(levelWorkload)
	c.keys = peerAuthenticationKeys(p.root, c.mesh, c.ns, c.wl)

	// Root-namespace policies that are not candidates although they may look mesh-wide or
	// look like they select this workload.
	if pod.Namespace != p.root {
		for _, pa := range p.pas {
			sel := pa.Spec.GetSelector()
			if pa.Namespace != p.root || sel == nil {
				continue
			}
			if len(sel.GetMatchLabels()) == 0 {
				c.notCandidates = append(c.notCandidates, paNote{pa: pa, level: levelMesh,
					why: "not a candidate: a root-namespace policy counts as mesh-wide only without any selector; `selector: {}` applies only inside " + p.root})
			} else if meshhost.LabelsSubsetOf(sel.GetMatchLabels(), pod.Labels) && len(pod.Labels) > 0 {
				c.notCandidates = append(c.notCandidates, paNote{pa: pa, level: levelIgnored,
					why: "not a candidate: root-namespace PeerAuthentications with a selector do not apply to workloads in other namespaces"})
			}
		}
	}
	return c
}

// intendedMode is the mTLS mode the PeerAuthentications say for a port, as a user reads them:
// port-level, then workload, namespace and mesh level, each UNSET inheriting; PERMISSIVE when
// nothing is set.
func (c *chain) intendedMode(snap *model.Snapshot, port uint32) (mtlsMode, string) {
	if c.wl != nil && port != 0 {
		if m, ok := c.wl.Spec.PortLevelMtls[port]; ok && m.GetMode() != modeUnset {
			return m.GetMode(), paOrigin(snap, c.wl).at(fmt.Sprintf("spec.portLevelMtls[%d].mode", port), "").String()
		}
	}
	for _, pa := range []*securityv1.PeerAuthentication{c.wl, c.ns, c.mesh} {
		if pa != nil && !isUnset(pa) {
			return paMode(pa), paOrigin(snap, pa).at("spec.mtls.mode", "").String()
		}
	}
	return modePermissive, ""
}

// modeText spells a mode; DISABLE behaves like PERMISSIVE in ambient (ztunnel only rejects
// plaintext, it cannot turn mutual TLS off for HBONE).
func modeText(m mtlsMode) string {
	switch m {
	case modeDisable:
		return "DISABLE (PERMISSIVE-equivalent in ambient)"
	case modeUnset:
		return "UNSET (inherits)"
	}
	return m.String()
}

// portLevelText is `8080=STRICT, 9090=PERMISSIVE`, in port order.
func portLevelText(pa *securityv1.PeerAuthentication) string {
	ports := make([]uint32, 0, len(pa.Spec.PortLevelMtls))
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

// createdText is the creationTimestamp that decides between policies of one level.
func createdText(pa *securityv1.PeerAuthentication) string {
	if pa.CreationTimestamp.IsZero() {
		return "(unset)"
	}
	return pa.CreationTimestamp.UTC().Format(time.RFC3339)
}

// paRefString is `PeerAuthentication ns/name`.
func paRefString(pa *securityv1.PeerAuthentication) string { return paKey(pa).Ref().String() }

// sections returns the PeerAuthentication chain and, for -o wide, the candidates not used.
func (c *chain) sections() []explain.Section {
	cols := []string{"LEVEL", "POLICY", "MODE", "PORT-LEVEL MTLS", "CREATED", "ROLE"}
	main := explain.Section{Title: "PeerAuthentication", Columns: cols}
	for _, lv := range []struct {
		level paLevel
		pa    *securityv1.PeerAuthentication
	}{{levelMesh, c.mesh}, {levelNamespace, c.ns}, {levelWorkload, c.wl}} {
		if lv.pa == nil {
			main.Rows = append(main.Rows, []string{string(lv.level), "(none)", "", "", "", ""})
			continue
		}
		role := "in effect"
		if t := c.ties[lv.level]; len(t) > 0 {
			var n []string
			for _, x := range t {
				n = append(n, x.Name)
			}
			role = "in effect (guess: tied with " + strings.Join(n, ", ") + ")"
		}
		main.Rows = append(main.Rows, []string{string(lv.level), paRefString(lv.pa), modeText(paMode(lv.pa)), portLevelText(lv.pa), createdText(lv.pa), role})
	}
	keys := c.keys.keys()
	result := "[" + strings.Join(keys, ", ") + "]"
	why := "not STRICT: nothing listed"
	switch {
	case c.keys.strict && c.keys.strictFrom != nil:
		why = "STRICT from " + paRefString(c.keys.strictFrom) + ": static policy listed"
	case c.keys.portKey != "":
		why = c.keys.portKeyReason + ": converted policy listed instead of the static one"
	}
	main.Rows = append(main.Rows, []string{"keys", result, "", "", "", why})
	out := []explain.Section{main}
	if len(c.losers)+len(c.notCandidates) > 0 {
		wide := explain.Section{Title: "PeerAuthentication candidates not used", Columns: cols, Wide: true}
		for _, n := range append(append([]paNote{}, c.losers...), c.notCandidates...) {
			wide.Rows = append(wide.Rows, []string{string(n.level), paRefString(n.pa), modeText(paMode(n.pa)), portLevelText(n.pa), createdText(n.pa), n.why})
		}
		out = append(out, wide)
	}
	return out
}

// diagnostics reports ties, ignored root-namespace policies and DISABLE.
func (c *chain) diagnostics(pod *corev1.Pod) []explain.Diagnostic {
	var out []explain.Diagnostic
	for _, lv := range []paLevel{levelMesh, levelNamespace, levelWorkload} {
		ties := c.ties[lv]
		if len(ties) == 0 {
			continue
		}
		win := map[paLevel]*securityv1.PeerAuthentication{levelMesh: c.mesh, levelNamespace: c.ns, levelWorkload: c.wl}[lv]
		refs := []provenance.Ref{paKey(win).Ref()}
		same := true
		for _, t := range ties {
			refs = append(refs, paKey(t).Ref())
			alt := map[paLevel]*securityv1.PeerAuthentication{levelMesh: c.mesh, levelNamespace: c.ns, levelWorkload: c.wl}
			alt[lv] = t
			k := peerAuthenticationKeys(c.root, alt[levelMesh], alt[levelNamespace], alt[levelWorkload])
			if !slices.Equal(k.keys(), c.keys.keys()) {
				same = false
			}
		}
		fix := "delete all but one of them, or recreate the one you want to lose so it is newer"
		if same {
			out = append(out, diag.PeerAuthenticationTie.At(explain.SeverityInfo,
				fmt.Sprintf("%d %s-level PeerAuthentications share the oldest creationTimestamp; istiod's choice is undecidable offline, but every choice gives the same keys", len(ties)+1, lv),
				fix, refs...))
		} else {
			out = append(out, diag.PeerAuthenticationTie.New(
				fmt.Sprintf("%d %s-level PeerAuthentications share the oldest creationTimestamp; istiod keeps whichever it sees first, which is undecidable offline and changes this workload's keys (guessed %s)", len(ties)+1, lv, win.Name),
				fix, refs...))
		}
	}
	for _, n := range append(append([]paNote{}, c.losers...), c.notCandidates...) {
		if n.level == levelIgnored || (n.level == levelMesh && slices.ContainsFunc(c.notCandidates, func(x paNote) bool { return x.pa == n.pa })) {
			out = append(out, diag.RootSelectorPeerAuthentication.New(
				fmt.Sprintf("spec.selector: %s: it has no effect on pod %s/%s", strings.TrimPrefix(n.why, "not a candidate: "), pod.Namespace, pod.Name),
				"put a workload policy in the workload's namespace, or remove the selector for a mesh-wide policy",
				paKey(n.pa).Ref()))
		}
	}
	for _, pa := range []*securityv1.PeerAuthentication{c.mesh, c.ns, c.wl} {
		if pa == nil {
			continue
		}
		disable := paMode(pa) == modeDisable
		for _, m := range pa.Spec.PortLevelMtls {
			disable = disable || m.GetMode() == modeDisable
		}
		if disable {
			out = append(out, diag.DisableIsPermissive.New(
				"DISABLE is PERMISSIVE-equivalent in ambient: plaintext is accepted, and HBONE traffic is still mutual TLS",
				"write PERMISSIVE, which says what ztunnel does",
				paKey(pa).Ref()))
		}
	}
	return out
}
