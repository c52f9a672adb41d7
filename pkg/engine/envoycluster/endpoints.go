package envoycluster

import (
	"regexp"
	"sort"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/structpb"
	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/meshhost"
)

// endpointsMatching keeps the endpoints whose labels contain the subset labels
// (labels.Instance.SubsetOf, as in PushContext.ServiceEndpointsByPort).
func endpointsMatching(eps []index.Endpoint, subsetLabels map[string]string) []index.Endpoint {
	if len(subsetLabels) == 0 {
		return eps
	}
	var out []index.Endpoint
	for _, ep := range eps {
		if meshhost.LabelsSubsetOf(subsetLabels, ep.Labels) {
			out = append(out, ep)
		}
	}
	return out
}

// localityLbEndpoints mirrors the CDS side of endpoints.EndpointBuilder (FromServiceEndpoints →
// generate → buildEnvoyLbEndpoint) for the inline load assignment of a DNS cluster: endpoints
// grouped by locality (sorted), each with its weight, health and the istio telemetry and
// transport-socket-match metadata.
func (b *builder) localityLbEndpoints(eps []index.Endpoint, subset string) []*endpointv3.LocalityLbEndpoints {
	groups := map[string]*endpointv3.LocalityLbEndpoints{}
	var order []string
	for _, ep := range eps {
		g, ok := groups[ep.Locality]
		if !ok {
			g = &endpointv3.LocalityLbEndpoints{Locality: convertLocality(ep.Locality)}
			groups[ep.Locality] = g
			order = append(order, ep.Locality)
		}
		g.LbEndpoints = append(g.LbEndpoints, b.lbEndpoint(ep, subset))
	}
	if len(order) >= 2 {
		sort.Strings(order)
	}
	out := make([]*endpointv3.LocalityLbEndpoints, 0, len(order))
	for _, l := range order {
		g := groups[l]
		var w uint32
		for _, e := range g.LbEndpoints {
			w += e.GetLoadBalancingWeight().GetValue()
		}
		g.LoadBalancingWeight = u32(w)
		out = append(out, g)
	}
	return out
}

// lbEndpoint mirrors endpoint_builder.go buildEnvoyLbEndpoint (without HBONE tunnelling).
func (b *builder) lbEndpoint(ep index.Endpoint, subset string) *endpointv3.LbEndpoint {
	weight := ep.Weight
	if weight == 0 {
		weight = 1
	}
	out := &endpointv3.LbEndpoint{
		LoadBalancingWeight: u32(weight),
		Metadata:            &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{}},
	}
	// Pod endpoints come from EndpointSlices and are ready; ServiceEntry and WorkloadEntry
	// endpoints carry no health status.
	if ep.Ref.Kind == "Pod" {
		out.HealthStatus = corev3.HealthStatus_HEALTHY
	}
	// The endpoint's tlsMode is kept only when mTLS is enabled for it, and written unless disabled
	// or empty.
	if mode := epTLSMode(&ep); mode != "disabled" && mode != "" && b.endpointMTLS(ep, subset) {
		out.Metadata.FilterMetadata["envoy.transport_socket_match"] = &structpb.Struct{Fields: map[string]*structpb.Value{
			"tlsMode": structpb.NewStringValue(mode)}}
	}
	if b.flags.TelemetryLabel && b.flags.EndpointTelemetryLabel {
		out.Metadata.FilterMetadata["istio"] = &structpb.Struct{Fields: map[string]*structpb.Value{
			"workload": structpb.NewStringValue(b.workloadLabel(ep))}}
	}
	addr := &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address: ep.Address, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: ep.Port}}}}
	if ep.Port == 0 {
		addr = &corev3.Address{Address: &corev3.Address_Pipe{Pipe: &corev3.Pipe{Path: strings.TrimPrefix(ep.Address, "unix://")}}}
	}
	out.HostIdentifier = &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: addr}}
	return out
}

// endpointMTLS mirrors mtls_checker.go checkMtlsEnabled: a DestinationRule TLS mode for the
// cluster decides (ISTIO_MUTUAL or not); otherwise the endpoint must run a sidecar and the
// server-side mode for its port (workload PeerAuthentication, else namespace) must not be DISABLE.
func (b *builder) endpointMTLS(ep index.Endpoint, subset string) bool {
	if mode := b.ruleTLSMode(subset); mode != nil {
		return *mode == networking.ClientTLSSettings_ISTIO_MUTUAL
	}
	if epTLSMode(&ep) != "istio" {
		return false
	}
	for _, w := range b.workloadMTLS() {
		for _, we := range w.Endpoints {
			if we.SameWorkload(ep) {
				return w.ModeForPort(ep.Port) != index.MTLSDisable
			}
		}
	}
	return b.in.MTLS.Mode != index.MTLSDisable
}

// ruleTLSMode mirrors mtls_checker.go tlsModeForDestinationRule: subset (port entry, then top
// level), else the rule's (port entry, then top level). Port entries count only if they set tls.
func (b *builder) ruleTLSMode(subset string) *networking.ClientTLSSettings_TLSmode {
	r := b.in.Rule
	if r == nil || r.Spec == nil {
		return nil
	}
	port := b.in.Port.Number
	if subset == "" {
		return tlsModeForPort(r.Spec.GetTrafficPolicy(), port)
	}
	for _, ss := range r.Spec.GetSubsets() {
		if ss.GetName() != subset {
			continue
		}
		if m := tlsModeForPort(ss.GetTrafficPolicy(), port); m != nil {
			return m
		}
		return tlsModeForPort(r.Spec.GetTrafficPolicy(), port)
	}
	return nil
}

