package ztunnelauthz

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// Labels and annotations that decide ambient capture.
const (
	dataplaneModeLabel     = "istio.io/dataplane-mode" // label.IoIstioDataplaneMode
	dataplaneModeAmbient   = "ambient"
	dataplaneModeNone      = "none"
	sidecarStatusAnno      = "sidecar.istio.io/status"      // annotation.SidecarStatus
	ambientRedirectionAnno = "ambient.istio.io/redirection" // annotation.AmbientRedirection
	useWaypointLabel       = "istio.io/use-waypoint"
	useWaypointNsLabel     = "istio.io/use-waypoint-namespace"
	proxyContainerName     = "istio-proxy"
)

// captureResult says whether ztunnel handles the pod's inbound traffic.
type captureResult struct {
	captured bool
	// reason is one plain sentence.
	reason string
	rows   [][]string
	diags  []explain.Diagnostic
}

// decideCapture reproduces the istio-cni enablement decision with the default
// ambient.enablementSelectors (manifests/charts/istio-cni/values.yaml,
// cni/pkg/util/enablement_selector.go CompiledEnablementSelectors.Matches):
//
//	host-network pods and pods with a sidecar (the sidecar.istio.io/status annotation,
//	podutil.go podHasSidecar) are never captured;
//	a pod labelled istio.io/dataplane-mode=ambient is captured wherever it runs;
//	a pod in a namespace labelled istio.io/dataplane-mode=ambient is captured unless the pod
//	is labelled istio.io/dataplane-mode=none.
//
// istiod itself builds a Workload (with its policy keys) for every pod with an IP, captured or
// not; only a captured pod's inbound traffic passes through ztunnel's policy check.
//
// The rows' sources, which locate fields in their files, are spelled only when sources is set:
// the decision and the diagnostics do not read them.
func decideCapture(snap *model.Snapshot, pod *corev1.Pod, sources bool) captureResult {
	var c captureResult
	podRef := model.ObjectKey{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name}
	source := func(k model.ObjectKey, field string) string {
		if !sources {
			return ""
		}
		return originString(snap, k, field)
	}
	ns := snap.Namespace(pod.Namespace)
	nsVal, nsHas := "", false
	nsSource := "Namespace " + pod.Namespace + " (not in the input)"
	if ns != nil {
		nsVal, nsHas = ns.Labels[dataplaneModeLabel]
		nsSource = source(model.ObjectKey{Kind: "Namespace", Name: ns.Name}, "metadata.labels["+dataplaneModeLabel+"]")
	}
	podVal, podHas := pod.Labels[dataplaneModeLabel]
	podSource := source(podRef, "metadata.labels["+dataplaneModeLabel+"]")
	_, sidecarAnno := pod.Annotations[sidecarStatusAnno]
	sidecarContainer := false
	for _, ct := range append(append([]corev1.Container{}, pod.Spec.Containers...), pod.Spec.InitContainers...) {
		if ct.Name == proxyContainerName {
			sidecarContainer = true
		}
	}
	show := func(v string, has bool) string {
		if !has {
			return "(unset)"
		}
		return v
	}
	c.rows = append(c.rows,
		[]string{"namespace label " + dataplaneModeLabel, show(nsVal, nsHas), nsSource},
		[]string{"pod label " + dataplaneModeLabel, show(podVal, podHas), podSource},
	)
	sidecar := "none"
	switch {
	case sidecarAnno:
		sidecar = "injected (annotation " + sidecarStatusAnno + ")"
	case sidecarContainer:
		sidecar = "container " + proxyContainerName + " without annotation " + sidecarStatusAnno + " (not seen as a sidecar)"
	}
	sidecarSource := podRef.Ref().String()
	switch {
	case sidecarAnno:
		sidecarSource = source(podRef, "metadata.annotations["+sidecarStatusAnno+"]")
	case sidecarContainer:
		sidecarSource = source(podRef, "spec.containers")
	}
	c.rows = append(c.rows, []string{"sidecar", sidecar, sidecarSource})
	if pod.Spec.HostNetwork {
		c.rows = append(c.rows, []string{"hostNetwork", "true", source(podRef, "spec.hostNetwork")})
	}

	switch {
	case pod.Spec.HostNetwork:
		c.reason = "pod uses the host network; istio-cni never captures host-network pods"
	case sidecarAnno:
		c.reason = "pod has a sidecar; a pod is never both sidecar-injected and captured by ztunnel, so its sidecar enforces policy instead"
	case podHas && podVal == dataplaneModeAmbient:
		c.captured = true
		c.reason = "pod is labelled " + dataplaneModeLabel + "=ambient"
	case podHas && podVal == dataplaneModeNone:
		c.reason = "pod opts out with " + dataplaneModeLabel + "=none"
	case nsHas && nsVal == dataplaneModeAmbient:
		c.captured = true
		c.reason = "namespace " + pod.Namespace + " is labelled " + dataplaneModeLabel + "=ambient"
	default:
		c.reason = "neither the pod nor namespace " + pod.Namespace + " is labelled " + dataplaneModeLabel + "=ambient"
	}
	if c.captured {
		c.rows = append(c.rows, []string{"result", "captured by ztunnel", c.reason})
	} else {
		c.rows = append(c.rows, []string{"result", "NOT captured by ztunnel", c.reason})
		fix := "label the namespace " + dataplaneModeLabel + "=ambient (or the pod), and remove any sidecar"
		switch {
		case pod.Spec.HostNetwork:
			fix = "host-network pods cannot be in ambient mode"
		case sidecarAnno:
			fix = "use `kubectl mesh-explain` sidecar commands for this pod, or remove the sidecar injection to move it to ambient"
		case podHas && podVal == dataplaneModeNone:
			fix = "remove the pod label " + dataplaneModeLabel + "=none"
		}
		c.diags = append(c.diags, diag.NotCaptured.New(
			fmt.Sprintf("pod %s/%s is not captured by ztunnel (%s): istiod still lists the policies below for it, but ztunnel enforces none of them on its inbound traffic", pod.Namespace, pod.Name, c.reason),
			fix,
			podRef.Ref()))
	}
	// istio-cni recognises a sidecar only by its status annotation (podHasSidecar); a bare
	// istio-proxy container does not stop capture. The pods of gateways and waypoints run one
	// without the annotation by design (model.ProxyType): not a half-injected sidecar.
	if _, _, gateway := model.GatewayOrWaypoint(pod); sidecarContainer && !sidecarAnno && !gateway {
		c.diags = append(c.diags, diag.NotCaptured.New(
			fmt.Sprintf("spec.containers: pod %s/%s has an %s container but no %s annotation, so istio-cni does not treat it as a sidecar pod (captured: %v)", pod.Namespace, pod.Name, proxyContainerName, sidecarStatusAnno, c.captured),
			"inject the sidecar through the injector (which sets the annotation), or remove the container",
			podRef.Ref()))
	}
	if v, ok := pod.Annotations[dataplaneModeLabel]; ok {
		c.diags = append(c.diags, diag.DataplaneModeAnnotation.New(
			fmt.Sprintf("metadata.annotations[%s]: %q is an annotation; capture reads only the label of that name, so it has no effect", dataplaneModeLabel, v),
			"set it as a label instead",
			podRef.Ref()))
	}
	// Live pods carry istio-cni's verdict; say so when it disagrees with the inference.
	if v, ok := pod.Annotations[ambientRedirectionAnno]; ok {
		c.rows = append(c.rows, []string{"annotation " + ambientRedirectionAnno, v, source(podRef, "metadata.annotations["+ambientRedirectionAnno+"]")})
		if (v == "enabled") != c.captured {
			c.diags = append(c.diags, diag.NotCaptured.New(
				fmt.Sprintf("istio-cni marked the pod %s=%s, which disagrees with the labels (they say: %s); istio-cni may use custom enablement selectors or has not reconciled yet", ambientRedirectionAnno, v, c.reason),
				"restart the pod after changing dataplane-mode labels",
				podRef.Ref()))
		}
	}
	return c
}

// originString is the human spelling of a field's origin: `Pod foo/a · metadata.labels[x] (f.yaml:3)`.
func originString(snap *model.Snapshot, k model.ObjectKey, field string) string {
	return snap.Origin(provenance.LayerNone, k, field).String()
}
