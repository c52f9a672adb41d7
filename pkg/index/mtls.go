package index

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
	securitybeta "istio.io/api/security/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/meshhost"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// MTLSMode is istiod's model.MutualTLSMode.
type MTLSMode int

// MTLS modes (pilot/pkg/model/authentication.go).
const (
	// MTLSUnknown: no mode known (MESH_EXTERNAL services; a workload PeerAuthentication with
	// mode UNSET before inheritance).
	MTLSUnknown MTLSMode = iota
	MTLSDisable
	MTLSPermissive
	MTLSStrict
)

// String is the mode's upper-case name, as istiod prints it.
func (m MTLSMode) String() string {
	switch m {
	case MTLSDisable:
		return "DISABLE"
	case MTLSPermissive:
		return "PERMISSIVE"
	case MTLSStrict:
		return "STRICT"
	}
	return "UNKNOWN"
}

func convertMTLSMode(m securitybeta.PeerAuthentication_MutualTLS_Mode) MTLSMode {
	switch m {
	case securitybeta.PeerAuthentication_MutualTLS_DISABLE:
		return MTLSDisable
	case securitybeta.PeerAuthentication_MutualTLS_PERMISSIVE:
		return MTLSPermissive
	case securitybeta.PeerAuthentication_MutualTLS_STRICT:
		return MTLSStrict
	}
	return MTLSUnknown
}

// peerAuthnIndex is authentication.go AuthenticationPolicies for PeerAuthentications.
type peerAuthnIndex struct {
	// level holds the namespace- or mesh-level policy (no selector, or empty matchLabels) of
	// each namespace: the oldest one; the others are ignored.
	level map[string]*securityv1.PeerAuthentication
	// workload are the policies with a selector by namespace, then by the first (sorted)
	// label of their selector; each list oldest first.
	workload map[string]map[labelKV][]agedPA
}

// labelKV is one label, key and value.
type labelKV struct{ key, value string }

// agedPA is a PeerAuthentication and its rank by age (0 is the oldest).
type agedPA struct {
	rank int
	pa   *securityv1.PeerAuthentication
}

func (ix *Index) buildPeerAuthentications() {
	pas := slices.Clone(ix.snap.PeerAuthentications)
	slices.SortStableFunc(pas, func(a, b *securityv1.PeerAuthentication) int {
		return cmp.Or(a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time), strings.Compare(a.Name, b.Name), strings.Compare(a.Namespace, b.Namespace))
	})
	idx := &peerAuthnIndex{level: map[string]*securityv1.PeerAuthentication{}, workload: map[string]map[labelKV][]agedPA{}}
	for i, pa := range pas {
		if len(pa.Spec.GetSelector().GetMatchLabels()) == 0 {
			if _, seen := idx.level[pa.Namespace]; !seen {
				idx.level[pa.Namespace] = pa
			}
			continue
		}
		sel := pa.Spec.GetSelector().GetMatchLabels()
		first := sortedKeys(sel)[0]
		byLabel := idx.workload[pa.Namespace]
		if byLabel == nil {
			byLabel = map[labelKV][]agedPA{}
			idx.workload[pa.Namespace] = byLabel
		}
		kv := labelKV{first, sel[first]}
		byLabel[kv] = append(byLabel[kv], agedPA{rank: i, pa: pa})
	}
	ix.peerAuthn = idx
}

func paRef(pa *securityv1.PeerAuthentication) provenance.Ref {
	return provenance.Ref{Kind: "PeerAuthentication", Namespace: pa.Namespace, Name: pa.Name}
}

func (ix *Index) paOrigin(pa *securityv1.PeerAuthentication, field, note string) provenance.Origin {
	o := ix.snap.Origin(provenance.LayerPeerAuthentication, model.ObjectKey{Kind: "PeerAuthentication", Namespace: pa.Namespace, Name: pa.Name}, field)
	o.Note = note
	return o
}

