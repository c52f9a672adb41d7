package ztunnelauthz

import (
	"slices"
	"sync"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/waypointauthz"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/webhook"
)

// revisionLabel is label.IoIstioRev.
const revisionLabel = "istio.io/rev"

// inRevision is config.LabelsInRevision as used by ambientindex.go inRevision: an object
// without the label is global; an istiod without a revision sees everything; otherwise the
// label must equal the revision.
func inRevision(labels map[string]string, rev string) bool {
	v, ok := labels[revisionLabel]
	if !ok || rev == "" {
		return true
	}
	return v == rev
}

// poolEntry is one Authorization of the pool every ztunnel receives.
type poolEntry struct {
	key  string
	auth *Authorization
	rec  *provenance.Recorder
	// ap or pa is the input object; both nil for the static policy.
	ap *apInfo
	pa *paConversion
}

// apInfo is one AuthorizationPolicy istiod watches, converted or not.
type apInfo struct {
	obj  *securityv1.AuthorizationPolicy
	conv *apConversion
	// rejected is A25 for the policy (rejectedByValidation), found once for every pod whose
	// answer names the policy.
	rejected struct {
		once  sync.Once
		diags []explain.Diagnostic
	}
}

func (a *apInfo) ref() provenance.Ref { return apKey(a.obj).Ref() }

// rejectedByValidation is A25 for what Istio's validation rejects in the policy.
func (a *apInfo) rejectedByValidation() []explain.Diagnostic {
	a.rejected.once.Do(func() {
		a.rejected.diags = webhook.Diagnostics(diag.PolicyRejectedByValidation, a.ref(),
			webhook.AuthorizationPolicy(webhook.Meta{Name: a.obj.Name, Namespace: a.obj.Namespace, Annotations: a.obj.Annotations}, &a.obj.Spec))
	})
	return a.rejected.diags
}

// paConversion is one PeerAuthentication converted on its own, with the parents istiod used.
type paConversion struct {
	obj        *securityv1.PeerAuthentication
	nsParent   *securityv1.PeerAuthentication
	rootParent *securityv1.PeerAuthentication
	// nsTie and rootTie list the parents tied on creationTimestamp with the chosen one.
	nsTie, rootTie []*securityv1.PeerAuthentication
	auth           *Authorization
	rec            *provenance.Recorder
}

// pool is everything istiod pushes to every ztunnel (policies.go PolicyCollections), plus the
// inputs it came from.
type pool struct {
	root    string
	entries map[string]*poolEntry
	aps     []*apInfo
	// apsIn are the places in aps of each namespace's policies, in order.
	apsIn  map[string][]int
	pas    []*securityv1.PeerAuthentication
	paConv map[*securityv1.PeerAuthentication]*paConversion
	// excluded are the policies the revision filter hides from istiod.
	excluded []provenance.Ref
	// services are the snapshot's Services by namespace, in snapshot order: a Service selects
	// only pods of its own namespace.
	services map[string][]*corev1.Service
	// waypoints finds the waypoints in front of each pod.
	waypoints *waypointauthz.Waypoints
	// scoped are the entries of global or namespace scope, by key: those every pod of the
	// mesh or of a namespace gets without listing them.
	scoped []*poolEntry
}

