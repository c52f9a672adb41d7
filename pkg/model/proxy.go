package model

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// The proxy types an Istio proxy container runs as: the second argument of its agent
// (`pilot-agent proxy TYPE`), which istiod reads from the node ID the proxy connects with
// (model.ParseServiceNodeWithMetadata in pilot/pkg/model/context.go). The injection templates
// set it: `sidecar` for the sidecar template, `router` for the gateway template
// (manifests/charts/istio-control/istio-discovery/files/gateway-injection-template.yaml) and the
// Gateway API deployments of class istio (kube-gateway.yaml), `waypoint` for waypoints
// (waypoint.yaml).
const (
	ProxySidecar  = "sidecar"
	ProxyRouter   = "router"
	ProxyWaypoint = "waypoint"
)

// ProxyContainer is the name of the container that runs the proxy.
const ProxyContainer = "istio-proxy"

// managedLabel is the label istiod's deployment controller gives the pods it deploys for a
// Gateway, naming the controller: managedWaypoint for a waypoint, managedGateway for a
// Gateway of class istio (ManagedGatewayMeshControllerLabel and ManagedGatewayControllerLabel
// in pkg/config/constants/constants.go; pilot/pkg/config/kube/gatewaycommon/classinfo.go).
const (
	managedLabel    = "gateway.istio.io/managed"
	managedWaypoint = "istio.io-mesh-controller"
	managedGateway  = "istio.io-gateway-controller"
)

// ProxyType is the type the pod's istio-proxy container (a container or, for a native
// sidecar, an init container) runs its proxy as, and the field that says so
// (`spec.containers[1].args[1]`). When its arguments do not name a type (`proxy TYPE ...`), the
// label istiod's deployment controller gives a waypoint's or a gateway's pods says it
// (`metadata.labels[gateway.istio.io/managed]`); else "".
func ProxyType(pod *corev1.Pod) (typ, field string) {
	for _, list := range []struct {
		field string
		cs    []corev1.Container
	}{{"spec.containers", pod.Spec.Containers}, {"spec.initContainers", pod.Spec.InitContainers}} {
		for i, c := range list.cs {
			if c.Name != ProxyContainer || len(c.Args) < 2 || c.Args[0] != "proxy" {
				continue
			}
			return c.Args[1], fmt.Sprintf("%s[%d].args[1]", list.field, i)
		}
	}
	switch pod.Labels[managedLabel] {
	case managedWaypoint:
		return ProxyWaypoint, "metadata.labels[" + managedLabel + "]"
	case managedGateway:
		return ProxyRouter, "metadata.labels[" + managedLabel + "]"
	}
	return "", ""
}

// GatewayOrWaypoint is ProxyType for a pod whose istio-proxy runs as a gateway (router) or a
// waypoint, which istiod builds otherwise than a sidecar; ok is false for any other pod.
func GatewayOrWaypoint(pod *corev1.Pod) (typ, field string, ok bool) {
	typ, field = ProxyType(pod)
	return typ, field, typ == ProxyRouter || typ == ProxyWaypoint
}
