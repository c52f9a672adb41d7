package ztunnelauthz

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/meshhost"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// portInfo is one destination port of the pod, with what names it.
type portInfo struct {
	// num is the pod (container / targetPort) port; 0 stands for every other port.
	num   uint32
	notes []string
}

// servicesSelecting returns the Services of the pod's namespace (services, those of the
// namespace) whose non-empty selector matches the pod (krt.FilterSelectsNonEmpty).
func servicesSelecting(services []*corev1.Service, pod *corev1.Pod) []*corev1.Service {
	var out []*corev1.Service
	for _, s := range services {
		if s == nil || s.Namespace != pod.Namespace || len(s.Spec.Selector) == 0 || len(pod.Labels) == 0 {
			continue
		}
		if meshhost.LabelsSubsetOf(s.Spec.Selector, pod.Labels) {
			out = append(out, s)
		}
	}
	return out
}

// targetPort resolves a Service port to the pod port: a number, a container port name, or
// the service port itself when targetPort is unset. ok is false for an unresolvable name.
func targetPort(pod *corev1.Pod, sp corev1.ServicePort) (uint32, bool) {
	switch {
	case sp.TargetPort.Type == intstr.String && sp.TargetPort.StrVal != "":
		for _, c := range pod.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == sp.TargetPort.StrVal {
					return uint32(cp.ContainerPort), true
				}
			}
		}
		return 0, false
	case sp.TargetPort.IntVal != 0:
		return uint32(sp.TargetPort.IntVal), true
	}
	return uint32(sp.Port), true
}

// containerPorts are the ports the pod's containers declare, with their names. Declaring
// ports is optional in Kubernetes, so a missing port here is not proof the pod does not listen.
func containerPorts(pod *corev1.Pod) map[uint32]string {
	out := map[uint32]string{}
	for _, c := range pod.Spec.Containers {
		for _, cp := range c.Ports {
			label := "container port"
			if cp.Name != "" {
				label += " " + cp.Name
			}
			out[uint32(cp.ContainerPort)] = label
		}
	}
	return out
}

// ports lists the pod ports worth reading: container ports, Service target ports,
// portLevelMtls keys and the ports the policies in effect name, then "other ports".
func (w *workload) ports() []portInfo {
	byNum := map[uint32]*portInfo{}
	add := func(p uint32, note string) {
		pi := byNum[p]
		if pi == nil {
			pi = &portInfo{num: p}
			byNum[p] = pi
		}
		if note != "" && !slices.Contains(pi.notes, note) {
			pi.notes = append(pi.notes, note)
		}
	}
	cps := containerPorts(w.pod)
	for p, label := range cps {
		add(p, label)
	}
	podPorts := map[uint32]bool{}
	for p := range cps {
		podPorts[p] = true
	}
	for _, s := range w.selecting {
		for _, sp := range s.Spec.Ports {
			t, ok := targetPort(w.pod, sp)
			if !ok {
				continue
			}
			podPorts[t] = true
			add(t, fmt.Sprintf("Service %s/%s port %d", s.Namespace, s.Name, sp.Port))
		}
	}
	if wl := w.chain.wl; wl != nil {
		for p := range wl.Spec.PortLevelMtls {
			if podPorts[p] {
				add(p, "")
			} else {
				add(p, "portLevelMtls key, not a known pod port")
			}
		}
	}
	for _, a := range w.inEffect {
		for _, g := range a.Groups {
			for _, r := range g.Rules {
				for _, m := range r.Matches {
					for _, p := range append(append([]uint32{}, m.DestinationPorts...), m.NotDestinationPorts...) {
						add(p, "")
					}
				}
			}
		}
	}
	nums := make([]uint32, 0, len(byNum))
	for p := range byNum {
		nums = append(nums, p)
	}
	slices.Sort(nums)
	out := make([]portInfo, 0, len(nums)+1)
	for _, p := range nums {
		out = append(out, *byNum[p])
	}
	return append(out, portInfo{num: 0})
}

