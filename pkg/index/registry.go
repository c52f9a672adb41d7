package index

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"

	networking "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/meshhost"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// Labels istiod reads or writes on workloads and endpoints (istio.io/api/label and
// pilot/pkg/serviceregistry/util/label).
const (
	labelTLSMode                  = "security.istio.io/tlsMode"
	labelLocality                 = "topology.istio.io/locality"
	labelLocalityLegacy           = "istio-locality"
	labelNetwork                  = "topology.istio.io/network"
	labelCluster                  = "topology.istio.io/cluster"
	labelSubzone                  = "topology.istio.io/subzone"
	labelRegion                   = "topology.kubernetes.io/region"
	labelZone                     = "topology.kubernetes.io/zone"
	labelHostname                 = "kubernetes.io/hostname"
	labelRegionBeta               = "failure-domain.beta.kubernetes.io/region"
	labelZoneBeta                 = "failure-domain.beta.kubernetes.io/zone"
	annotationExportTo            = "networking.istio.io/exportTo"
	annotationCanonSAs            = "alpha.istio.io/canonical-serviceaccounts"
	annotationKubeSAs             = "alpha.istio.io/kubernetes-serviceaccounts"
	annotationTrafficDistribution = "networking.istio.io/traffic-distribution"
	tlsModeDisabled               = "disabled"
	tlsModeIstio                  = "istio"
	protocolUnsupported           = Protocol("UnsupportedProtocol")
	protocolUDP                   = Protocol("UDP")
	protocolTCP                   = Protocol("TCP")
	workloadKindPod               = 0
	workloadKindWorkload          = 1
)

// Protocols as istiod spells them (pkg/config/protocol).
const (
	ProtocolHTTP    Protocol = "HTTP"
	ProtocolHTTP2   Protocol = "HTTP2"
	ProtocolGRPC    Protocol = "GRPC"
	ProtocolGRPCWeb Protocol = "GRPC-Web"
	ProtocolTCP     Protocol = protocolTCP
	ProtocolTLS     Protocol = "TLS"
	ProtocolHTTPS   Protocol = "HTTPS"
	ProtocolUDP     Protocol = protocolUDP
	// ProtocolAuto is istiod's UnsupportedProtocol: the port is sniffed.
	ProtocolAuto Protocol = protocolUnsupported
)

// workload is a pod or a WorkloadEntry that Services and ServiceEntries can select.
type workload struct {
	kind      int // workloadKindPod or workloadKindWorkload, istiod's sort order
	ref       provenance.Ref
	namespace string
	name      string
	// labels are the workload's own labels (what selectors and PeerAuthentications match).
	labels map[string]string
	// epLabels are labels plus the topology labels istiod adds (label.AugmentLabels).
	epLabels map[string]string
	address  string
	portMap  map[string]uint32
	// containerPorts are a pod's container ports (name, protocol, number) for named targetPorts.
	containerPorts []corev1.ContainerPort
	identity       string
	tlsMode        string
	locality       string
	weight         uint32
	// dnsOnly marks a WorkloadEntry whose address is a hostname: only DNS ServiceEntries use it.
	dnsOnly bool
	// policy is the workload-level PeerAuthentication of the workload (Index.workloadPolicyOf),
	// looked up on first use.
	policy atomic.Pointer[workloadPolicy]
}

// workloadPolicy is the workload-level PeerAuthentication of a workload, nil for none.
type workloadPolicy struct {
	pa *securityv1.PeerAuthentication
}

func (w *workload) endpoint(port uint32) Endpoint {
	return Endpoint{
		Address:        w.address,
		Port:           port,
		Labels:         w.epLabels,
		ServiceAccount: w.identity,
		TLSModeIstio:   w.tlsMode == tlsModeIstio,
		TLSMode:        w.tlsMode,
		Locality:       w.locality,
		Weight:         w.weight,
		Ref:            w.ref,
		workload:       w,
	}
}

// regService is one registry service as istiod's aggregate registry lists it: a Kubernetes
// Service, or one host of a ServiceEntry.
type regService struct {
	svc *Service
	// sortName is Attributes.Name: the Service name, or the host for a ServiceEntry.
	sortName string
	// ownAccounts are the identities the object itself declares (Service annotations,
	// ServiceEntry subjectAltNames), before the endpoint identities are added.
	ownAccounts []string
	// endpoints are this object's own instances; Service.Endpoints holds the union per
	// hostname and namespace.
	endpoints map[uint32][]Endpoint
	// visibility is the MeshConfig serviceEntryVisibility outcome for a ServiceEntry.
	visibility seVisibility
}