func buildPool(snap *model.Snapshot, revision string) *pool {
	p := &pool{root: snap.RootNamespace(), entries: map[string]*poolEntry{}, apsIn: map[string][]int{}, paConv: map[*securityv1.PeerAuthentication]*paConversion{},
		services: map[string][]*corev1.Service{}, waypoints: waypointauthz.NewWaypoints(snap)}
	for _, s := range snap.Services {
		if s != nil {
			p.services[s.Namespace] = append(p.services[s.Namespace], s)
		}
	}
	for _, ap := range snap.AuthorizationPolicies {
		if ap == nil {
			continue
		}
		if !inRevision(ap.Labels, revision) {
			p.excluded = append(p.excluded, apKey(ap).Ref())
			continue
		}
		info := &apInfo{obj: ap, conv: convertAuthorizationPolicy(snap, p.root, ap)}
		p.apsIn[ap.Namespace] = append(p.apsIn[ap.Namespace], len(p.aps))
		p.aps = append(p.aps, info)
		if info.conv.auth != nil {
			p.entries[info.conv.auth.Key()] = &poolEntry{key: info.conv.auth.Key(), auth: info.conv.auth, rec: info.conv.rec, ap: info}
		}
	}
	for _, pa := range snap.PeerAuthentications {
		if pa == nil {
			continue
		}
		if !inRevision(pa.Labels, revision) {
			p.excluded = append(p.excluded, paKey(pa).Ref())
			continue
		}
		p.pas = append(p.pas, pa)
	}
	// Parents: the oldest PeerAuthentication with an absent selector in the policy's namespace
	// and in the root namespace (policies.go PeerAuthByNamespace + getOldestPeerAuthn), found
	// once per namespace.
	parents := parentsByNamespace(p.pas)
	for _, pa := range p.pas {
		c := &paConversion{obj: pa}
		nsp, rootp := parents[pa.Namespace], parents[p.root]
		c.nsParent, c.nsTie = nsp.oldest, nsp.ties
		c.rootParent, c.rootTie = rootp.oldest, rootp.ties
		c.auth, c.rec = convertPeerAuthentication(snap, p.root, pa, c.nsParent, c.rootParent)
		p.paConv[pa] = c
		if c.auth != nil {
			p.entries[c.auth.Key()] = &poolEntry{key: c.auth.Key(), auth: c.auth, rec: c.rec, pa: c}
		}
	}
	// The static STRICT policy exists whenever any PeerAuthentication exists.
	if len(p.pas) > 0 {
		s := StaticStrictPolicy(p.root)
		p.entries[s.Key()] = &poolEntry{key: s.Key(), auth: s}
	}
	for _, k := range p.sortedKeys() {
		if e := p.entries[k]; e.auth.Scope == ScopeGlobal || e.auth.Scope == ScopeNamespace {
			p.scoped = append(p.scoped, e)
		}
	}
	return p
}

// nsParent is the parent PeerAuthentication of a namespace: the oldest one whose selector is
// absent, and the others that share its creationTimestamp (istiod then keeps the first one it
// sees, an order that cannot be known offline; the snapshot's name order is used as the guess).
type nsParent struct {
	oldest *securityv1.PeerAuthentication
	ties   []*securityv1.PeerAuthentication
}

// parentsByNamespace returns the nsParent of every namespace that has a PeerAuthentication
// without a selector; pas keeps its order within each namespace.
func parentsByNamespace(pas []*securityv1.PeerAuthentication) map[string]nsParent {
	cands := map[string][]*securityv1.PeerAuthentication{}
	for _, pa := range pas {
		if pa.Spec.GetSelector() == nil {
			cands[pa.Namespace] = append(cands[pa.Namespace], pa)
		}
	}
	out := make(map[string]nsParent, len(cands))
	for ns, cs := range cands {
		win, ties := oldest(cs)
		out[ns] = nsParent{oldest: win, ties: ties}
	}
	return out
}

// oldest is getOldestPeerAuthn (strictly earlier wins, so the first of equal timestamps wins),
// plus the candidates tied with the winner.
func oldest(cands []*securityv1.PeerAuthentication) (*securityv1.PeerAuthentication, []*securityv1.PeerAuthentication) {
	var win *securityv1.PeerAuthentication
	for _, c := range cands {
		if win == nil || c.CreationTimestamp.Before(&win.CreationTimestamp) {
			win = c
		}
	}
	var ties []*securityv1.PeerAuthentication
	for _, c := range cands {
		if c != win && c.CreationTimestamp.Equal(&win.CreationTimestamp) {
			ties = append(ties, c)
		}
	}
	return win, ties
}

// sortedKeys returns the pool keys in order (deterministic output).
func (p *pool) sortedKeys() []string {
	keys := make([]string, 0, len(p.entries))
	for k := range p.entries {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// localAPs are the policies of namespace and of the root namespace, in pool order: the only
// ones that can select a pod of namespace or be listed for it.
func (p *pool) localAPs(namespace string) []*apInfo {
	places := p.apsIn[namespace]
	if namespace != p.root {
		places = append(slices.Clone(places), p.apsIn[p.root]...)
		slices.Sort(places)
	}
	out := make([]*apInfo, len(places))
	for i, at := range places {
		out[i] = p.aps[at]
	}
	return out
}