func tlsModeForPort(tp *networking.TrafficPolicy, port uint32) *networking.ClientTLSSettings_TLSmode {
	if tp == nil {
		return nil
	}
	var mode *networking.ClientTLSSettings_TLSmode
	if tp.Tls != nil {
		m := tp.Tls.Mode
		mode = &m
	}
	for _, ps := range tp.GetPortLevelSettings() {
		if ps.GetPort().GetNumber() == port && ps.Tls != nil {
			m := ps.Tls.Mode
			mode = &m
			break
		}
	}
	return mode
}

// workloadLabel mirrors util.go AppendLbEndpointMetadata's compressed telemetry label:
// `workload;namespace;canonical-name;canonical-revision;cluster`.
func (b *builder) workloadLabel(ep index.Endpoint) string {
	name := b.workloadName(ep)
	ns := ep.Ref.Namespace
	if ns == "" {
		ns = b.in.Service.Namespace
	}
	cname := firstLabel(ep.Labels, "service.istio.io/canonical-name", "app.kubernetes.io/name", "app")
	if cname == "" {
		cname = name
	}
	crev := firstLabel(ep.Labels, "service.istio.io/canonical-revision", "app.kubernetes.io/version", "version")
	if crev == "latest" {
		crev = ""
	}
	return strings.Join([]string{name, ns, cname, crev, b.flags.ClusterID}, ";")
}

// workloadName is the IstioEndpoint WorkloadName istiod records: for a ServiceEntry's own
// endpoints `<name>-<index>` (the synthetic endpoint of a DNS ServiceEntry without endpoints is
// just `<name>`), for a WorkloadEntry its auto-registration group, the workload-name label of
// its metadata or its name, for a pod its workload-name label or its controller
// (kube.GetWorkloadMetaFromPod).
func (b *builder) workloadName(ep index.Endpoint) string {
	snap := b.in.Snapshot
	switch ep.Ref.Kind {
	case "ServiceEntry":
		// An entry of spec.endpoints is named by its index, whatever its address (it may be
		// the host itself, or the address of another entry).
		if name, ok := ep.EntryName(); ok {
			return name
		}
		return ep.Ref.Name
	case "WorkloadEntry":
		if snap != nil {
			for _, we := range snap.WorkloadEntries {
				if we.Namespace == ep.Ref.Namespace && we.Name == ep.Ref.Name {
					if g, ok := we.Annotations["istio.io/autoRegistrationGroup"]; ok {
						return g
					}
					// The metadata's label, not spec.labels (WorkloadNameFromWorkloadEntry reads
					// the config's own metadata).
					if wn, ok := we.Labels["service.istio.io/workload-name"]; ok {
						return wn
					}
					return we.Name
				}
			}
		}
	case "Pod":
		if wn, ok := ep.Labels["service.istio.io/workload-name"]; ok {
			return wn
		}
		if snap != nil {
			for _, pod := range snap.Pods {
				if pod.Namespace == ep.Ref.Namespace && pod.Name == ep.Ref.Name {
					return podWorkloadName(pod)
				}
			}
		}
	}
	if wn, ok := ep.Labels["service.istio.io/workload-name"]; ok {
		return wn
	}
	return ep.Ref.Name
}

var cronJobName = regexp.MustCompile(`(.+)-\d{8,10}$`)

// podWorkloadName mirrors kube.GetDeployMetaFromPod: the controller of a generated pod, with the
// ReplicaSet hash, Rollout hash or CronJob timestamp trimmed.
func podWorkloadName(pod *corev1.Pod) string {
	name := pod.Name
	if pod.GenerateName == "" {
		return name
	}
	for _, ref := range pod.OwnerReferences {
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		name = ref.Name
		switch {
		case ref.Kind == "ReplicaSet" && pod.Labels["pod-template-hash"] != "" && strings.HasSuffix(ref.Name, pod.Labels["pod-template-hash"]):
			name = strings.TrimSuffix(ref.Name, "-"+pod.Labels["pod-template-hash"])
		case ref.Kind == "ReplicaSet" && pod.Labels["rollouts-pod-template-hash"] != "" && strings.HasSuffix(ref.Name, pod.Labels["rollouts-pod-template-hash"]):
			name = strings.TrimSuffix(ref.Name, "-"+pod.Labels["rollouts-pod-template-hash"])
		case ref.Kind == "ReplicationController" && pod.Labels["deploymentconfig"] != "":
			name = pod.Labels["deploymentconfig"]
		case ref.Kind == "Job":
			if m := cronJobName.FindStringSubmatch(ref.Name); len(m) == 2 {
				name = m[1]
			}
		}
		break
	}
	if name == "" {
		return pod.Name
	}
	return name
}

func firstLabel(l map[string]string, keys ...string) string {
	for _, k := range keys {
		if v, ok := l[k]; ok {
			return v
		}
	}
	return ""
}