// serviceGroup is every definition of one hostname in one namespace.
type serviceGroup struct {
	hostname, namespace string
	members             []*regService
	// chosen is istiod's ServiceIndex.HostnameAndNamespace entry: a Kubernetes Service over a
	// ServiceEntry, else the oldest.
	chosen *regService
	// merged is what a proxy that sees every definition gets (appendSidecarServices).
	merged *Service
}

func (ix *Index) buildWorkloads() {
	ix.workloads = map[string][]*workload{}
	ix.workloadsByLabel = map[string]map[labelKV][]*workload{}
	ix.workloadByRef = map[provenance.Ref]*workload{}
	ix.nodes = make(map[string]*corev1.Node, len(ix.snap.Nodes))
	for _, n := range ix.snap.Nodes {
		ix.nodes[n.Name] = n
	}
	td := ix.TrustDomain()
	sysNetwork := ix.systemNetwork()
	for _, pod := range ix.snap.Pods {
		ip := pod.Status.PodIP
		if ip == "" && len(pod.Status.PodIPs) > 0 {
			ip = pod.Status.PodIPs[0].IP
		}
		// istiod only learns about pods that have an IP and have not terminated.
		if ip == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || pod.DeletionTimestamp != nil {
			continue
		}
		sa := pod.Spec.ServiceAccountName
		if sa == "" {
			sa = pod.Spec.DeprecatedServiceAccount
		}
		if sa == "" {
			// The API server defaults it; files written by hand often leave it out.
			sa = "default"
		}
		tlsMode := tlsModeDisabled
		if v, ok := pod.Labels[labelTLSMode]; ok {
			tlsMode = v
		}
		locality := ix.podLocality(pod)
		ports := podContainerPorts(pod)
		w := &workload{
			kind:           workloadKindPod,
			ref:            provenance.Ref{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name},
			namespace:      pod.Namespace,
			name:           pod.Name,
			labels:         pod.Labels,
			address:        ip,
			portMap:        podPortMap(ports),
			identity:       spiffeID(td, pod.Namespace, sa),
			tlsMode:        tlsMode,
			locality:       locality,
			containerPorts: ports,
		}
		// The pod's own network label stays; augmentLabels adds the system's only without one.
		w.epLabels = augmentLabels(pod.Labels, locality, pod.Spec.NodeName, sysNetwork)
		ix.addWorkload(w)
	}
	for _, we := range ix.snap.WorkloadEntries {
		w := ix.workloadFromEntry(&we.Spec, we.Labels, we.Namespace, we.Name,
			provenance.Ref{Kind: "WorkloadEntry", Namespace: we.Namespace, Name: we.Name})
		ix.addWorkload(w)
	}
}

func (ix *Index) addWorkload(w *workload) {
	ix.workloads[w.namespace] = append(ix.workloads[w.namespace], w)
	ix.workloadByRef[w.ref] = w
	byLabel := ix.workloadsByLabel[w.namespace]
	if byLabel == nil {
		byLabel = map[labelKV][]*workload{}
		ix.workloadsByLabel[w.namespace] = byLabel
	}
	for k, v := range w.labels {
		byLabel[labelKV{k, v}] = append(byLabel[labelKV{k, v}], w)
	}
}

// selectWorkloads returns the workloads of namespace whose labels include every label of sel
// (all of them for an empty sel), in the order of ix.workloads. Only the workloads that carry
// the least common label of sel are checked.
func (ix *Index) selectWorkloads(namespace string, sel map[string]string) []*workload {
	if len(sel) == 0 {
		return ix.workloads[namespace]
	}
	var candidates []*workload
	first := true
	for k, v := range sel {
		l := ix.workloadsByLabel[namespace][labelKV{k, v}]
		if len(l) == 0 {
			return nil
		}
		if first || len(l) < len(candidates) {
			candidates, first = l, false
		}
	}
	var out []*workload
	for _, w := range candidates {
		if meshhost.LabelsSubsetOf(sel, w.labels) {
			out = append(out, w)
		}
	}
	return out
}

