package cli

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
)

// Pods whose istio-proxy is not a sidecar. `authz` answers a workload's inbound path: what
// ztunnel enforces for an ambient pod, the virtualInbound listener of a sidecar. A gateway's
// proxy (type router) has no virtualInbound: its listeners are built from the servers of the
// Gateways that select it. A waypoint's pods are answered by `authz waypoint/NAME`. So a pod
// whose istio-proxy runs as a router or a waypoint gets neither answer: naming only such pods
// is an error that says what they are, or, when they are all instances of one waypoint, the
// waypoint's answer (AuthzOptions.Run); beside other pods they are left out with a warning.
// The one exception is a gateway ztunnel captures (a Gateway of class istio deployed in an
// ambient namespace, without a sidecar): ztunnel enforces its policies on the gateway's
// inbound traffic, so it gets the ztunnel answer, with a warning that its listeners' own RBAC
// is not explained.

// gatewayNameLabel names the Gateway of the pods of a waypoint (and of a Gateway API
// deployment): the label istiod's deployment controller gives them.
const gatewayNameLabel = "gateway.networking.k8s.io/gateway-name"

// proxyPod is a pod whose istio-proxy runs as a router or a waypoint.
type proxyPod struct {
	pod *corev1.Pod
	// typ is model.ProxyRouter or model.ProxyWaypoint, field the field that says so.
	typ, field string
	// waypoint is the name of a waypoint instance's Gateway (gatewayNameLabel), or "".
	waypoint string
}

// asProxyPod reports whether pod's istio-proxy runs as a router or a waypoint.
func asProxyPod(pod *corev1.Pod) (proxyPod, bool) {
	typ, field, ok := model.GatewayOrWaypoint(pod)
	if !ok {
		return proxyPod{}, false
	}
	p := proxyPod{pod: pod, typ: typ, field: field}
	if typ == model.ProxyWaypoint {
		p.waypoint = pod.Labels[gatewayNameLabel]
	}
	return p, true
}

// what says what the pod is, and what explains it.
func (p proxyPod) what() string {
	name := p.pod.Namespace + "/" + p.pod.Name
	if p.typ == model.ProxyRouter {
		return fmt.Sprintf("pod %s is an Istio gateway: its istio-proxy runs as a router (%s), whose listeners come from the servers of the Gateways that select it, not from a sidecar's inbound listener; authz explains ambient pods, sidecars and waypoints", name, p.field)
	}
	if p.waypoint == "" {
		return fmt.Sprintf("pod %s runs a waypoint proxy (%s) without the label %s: explain its Gateway with authz waypoint/NAME -n %s", name, p.field, gatewayNameLabel, p.pod.Namespace)
	}
	return fmt.Sprintf("pod %s is an instance of waypoint %s/%s (%s; label %s): explain it with authz waypoint/%s -n %s", name, p.pod.Namespace, p.waypoint, p.field, gatewayNameLabel, p.waypoint, p.pod.Namespace)
}

// ztunnelPartOnly is the warning of the ztunnel answer of a gateway's pod that ztunnel captures.
func (p proxyPod) ztunnelPartOnly() string {
	return fmt.Sprintf("pod %s/%s is an Istio gateway (its istio-proxy runs as a router: %s): this is what ztunnel enforces on its inbound traffic; the RBAC of the gateway's own listeners (from the Gateways that select it) is not explained", p.pod.Namespace, p.pod.Name, p.field)
}

// resultOf is the result about pod among results, or nil.
func resultOf(results []*explain.Result, pod *corev1.Pod) *explain.Result {
	for _, r := range results {
		if r.Subject.Namespace == pod.Namespace && r.Subject.Workload == "pod/"+pod.Name {
			return r
		}
	}
	return nil
}

// proxyPodsError is the answer when every pod named is a gateway or a waypoint instance.
type proxyPodsError struct{ pods []proxyPod }

func (e *proxyPodsError) Error() string {
	parts := make([]string, 0, len(e.pods))
	for _, p := range e.pods {
		parts = append(parts, p.what())
	}
	return "cannot explain " + plural(len(e.pods), "pod") + " with authz: " + strings.Join(parts, "; ")
}

// waypoint is the Gateway (namespace, name) whose instances every pod is, or "".
func (e *proxyPodsError) waypoint() (ns, name string) {
	for i, p := range e.pods {
		if p.waypoint == "" || i > 0 && (p.pod.Namespace != ns || p.waypoint != name) {
			return "", ""
		}
		ns, name = p.pod.Namespace, p.waypoint
	}
	return ns, name
}

// answeringWaypoint is the note that the answer is the waypoint's, whose instances the pods are.
func (e *proxyPodsError) answeringWaypoint(ns, name string) string {
	what := "the " + plural(len(e.pods), "pod") + " are instances of waypoint " + ns + "/" + name
	if p := e.pods[0]; len(e.pods) == 1 {
		what = fmt.Sprintf("pod %s/%s is an instance of waypoint %s/%s (%s)", p.pod.Namespace, p.pod.Name, ns, name, p.field)
	}
	return fmt.Sprintf("%s: answering authz waypoint/%s -n %s", what, name, ns)
}

// leftOut stands for the answer of a proxy pod in the results until leaveOutProxyPods takes it
// out.
var leftOut = &explain.Result{}

// leaveOutProxyPods is results without the answers of proxies (leftOut), the pods left out
// named in a warning of the first result; an error when nothing else is left.
func leaveOutProxyPods(results []*explain.Result, proxies []proxyPod) ([]*explain.Result, error) {
	if len(proxies) == 0 {
		return results, nil
	}
	kept := results[:0]
	for _, r := range results {
		if r != leftOut {
			kept = append(kept, r)
		}
	}
	if len(kept) == 0 {
		return nil, &proxyPodsError{pods: proxies}
	}
	for _, p := range proxies {
		kept[0].Warnings = append(kept[0].Warnings, "left out: "+p.what())
	}
	return kept, nil
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
