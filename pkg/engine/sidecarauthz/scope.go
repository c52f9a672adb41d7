package sidecarauthz

import (
	"sync"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/envoyrbac"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/webhook"
)

// Explainer answers for the sidecars of many pods of one snapshot. A pod's answer reads only
// the objects of its own namespace and of the root namespace; the Explainer finds them by
// namespace, indexed once, so that explaining every pod of a mesh does not scan every object
// of the mesh for each.
type Explainer struct {
	snap *model.Snapshot
	root string

	services nsIndex[*corev1.Service]
	pas      nsIndex[*securityv1.PeerAuthentication]
	aps      nsIndex[*securityv1.AuthorizationPolicy]
	ras      nsIndex[*securityv1.RequestAuthentication]
	// apAt is each AuthorizationPolicy's place in the snapshot, which spells the key of a
	// set of selected policies in builds.
	apAt map[*securityv1.AuthorizationPolicy]int

	// mu guards builds, the RBAC of each set of selected policies, and validated, what Istio's
	// validation rejects in each policy (S18): found once for the pods answered on every core
	// (check).
	mu        sync.Mutex
	builds    map[string]*envoyrbac.Result
	validated map[*securityv1.AuthorizationPolicy][]explain.Diagnostic
}

// rejected is S18 for what Istio's validation rejects in ap, found once.
func (x *Explainer) rejected(ap *securityv1.AuthorizationPolicy) []explain.Diagnostic {
	x.mu.Lock()
	d, ok := x.validated[ap]
	x.mu.Unlock()
	if ok {
		return d
	}
	d = webhook.Diagnostics(diagRejected, apRef(ap), webhook.AuthorizationPolicy(webhook.Meta{Name: ap.Name, Namespace: ap.Namespace, Annotations: ap.Annotations}, &ap.Spec))
	x.mu.Lock()
	x.validated[ap] = d
	x.mu.Unlock()
	return d
}

// NewExplainer indexes snap for the answers of its pods.
func NewExplainer(snap *model.Snapshot) *Explainer {
	x := &Explainer{
		snap:      snap,
		root:      snap.RootNamespace(),
		services:  newNSIndex(snap.Services),
		pas:       newNSIndex(snap.PeerAuthentications),
		aps:       newNSIndex(snap.AuthorizationPolicies),
		ras:       newNSIndex(snap.RequestAuthentications),
		apAt:      make(map[*securityv1.AuthorizationPolicy]int, len(snap.AuthorizationPolicies)),
		builds:    map[string]*envoyrbac.Result{},
		validated: map[*securityv1.AuthorizationPolicy][]explain.Diagnostic{},
	}
	for i, ap := range snap.AuthorizationPolicies {
		x.apAt[ap] = i
	}
	return x
}

// ExplainPod answers for the sidecar of one pod: the virtualInbound filter chains istiod sends
// it, restricted to what decides who gets in, with origins, diagnostics and a plain reading.
func ExplainPod(snap *model.Snapshot, pod *corev1.Pod) *explain.Result {
	return NewExplainer(snap).ExplainPod(pod)
}

// Diagnostics are the diagnostics of ExplainPod for pod, without the sections and objects
// that explain them: what `check` reports for a sidecar workload.
func Diagnostics(snap *model.Snapshot, pod *corev1.Pod) []explain.Diagnostic {
	return NewExplainer(snap).Diagnostics(pod)
}

// Diagnostics is Diagnostics for one pod of the indexed snapshot.
func (x *Explainer) Diagnostics(pod *corev1.Pod) []explain.Diagnostic {
	return x.newExplanation(pod).sortedDiagnostics()
}

// nsIndex holds the objects of one kind by namespace, each with its place in the snapshot.
type nsIndex[T interface{ GetNamespace() string }] struct {
	all []T
	at  map[string][]int
}

func newNSIndex[T interface{ GetNamespace() string }](all []T) nsIndex[T] {
	x := nsIndex[T]{all: all, at: map[string][]int{}}
	for i, o := range all {
		ns := o.GetNamespace()
		x.at[ns] = append(x.at[ns], i)
	}
	return x
}

// in returns the objects of namespace a and of namespace b, in snapshot order.
func (x nsIndex[T]) in(a, b string) []T {
	ia := x.at[a]
	var ib []int
	if b != a {
		ib = x.at[b]
	}
	out := make([]T, 0, len(ia)+len(ib))
	for len(ia) > 0 || len(ib) > 0 {
		if len(ib) == 0 || len(ia) > 0 && ia[0] < ib[0] {
			out = append(out, x.all[ia[0]])
			ia = ia[1:]
		} else {
			out = append(out, x.all[ib[0]])
			ib = ib[1:]
		}
	}
	return out
}