// workloadFromEntry is serviceentry.convertWorkloadEntryToWorkloadInstance: a WorkloadEntry, or
// an inline ServiceEntry endpoint (then ref is the ServiceEntry and metaLabels is nil).
func (ix *Index) workloadFromEntry(spec *networking.WorkloadEntry, metaLabels map[string]string, namespace, name string, ref provenance.Ref) *workload {
	// ConvertWorkloadEntry merges metadata.labels over spec.labels.
	lbls := map[string]string{}
	for k, v := range spec.GetLabels() {
		lbls[k] = v
	}
	for k, v := range metaLabels {
		lbls[k] = v
	}
	addr := spec.GetAddress()
	dnsOnly := false
	if strings.HasPrefix(addr, "unix://") {
		dnsOnly = true
	} else if _, err := netip.ParseAddr(addr); addr != "" && err != nil {
		dnsOnly = true
	}
	tlsMode := tlsModeDisabled
	if v, ok := lbls[labelTLSMode]; ok {
		tlsMode = v
	} else if spec.GetServiceAccount() != "" {
		tlsMode = tlsModeIstio
	}
	identity := ""
	if spec.GetServiceAccount() != "" {
		identity = spiffeID(ix.TrustDomain(), namespace, spec.GetServiceAccount())
	}
	locality := spec.GetLocality()
	if locality == "" {
		locality = localityLabel(lbls)
	}
	// workloadEntryNetwork: spec.network, else the controller's network callback, which
	// istiod's ServiceEntry controller is not given (pilot/pkg/bootstrap servicecontroller.go):
	// no namespace's label counts, only the entry's own, which its labels keep.
	network := spec.GetNetwork()
	w := &workload{
		kind:      workloadKindWorkload,
		ref:       ref,
		namespace: namespace,
		name:      name,
		labels:    lbls,
		address:   addr,
		portMap:   spec.GetPorts(),
		identity:  identity,
		tlsMode:   tlsMode,
		locality:  locality,
		weight:    spec.GetWeight(),
		dnsOnly:   dnsOnly,
	}
	w.epLabels = augmentLabels(lbls, locality, "", network)
	return w
}

// systemNetwork is the network istiod gives the endpoints of a pod without a
// `topology.istio.io/network` label of its own when MeshNetworks says nothing (the kube
// controller's Network): the label of the namespace istiod runs in (networkFromSystemNamespace),
// not the pod's own namespace's.
func (ix *Index) systemNetwork() string {
	if ns := ix.snap.Namespace(ix.snap.SystemNamespace()); ns != nil {
		return ns.Labels[labelNetwork]
	}
	return ""
}

// podLocality is the kube controller's getPodLocality, the locality of a pod's endpoints: the
// pod's locality label (localityLabel) when set, else the topology labels of the Node it runs on
// (region and zone, each from its GA label or else the beta failure-domain one, and
// topology.istio.io/subzone) as `region/zone/subzone`. It is "" when the pod has no node, the
// Node is not in the snapshot, or the Node has none of those labels; the pod's own
// topology.kubernetes.io labels do not count here.
func (ix *Index) podLocality(pod *corev1.Pod) string {
	if loc := localityLabel(pod.Labels); loc != "" {
		return loc
	}
	node := ix.nodes[pod.Spec.NodeName]
	if node == nil || pod.Spec.NodeName == "" {
		return ""
	}
	region := cmp.Or(node.Labels[labelRegion], node.Labels[labelRegionBeta])
	zone := cmp.Or(node.Labels[labelZone], node.Labels[labelZoneBeta])
	subzone := node.Labels[labelSubzone]
	if region == "" && zone == "" && subzone == "" {
		return ""
	}
	return region + "/" + zone + "/" + subzone
}

// localityLabel is model.GetLocalityLabel + SanitizeLocalityLabel: topology.istio.io/locality
// when present, else istio-locality, with "." read as "/" when the value has no "/".
func localityLabel(lbls map[string]string) string {
	loc, ok := lbls[labelLocality]
	if !ok {
		loc = lbls[labelLocalityLegacy]
	}
	if loc == "" || strings.Contains(loc, "/") {
		return loc
	}
	return strings.ReplaceAll(loc, ".", "/")
}

