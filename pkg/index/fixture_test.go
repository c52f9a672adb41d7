package index

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"
	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"
	securitybeta "istio.io/api/security/v1beta1"
	typebeta "istio.io/api/type/v1beta1"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mesh-explain/kubectl-mesh-explain/internal/testkit"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// The builders below make small, valid snapshots: each test case changes only what it is about.

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// at is a creation timestamp n seconds after a fixed epoch.
func at(n int) metav1.Time { return metav1.NewTime(epoch.Add(time.Duration(n) * time.Second)) }

// snapshot is testkit.Snapshot with the mesh defaults these tests assume (root namespace
// istio-system, trust domain cluster.local); a func(*MeshConfig) among objs changes them.
func snapshot(objs ...any) *model.Snapshot {
	s := &model.Snapshot{MeshConfig: &meshv1alpha1.MeshConfig{RootNamespace: "istio-system", TrustDomain: "cluster.local"}}
	for _, o := range objs {
		if f, ok := o.(func(*meshv1alpha1.MeshConfig)); ok {
			f(s.MeshConfig)
			continue
		}
		testkit.Add(s, o)
	}
	s.Sort()
	return s
}

// kubeSvc is a ClusterIP Service selecting app=<name>, one port per entry ("http:9080" names it,
// "9090" leaves it unnamed).
func kubeSvc(name, ns string, ports ...string) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: at(0)},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": name}, ClusterIP: "10.0.0.1"},
	}
	for _, p := range ports {
		pname, num, found := strings.Cut(p, ":")
		if !found {
			pname, num = "", p
		}
		n, err := strconv.Atoi(num)
		if err != nil {
			panic(err)
		}
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: pname, Port: int32(n), Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(int32(n))})
	}
	return s
}

func withSvc(s *corev1.Service, f func(*corev1.Service)) *corev1.Service {
	f(s)
	return s
}

// pod is a running pod with a sidecar (tlsMode istio) unless labels say otherwise.
func pod(name, ns, ip string, labels map[string]string) *corev1.Pod {
	l := map[string]string{"security.istio.io/tlsMode": "istio"}
	for k, v := range labels {
		if v == "" {
			delete(l, k)
			continue
		}
		l[k] = v
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: l, CreationTimestamp: at(0)},
		Spec:       corev1.PodSpec{ServiceAccountName: "sa-" + name, NodeName: "node-1"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}},
	}
}

func withPod(p *corev1.Pod, f func(*corev1.Pod)) *corev1.Pod {
	f(p)
	return p
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// serviceEntry has one TCP port 443 named tls unless changed.
func serviceEntry(name, ns string, res networking.ServiceEntry_Resolution, hosts ...string) *networkingv1.ServiceEntry {
	return &networkingv1.ServiceEntry{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: at(0)},
		Spec: networking.ServiceEntry{
			Hosts:      hosts,
			Ports:      []*networking.ServicePort{{Number: 443, Name: "tls", Protocol: "TLS"}},
			Resolution: res,
			Location:   networking.ServiceEntry_MESH_EXTERNAL,
		},
	}
}

func withSE(se *networkingv1.ServiceEntry, f func(*networking.ServiceEntry)) *networkingv1.ServiceEntry {
	f(&se.Spec)
	return se
}

func withSEMeta(se *networkingv1.ServiceEntry, f func(*metav1.ObjectMeta)) *networkingv1.ServiceEntry {
	f(&se.ObjectMeta)
	return se
}

func workloadEntry(name, ns, address string, labels map[string]string, sa string) *networkingv1.WorkloadEntry {
	return &networkingv1.WorkloadEntry{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: at(0)},
		Spec:       networking.WorkloadEntry{Address: address, Labels: labels, ServiceAccount: sa},
	}
}

type drOpt func(*networkingv1.DestinationRule)

func dr(name, ns, host string, opts ...drOpt) *networkingv1.DestinationRule {
	d := &networkingv1.DestinationRule{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: at(0)},
		Spec:       networking.DestinationRule{Host: host},
	}
	for _, o := range opts {
		o(d)
	}
	return d
}

func exportTo(ns ...string) drOpt {
	return func(d *networkingv1.DestinationRule) { d.Spec.ExportTo = ns }
}

func subsets(names ...string) drOpt {
	return func(d *networkingv1.DestinationRule) {
		for _, n := range names {
			d.Spec.Subsets = append(d.Spec.Subsets, &networking.Subset{Name: n})
		}
	}
}

func subsetLabels(name string, labels map[string]string) drOpt {
	return func(d *networkingv1.DestinationRule) {
		d.Spec.Subsets = append(d.Spec.Subsets, &networking.Subset{Name: name, Labels: labels})
	}
}

func drSelector(labels map[string]string) drOpt {
	return func(d *networkingv1.DestinationRule) {
		d.Spec.WorkloadSelector = &typebeta.WorkloadSelector{MatchLabels: labels}
	}
}

func created(sec int) drOpt {
	return func(d *networkingv1.DestinationRule) { d.CreationTimestamp = at(sec) }
}

func maxConnections(n int32) drOpt {
	return func(d *networkingv1.DestinationRule) {
		d.Spec.TrafficPolicy = &networking.TrafficPolicy{ConnectionPool: &networking.ConnectionPoolSettings{
			Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: n},
		}}
	}
}

