package ztunnelauthz

import (
	"fmt"
	"slices"

	"istio.io/api/security/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

const (
	// StaticStrictPolicyName is istiod's static STRICT policy, `<rootNs>/istio_converted_static_strict`
	// (pilot/pkg/serviceregistry/ambient/authorization.go staticStrictPolicyName). The underscores
	// make it impossible as a Kubernetes name.
	StaticStrictPolicyName = "istio_converted_static_strict"
	// ConvertedPeerAuthenticationPrefix prefixes the name of a converted PeerAuthentication
	// (pilot/pkg/model/authentication.go GetAmbientPolicyConfigName).
	ConvertedPeerAuthenticationPrefix = "converted_peer_authentication_"
)

type mtlsMode = v1beta1.PeerAuthentication_MutualTLS_Mode

const (
	modeUnset      = v1beta1.PeerAuthentication_MutualTLS_UNSET
	modeDisable    = v1beta1.PeerAuthentication_MutualTLS_DISABLE
	modePermissive = v1beta1.PeerAuthentication_MutualTLS_PERMISSIVE
	modeStrict     = v1beta1.PeerAuthentication_MutualTLS_STRICT
)

func paMode(pa *securityv1.PeerAuthentication) mtlsMode {
	if pa == nil {
		return modeUnset
	}
	return pa.Spec.GetMtls().GetMode()
}

func isStrict(pa *securityv1.PeerAuthentication) bool { return pa != nil && paMode(pa) == modeStrict }
func isUnset(pa *securityv1.PeerAuthentication) bool  { return pa == nil || paMode(pa) == modeUnset }

// StaticStrictPolicy is the policy istiod adds to the pool whenever at least one
// PeerAuthentication exists: DENY every connection without a peer identity
// (policies.go PolicyCollections, DefaultPolicy).
func StaticStrictPolicy(rootNamespace string) *Authorization {
	return &Authorization{
		Name:      StaticStrictPolicyName,
		Namespace: rootNamespace,
		Scope:     ScopeWorkloadSelector,
		Action:    ActionDeny,
		Groups:    []*Group{{Rules: []*Rules{{Matches: []*Match{{NotPrincipals: []*StringMatch{Presence()}}}}}}},
	}
}

// staticStrictTraces records the origins of the static policy's fields.
func staticStrictTraces(a *Authorization, because provenance.Origin) *provenance.Recorder {
	rec := provenance.NewRecorder()
	static := func(note string) provenance.Origin {
		return provenance.Origin{Layer: provenance.LayerStaticPolicy, Note: note}
	}
	rec.Set("name", a.Name, static("fixed name of istiod's static STRICT policy"))
	rec.Set("namespace", a.Namespace, provenance.Origin{Layer: provenance.LayerMeshConfig, Field: "rootNamespace"})
	rec.Set("scope", a.Scope.String(), static("listed by key only"))
	rec.Set("action", a.Action.String(), static("STRICT is a DENY of connections without a peer identity"))
	rec.Set("groups[0]", "1 clause(s)", because)
	rec.Set("groups[0].rules[0]", "1 match(es)", because)
	rec.Set("groups[0].rules[0].matches[0]", "1 value(s)", because)
	rec.Set("groups[0].rules[0].matches[0].notPrincipals[0]", "presence", because)
	return rec
}

// ConvertPeerAuthentication converts one PeerAuthentication to its ztunnel DENY policy, given
// its namespace parent (the oldest selector-less PeerAuthentication of its namespace) and root
// parent (the same in the root namespace). It returns nil when istiod pushes nothing for it.
// It reproduces convertPeerAuthentication in pilot/pkg/serviceregistry/ambient/authorization.go.
func ConvertPeerAuthentication(rootNamespace string, pa, nsParent, rootParent *securityv1.PeerAuthentication) *Authorization {
	a, _ := convertPeerAuthentication(nil, rootNamespace, pa, nsParent, rootParent)
	return a
}

func paKey(pa *securityv1.PeerAuthentication) model.ObjectKey {
	return model.ObjectKey{Kind: "PeerAuthentication", Namespace: pa.Namespace, Name: pa.Name}
}

func paOrigin(snap *model.Snapshot, pa *securityv1.PeerAuthentication) originOf {
	return originOf{snap: snap, layer: provenance.LayerPeerAuthentication, key: paKey(pa)}
}

// convertPeerAuthentication is ConvertPeerAuthentication with the origin of every field.
func convertPeerAuthentication(snap *model.Snapshot, rootNamespace string, cfg, nsCfg, rootCfg *securityv1.PeerAuthentication) (*Authorization, *provenance.Recorder) {
	if cfg == nil {
		return nil, nil
	}
	pa := &cfg.Spec
	mode := pa.GetMtls().GetMode()
	// Only a workload policy with port-level mTLS outside the root namespace is converted.
	if cfg.Namespace == rootNamespace || pa.Selector == nil || len(pa.PortLevelMtls) == 0 {
		return nil, nil
	}
	o := paOrigin(snap, cfg)
	presenceMatch := func(org provenance.Origin) *matchBuilder {
		mb := &matchBuilder{m: &Match{}, origin: org}
		mb.addString("notPrincipals", Presence(), org)
		return mb
	}

	var rules []*rulesBuilder
	var groups []*groupBuilder
	if mode == modeStrict {
		org := o.at("spec.mtls.mode", "STRICT: deny connections without a peer identity")
		rules = append(rules, &rulesBuilder{origin: org, matches: []*matchBuilder{presenceMatch(org)}})
	}

	foundNonStrict := false
	ports := make([]uint32, 0, len(pa.PortLevelMtls))
	for p := range pa.PortLevelMtls {
		ports = append(ports, p)
	}
	slices.Sort(ports) // maps.SeqStable: ascending port order
	for _, port := range ports {
		portMode := pa.PortLevelMtls[port].GetMode()
		field := fmt.Sprintf("spec.portLevelMtls[%d].mode", port)
		switch portMode {
		case modeStrict:
			// Istio's condition, kept with Go's && / || precedence exactly as written: the third
			// alternative (no or UNSET namespace parent, STRICT root) applies whatever the
			// workload's own mode is.
			if mode == modeStrict ||
				(mode == modeUnset && (nsCfg != nil && isStrict(nsCfg))) ||
				((nsCfg == nil || isUnset(nsCfg)) && rootCfg != nil && isStrict(rootCfg)) {
				continue
			}
			org := o.at(field, fmt.Sprintf("STRICT port %d: deny connections without a peer identity to this port", port))
			mb := presenceMatch(org)
			mb.addPort("destinationPorts", port, org)
			groups = append(groups, &groupBuilder{origin: org, rules: []*rulesBuilder{{origin: org, matches: []*matchBuilder{mb}}}})
		case modePermissive, modeDisable:
			if mode == modePermissive || mode == modeDisable {
				continue
			}
			if mode == modeUnset && ((nsCfg != nil && !isStrict(nsCfg)) ||
				(nsCfg == nil && rootCfg != nil && !isStrict(rootCfg)) ||
				(nsCfg == nil && rootCfg == nil)) {
				continue
			}
			foundNonStrict = true
			org := o.at(field, fmt.Sprintf("%s port %d: exempt from the DENY", portMode, port))
			mb := &matchBuilder{m: &Match{}, origin: org}
			mb.addPort("notDestinationPorts", port, org)
			rules = append(rules, &rulesBuilder{origin: org, matches: []*matchBuilder{mb}})
		}
	}

	if mode == modeStrict && !foundNonStrict {
		return nil, nil // every port strict: the static policy covers it
	}
	if len(rules) == 0 && len(groups) == 0 {
		return nil, nil
	}

	var mergeFrom *securityv1.PeerAuthentication
	switch {
	case rootCfg != nil && isStrict(rootCfg) && (nsCfg == nil || isUnset(nsCfg) || isStrict(nsCfg)):
		mergeFrom = rootCfg
	case nsCfg != nil && isStrict(nsCfg):
		mergeFrom = nsCfg
	}
	if mergeFrom != nil && foundNonStrict {
		org := paOrigin(snap, mergeFrom).at("spec.mtls.mode",
			fmt.Sprintf("parent STRICT merged into %s/%s so the static STRICT policy can be dropped", cfg.Namespace, cfg.Name))
		rules = append(rules, &rulesBuilder{origin: org, matches: []*matchBuilder{presenceMatch(org)}})
	}
	if len(rules) > 0 {
		groups = append(groups, &groupBuilder{origin: o.at("spec.portLevelMtls", "one group: every clause must hold for the DENY to fire"), rules: rules})
	}

	a := &Authorization{
		Name:      ConvertedPeerAuthenticationPrefix + cfg.Name,
		Namespace: cfg.Namespace,
		Scope:     ScopeWorkloadSelector,
		Action:    ActionDeny,
	}
	rec := provenance.NewRecorder()
	rec.Set("name", a.Name, o.at("metadata.name", "prefixed with "+ConvertedPeerAuthenticationPrefix))
	if a.Namespace != "" {
		rec.Set("namespace", a.Namespace, o.at("metadata.namespace", ""))
	}
	rec.Set("scope", a.Scope.String(), o.at("spec.selector", "a PeerAuthentication with a selector applies by key only"))
	rec.Set("action", a.Action.String(), o.at("spec.portLevelMtls", "converted PeerAuthentications are always DENY"))
	a.Groups = build(groups, rec)
	return a, rec
}

// ConvertedSelectorPeerAuthentications returns the PeerAuthentication keys istiod lists for a
// workload, given its candidate PeerAuthentications in istiod's order (ties on
// creationTimestamp go to the first). It reproduces convertedSelectorPeerAuthentications in
// pilot/pkg/serviceregistry/ambient/authorization.go.
func ConvertedSelectorPeerAuthentications(rootNamespace string, candidates []*securityv1.PeerAuthentication) []string {
	var mesh, ns, wl *securityv1.PeerAuthentication
	for _, c := range candidates {
		switch levelOf(rootNamespace, c) {
		case levelMesh:
			if mesh == nil || c.CreationTimestamp.Before(&mesh.CreationTimestamp) {
				mesh = c
			}
		case levelNamespace:
			if ns == nil || c.CreationTimestamp.Before(&ns.CreationTimestamp) {
				ns = c
			}
		case levelWorkload:
			if wl == nil || c.CreationTimestamp.Before(&wl.CreationTimestamp) {
				wl = c
			}
		}
	}
	return peerAuthenticationKeys(rootNamespace, mesh, ns, wl).keys()
}

// paLevel is the level a candidate PeerAuthentication acts at for one workload.
type paLevel string

const (
	levelMesh      paLevel = "mesh"
	levelNamespace paLevel = "namespace"
	levelWorkload  paLevel = "workload"
	// levelIgnored: a root-namespace policy with labels is never a workload policy.
	levelIgnored paLevel = "ignored"
)

// levelOf classifies a candidate: selector-less means no selector or an empty matchLabels
// (authorization.go convertedSelectorPeerAuthentications).
func levelOf(rootNamespace string, pa *securityv1.PeerAuthentication) paLevel {
	sel := pa.Spec.GetSelector()
	switch {
	case (sel == nil || len(sel.GetMatchLabels()) == 0) && pa.Namespace == rootNamespace:
		return levelMesh
	case sel == nil || len(sel.GetMatchLabels()) == 0:
		return levelNamespace
	case pa.Namespace != rootNamespace:
		return levelWorkload
	}
	return levelIgnored
}

// paKeys is the outcome of the key computation, with the reason for each decision.
type paKeys struct {
	rootNamespace string
	strict        bool
	// strictFrom is the policy whose mode made the workload STRICT (nil when not strict).
	strictFrom *securityv1.PeerAuthentication
	portKey    string
	// portKeyFrom is the workload policy field that caused portKey.
	portKeyReason string
}

func (k paKeys) staticKey() string { return k.rootNamespace + "/" + StaticStrictPolicyName }

// keys is effectivePeerAuthenticationKeys: the sorted set of {static if strict, portKey}.
func (k paKeys) keys() []string {
	var out []string
	if k.strict {
		out = append(out, k.staticKey())
	}
	if k.portKey != "" {
		out = append(out, k.portKey)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// peerAuthenticationKeys is the mode logic of convertedSelectorPeerAuthentications once the
// mesh, namespace and workload policies are chosen.
func peerAuthenticationKeys(rootNamespace string, mesh, ns, wl *securityv1.PeerAuthentication) paKeys {
	k := paKeys{rootNamespace: rootNamespace}
	if mesh != nil {
		k.strict = isStrict(mesh)
		k.strictFrom = mesh
	}
	if ns != nil && !isUnset(ns) {
		k.strict = isStrict(ns)
		k.strictFrom = ns
	}
	if wl == nil {
		if !k.strict {
			k.strictFrom = nil
		}
		return k
	}
	spec := &wl.Spec
	switch paMode(wl) {
	case modeStrict:
		k.strict = true
		k.strictFrom = wl
	case modePermissive, modeDisable:
		k.strict = false
	}
	portKey := wl.Namespace + "/" + ConvertedPeerAuthenticationPrefix + wl.Name
	anyPort := func(modes ...mtlsMode) (uint32, bool) {
		ports := make([]uint32, 0, len(spec.PortLevelMtls))
		for p := range spec.PortLevelMtls {
			ports = append(ports, p)
		}
		slices.Sort(ports)
		for _, p := range ports {
			if slices.Contains(modes, spec.PortLevelMtls[p].GetMode()) {
				return p, true
			}
		}
		return 0, false
	}
	if spec.PortLevelMtls != nil {
		switch paMode(wl) {
		case modeStrict:
			if p, ok := anyPort(modePermissive, modeDisable); ok {
				k.portKey = portKey
				k.portKeyReason = fmt.Sprintf("workload mode STRICT with port %d %s", p, spec.PortLevelMtls[p].GetMode())
				k.strict = false
			}
		case modePermissive, modeDisable:
			if p, ok := anyPort(modeStrict); ok {
				k.portKey = portKey
				k.portKeyReason = fmt.Sprintf("workload mode %s with port %d STRICT", paMode(wl), p)
			}
		default:
			if k.strict {
				// Only PERMISSIVE ports count here; DISABLE ports do not.
				if p, ok := anyPort(modePermissive); ok {
					k.portKey = portKey
					k.portKeyReason = fmt.Sprintf("workload mode UNSET under a STRICT parent with port %d PERMISSIVE", p)
					k.strict = false
				}
			} else {
				k.strict = false
				if p, ok := anyPort(modeStrict); ok {
					k.portKey = portKey
					k.portKeyReason = fmt.Sprintf("workload mode UNSET under a non-STRICT parent with port %d STRICT", p)
				}
			}
		}
	}
	if !k.strict {
		k.strictFrom = nil
	}
	return k
}