// augmentLabels is label.AugmentLabels: the workload labels plus topology labels.
func augmentLabels(in map[string]string, locality, node, network string) map[string]string {
	out := make(map[string]string, len(in)+6)
	for k, v := range in {
		out[k] = v
	}
	parts := strings.SplitN(locality, "/", 3)
	if len(parts) > 0 && parts[0] != "" {
		out[labelRegion] = parts[0]
	}
	if len(parts) > 1 && parts[1] != "" {
		out[labelZone] = parts[1]
	}
	if len(parts) > 2 && parts[2] != "" {
		out[labelSubzone] = parts[2]
	}
	out[labelCluster] = ClusterID
	if node != "" {
		out[labelHostname] = node
	}
	if network != "" && out[labelNetwork] == "" {
		out[labelNetwork] = network
	}
	return out
}

// podPortMap is the kube controller's getPortMap over a pod's container ports (podContainerPorts):
// named TCP ports, first one wins; nil when there is none.
func podPortMap(ports []corev1.ContainerPort) map[string]uint32 {
	var out map[string]uint32
	for _, p := range ports {
		if p.Name == "" || (p.Protocol != "" && p.Protocol != corev1.ProtocolTCP) {
			continue
		}
		if out == nil {
			out = map[string]uint32{}
		}
		if _, ok := out[p.Name]; !ok {
			out[p.Name] = uint32(p.ContainerPort)
		}
	}
	return out
}

// podContainerPorts are the ports of a pod's containers and native sidecar init containers, in
// that order. The pod's own list when only one container has ports: read it, never write it.
func podContainerPorts(pod *corev1.Pod) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	lists := 0
	add := func(ports []corev1.ContainerPort) {
		switch {
		case len(ports) == 0:
			return
		case lists == 0:
			out = ports
		case lists == 1:
			out = append(slices.Clip(out), ports...)
		default:
			out = append(out, ports...)
		}
		lists++
	}
	for _, c := range pod.Spec.Containers {
		add(c.Ports)
	}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c.Ports)
		}
	}
	return out
}

// ConvertProtocol is pkg/config/kube/conversion.go ConvertProtocol: UDP first, then appProtocol
// (with the kubernetes.io/h2c, ws, wss names), then the port-name prefix before the first `-`.
// An unnamed or unknown port is UnsupportedProtocol (sniffed), except the well-known ports
// 25, 53, 3306 and 27017, which are TCP.
func ConvertProtocol(port int32, name string, proto corev1.Protocol, appProtocol *string) Protocol {
	if proto == corev1.ProtocolUDP {
		return protocolUDP
	}
	if appProtocol != nil {
		name = *appProtocol
		switch name {
		case "kubernetes.io/h2c":
			return ProtocolHTTP2
		case "kubernetes.io/ws":
			return ProtocolHTTP
		case "kubernetes.io/wss":
			return ProtocolHTTPS
		}
	}
	if len(name) >= len("grpc-web") && strings.EqualFold(name[:len("grpc-web")], "grpc-web") {
		return ProtocolGRPCWeb
	}
	if i := strings.IndexByte(name, '-'); i >= 0 {
		name = name[:i]
	}
	p := ParseProtocol(name)
	if p == protocolUnsupported {
		switch port {
		case 25, 53, 3306, 27017:
			return protocolTCP
		}
	}
	return p
}

// ParseProtocol is protocol.Parse: the case-insensitive protocol name, UnsupportedProtocol when
// unknown. ServiceEntry ports use it directly.
func ParseProtocol(s string) Protocol {
	switch strings.ToLower(s) {
	case "tcp":
		return protocolTCP
	case "udp":
		return protocolUDP
	case "grpc":
		return ProtocolGRPC
	case "grpc-web":
		return ProtocolGRPCWeb
	case "http":
		return ProtocolHTTP
	case "http_proxy":
		return "HTTP_PROXY"
	case "http2":
		return ProtocolHTTP2
	case "https":
		return ProtocolHTTPS
	case "tls":
		return ProtocolTLS
	case "mongo":
		return "Mongo"
	case "redis":
		return "Redis"
	case "mysql":
		return "MySQL"
	}
	return protocolUnsupported
}

