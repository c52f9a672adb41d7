package index

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/internal/strdist"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// Proxy resolves the client proxy clusters are generated for. kind "pod" is the sidecar of pod
// namespace/name: its namespace is the config namespace, its labels select Sidecars and
// workloadSelector DestinationRules, its status.podIPs decide the DNS lookup family. kind
// "deployment" is the sidecar of the first pod, by name, of Deployment namespace/name, as
// istioctl picks one for deployment/NAME. kind "namespace" or "" is a sidecar without labels in
// namespace (name is ignored), and without a locality. A pod or deployment that is not in the
// snapshot gives an *explain.NotFoundError (for a pod, naming the nearest pods).
func (ix *Index) Proxy(kind, namespace, name string) (*Proxy, error) {
	if namespace == "" {
		namespace = "default"
	}
	switch kind {
	case "", "namespace":
		return &Proxy{Namespace: namespace, Description: "sidecar in namespace " + namespace}, nil
	case "pod":
		for _, pod := range ix.snap.Pods {
			if pod.Namespace == namespace && pod.Name == name {
				if err := refuseWaypoint(pod); err != nil {
					return nil, err
				}
				return ix.podProxy(pod), nil
			}
		}
		return nil, &explain.NotFoundError{What: fmt.Sprintf("pod %s/%s", namespace, name), Hint: ix.suggestPods(namespace, name)}
	case "deployment":
		pods, selector, err := ix.snap.DeploymentPods(namespace, name)
		switch {
		case err != nil:
			return nil, &explain.InvalidQueryError{Message: err.Error()}
		case len(pods) == 0 && selector != "":
			return nil, &explain.NotFoundError{What: fmt.Sprintf("pods of deployment %s/%s", namespace, name),
				Hint: "its selector " + selector + " matches no pod in the input"}
		case len(pods) == 0:
			return nil, &explain.NotFoundError{What: fmt.Sprintf("deployment %s/%s", namespace, name),
				Hint: "neither the Deployment nor pods owned by its ReplicaSets are in the input"}
		}
		if err := refuseWaypoint(pods[0]); err != nil {
			return nil, err
		}
		p := ix.podProxy(pods[0])
		if len(pods) > 1 {
			p.Description += fmt.Sprintf(" (the first of the %d pods of deployment %s)", len(pods), name)
		} else {
			p.Description += " (the pod of deployment " + name + ")"
		}
		return p, nil
	}
	return nil, &explain.InvalidQueryError{Message: fmt.Sprintf("unknown proxy kind %q (use pod, deployment or namespace)", kind)}
}

// refuseWaypoint refuses a pod whose istio-proxy runs as a waypoint: istiod builds a
// waypoint's clusters otherwise than a client's (its inbound VIP clusters, the outbound ones
// only for what its routes name), and `authz waypoint/NAME` explains a waypoint. A gateway's
// pod (a router) is answered, with the gateway's scope.
func refuseWaypoint(pod *corev1.Pod) error {
	typ, field, ok := model.GatewayOrWaypoint(pod)
	if !ok || typ != model.ProxyWaypoint {
		return nil
	}
	return &explain.InvalidQueryError{Message: fmt.Sprintf("pod %s/%s is a waypoint's instance: its istio-proxy runs as a waypoint (%s), whose clusters istiod builds otherwise than a client's; cluster explains the clusters of a sidecar or a gateway: name a pod with one, or a namespace (--from namespace/NS), and authz waypoint/NAME explains the waypoint", pod.Namespace, pod.Name, field)}
}