func (ix *Index) incompleteNote(o provenance.Origin) provenance.Origin {
	if why, ok := ix.snap.Incomplete["PeerAuthentication"]; ok {
		n := "PeerAuthentications could not be read (" + why + "): the mode assumes there are none"
		if o.Note != "" {
			n = o.Note + "; " + n
		}
		o.Note = n
	}
	return o
}

// globalMode is globalMutualTLSMode: the root namespace's level policy, UNSET read as
// PERMISSIVE; MTLSUnknown when there is none.
func (ix *Index) globalMode() (MTLSMode, *securityv1.PeerAuthentication) {
	pa := ix.peerAuthn.level[ix.root]
	if pa == nil {
		return MTLSUnknown, nil
	}
	m := convertMTLSMode(pa.Spec.GetMtls().GetMode())
	if m == MTLSUnknown {
		m = MTLSPermissive
	}
	return m, pa
}

// NamespaceMTLSMode is the PeerAuthentication part of BestEffortInferServiceMTLSMode
// (AuthenticationPolicies.GetNamespaceMutualTLSMode plus its PERMISSIVE fallback): the oldest
// namespace-level PeerAuthentication of namespace (mode UNSET inherits the mesh-wide one, or
// PERMISSIVE), else the oldest mesh-wide one in the root namespace (UNSET is PERMISSIVE), else
// PERMISSIVE. Workload-selector policies and portLevelMtls are ignored, as istiod ignores them
// here. The Origin names the PeerAuthentication that decided. It never returns MTLSUnknown.
func (ix *Index) NamespaceMTLSMode(namespace string) (MTLSMode, provenance.Origin) {
	global, globalPA := ix.globalMode()
	if pa := ix.peerAuthn.level[namespace]; pa != nil && namespace != ix.root {
		m := convertMTLSMode(pa.Spec.GetMtls().GetMode())
		if m != MTLSUnknown {
			return m, ix.incompleteNote(ix.paOrigin(pa, "spec.mtls.mode", ""))
		}
		if globalPA != nil {
			return global, ix.incompleteNote(ix.paOrigin(pa, "spec.mtls.mode",
				fmt.Sprintf("mode UNSET inherits the mesh-wide %s (%s)", paRef(globalPA), global)))
		}
		return MTLSPermissive, ix.incompleteNote(ix.paOrigin(pa, "spec.mtls.mode", "mode UNSET and no mesh-wide PeerAuthentication: PERMISSIVE"))
	}
	if globalPA != nil {
		note := ""
		if convertMTLSMode(globalPA.Spec.GetMtls().GetMode()) == MTLSUnknown {
			note = "mode UNSET in the root namespace means PERMISSIVE"
		}
		return global, ix.incompleteNote(ix.paOrigin(globalPA, "spec.mtls.mode", note))
	}
	return MTLSPermissive, ix.incompleteNote(provenance.Origin{
		Layer: provenance.LayerIstioDefault,
		Note:  fmt.Sprintf("no PeerAuthentication in namespace %s or mesh-wide in %s: istiod assumes PERMISSIVE", namespace, ix.root),
	})
}