func (ix *Index) buildServices() {
	var all []*regService
	for _, s := range ix.snap.Services {
		all = append(all, ix.convertKubeService(s))
	}
	for _, se := range ix.snap.ServiceEntries {
		all = append(all, ix.convertServiceEntry(se)...)
	}
	// SortServicesByCreationTime: creation time, then Attributes.Name, then namespace.
	slices.SortStableFunc(all, func(a, b *regService) int {
		return cmp.Or(a.svc.CreationTime.Compare(b.svc.CreationTime),
			strings.Compare(a.sortName, b.sortName),
			strings.Compare(a.svc.Namespace, b.svc.Namespace))
	})
	ix.services = all

	ix.groups = map[string]map[string]*serviceGroup{}
	for _, rs := range all {
		byNs := ix.groups[rs.svc.Hostname]
		if byNs == nil {
			byNs = map[string]*serviceGroup{}
			ix.groups[rs.svc.Hostname] = byNs
		}
		g := byNs[rs.svc.Namespace]
		if g == nil {
			g = &serviceGroup{hostname: rs.svc.Hostname, namespace: rs.svc.Namespace}
			byNs[rs.svc.Namespace] = g
		}
		g.members = append(g.members, rs)
		// initServiceRegistry: keep the first (oldest) unless a Kubernetes Service arrives
		// after a ServiceEntry.
		if g.chosen == nil || (!g.chosen.svc.Kubernetes && rs.svc.Kubernetes) {
			g.chosen = rs
		}
	}
	for _, byNs := range ix.groups {
		for _, g := range byNs {
			ix.finishGroup(g)
		}
	}

	// initServiceRegistry's public / exportedToNamespace lists.
	ix.exportedTo = map[string][]*regService{}
	for _, rs := range all {
		set := ix.serviceExportTo(rs)
		if set["*"] {
			ix.public = append(ix.public, rs)
			continue
		}
		if set["~"] {
			continue
		}
		includesPrivate := false
		for _, e := range sortedKeys(set) {
			key := e
			if e == "." || e == rs.svc.Namespace {
				if includesPrivate {
					continue
				}
				key, includesPrivate = rs.svc.Namespace, true
			}
			ix.exportedTo[key] = append(ix.exportedTo[key], rs)
		}
	}
}

// finishGroup gives every definition of a hostname in a namespace the endpoints and identities
// istiod keys by hostname and namespace, and builds the merged view.
func (ix *Index) finishGroup(g *serviceGroup) {
	endpoints := map[uint32][]Endpoint{}
	accounts := map[string]bool{}
	var sources []provenance.Ref
	for _, m := range g.members {
		sources = append(sources, m.svc.Ref)
		for _, port := range sortedPorts(m.endpoints) {
			endpoints[port] = append(endpoints[port], m.endpoints[port]...)
		}
		for _, eps := range m.endpoints {
			for _, ep := range eps {
				if ep.ServiceAccount != "" {
					accounts[ep.ServiceAccount] = true
				}
			}
		}
	}
	// addServiceAccounts runs once per registry service and overwrites the entry for the
	// hostname and namespace: the declared identities of the last (newest) definition win.
	last := g.members[len(g.members)-1]
	for _, a := range last.ownAccounts {
		accounts[a] = true
	}
	ids := expandTrustDomains(accounts, ix.snap.MeshConfig.GetTrustDomainAliases())
	for _, m := range g.members {
		m.svc.Endpoints = endpoints
		m.svc.ServiceAccounts = ids
		m.svc.Sources = sources
	}
	added := map[string]int{}
	var list []*Service
	for _, m := range g.members {
		list = appendSidecarService(list, added, m.svc)
	}
	g.merged = list[0]
}