// podProxy is the proxy of pod: its sidecar, or the gateway it runs.
func (ix *Index) podProxy(pod *corev1.Pod) *Proxy {
	ref := provenance.Ref{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name}
	p := &Proxy{
		Namespace:   pod.Namespace,
		Labels:      pod.Labels,
		Pod:         &ref,
		Locality:    ix.proxyLocality(pod),
		Description: fmt.Sprintf("sidecar of pod %s/%s", pod.Namespace, pod.Name),
	}
	if typ, field, ok := model.GatewayOrWaypoint(pod); ok && typ == model.ProxyRouter {
		p.Router, p.RouterField = true, field
		p.Description = fmt.Sprintf("gateway (router) of pod %s/%s", pod.Namespace, pod.Name)
	}
	for _, ip := range pod.Status.PodIPs {
		p.IPs = append(p.IPs, ip.IP)
	}
	if len(p.IPs) == 0 && pod.Status.PodIP != "" {
		p.IPs = []string{pod.Status.PodIP}
	}
	return p
}

// proxyLocality is the locality istiod gives the sidecar of pod, as `region/zone/subzone` with
// empty trailing parts dropped. The Kubernetes registry hands istiod the pod's labels augmented
// with the pod's locality (GetProxyWorkloadLabels: label.AugmentLabels over getPodLocality, so a
// part known from the pod's Node or locality label replaces the pod's own
// topology.kubernetes.io/region, topology.kubernetes.io/zone or topology.istio.io/subzone
// label), and xds setTopologyLabels reads the locality back from those three labels. When none
// of them is present it falls back to the pod's locality label, then to the locality the proxy
// reports itself: the cloud platform's, which cannot be known offline and is taken as empty.
func (ix *Index) proxyLocality(pod *corev1.Pod) string {
	region, hasRegion := pod.Labels[labelRegion]
	zone, hasZone := pod.Labels[labelZone]
	subzone, hasSubzone := pod.Labels[labelSubzone]
	r, z, sz := splitLocality(ix.podLocality(pod))
	if r != "" {
		region, hasRegion = r, true
	}
	if z != "" {
		zone, hasZone = z, true
	}
	if sz != "" {
		subzone, hasSubzone = sz, true
	}
	if !hasRegion && !hasZone && !hasSubzone {
		// localityFromProxyLabels: model.GetLocalityLabel, converted without sanitizing.
		loc, ok := pod.Labels[labelLocality]
		if !ok {
			loc = pod.Labels[labelLocalityLegacy]
		}
		region, zone, subzone = splitLocality(loc)
	}
	return strings.TrimRight(region+"/"+zone+"/"+subzone, "/")
}

// splitLocality is label.SplitLocalityLabel: `region/zone/subzone`, missing parts empty, parts
// after the third ignored.
func splitLocality(l string) (region, zone, subzone string) {
	parts := append(strings.Split(l, "/"), "", "")
	return parts[0], parts[1], parts[2]
}

func (ix *Index) suggestPods(namespace, name string) string {
	type scored struct {
		name  string
		score int
	}
	var inNs []scored
	var elsewhere []string
	for _, pod := range ix.snap.Pods {
		if pod.Namespace != namespace {
			if pod.Name == name {
				elsewhere = append(elsewhere, pod.Namespace+"/"+pod.Name)
			}
			continue
		}
		score := strdist.Levenshtein(name, pod.Name)
		if strings.HasPrefix(pod.Name, name) || strings.HasPrefix(name, pod.Name) {
			score = 0
		}
		if score <= max(3, len(name)/3) {
			inNs = append(inNs, scored{pod.Name, score})
		}
	}
	switch {
	case len(elsewhere) > 0:
		return "a pod with that name is in " + strings.Join(elsewhere, ", ") + "; set the namespace"
	case len(inNs) > 0:
		slices.SortFunc(inNs, func(a, b scored) int { return cmp.Or(cmp.Compare(a.score, b.score), strings.Compare(a.name, b.name)) })
		if len(inNs) > 3 {
			inNs = inNs[:3]
		}
		names := make([]string, 0, len(inNs))
		for _, s := range inNs {
			names = append(names, namespace+"/"+s.name)
		}
		return "did you mean " + strings.Join(names, ", ") + "?"
	}
	return fmt.Sprintf("no pod in namespace %s has a similar name; use a namespace proxy if the pod is not part of the input", namespace)
}