// InferServiceMTLSMode is push_context.go BestEffortInferServiceMTLSMode for one service port,
// given the traffic policy of the cluster (the DestinationRule top level for the default cluster,
// the subset's own top level for a subset cluster; nil for none): MTLSUnknown for MESH_EXTERNAL
// services; for passthrough (headless, ServiceEntry NONE, or loadBalancer.simple PASSTHROUGH)
// MTLSDisable when the port has no endpoint or an endpoint without a sidecar; otherwise
// NamespaceMTLSMode of the service's namespace. Auto-mTLS is used for STRICT and PERMISSIVE.
func (ix *Index) InferServiceMTLSMode(svc *Service, port uint32, tp *networking.TrafficPolicy) (MTLSMode, provenance.Origin) {
	if svc.MeshExternal {
		return MTLSUnknown, provenance.Origin{Layer: provenance.LayerRegistry, Resource: refPtr(svc.Ref),
			Note: "the service is MESH_EXTERNAL: istiod does not infer an mTLS mode, so there is no auto-mTLS"}
	}
	passthrough := tp.GetLoadBalancer().GetSimple() == networking.LoadBalancerSettings_PASSTHROUGH
	if svc.Resolution == Passthrough || passthrough {
		why := "the service is headless (resolution Passthrough)"
		if svc.Resolution != Passthrough {
			why = "loadBalancer.simple is PASSTHROUGH"
		}
		eps := svc.Endpoints[port]
		if len(eps) == 0 {
			return MTLSDisable, provenance.Origin{Layer: provenance.LayerRegistry, Resource: refPtr(svc.Ref),
				Note: fmt.Sprintf("%s and port %d has no endpoint: istiod infers DISABLE", why, port)}
		}
		for _, ep := range eps {
			if ep.TLSMode == tlsModeDisabled {
				return MTLSDisable, provenance.Origin{Layer: provenance.LayerRegistry, Resource: refPtr(ep.Ref),
					Note: fmt.Sprintf("%s and endpoint %s has no sidecar (security.istio.io/tlsMode is not istio): istiod infers DISABLE", why, ep.Address)}
			}
		}
	}
	return ix.NamespaceMTLSMode(svc.Namespace)
}

func refPtr(r provenance.Ref) *provenance.Ref { return &r }

// WorkloadMTLS is the server-side mTLS mode a workload-selector PeerAuthentication gives some of
// a service's endpoints (pilot/pkg/security/authn ComposePeerAuthentication: mesh, then
// namespace, then the oldest matching workload policy; UNSET inherits).
type WorkloadMTLS struct {
	PeerAuthentication provenance.Ref
	// Mode is the effective mode of the selected workloads.
	Mode MTLSMode
	// PortLevel is the effective mode per workload (target) port from portLevelMtls.
	PortLevel map[uint32]MTLSMode
	// Endpoints are the service's endpoints the policy decides for (one per workload and
	// service port).
	Endpoints []Endpoint
}

// ModeForPort is the effective mode on one endpoint port.
func (w WorkloadMTLS) ModeForPort(port uint32) MTLSMode {
	if m, ok := w.PortLevel[port]; ok {
		return m
	}
	return w.Mode
}

// WorkloadPeerAuthentications lists the workload-selector PeerAuthentications that decide the
// server-side mode of some of svc's endpoints with STRICT or DISABLE (at workload or port level).
// BestEffortInferServiceMTLSMode ignores these; the server sidecar does not, which is what the
// TLS-conflict diagnostics need.
func (ix *Index) WorkloadPeerAuthentications(svc *Service) []WorkloadMTLS {
	if len(ix.peerAuthn.workload) == 0 {
		return nil
	}
	var byPA map[*securityv1.PeerAuthentication]*WorkloadMTLS
	var order []*securityv1.PeerAuthentication
	// The ports of a service mostly list the same workloads in the same order: the policy of
	// an endpoint is reused from the previous port's endpoint at its place when both name the
	// same workload.
	var prev, cur []workloadPA
	for _, port := range sortedPorts(svc.Endpoints) {
		prev, cur = cur, prev[:0]
		if eps := svc.Endpoints[port]; cap(cur) < len(eps) {
			cur = make([]workloadPA, 0, len(eps))
		}
		for i, ep := range svc.Endpoints[port] {
			var wp workloadPA
			if i < len(prev) && prev[i].ref == ep.Ref {
				wp = prev[i]
			} else {
				w := ep.workload
				if w == nil {
					w = ix.workloadByRef[ep.Ref]
				}
				if w != nil {
					wp = workloadPA{ref: ep.Ref, ns: w.namespace, pa: ix.workloadPolicyOf(w)}
				} else {
					wp = workloadPA{ref: ep.Ref, ns: svc.Namespace, pa: ix.workloadPolicy(svc.Namespace, ep.Labels)}
				}
			}
			cur = append(cur, wp)
			pa, ns := wp.pa, wp.ns
			if pa == nil {
				continue
			}
			wm := byPA[pa]
			if wm == nil {
				if byPA == nil {
					byPA = map[*securityv1.PeerAuthentication]*WorkloadMTLS{}
				}
				wm = ix.composeWorkload(ns, pa)
				byPA[pa] = wm
				order = append(order, pa)
			}
			wm.Endpoints = append(wm.Endpoints, ep)
		}
	}
	var out []WorkloadMTLS
	for _, pa := range order {
		wm := byPA[pa]
		decisive := wm.Mode == MTLSStrict || wm.Mode == MTLSDisable
		for _, ep := range wm.Endpoints {
			if m := wm.ModeForPort(ep.Port); m == MTLSStrict || m == MTLSDisable {
				decisive = true
			}
		}
		if decisive {
			out = append(out, *wm)
		}
	}
	return out
}