func sortedPorts[V any](m map[uint32]V) []uint32 {
	out := make([]uint32, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// expandTrustDomains is spiffe.ExpandWithTrustDomains followed by sets.SortedList: every SPIFFE
// identity is repeated for each MeshConfig trustDomainAliases entry.
func expandTrustDomains(ids map[string]bool, aliases []string) []string {
	out := map[string]bool{}
	for id := range ids {
		out[id] = true
		if len(aliases) == 0 || !strings.HasPrefix(id, "spiffe://") {
			continue
		}
		rest := strings.TrimPrefix(id, "spiffe://")
		_, path, ok := strings.Cut(rest, "/")
		if !ok {
			continue
		}
		for _, td := range aliases {
			out["spiffe://"+td+"/"+path] = true
		}
	}
	if len(out) == 0 {
		return nil
	}
	return sortedKeys(out)
}

// convertKubeService is kube.ConvertService plus the endpoints the EndpointSlice controller
// would publish for the Service's selector.
func (ix *Index) convertKubeService(s *corev1.Service) *regService {
	td := ix.TrustDomain()
	svc := &Service{
		Hostname:     s.Name + "." + s.Namespace + ".svc." + DomainSuffix,
		Namespace:    s.Namespace,
		Name:         s.Name,
		Ref:          provenance.Ref{Kind: "Service", Namespace: s.Namespace, Name: s.Name},
		Kubernetes:   true,
		Resolution:   ClientSideLB,
		Labels:       s.Labels,
		Annotations:  s.Annotations,
		CreationTime: s.CreationTimestamp.Time,
		Selector:     s.Spec.Selector,
	}
	if s.Spec.Type == corev1.ServiceTypeExternalName && s.Spec.ExternalName != "" {
		svc.Resolution = Alias
		svc.ExternalName = s.Spec.ExternalName
		svc.MeshExternal = true
	}
	if s.Spec.ClusterIP == corev1.ClusterIPNone {
		svc.Resolution = Passthrough
	}
	for _, p := range s.Spec.Ports {
		port := Port{
			Name:     p.Name,
			Number:   uint32(p.Port),
			Protocol: ConvertProtocol(p.Port, p.Name, p.Protocol, p.AppProtocol),
		}
		switch {
		case p.TargetPort.Type == intstr.String && p.TargetPort.StrVal != "":
			port.TargetPortName = p.TargetPort.StrVal
		case p.TargetPort.IntVal != 0:
			port.TargetPort = uint32(p.TargetPort.IntVal)
		default:
			port.TargetPort = uint32(p.Port)
		}
		svc.Ports = append(svc.Ports, port)
	}
	svc.TrafficDistribution = ix.trafficDistribution(s.Spec.TrafficDistribution, s.Annotations, s.Namespace)
	rs := &regService{svc: svc, sortName: s.Name}
	if v := s.Annotations[annotationCanonSAs]; v != "" {
		rs.ownAccounts = append(rs.ownAccounts, strings.Split(v, ",")...)
	}
	if v := s.Annotations[annotationKubeSAs]; v != "" {
		for _, sa := range strings.Split(v, ",") {
			rs.ownAccounts = append(rs.ownAccounts, spiffeID(td, s.Namespace, sa))
		}
	}
	if v := s.Annotations[annotationExportTo]; v != "" {
		for _, e := range strings.Split(v, ",") {
			svc.ExportTo = append(svc.ExportTo, strings.TrimSpace(e))
		}
	}

	rs.endpoints = map[uint32][]Endpoint{}
	if svc.Resolution == Alias {
		return rs
	}
	if len(s.Spec.Selector) == 0 {
		svc.EndpointsUnknown = true
		return rs
	}
	selected := ix.selectWorkloads(s.Namespace, s.Spec.Selector)
	for i, p := range s.Spec.Ports {
		port := svc.Ports[i]
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		for _, w := range selected {
			if w.kind == workloadKindPod {
				// EndpointSlice controller (FindPort): a named targetPort must name a container
				// port of the same protocol, or the pod is left out for this port.
				target := port.TargetPort
				if port.TargetPortName != "" {
					target = 0
					for _, cp := range w.containerPorts {
						cpProto := cp.Protocol
						if cpProto == "" {
							cpProto = corev1.ProtocolTCP
						}
						if cp.Name == port.TargetPortName && cpProto == proto {
							target = uint32(cp.ContainerPort)
							break
						}
					}
					if target == 0 {
						continue
					}
				}
				rs.endpoints[port.Number] = append(rs.endpoints[port.Number], w.endpoint(target))
				continue
			}
			// WorkloadEntries join Kubernetes Services with a selector and ClientSideLB
			// resolution (controller.serviceInstanceFromWorkloadInstance).
			if svc.Resolution != ClientSideLB || w.dnsOnly {
				continue
			}
			target := port.TargetPort
			if port.TargetPortName != "" {
				target = w.portMap[port.TargetPortName]
				if target == 0 {
					continue
				}
			}
			rs.endpoints[port.Number] = append(rs.endpoints[port.Number], w.endpoint(target))
		}
	}
	return rs
}

// convertServiceEntry is serviceentry.convertServices (one service per host) with the
// instances of convertServiceEntryToInstances or the workloadSelector.
func (ix *Index) convertServiceEntry(se *networkingv1.ServiceEntry) []*regService {
	spec := &se.Spec
	ref := provenance.Ref{Kind: "ServiceEntry", Namespace: se.Namespace, Name: se.Name}
	var res Resolution
	switch spec.GetResolution() {
	case networking.ServiceEntry_NONE:
		res = Passthrough
	case networking.ServiceEntry_DNS:
		res = DNSLB
	case networking.ServiceEntry_DNS_ROUND_ROBIN:
		res = DNSRoundRobinLB
	case networking.ServiceEntry_STATIC:
		res = ClientSideLB
	case networking.ServiceEntry_DYNAMIC_DNS:
		res = DynamicDNS
	}
	var ports []Port
	for _, p := range spec.GetPorts() {
		ports = append(ports, Port{Name: p.GetName(), Number: p.GetNumber(), Protocol: ParseProtocol(p.GetProtocol()), TargetPort: p.GetTargetPort()})
	}
	var selector map[string]string
	if spec.GetWorkloadSelector() != nil {
		selector = spec.GetWorkloadSelector().GetLabels()
		if selector == nil {
			selector = map[string]string{}
		}
	}
	vis := ix.serviceEntryVisibility(se.Namespace)
	dns := res == DNSLB || res == DNSRoundRobinLB

	var selected []*workload
	if spec.GetWorkloadSelector() != nil {
		for _, w := range ix.selectWorkloads(se.Namespace, selector) {
			if w.dnsOnly && !dns {
				continue
			}
			selected = append(selected, w)
		}
		slices.SortStableFunc(selected, func(a, b *workload) int {
			return cmp.Or(cmp.Compare(a.kind, b.kind), strings.Compare(a.namespace, b.namespace), strings.Compare(a.name, b.name))
		})
	} else {
		for i, ep := range spec.GetEndpoints() {
			selected = append(selected, ix.workloadFromEntry(ep, nil, se.Namespace, se.Name+"-"+itoa(i), ref))
		}
	}

	var out []*regService
	for _, h := range spec.GetHosts() {
		svc := &Service{
			Hostname:        h,
			Namespace:       se.Namespace,
			Name:            se.Name,
			Ref:             ref,
			Ports:           ports,
			Resolution:      res,
			MeshExternal:    spec.GetLocation() == networking.ServiceEntry_MESH_EXTERNAL,
			Labels:          se.Labels,
			Annotations:     se.Annotations,
			SubjectAltNames: spec.GetSubjectAltNames(),
			ExportTo:        spec.GetExportTo(),
			CreationTime:    se.CreationTimestamp.Time,
			Selector:        selector,
		}
		svc.TrafficDistribution = ix.trafficDistribution(nil, se.Annotations, se.Namespace)
		rs := &regService{svc: svc, sortName: h, ownAccounts: spec.GetSubjectAltNames(), visibility: vis, endpoints: map[uint32][]Endpoint{}}
		if len(spec.GetEndpoints()) == 0 && spec.GetWorkloadSelector() == nil && dns {
			// A DNS ServiceEntry without endpoints resolves its own host: one endpoint per
			// port, no labels, tlsMode disabled.
			for _, p := range spec.GetPorts() {
				port := p.GetNumber()
				if p.GetTargetPort() > 0 {
					port = p.GetTargetPort()
				}
				rs.endpoints[p.GetNumber()] = append(rs.endpoints[p.GetNumber()], Endpoint{
					Address: h, Port: port, TLSMode: tlsModeDisabled, Ref: ref,
				})
			}
		} else {
			for _, w := range selected {
				for _, p := range spec.GetPorts() {
					// convertWorkloadInstanceToServiceInstance: unix address > the workload's
					// named port > targetPort > port number.
					var target uint32
					switch {
					case strings.HasPrefix(w.address, "unix://"):
						target = 0
					case w.portMap[p.GetName()] > 0:
						target = w.portMap[p.GetName()]
					case p.GetTargetPort() > 0:
						target = p.GetTargetPort()
					default:
						target = p.GetNumber()
					}
					ep := w.endpoint(target)
					ep.Address = strings.TrimPrefix(ep.Address, "unix://")
					rs.endpoints[p.GetNumber()] = append(rs.endpoints[p.GetNumber()], ep)
				}
			}
		}
		out = append(out, rs)
	}
	return out
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for i > 0 {
		b = append([]byte{byte('0' + i%10)}, b...)
		i /= 10
	}
	return string(b)
}

// appendSidecarService is SidecarScope.appendSidecarServices: one service per hostname; a
// Kubernetes Service replaces a ServiceEntry with the same hostname and is never merged with
// one; services that can be merged (same namespace, resolution, registry, labels, selector and
// exportTo) contribute the ports the first one lacks. added maps hostname to index in list.
func appendSidecarService(list []*Service, added map[string]int, s *Service) []*Service {
	if s == nil {
		return list
	}
	i, found := added[s.Hostname]
	if !found {
		added[s.Hostname] = len(list)
		return append(list, s)
	}
	existing := list[i]
	if existing == s {
		return list
	}
	if existing.Kubernetes && !s.Kubernetes {
		return list
	}
	if !existing.Kubernetes && s.Kubernetes {
		list[i] = s
		return list
	}
	if portsEqual(existing.Ports, s.Ports) || !canMergeServices(existing, s) {
		return list
	}
	if !slices.ContainsFunc(s.Ports, func(p Port) bool { return !hasPortNumber(existing.Ports, p.Number) }) {
		// s adds no port (a VirtualService destination naming some of the ports): the merge
		// would be a copy of existing; keeping existing lets every scope share one service.
		return list
	}
	merged := *existing
	merged.Ports = slices.Clone(existing.Ports)
	for _, p := range s.Ports {
		dup := false
		for _, q := range merged.Ports {
			if p.Number == q.Number {
				dup = true
				break
			}
		}
		if !dup {
			merged.Ports = append(merged.Ports, p)
		}
	}
	list[i] = &merged
	return list
}

// hasPortNumber reports whether ports has one numbered n.
func hasPortNumber(ports []Port, n uint32) bool {
	return slices.ContainsFunc(ports, func(p Port) bool { return p.Number == n })
}

// portsEqual is PortList.Equals (name, number, protocol).
func portsEqual(a, b []Port) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Number != b[i].Number || a[i].Protocol != b[i].Protocol {
			return false
		}
	}
	return true
}

