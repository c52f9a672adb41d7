package ztunnelauthz

import (
	"fmt"
	"slices"
	"strings"

	"istio.io/api/security/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/waypointauthz"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// autoAllowFlag is the istiod flag that adds an ALLOW for the waypoint's pods' service accounts
// to every workload behind it (pilot/pkg/serviceregistry/ambient policies.go
// implicitWaypointPolicy, workloads.go implicitWaypointPolicies); off by default.
const autoAllowFlag = "PILOT_AUTO_ALLOW_WAYPOINT_POLICY"

// frontWaypoint is one waypoint bound in front of the pod, with what sends traffic through it
// and the pod ports that traffic reaches.
type frontWaypoint struct {
	ns, name string
	via      []string
	pws      []waypointauthz.PodWaypoint
	// ports are the pod ports the waypoint forwards to, sorted; 0 (every other port) last.
	ports    []uint32
	deployed bool
	sas      []string
	saFrom   string
	fromPods bool
}

func (f *frontWaypoint) ref() string { return f.ns + "/" + f.name }

// frontWaypoints groups waypointauthz.PodWaypoints by waypoint: the Service ports' target ports
// for a Service's waypoint, every port of the reading for the pod's own waypoint.
func (w *workload) frontWaypoints() []*frontWaypoint {
	var out []*frontWaypoint
	byName := map[string]*frontWaypoint{}
	for _, p := range w.pool.waypoints.For(w.pod, w.selecting) {
		f := byName[p.Namespace+"/"+p.Name]
		if f == nil {
			f = &frontWaypoint{ns: p.Namespace, name: p.Name, deployed: p.Deployed, sas: p.ServiceAccounts, saFrom: p.ServiceAccountsFrom, fromPods: p.FromPods}
			byName[p.Namespace+"/"+p.Name] = f
			out = append(out, f)
		}
		f.via = append(f.via, p.Via())
		f.pws = append(f.pws, p)
		if p.Service == nil {
			for _, pi := range w.ports() {
				f.ports = append(f.ports, pi.num)
			}
			continue
		}
		for _, sp := range p.Service.Spec.Ports {
			if t, ok := targetPort(w.pod, sp); ok {
				f.ports = append(f.ports, t)
			}
		}
	}
	for _, f := range out {
		slices.SortFunc(f.ports, func(a, b uint32) int {
			switch {
			case a == b:
				return 0
			case a == 0:
				return 1
			case b == 0:
				return -1
			case a < b:
				return -1
			}
			return 1
		})
		f.ports = slices.Compact(f.ports)
	}
	return out
}

// trustDomain is MeshConfig's trustDomain, cluster.local by default.
func (w *workload) trustDomain() string {
	if w.snap.MeshConfig != nil && w.snap.MeshConfig.GetTrustDomain() != "" {
		return w.snap.MeshConfig.GetTrustDomain()
	}
	return "cluster.local"
}

// waypointDiagnostics reports what ztunnel does to the traffic of the waypoints in front of the
// pod (docs/semantics/authz.md#permissive-strict-and-waypoints): a connection from a waypoint
// carries the waypoint's identity, so ztunnel policies written for clients reject it (W09); and
// plaintext accepted by ztunnel skips the waypoint and its policies (W10).
func (w *workload) waypointDiagnostics() []explain.Diagnostic {
	if !w.capture.captured {
		return nil
	}
	var out []explain.Diagnostic
	for _, f := range w.frontWaypoints() {
		n := len(out)
		for _, sa := range f.sas {
			out = append(out, w.identityRejected(f, &peer{trustDomain: w.trustDomain(), namespace: f.ns, serviceAccount: sa})...)
		}
		if d := w.bypassedByPlaintext(f); d != nil {
			out = append(out, *d)
		}
		// The waypoint may have no pods yet (or the files hold none): the service account is
		// then the one istiod's deployment controller gives them.
		if len(out) > n && !f.fromPods {
			w.res.Assumptions = append(w.res.Assumptions, fmt.Sprintf("waypoint %s's pods are not in the input: its service account is taken from %s (%s)",
				f.ref(), f.saFrom, strings.Join(f.sas, ", ")))
		}
	}
	return out
}

// identityRejected evaluates the policies ztunnel applies to the pod against the waypoint's
// identity, port by port: a DENY that matches it, or ALLOW policies none of which can match it.
func (w *workload) identityRejected(f *frontWaypoint, id *peer) []explain.Diagnostic {
	type denyHit struct {
		a     *Authorization
		group int
		ports []uint32
	}
	var denies []*denyHit
	var allowPorts []uint32
	var allows []*Authorization
	for _, a := range w.inEffect {
		if !a.DryRun && a.Action == ActionAllow {
			allows = append(allows, a)
		}
	}
	for _, port := range f.ports {
		c := conn{port: port, peer: id}
		denied := false
		for _, a := range w.inEffect {
			if a.DryRun || a.Action != ActionDeny {
				continue
			}
			gi := slices.IndexFunc(a.Groups, func(g *Group) bool { return evalGroup(g, c) == triYes })
			if gi < 0 {
				continue
			}
			i := slices.IndexFunc(denies, func(h *denyHit) bool { return h.a == a })
			if i < 0 {
				denies = append(denies, &denyHit{a: a, group: gi})
				i = len(denies) - 1
			}
			denies[i].ports = append(denies[i].ports, port)
			denied = true
			break
		}
		if denied || len(allows) == 0 {
			continue
		}
		// Denied to the waypoint, but not to every peer: ALLOW policies that let nobody in on
		// the port (allow-nothing, A19) deny all clients alike, which says nothing about the
		// waypoint.
		if !slices.ContainsFunc(allows, func(a *Authorization) bool { return evalPolicy(a, c) != triNo }) &&
			slices.ContainsFunc(allows, func(a *Authorization) bool { return evalPolicy(a, conn{port: port}) != triNo }) {
			allowPorts = append(allowPorts, port)
		}
	}
	principal := id.principal()
	who := fmt.Sprintf("waypoint %s's identity %s", f.ref(), principal)
	pod := w.pod.Namespace + "/" + w.pod.Name
	traffic := "everything the waypoint forwards to it (traffic to " + strings.Join(f.via, ", ") + ")"
	pending := ""
	if !f.deployed {
		pending = " once istiod has programmed the waypoint (the Gateway has no status.addresses yet)"
	}
	target := "Gateway " + f.ref()
	var out []explain.Diagnostic
	for _, h := range denies {
		e := w.pool.entries[h.a.Key()]
		out = append(out, diag.WaypointIdentityRejected.New(
			fmt.Sprintf("DENY policy %s (%s: %s) matches %s, so the ztunnel of pod %s rejects %s %s%s",
				h.a.Key(), w.ruleOf(e, h.group), describeGroup(h.a.Groups[h.group]), who, pod, traffic, portsText(h.ports, f.ports), pending),
			fmt.Sprintf("exclude the waypoint's identity from the rule (notPrincipals: [%s]), or move the rule to a policy with targetRefs on %s, which sees the client's identity; %s does not help, as DENY is evaluated before ALLOW",
				principal, target, autoAllowFlag),
			entryRefs(e)...))
	}
	var rules []string
	var refs []provenance.Ref
	if len(allowPorts) > 0 {
		for _, a := range allows {
			e := w.pool.entries[a.Key()]
			refs = append(refs, entryRefs(e)...)
			for gi, g := range a.Groups {
				if evalGroup(g, conn{port: allowPorts[0]}) == triNo {
					continue
				}
				rules = append(rules, a.Key()+" "+w.ruleOf(e, gi)+": "+describeGroup(g))
			}
		}
	}
	if len(rules) > 0 {
		out = append(out, diag.WaypointIdentityRejected.New(
			fmt.Sprintf("no ALLOW rule ztunnel applies to pod %s matches %s, so its ztunnel denies %s %s%s: the ALLOW rules name other peers (%s), and through the waypoint the peer is always the waypoint",
				pod, who, traffic, portsText(allowPorts, f.ports), pending, strings.Join(rules, "; ")),
			fmt.Sprintf("add an ALLOW rule for principal %s (and move the client rules to a policy with targetRefs on %s, which sees the client's identity), or run istiod with %s=true, which allows the service accounts of the waypoint's pods (istiod's environment is not in the snapshot)",
				principal, target, autoAllowFlag),
			refs...))
	}
	return out
}

// ruleOf names the input rule a group of a pool policy came from (`spec.rules[1]`).
func (w *workload) ruleOf(e *poolEntry, gi int) string {
	if e != nil && e.rec != nil {
		if t, ok := e.rec.Get(fmt.Sprintf("groups[%d]", gi)); ok && t.Origin.Field != "" {
			return t.Origin.Field
		}
	}
	return fmt.Sprintf("groups[%d]", gi)
}

// entryRefs is the input object of a pool policy.
func entryRefs(e *poolEntry) []provenance.Ref {
	switch {
	case e == nil:
		return nil
	case e.ap != nil:
		return []provenance.Ref{e.ap.ref()}
	case e.pa != nil:
		return []provenance.Ref{paKey(e.pa.obj).Ref()}
	}
	return nil
}

// portsText says on which of the ports the finding holds: "on every port" when it holds on all
// of them and they include every other port.
func portsText(hit, all []uint32) string {
	if len(hit) == len(all) && slices.Contains(hit, 0) {
		return "on every port"
	}
	var s []string
	for _, p := range hit {
		s = append(s, portLabel(p))
	}
	if len(hit) == 1 {
		return "on port " + s[0]
	}
	return "on ports " + strings.Join(s, ", ")
}

// bypassedByPlaintext: the waypoint enforces ALLOW or DENY policies (targetRefs on its Gateway,
// on the GatewayClass from the root namespace, or on a Service it serves for the pod), but
// ztunnel accepts plaintext on ports the waypoint forwards to, so clients outside the mesh reach
// the pod directly with no identity and none of those policies applies to them.
func (w *workload) bypassedByPlaintext(f *frontWaypoint) *explain.Diagnostic {
	var pols []string
	var refs []provenance.Ref
	for _, ap := range w.pool.aps {
		act := ap.obj.Spec.Action
		if len(ap.conv.targetRefs) == 0 || (act != v1beta1.AuthorizationPolicy_ALLOW && act != v1beta1.AuthorizationPolicy_DENY) || !slices.ContainsFunc(f.pws, func(p waypointauthz.PodWaypoint) bool { return p.Attaches(w.snap, ap.obj) }) {
			continue
		}
		pols = append(pols, ap.ref().Namespace+"/"+ap.ref().Name+" ("+act.String()+")")
		refs = append(refs, ap.ref())
	}
	if len(pols) == 0 {
		return nil
	}
	var open, modes []string
	for _, p := range f.ports {
		if strings.HasPrefix(verdict(w.inEffect, conn{port: p, plaintext: true}), "denied") {
			continue
		}
		open = append(open, portLabel(p))
		mode, from := w.chain.intendedMode(w.snap, p)
		m := modeText(mode)
		if from == "" {
			m += ", Istio's default: no PeerAuthentication sets a mode"
		}
		if !slices.Contains(modes, m) {
			modes = append(modes, m)
		}
	}
	if len(open) == 0 {
		return nil
	}
	var paRefs []provenance.Ref
	for _, pa := range []*securityv1.PeerAuthentication{w.chain.mesh, w.chain.ns, w.chain.wl} {
		if pa != nil {
			paRefs = append(paRefs, paKey(pa).Ref())
		}
	}
	pod := w.pod.Namespace + "/" + w.pod.Name
	strictFix := "set mtls.mode STRICT in a PeerAuthentication for pod " + pod + " (its namespace's, or a workload one)"
	if len(paRefs) > 0 {
		strictFix = "make the PeerAuthentication of pod " + pod + " STRICT"
	}
	d := diag.WaypointBypassedByPlaintext.New(
		fmt.Sprintf("the ztunnel of pod %s accepts plaintext on %s (mTLS mode %s): clients outside the mesh connect to the pod directly, skipping waypoint %s (traffic to %s) and its policies %s",
			pod, strings.Join(open, ", "), strings.Join(modes, ", "), f.ref(), strings.Join(f.via, ", "), strings.Join(pols, ", ")),
		fmt.Sprintf("%s, and allow only the waypoint's identity (%s/ns/%s/sa/%s) at ztunnel so that mesh clients go through the waypoint too",
			strictFix, w.trustDomain(), f.ns, f.sas[0]),
		append(paRefs, refs...)...)
	return &d
}
