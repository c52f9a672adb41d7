package sidecarauthz

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	securityv1beta1 "istio.io/api/security/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// Mode is a sidecar's mutual TLS mode for a port (model.MutualTLSMode).
type Mode string

// The modes.
const (
	ModeDisable    Mode = "DISABLE"
	ModePermissive Mode = "PERMISSIVE"
	ModeStrict     Mode = "STRICT"
)

// peerAuthn is the effective PeerAuthentication of one sidecar workload: the policies in effect
// per level and the merged mode, as ComposePeerAuthentication computes them.
type peerAuthn struct {
	mesh, ns, wl *securityv1.PeerAuthentication
	// ignored are PeerAuthentications that look relevant but are not used, with the reason.
	ignored []paNote
	// mode is the workload's mode; modeFrom the policy and field that set it (nil: default).
	mode     Mode
	modeFrom *securityv1.PeerAuthentication
	// perPort is the workload policy's portLevelMtls, UNSET resolved to the workload mode.
	perPort map[uint32]Mode
}

type paNote struct {
	pa  *securityv1.PeerAuthentication
	why string
}

func paRef(pa *securityv1.PeerAuthentication) provenance.Ref {
	return provenance.Ref{Kind: "PeerAuthentication", Namespace: pa.Namespace, Name: pa.Name}
}

func paKey(pa *securityv1.PeerAuthentication) model.ObjectKey {
	return model.ObjectKey{Kind: "PeerAuthentication", Namespace: pa.Namespace, Name: pa.Name}
}

// subsetOf is labels.Instance.SubsetOf: an empty selector selects everything.
func subsetOf(sel, lbls map[string]string) bool {
	for k, v := range sel {
		if w, ok := lbls[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func convertMode(m securityv1beta1.PeerAuthentication_MutualTLS_Mode) Mode {
	switch m {
	case securityv1beta1.PeerAuthentication_MutualTLS_DISABLE:
		return ModeDisable
	case securityv1beta1.PeerAuthentication_MutualTLS_STRICT:
		return ModeStrict
	}
	return ModePermissive
}

func unset(m *securityv1beta1.PeerAuthentication_MutualTLS) bool {
	return m == nil || m.Mode == securityv1beta1.PeerAuthentication_MutualTLS_UNSET
}

// byCreation is configCompareByCreationTime: creationTimestamp, then name, then namespace.
func byCreation(a, b *securityv1.PeerAuthentication) int {
	if c := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Namespace, b.Namespace))
}

// composePeerAuthn selects the PeerAuthentications of the pod's namespace and the root namespace
// whose selector matches the pod (getConfigsForWorkload; an empty selector matches), keeps one
// selector-less policy per namespace, the oldest (addPeerAuthentication), and merges them as
// ComposePeerAuthentication does: workload over namespace over mesh, UNSET inheriting, and the
// port-level modes of the workload policy. A root-namespace policy with a selector is never a
// workload policy.
func composePeerAuthn(root string, all []*securityv1.PeerAuthentication, pod *corev1.Pod) *peerAuthn {
	var sorted []*securityv1.PeerAuthentication
	for _, pa := range all {
		if pa.Namespace == pod.Namespace || pa.Namespace == root {
			sorted = append(sorted, pa)
		}
	}
	slices.SortStableFunc(sorted, byCreation)
	p := &peerAuthn{mode: ModePermissive}
	seenNsLevel := map[string]*securityv1.PeerAuthentication{}
	for _, pa := range sorted {
		sel := pa.Spec.GetSelector().GetMatchLabels()
		nsLevel := len(sel) == 0
		if nsLevel {
			if first, ok := seenNsLevel[pa.Namespace]; ok {
				p.ignored = append(p.ignored, paNote{pa, fmt.Sprintf("ignored: %s is an older selector-less policy of the same namespace", first.Name)})
				continue
			}
			seenNsLevel[pa.Namespace] = pa
		}
		if !subsetOf(sel, pod.Labels) {
			continue
		}
		switch {
		case nsLevel && pa.Namespace == root:
			if p.mesh == nil {
				p.mesh = pa
			}
		case nsLevel:
			if p.ns == nil {
				p.ns = pa
			}
		case pa.Namespace == root:
			p.ignored = append(p.ignored, paNote{pa, "ignored: a root-namespace PeerAuthentication with a selector is never a workload policy"})
		default:
			if p.wl == nil {
				p.wl = pa
			} else {
				p.ignored = append(p.ignored, paNote{pa, fmt.Sprintf("lost: %s is older", p.wl.Name)})
			}
		}
	}
	for _, pa := range []*securityv1.PeerAuthentication{p.mesh, p.ns, p.wl} {
		if pa != nil && !unset(pa.Spec.GetMtls()) {
			p.mode, p.modeFrom = convertMode(pa.Spec.GetMtls().GetMode()), pa
		}
	}
	if p.wl != nil && p.wl.Spec.PortLevelMtls != nil {
		p.perPort = map[uint32]Mode{}
		for port, m := range p.wl.Spec.PortLevelMtls {
			if unset(m) {
				p.perPort[port] = p.mode
			} else {
				p.perPort[port] = convertMode(m.GetMode())
			}
		}
	}
	return p
}

// forPort is GetMutualTLSModeForPort, with the origin of the answer.
func (p *peerAuthn) forPort(snap *model.Snapshot, port uint32) (Mode, provenance.Origin) {
	// GetMutualTLSModeForPort: a portLevelMtls key 0 applies to the catch-all chains too.
	if m, ok := p.perPort[port]; ok {
		o := snap.Origin(provenance.LayerPeerAuthentication, paKey(p.wl), fmt.Sprintf("spec.portLevelMtls[%d].mode", port))
		if unset(p.wl.Spec.PortLevelMtls[port]) {
			o.Note = "UNSET: the workload mode"
		}
		return m, o
	}
	if p.modeFrom == nil {
		return p.mode, provenance.Origin{Layer: provenance.LayerIstioDefault, Note: "no PeerAuthentication sets a mode: PERMISSIVE"}
	}
	return p.mode, snap.Origin(provenance.LayerPeerAuthentication, paKey(p.modeFrom), "spec.mtls.mode")
}