// canMergeServices is sidecar.go canMergeServices.
func canMergeServices(a, b *Service) bool {
	return a.Namespace == b.Namespace && a.Resolution == b.Resolution && a.Kubernetes == b.Kubernetes &&
		mapsEqual(a.Labels, b.Labels) && mapsEqual(a.Selector, b.Selector) && stringSetEqual(a.ExportTo, b.ExportTo)
}

func stringSetEqual(a, b []string) bool {
	as, bs := map[string]bool{}, map[string]bool{}
	for _, x := range a {
		as[x] = true
	}
	for _, x := range b {
		bs[x] = true
	}
	if len(as) != len(bs) {
		return false
	}
	for k := range as {
		if !bs[k] {
			return false
		}
	}
	return true
}

// Services returns every registry service as a proxy that sees all of them would: one per
// hostname and namespace, sorted by hostname, then namespace.
func (ix *Index) Services() []*Service {
	var out []*Service
	for _, h := range sortedKeys(ix.groups) {
		for _, ns := range sortedKeys(ix.groups[h]) {
			out = append(out, ix.groups[h][ns].merged)
		}
	}
	return out
}

// Workload returns the labels of the pod or WorkloadEntry behind an endpoint (its own labels,
// without the topology labels istiod adds), and whether it is known.
func (ix *Index) Workload(ref provenance.Ref) (map[string]string, bool) {
	w, ok := ix.workloadByRef[ref]
	if !ok {
		return nil, false
	}
	return w.labels, true
}

// trafficDistribution is model.GetTrafficDistribution: spec.trafficDistribution, then the
// networking.istio.io/traffic-distribution annotation of the service, then of its namespace.
// PreferClose counts as PreferSameZone; an unknown annotation value means any.
func (ix *Index) trafficDistribution(spec *string, annotations map[string]string, namespace string) string {
	if spec != nil {
		switch *spec {
		case "PreferSameZone", "PreferClose":
			return "PreferSameZone"
		case "PreferSameNode":
			return "PreferSameNode"
		}
	}
	parse := func(v string) string {
		switch strings.ToLower(v) {
		case "preferclose", "prefersamezone":
			return "PreferSameZone"
		case "prefersamenode":
			return "PreferSameNode"
		}
		return ""
	}
	if v := annotations[annotationTrafficDistribution]; v != "" {
		return parse(v)
	}
	if ns := ix.snap.Namespace(namespace); ns != nil {
		if v := ns.Annotations[annotationTrafficDistribution]; v != "" {
			return parse(v)
		}
	}
	return ""
}