func passthroughLB() drOpt {
	return func(d *networkingv1.DestinationRule) {
		d.Spec.TrafficPolicy = &networking.TrafficPolicy{LoadBalancer: &networking.LoadBalancerSettings{
			LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_PASSTHROUGH},
		}}
	}
}

func sidecar(name, ns string, selector map[string]string, listeners ...*networking.IstioEgressListener) *networkingv1.Sidecar {
	s := &networkingv1.Sidecar{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: at(0)},
		Spec:       networking.Sidecar{Egress: listeners},
	}
	if selector != nil {
		s.Spec.WorkloadSelector = &networking.WorkloadSelector{Labels: selector}
	}
	return s
}

func egress(port uint32, hosts ...string) *networking.IstioEgressListener {
	l := &networking.IstioEgressListener{Hosts: hosts}
	if port != 0 {
		l.Port = &networking.SidecarPort{Number: port, Protocol: "HTTP", Name: fmt.Sprintf("http-%d", port)}
	}
	return l
}

type vsOpt func(*networkingv1.VirtualService)

func vs(name, ns string, hosts []string, opts ...vsOpt) *networkingv1.VirtualService {
	v := &networkingv1.VirtualService{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: at(0)},
		Spec:       networking.VirtualService{Hosts: hosts},
	}
	for _, o := range opts {
		o(v)
	}
	return v
}

// httpRoute adds an http rule routing to host/subset (port 0: none named).
func httpRoute(host, subset string, port uint32) vsOpt {
	return func(v *networkingv1.VirtualService) {
		d := &networking.Destination{Host: host, Subset: subset}
		if port != 0 {
			d.Port = &networking.PortSelector{Number: port}
		}
		v.Spec.Http = append(v.Spec.Http, &networking.HTTPRoute{Route: []*networking.HTTPRouteDestination{{Destination: d}}})
	}
}

func tcpRoute(host, subset string) vsOpt {
	return func(v *networkingv1.VirtualService) {
		v.Spec.Tcp = append(v.Spec.Tcp, &networking.TCPRoute{Route: []*networking.RouteDestination{{Destination: &networking.Destination{Host: host, Subset: subset}}}})
	}
}

func vsExportTo(ns ...string) vsOpt {
	return func(v *networkingv1.VirtualService) { v.Spec.ExportTo = ns }
}

func peerAuthn(name, ns string, mode securitybeta.PeerAuthentication_MutualTLS_Mode, selector map[string]string, createdSec int) *securityv1.PeerAuthentication {
	pa := &securityv1.PeerAuthentication{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: at(createdSec)},
		Spec:       securitybeta.PeerAuthentication{Mtls: &securitybeta.PeerAuthentication_MutualTLS{Mode: mode}},
	}
	if selector != nil {
		pa.Spec.Selector = &typebeta.WorkloadSelector{MatchLabels: selector}
	}
	return pa
}

// nsProxy is a sidecar without labels in ns.
func nsProxy(ns string) *Proxy {
	return &Proxy{Namespace: ns, Description: "sidecar in namespace " + ns}
}

func labelledProxy(ns string, labels map[string]string) *Proxy {
	return &Proxy{Namespace: ns, Labels: labels, Description: "sidecar in namespace " + ns}
}

func svcFor(host, ns string) *Service { return &Service{Hostname: host, Namespace: ns} }

func subsetNames(r *ConsolidatedRule) []string {
	if r == nil {
		return nil
	}
	var out []string
	for _, s := range r.Spec.GetSubsets() {
		out = append(out, s.GetName())
	}
	return out
}

type meshConfig = meshv1alpha1.MeshConfig

// withMesh changes the snapshot's MeshConfig.
func withMesh(f func(*meshConfig)) func(*meshv1alpha1.MeshConfig) { return f }

// podEndpoint is the endpoint istiod builds for a pod of the fixture: its labels plus the
// cluster and node topology labels, its SPIFFE identity and tlsMode.
func podEndpoint(p *corev1.Pod, port uint32) Endpoint {
	l := map[string]string{"topology.istio.io/cluster": "Kubernetes", "kubernetes.io/hostname": p.Spec.NodeName}
	for k, v := range p.Labels {
		l[k] = v
	}
	mode := p.Labels["security.istio.io/tlsMode"]
	if mode == "" {
		mode = "disabled"
	}
	return Endpoint{
		Address: p.Status.PodIP, Port: port, Labels: l,
		ServiceAccount: "spiffe://cluster.local/ns/" + p.Namespace + "/sa/" + p.Spec.ServiceAccountName,
		TLSModeIstio:   mode == "istio", TLSMode: mode,
		Ref: provenance.Ref{Kind: "Pod", Namespace: p.Namespace, Name: p.Name},
	}
}

func withPortLevel(pa *securityv1.PeerAuthentication, port uint32, mode securitybeta.PeerAuthentication_MutualTLS_Mode) *securityv1.PeerAuthentication {
	if pa.Spec.PortLevelMtls == nil {
		pa.Spec.PortLevelMtls = map[uint32]*securitybeta.PeerAuthentication_MutualTLS{}
	}
	pa.Spec.PortLevelMtls[port] = &securitybeta.PeerAuthentication_MutualTLS{Mode: mode}
	return pa
}

// ignoreWorkload leaves out of a comparison the workload an Endpoint was made from.
var ignoreWorkload = cmpopts.IgnoreUnexported(Endpoint{})
