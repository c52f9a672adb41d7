package ztunnelauthz

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
)

// Explainer explains pod after pod of one snapshot, converting the policies once: what
// Explain does for the pods of one query, for any pod of the snapshot.
type Explainer struct {
	snap *model.Snapshot
	pool *pool
	q    Query
}

// NewExplainer returns the Explainer of snap for the istiod revision given (as Query.Revision).
func NewExplainer(snap *model.Snapshot, revision string) *Explainer {
	return &Explainer{snap: snap, pool: buildPool(snap, revision), q: Query{Revision: revision}}
}

// Pod explains pod, as Explain does for a query naming it.
func (e *Explainer) Pod(pod *corev1.Pod) *explain.Result {
	q := e.q
	q.Namespace, q.Workload = pod.Namespace, WorkloadRef{Kind: "pod", Name: pod.Name}
	return explainPod(e.snap, e.pool, pod, q, true)
}

// Diagnostics are the diagnostics of Pod for pod, without the objects that explain them: what
// `check` reports for an ambient workload.
func (e *Explainer) Diagnostics(pod *corev1.Pod) []explain.Diagnostic {
	q := e.q
	q.Namespace, q.Workload = pod.Namespace, WorkloadRef{Kind: "pod", Name: pod.Name}
	return explainPod(e.snap, e.pool, pod, q, false).Diagnostics
}

// Ambient reports whether pod is, or is meant to be, an ambient workload: ztunnel captures
// it, or its labels or annotations speak of the ambient data plane (the dataplane-mode label
// other than none, the label set as an annotation, istio-cni's redirection annotation). The
// others are sidecar or out-of-mesh pods, for which ztunnel enforces nothing.
func Ambient(snap *model.Snapshot, pod *corev1.Pod) bool {
	if decideCapture(snap, pod, false).captured {
		return true
	}
	if v, ok := pod.Labels[dataplaneModeLabel]; ok && v != dataplaneModeNone {
		return true
	}
	_, anno := pod.Annotations[dataplaneModeLabel]
	_, redirect := pod.Annotations[ambientRedirectionAnno]
	return anno || redirect
}
