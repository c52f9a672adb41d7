package istiorun

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// SynthesizeEndpointSlices builds the EndpointSlices the Kubernetes EndpointSlice controller
// would maintain for the Services and Pods given (nothing else creates them in a fake cluster).
// Services that already have an EndpointSlice among the objects are left alone.
//
// It follows k8s.io/endpointslice (reconciler and utils): Services without a selector and
// ExternalName Services get none; a pod takes part when it has an IP, is not terminal, and is
// not terminating (unless publishNotReadyAddresses); a service port whose named targetPort the
// pod does not declare is left out for that pod; pods are grouped by their port list, one slice
// per group and address family.
func SynthesizeEndpointSlices(objs []runtime.Object) ([]runtime.Object, error) {
	var services []*corev1.Service
	var pods []*corev1.Pod
	existing := map[string]bool{}
	for _, o := range objs {
		switch t := o.(type) {
		case *corev1.Service:
			services = append(services, t)
		case *corev1.Pod:
			pods = append(pods, t)
		case *discoveryv1.EndpointSlice:
			existing[t.Namespace+"/"+t.Labels[discoveryv1.LabelServiceName]] = true
		}
	}
	sort.SliceStable(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
	var out []runtime.Object
	for _, svc := range services {
		if svc.Spec.Selector == nil || svc.Spec.Type == corev1.ServiceTypeExternalName || existing[svc.Namespace+"/"+svc.Name] {
			continue
		}
		sel := labels.SelectorFromSet(svc.Spec.Selector)
		families := svc.Spec.IPFamilies
		if len(families) == 0 {
			families = []corev1.IPFamily{corev1.IPv4Protocol}
		}
		for _, fam := range families {
			addrType := discoveryv1.AddressTypeIPv4
			if fam == corev1.IPv6Protocol {
				addrType = discoveryv1.AddressTypeIPv6
			}
			type group struct {
				ports     []discoveryv1.EndpointPort
				endpoints []discoveryv1.Endpoint
			}
			groups := map[string]*group{}
			var order []string
			for _, pod := range pods {
				if pod.Namespace != svc.Namespace || !sel.Matches(labels.Set(pod.Labels)) {
					continue
				}
				if !shouldPodBeInEndpoints(pod, svc.Spec.PublishNotReadyAddresses) {
					continue
				}
				ip := podIPOfFamily(pod, fam)
				if ip == "" {
					continue
				}
				ports := endpointPorts(svc, pod)
				key := portsKey(ports)
				g := groups[key]
				if g == nil {
					g = &group{ports: ports}
					groups[key] = g
					order = append(order, key)
				}
				ready := svc.Spec.PublishNotReadyAddresses || isPodReady(pod)
				ep := discoveryv1.Endpoint{
					Addresses: []string{ip},
					Conditions: discoveryv1.EndpointConditions{
						Ready:       ptr.To(ready && pod.DeletionTimestamp == nil),
						Serving:     ptr.To(ready),
						Terminating: ptr.To(pod.DeletionTimestamp != nil),
					},
					TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
				}
				if pod.Spec.NodeName != "" {
					ep.NodeName = ptr.To(pod.Spec.NodeName)
				}
				if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name {
					ep.Hostname = ptr.To(pod.Spec.Hostname)
				}
				g.endpoints = append(g.endpoints, ep)
			}
			for i, key := range order {
				g := groups[key]
				lbls := map[string]string{}
				for k, v := range svc.Labels {
					lbls[k] = v
				}
				lbls[discoveryv1.LabelServiceName] = svc.Name
				lbls[discoveryv1.LabelManagedBy] = "endpointslice-controller.k8s.io"
				if svc.Spec.ClusterIP == corev1.ClusterIPNone {
					lbls[corev1.IsHeadlessService] = ""
				}
				name := fmt.Sprintf("%s-%s%d", svc.Name, strings.ToLower(string(addrType)), i)
				out = append(out, &discoveryv1.EndpointSlice{
					TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
					ObjectMeta: metav1.ObjectMeta{
						Name:              name,
						Namespace:         svc.Namespace,
						Labels:            lbls,
						UID:               types.UID("uid-endpointslice-" + svc.Namespace + "-" + name),
						CreationTimestamp: metav1.NewTime(DefaultCreationTime),
						ResourceVersion:   "1",
						OwnerReferences: []metav1.OwnerReference{{
							APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID,
							Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
						}},
					},
					AddressType: addrType,
					Endpoints:   g.endpoints,
					Ports:       g.ports,
				})
			}
		}
	}
	return out, nil
}

func shouldPodBeInEndpoints(pod *corev1.Pod, includeTerminating bool) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if len(pod.Status.PodIP) == 0 && len(pod.Status.PodIPs) == 0 {
		return false
	}
	if !includeTerminating && pod.DeletionTimestamp != nil {
		return false
	}
	return true
}

func isPodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podIPOfFamily(pod *corev1.Pod, fam corev1.IPFamily) string {
	ips := pod.Status.PodIPs
	if len(ips) == 0 && pod.Status.PodIP != "" {
		ips = []corev1.PodIP{{IP: pod.Status.PodIP}}
	}
	for _, ip := range ips {
		v6 := strings.Contains(ip.IP, ":")
		if v6 == (fam == corev1.IPv6Protocol) {
			return ip.IP
		}
	}
	return ""
}

func endpointPorts(svc *corev1.Service, pod *corev1.Pod) []discoveryv1.EndpointPort {
	var out []discoveryv1.EndpointPort
	for _, sp := range svc.Spec.Ports {
		num, ok := findPort(pod, sp)
		if !ok {
			continue
		}
		out = append(out, discoveryv1.EndpointPort{
			Name:        ptr.To(sp.Name),
			Port:        ptr.To(num),
			Protocol:    ptr.To(sp.Protocol),
			AppProtocol: sp.AppProtocol,
		})
	}
	return out
}

// findPort is k8s.io/kubernetes/pkg/api/v1/pod.FindPort.
func findPort(pod *corev1.Pod, sp corev1.ServicePort) (int32, bool) {
	switch sp.TargetPort.Type {
	case intstr.String:
		name := sp.TargetPort.StrVal
		for _, c := range pod.Spec.Containers {
			for _, p := range c.Ports {
				if p.Name == name && p.Protocol == sp.Protocol {
					return p.ContainerPort, true
				}
			}
		}
		return 0, false
	default:
		return sp.TargetPort.IntVal, true
	}
}

func portsKey(ps []discoveryv1.EndpointPort) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "%s/%d/%s/%s;", *p.Name, *p.Port, *p.Protocol, ptr.Deref(p.AppProtocol, ""))
	}
	return b.String()
}
