package ztunnelauthz

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
)

// resolvePods turns the query into the pods to explain, sorted by name.
func resolvePods(snap *model.Snapshot, q Query) ([]*corev1.Pod, error) {
	ns := q.Namespace
	if ns == "" {
		ns = "default"
	}
	var inNs []*corev1.Pod
	for _, p := range snap.Pods {
		if p != nil && p.Namespace == ns {
			inNs = append(inNs, p)
		}
	}
	names := func() string {
		var n []string
		for _, p := range inNs {
			n = append(n, p.Name)
		}
		return namesHint("pods", ns, n)
	}
	var out []*corev1.Pod
	// The same resolution kubectl does: -l over the namespace's pods, pod/NAME, or a
	// Deployment's or Service's selector.
	switch {
	case q.Selector != "":
		if q.Workload.Name != "" {
			return nil, &explain.InvalidQueryError{Message: "give either a workload or -l, not both"}
		}
		sel, err := labels.Parse(q.Selector)
		if err != nil {
			return nil, &explain.InvalidQueryError{Message: fmt.Sprintf("invalid label selector %q: %v", q.Selector, err)}
		}
		out = podsMatching(sel, inNs)
		if len(out) == 0 {
			return nil, &explain.NotFoundError{What: fmt.Sprintf("pods matching %q in namespace %s", q.Selector, ns), Hint: names()}
		}
	case q.Workload.Name == "":
		return nil, &explain.InvalidQueryError{Message: "name a workload (pod/NAME, deployment/NAME or service/NAME) or give -l SELECTOR"}
	default:
		switch strings.ToLower(q.Workload.Kind) {
		case "", "pod", "pods", "po":
			for _, p := range inNs {
				if p.Name == q.Workload.Name {
					out = append(out, p)
				}
			}
			if len(out) == 0 {
				return nil, &explain.NotFoundError{What: fmt.Sprintf("pod %s/%s", ns, q.Workload.Name), Hint: names()}
			}
		case "deployment", "deployments", "deploy":
			pods, err := deploymentPods(snap, ns, q.Workload.Name)
			if err != nil {
				return nil, err
			}
			out = pods
		case "service", "services", "svc":
			pods, err := servicePods(snap, ns, q.Workload.Name, inNs)
			if err != nil {
				return nil, err
			}
			out = pods
		default:
			return nil, &explain.InvalidQueryError{Message: fmt.Sprintf("unsupported workload kind %q (use pod/NAME, deployment/NAME, service/NAME or -l SELECTOR)", q.Workload.Kind)}
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// deploymentPods resolves a Deployment to its pods (Snapshot.DeploymentPods).
func deploymentPods(snap *model.Snapshot, ns, name string) ([]*corev1.Pod, error) {
	pods, selector, err := snap.DeploymentPods(ns, name)
	switch {
	case err != nil:
		return nil, &explain.InvalidQueryError{Message: err.Error()}
	case len(pods) > 0:
		return pods, nil
	case selector != "":
		return nil, &explain.NotFoundError{What: fmt.Sprintf("pods of deployment %s/%s", ns, name),
			Hint: "its selector " + selector + " matches no pod in the input"}
	}
	return nil, &explain.NotFoundError{What: fmt.Sprintf("deployment %s/%s", ns, name), Hint: "neither the Deployment nor pods owned by its ReplicaSets are in the input"}
}

// servicePods resolves a Service to the pods its spec.selector matches, as kubectl does for
// svc/NAME (logs, exec, port-forward).
func servicePods(snap *model.Snapshot, ns, name string, inNs []*corev1.Pod) ([]*corev1.Pod, error) {
	i := slices.IndexFunc(snap.Services, func(s *corev1.Service) bool { return s != nil && s.Namespace == ns && s.Name == name })
	if i < 0 {
		return nil, &explain.NotFoundError{What: fmt.Sprintf("service %s/%s", ns, name), Hint: serviceNames(snap, ns)}
	}
	svc := snap.Services[i]
	if len(svc.Spec.Selector) == 0 {
		return nil, &explain.InvalidQueryError{Message: fmt.Sprintf("service %s/%s has no selector: its endpoints are not chosen by labels, so it names no pods (explain them with pod/NAME or -l)", ns, name)}
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	out := podsMatching(sel, inNs)
	if len(out) == 0 {
		return nil, &explain.NotFoundError{What: fmt.Sprintf("pods of service %s/%s", ns, name),
			Hint: "its selector " + sel.String() + " matches no pod in the input"}
	}
	return out, nil
}

// serviceNames is the hint of a Service not found: the Services of ns.
func serviceNames(snap *model.Snapshot, ns string) string {
	var n []string
	for _, s := range snap.Services {
		if s != nil && s.Namespace == ns {
			n = append(n, s.Name)
		}
	}
	return namesHint("services", ns, n)
}

// namesHint is the hint of an object not found: the first names of the objects (plural) of ns.
func namesHint(plural, ns string, names []string) string {
	if len(names) == 0 {
		return "no " + plural + " in namespace " + ns
	}
	if len(names) > 8 {
		names = append(names[:8], "...")
	}
	return plural + " in " + ns + ": " + strings.Join(names, ", ")
}

// podsMatching returns the pods whose labels sel matches.
func podsMatching(sel labels.Selector, pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out
}