// readingSection is the plain-language reading, port by port: what the PeerAuthentications
// say, whether plaintext gets through the mTLS policies, whether a connection without a peer
// identity gets through all the policies, and whom ALLOW lets in.
func (w *workload) readingSection() explain.Section {
	s := explain.Section{Title: "Reading", Columns: []string{"PORT", "PEERAUTHENTICATION SAYS", "PLAINTEXT (MTLS POLICIES)", "NO PEER IDENTITY (ALL POLICIES)", "ALLOW LETS IN"}}
	if !w.capture.captured {
		s.Rows = append(s.Rows, []string{"all", "-", "not checked by ztunnel", "not checked by ztunnel",
			"pod is not captured by ztunnel (" + w.capture.reason + "): none of these policies is enforced on its inbound traffic"})
		return s
	}
	wp := w.waypoint.any()
	for _, p := range w.ports() {
		label := portLabel(p.num)
		if len(p.notes) > 0 {
			label += " (" + strings.Join(p.notes, "; ") + ")"
		}
		// Intended mode vs what the listed DENY policies actually do to plaintext: in ambient
		// PeerAuthentication exists only as those DENY policies
		// (docs/semantics/authz.md#permissive-strict-and-waypoints).
		mode, from := w.chain.intendedMode(w.snap, p.num)
		says := modeText(mode) + " from " + from
		if from == "" {
			says = modeText(mode) + " (Istio default: no PeerAuthentication sets a mode)"
		}
		plain := verdict(w.paInEffect, conn{port: p.num, plaintext: true})
		if strings.HasPrefix(plain, "denied by DENY ") {
			plain = "rejected by " + strings.TrimPrefix(plain, "denied by DENY ")
		} else {
			plain = "accepted"
		}
		noID := verdict(w.inEffect, conn{port: p.num, plaintext: true})
		s.Rows = append(s.Rows, []string{label, says, plain, noID, describeAllow(w.inEffect, conn{port: p.num}, wp)})
	}
	return s
}

// servicePortDiagnostics warns about portLevelMtls keys that are a Service port but not a pod
// port: ambient copies the number unchanged and ztunnel compares it with the pod port.
func (w *workload) servicePortDiagnostics() []explain.Diagnostic {
	wl := w.chain.wl
	if wl == nil {
		return nil
	}
	cps := containerPorts(w.pod)
	svcs := w.selecting
	podPorts := map[uint32]bool{}
	for p := range cps {
		podPorts[p] = true
	}
	for _, s := range svcs {
		for _, sp := range s.Spec.Ports {
			if t, ok := targetPort(w.pod, sp); ok {
				podPorts[t] = true
			}
		}
	}
	keys := make([]uint32, 0, len(wl.Spec.PortLevelMtls))
	for p := range wl.Spec.PortLevelMtls {
		keys = append(keys, p)
	}
	slices.Sort(keys)
	var out []explain.Diagnostic
	for _, k := range keys {
		if podPorts[k] {
			continue
		}
		for _, s := range svcs {
			for _, sp := range s.Spec.Ports {
				t, ok := targetPort(w.pod, sp)
				if uint32(sp.Port) != k || !ok || t == k {
					continue
				}
				out = append(out, diag.ServicePortInPortLevelMtls.New(
					fmt.Sprintf("spec.portLevelMtls[%d]: %d is a port of Service %s/%s (targetPort %d), not a port of pod %s/%s; ztunnel compares the pod port, so this entry never matches",
						k, k, s.Namespace, s.Name, t, w.pod.Namespace, w.pod.Name),
					fmt.Sprintf("key the entry by the container port %d", t),
					paKey(wl).Ref(), provenance.Ref{Kind: "Service", Namespace: s.Namespace, Name: s.Name}))
			}
		}
	}
	return out
}

// waypointInfo says which waypoints the pod's traffic goes through.
type waypointInfo struct {
	workload, workloadFrom string
	services               [][3]string // service, waypoint, from
}

// any returns a waypoint the pod's traffic uses, preferring its own.
func (wi waypointInfo) any() string {
	if wi.workload != "" {
		return wi.workload
	}
	if len(wi.services) > 0 {
		return wi.services[0][1]
	}
	return ""
}

// waypointFor reads istio.io/use-waypoint (and istio.io/use-waypoint-namespace) from an object,
// falling back to its namespace. "none" opts out.
func waypointFor(snap *model.Snapshot, objLabels map[string]string, ns, what string) (string, string) {
	pick := func(l map[string]string, src string) (string, string, bool) {
		v, ok := l[useWaypointLabel]
		if !ok {
			return "", "", false
		}
		if v == "none" {
			return "", src + " opts out (" + useWaypointLabel + "=none)", true
		}
		wns := ns
		if n := l[useWaypointNsLabel]; n != "" {
			wns = n
		}
		return wns + "/" + v, src + " label " + useWaypointLabel, true
	}
	if wp, from, ok := pick(objLabels, what); ok {
		return wp, from
	}
	if n := snap.Namespace(ns); n != nil {
		if wp, from, ok := pick(n.Labels, "Namespace "+ns); ok {
			return wp, from
		}
	}
	return "", ""
}

// findWaypoints reads the workload's own waypoint (pod label, then namespace label) and the
// waypoints of the Services that select it (Service label, then namespace label), as istiod's
// computeWaypoint and the service waypoint lookup do from the istio.io/use-waypoint labels.
func findWaypoints(snap *model.Snapshot, pod *corev1.Pod, selecting []*corev1.Service) waypointInfo {
	var wi waypointInfo
	wi.workload, wi.workloadFrom = waypointFor(snap, pod.Labels, pod.Namespace, "Pod "+pod.Namespace+"/"+pod.Name)
	for _, s := range selecting {
		if wp, from := waypointFor(snap, s.Labels, s.Namespace, "Service "+s.Namespace+"/"+s.Name); wp != "" {
			wi.services = append(wi.services, [3]string{s.Namespace + "/" + s.Name, wp, from})
		}
	}
	return wi
}