// workloadPA is the workload-level PeerAuthentication of one endpoint's workload.
type workloadPA struct {
	ref provenance.Ref
	ns  string
	pa  *securityv1.PeerAuthentication
}

// workloadPolicyOf is workloadPolicy of w's namespace and labels, looked up once per workload.
func (ix *Index) workloadPolicyOf(w *workload) *securityv1.PeerAuthentication {
	if p := w.policy.Load(); p != nil {
		return p.pa
	}
	p := &workloadPolicy{pa: ix.workloadPolicy(w.namespace, w.labels)}
	w.policy.Store(p)
	return p.pa
}

// workloadPolicy is the oldest workload-level PeerAuthentication (selector set, not in the root
// namespace) of the workload's namespace that selects its labels. A policy that selects the
// labels has its first selector label among them, so only those lists are read.
func (ix *Index) workloadPolicy(ns string, lbls map[string]string) *securityv1.PeerAuthentication {
	if ns == ix.root {
		return nil
	}
	byLabel := ix.peerAuthn.workload[ns]
	if len(byLabel) == 0 {
		return nil
	}
	var best *agedPA
	for k, v := range lbls {
		for i, c := range byLabel[labelKV{k, v}] {
			if best != nil && c.rank >= best.rank {
				break
			}
			if meshhost.LabelsSubsetOf(c.pa.Spec.GetSelector().GetMatchLabels(), lbls) {
				best = &byLabel[labelKV{k, v}][i]
				break
			}
		}
	}
	if best == nil {
		return nil
	}
	return best.pa
}

func (ix *Index) composeWorkload(ns string, pa *securityv1.PeerAuthentication) *WorkloadMTLS {
	mode := MTLSPermissive
	if g := ix.peerAuthn.level[ix.root]; g != nil {
		if m := convertMTLSMode(g.Spec.GetMtls().GetMode()); m != MTLSUnknown {
			mode = m
		}
	}
	if n := ix.peerAuthn.level[ns]; n != nil && ns != ix.root {
		if m := convertMTLSMode(n.Spec.GetMtls().GetMode()); m != MTLSUnknown {
			mode = m
		}
	}
	if m := convertMTLSMode(pa.Spec.GetMtls().GetMode()); m != MTLSUnknown {
		mode = m
	}
	wm := &WorkloadMTLS{PeerAuthentication: paRef(pa), Mode: mode}
	if len(pa.Spec.GetPortLevelMtls()) > 0 {
		wm.PortLevel = map[uint32]MTLSMode{}
		for port, m := range pa.Spec.GetPortLevelMtls() {
			if pm := convertMTLSMode(m.GetMode()); pm != MTLSUnknown {
				wm.PortLevel[port] = pm
			} else {
				wm.PortLevel[port] = mode
			}
		}
	}
	return wm
}
