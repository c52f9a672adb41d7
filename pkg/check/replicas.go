package check

import (
	"maps"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
)

// The replicas of a workload are pods made from one template: the same namespace, owner,
// labels, annotations and spec, only their names, nodes and addresses differ. The per-workload
// answers read of a pod its namespace, labels, annotations, spec and addresses (the sidecar's
// filter chains, ztunnel's workload), never its node; the diagnostics differ between replicas
// only where they name the pod or an address of it. So a replica takes the diagnostics of the
// first replica explained, unless those name that replica (its name or an address) or come
// from another engine; TestRunEqualsUnionOnBenchMesh compares the result with every pod's own
// answer, and TestReplicasShareAnswers that replicas do share.

// replicaAnswers keeps, by namespace and controlling owner, the answers of the pods explained
// first.
type replicaAnswers struct {
	byOwner map[replicaKey][]replicaAnswer
	// taken counts the answers taken by replicas.
	taken int
}

type replicaKey struct {
	namespace string
	owner     owner
}

// owner is the controlling owner of a pod: kind and UID, or name when the UID is not set
// (files).
type owner struct{ kind, name, uid string }

type replicaAnswer struct {
	pod    *corev1.Pod
	engine int
	diags  []explain.Diagnostic
}

func newReplicaAnswers() *replicaAnswers {
	return &replicaAnswers{byOwner: map[replicaKey][]replicaAnswer{}}
}

// key is the owner key of pod, false when no controller owns it.
func replicaKeyOf(pod *corev1.Pod) (replicaKey, bool) {
	c := metav1.GetControllerOf(pod)
	if c == nil {
		return replicaKey{}, false
	}
	return replicaKey{namespace: pod.Namespace, owner: owner{kind: c.Kind, name: c.Name, uid: string(c.UID)}}, true
}

// answer returns the diagnostics a replica of pod got from engine, if one did and they can be
// taken.
func (r *replicaAnswers) answer(pod *corev1.Pod, engine int) ([]explain.Diagnostic, bool) {
	k, ok := replicaKeyOf(pod)
	if !ok {
		return nil, false
	}
	for _, a := range r.byOwner[k] {
		if a.engine == engine && replicas(a.pod, pod) {
			r.taken++
			return a.diags, true
		}
	}
	return nil, false
}

// record keeps the diagnostics pod got from engine for its replicas, unless they name pod.
func (r *replicaAnswers) record(pod *corev1.Pod, engine int, diags []explain.Diagnostic) {
	k, ok := replicaKeyOf(pod)
	if !ok || slices.ContainsFunc(diags, func(d explain.Diagnostic) bool { return namesPod(d, pod) }) {
		return
	}
	r.byOwner[k] = append(r.byOwner[k], replicaAnswer{pod: pod, engine: engine, diags: diags})
}

// replicas reports whether a and b are made from one template: the same labels, annotations,
// phase, number of addresses and spec but for the node.
func replicas(a, b *corev1.Pod) bool {
	if !maps.Equal(a.Labels, b.Labels) || !maps.Equal(a.Annotations, b.Annotations) ||
		a.Status.Phase != b.Status.Phase || len(a.Status.PodIPs) != len(b.Status.PodIPs) ||
		(a.Status.PodIP == "") != (b.Status.PodIP == "") {
		return false
	}
	sa, sb := a.Spec, b.Spec
	sa.NodeName, sb.NodeName = "", ""
	return reflect.DeepEqual(sa, sb)
}

// namesPod reports whether d names pod: its name, or one of its addresses, as a word of the
// message or the fix, or the pod among the resources.
func namesPod(d explain.Diagnostic, pod *corev1.Pod) bool {
	for _, r := range d.Resources {
		if r.Kind == "Pod" && r.Namespace == pod.Namespace && r.Name == pod.Name {
			return true
		}
	}
	words := []string{pod.Name, pod.Status.PodIP}
	for _, ip := range pod.Status.PodIPs {
		words = append(words, ip.IP)
	}
	for _, w := range words {
		if w != "" && (hasWord(d.Message, w) || hasWord(d.Fix, w)) {
			return true
		}
	}
	return false
}