// waypointPolicySection lists the targetRef policies of the pod's namespace and the root
// namespace: the waypoint enforces them, ztunnel never sees them.
func (w *workload) waypointPolicySection() *explain.Section {
	s := explain.Section{Title: "Waypoint policies (enforced by the waypoint, never by ztunnel)", Columns: []string{"POLICY", "TARGETS", "ACTION", "NOTE"}}
	svcs := w.selecting
	for _, ap := range w.aps {
		refs := ap.conv.targetRefs
		if len(refs) == 0 {
			continue
		}
		var targets, notes []string
		for _, r := range refs {
			ns := r.GetNamespace()
			if ns == "" {
				ns = ap.obj.Namespace
			}
			t := r.GetKind() + " " + ns + "/" + r.GetName()
			targets = append(targets, t)
			switch r.GetKind() {
			case "Service":
				for _, sv := range svcs {
					if sv.Namespace == ns && sv.Name == r.GetName() {
						notes = append(notes, t+" selects this pod")
					}
				}
			case "Gateway":
				if w.waypoint.workload == ns+"/"+r.GetName() {
					notes = append(notes, t+" is this pod's waypoint")
				}
				for _, sw := range w.waypoint.services {
					if sw[1] == ns+"/"+r.GetName() {
						notes = append(notes, t+" is the waypoint of Service "+sw[0])
					}
				}
			case "GatewayClass":
				notes = append(notes, "every waypoint of class "+r.GetName())
			}
		}
		note := "enforced by the waypoint"
		if len(notes) > 0 {
			note += ": " + strings.Join(notes, "; ")
		}
		s.Rows = append(s.Rows, []string{ap.ref().String(), strings.Join(targets, ", "), ap.obj.Spec.Action.String(), note})
	}
	if len(s.Rows) == 0 {
		return nil
	}
	return &s
}

// waypointSection carries the notes of docs/semantics/authz.md#permissive-strict-and-waypoints:
// which identity ztunnel sees behind a
// waypoint, and how traffic can bypass it.
func (w *workload) waypointSection() *explain.Section {
	s := explain.Section{Title: "Waypoint", Columns: []string{"NOTE"}}
	note := func(f string, a ...any) { s.Rows = append(s.Rows, []string{fmt.Sprintf(f, a...)}) }
	wi := w.waypoint
	if wi.workload != "" {
		note("traffic addressed to the pod goes through waypoint %s (%s)", wi.workload, wi.workloadFrom)
	} else if wi.workloadFrom != "" {
		note("%s", wi.workloadFrom)
	}
	for _, sw := range wi.services {
		note("traffic to Service %s goes through waypoint %s (%s)", sw[0], sw[1], sw[2])
	}
	httpRules := false
	for _, ap := range w.aps {
		if !w.relevantAP(ap.obj) {
			continue
		}
		for _, f := range ap.conv.findings {
			if f.id == diag.HTTPFieldsInAllow || f.id == diag.HTTPFieldsInDeny {
				httpRules = true
			}
		}
	}
	if wp := wi.any(); wp != "" {
		td := "cluster.local"
		if w.snap.MeshConfig != nil && w.snap.MeshConfig.GetTrustDomain() != "" {
			td = w.snap.MeshConfig.GetTrustDomain()
		}
		wns, wname, _ := strings.Cut(wp, "/")
		note("the waypoint connects to the pod over HBONE with its own identity (by default %s/ns/%s/sa/%s): ztunnel rules on principals, namespaces and serviceAccounts see the waypoint, not the original client", td, wns, wname)
		plaintext := false
		for _, p := range w.ports() {
			if !strings.HasPrefix(verdict(w.paInEffect, conn{port: p.num, plaintext: true}), "denied") {
				plaintext = true
			}
		}
		if plaintext {
			note("plaintext is accepted on some ports: clients outside the mesh reach the pod directly and skip every waypoint policy; use STRICT and an ALLOW policy for the waypoint's identity")
		}
		anyAllow := slices.ContainsFunc(w.inEffect, func(a *Authorization) bool { return a.Action == ActionAllow && !a.DryRun })
		if !anyAllow {
			note("no ALLOW policy applies at ztunnel: mesh clients that address the pod directly over HBONE bypass the waypoint; add an ALLOW for the waypoint's identity to force traffic through it")
		}
		note("PILOT_AUTO_ALLOW_WAYPOINT_POLICY is off by default, so istiod adds no implicit allow-from-waypoint policy to the key list")
	} else if httpRules || w.waypointPolicySection() != nil {
		note("the pod uses no waypoint: HTTP rules are not enforced for it (ztunnel drops or strips them, and targetRef policies need a waypoint)")
	}
	if len(s.Rows) == 0 {
		return nil
	}
	return &s
}
