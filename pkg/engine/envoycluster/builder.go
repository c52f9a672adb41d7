package envoycluster

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	caresv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/network/dns_resolver/cares/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// builder builds the clusters of one service port for one client proxy.
type builder struct {
	in    Input
	mesh  *meshv1alpha1.MeshConfig
	flags Flags
	// cares is the typed config of the c-ares DNS resolver, made on first use.
	cares *anypb.Any
	// serviceRef is the Resource of registry origins, nil when the service has no Ref.
	serviceRef *provenance.Ref
	// portPath is portField, made on first use.
	portPath string
	// def is the default cluster's effective policy and defDiags the diagnostics resolving it
	// wrote, made on first use: every cluster of the port starts from them.
	def      *effective
	defDiags []explain.Diagnostic
	// meshLocality is the lbSetting of MeshConfig localityLbSetting, made on first use.
	meshLocality *lbSetting
}

// defaultPolicy returns resolveDefault's policy, resolved once per port, and adds the
// diagnostics resolving it wrote to d.
func (b *builder) defaultPolicy(d *diagnostics) *effective {
	if b.def == nil {
		var dd diagnostics
		b.def = b.resolveDefault(&dd)
		b.defDiags = dd.list
	}
	if len(b.defDiags) > 0 {
		d.list = append(d.list, b.defDiags...)
	}
	return b.def
}

func (b *builder) caresConfig() *anypb.Any {
	if b.cares == nil {
		b.cares = mustAny(&caresv3.CaresDnsResolverConfig{UdpMaxQueries: u32(b.flags.DNSCaresUDPMaxQueries)})
	}
	return b.cares
}

// clusterState is one cluster under construction: the Cluster, the HttpProtocolOptions that
// istiod keeps aside until clusterWrapper.build, and the traces written so far.
type clusterState struct {
	b      *builder
	c      *clusterv3.Cluster
	hpo    *httpv3.HttpProtocolOptions
	rec    *provenance.Recorder
	d      *diagnostics
	eff    *effective
	subset string
	// subsetIndex is the index of the subset in the rule, -1 for the default cluster.
	subsetIndex int
	// defaultSNI is istiod's ISTIO_MUTUAL SNI for this cluster (outbound_.<port>_.<subset>_.<host>).
	defaultSNI string
	// dnsEndpoints are the endpoints behind a DNS default cluster's first locality, for
	// failoverPriority (clusterWrapper.dnsWrappedLocalityLbEndpoints).
	dnsWrapped *wrappedLocality
	// commonHTTPFrom is the origin of whatever created HPO commonHttpProtocolOptions.
	commonHTTPFrom provenance.Origin
	// scratch marks a state used only to compute what a dropped block would have written.
	scratch bool
	// meta is what the cluster's `istio` filter metadata holds; build turns it into the
	// cluster's Metadata (hostShared.metadata) once the metadata is written.
	meta clusterMeta
}

// clusterMeta is the content of a cluster's `istio` filter metadata (util.go
// AddConfigInfoMetadata, AddSubsetToMetadata, AddALPNOverrideToMetadata, telemetry services).
type clusterMeta struct {
	services, config *structpb.Value
	// subset is set when inSubset (the cluster of a subset).
	subset                           string
	inSubset, external, alpnOverride bool
}

func newBuilder(in Input) (*builder, error) {
	if in.Service == nil {
		return nil, fmt.Errorf("no service to build clusters for")
	}
	if in.Proxy == nil {
		in.Proxy = &index.Proxy{}
	}
	found := false
	for _, p := range in.Service.Ports {
		if p.Number == in.Port.Number {
			found = true
			if in.Port.Protocol == "" {
				in.Port = p
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("service %s has no port %d", in.Service.Hostname, in.Port.Number)
	}
	if in.Flags == (Flags{}) {
		in.Flags = DefaultFlags()
	}
	mesh := in.Mesh
	if mesh == nil {
		mesh = DefaultMeshConfig()
	}
	if in.positions == nil {
		in.positions = &positionCache{}
	}
	if in.shared == nil {
		in.shared = &hostShared{}
	}
	b := &builder{in: in, mesh: mesh, flags: in.Flags}
	if ref := in.Service.Ref; !ref.IsZero() {
		b.serviceRef = &ref
	}
	return b, nil
}

// DefaultMeshConfig returns the MeshConfig fields of istiod's defaults that change clusters
// (pkg/config/mesh DefaultMeshConfig).
func DefaultMeshConfig() *meshv1alpha1.MeshConfig {
	return &meshv1alpha1.MeshConfig{
		ConnectTimeout:    durationpb.New(10e9),
		DnsRefreshRate:    durationpb.New(60e9),
		EnableAutoMtls:    wrapperspb.Bool(true),
		LocalityLbSetting: &networking.LocalityLoadBalancerSetting{Enabled: wrapperspb.Bool(true)},
		TrustDomain:       "cluster.local",
		RootNamespace:     "istio-system",
	}
}

// BuildClusters returns the outbound clusters istiod generates for in.Service's port in.Port:
// the default cluster, then one per subset of in.Rule in rule order (cluster.go
// buildOutboundClusters, cluster_builder.go applyDestinationRule). A DNS cluster without
// endpoints is returned with a nil Cluster and a diagnostic.
func BuildClusters(in Input) ([]Built, error) {
	return appendClusters(nil, in)
}

// appendClusters is BuildClusters appending to dst, which it grows once for the port's
// clusters; on an error it returns nil.
func appendClusters(dst []Built, in Input) ([]Built, error) {
	b, err := newBuilder(in)
	if err != nil {
		return nil, err
	}
	if err := b.supported(); err != nil {
		return nil, err
	}
	var subsets int
	if b.in.Rule != nil && b.in.Rule.Spec != nil {
		subsets = len(b.in.Rule.Spec.Subsets)
	}
	dst = slices.Grow(dst, 1+subsets)
	dst = append(dst, b.build(-1))
	for i := range subsets {
		dst = append(dst, b.build(i))
	}
	return dst, nil
}

// BuildCluster returns one cluster of in.Service's port in.Port: the default cluster when subset
// is empty, else the subset's.
func BuildCluster(in Input, subset string) (Built, error) {
	b, err := newBuilder(in)
	if err != nil {
		return Built{}, err
	}
	if err := b.supported(); err != nil {
		return Built{}, err
	}
	if subset == "" {
		return b.build(-1), nil
	}
	if b.in.Rule != nil && b.in.Rule.Spec != nil {
		for i, s := range b.in.Rule.Spec.Subsets {
			if s.GetName() == subset {
				return b.build(i), nil
			}
		}
	}
	return Built{}, fmt.Errorf("no subset %q in the DestinationRule for %s", subset, b.in.Service.Hostname)
}

// supported rejects the services istiod builds no ordinary cluster for.
func (b *builder) supported() error {
	svc := b.in.Service
	switch {
	case svc.Resolution == index.Alias:
		return fmt.Errorf("%s is an ExternalName alias: istiod builds no cluster for it (routes use the target host's cluster)", svc.Hostname)
	case svc.Resolution == index.DynamicDNS && strings.HasPrefix(svc.Hostname, "*"):
		return fmt.Errorf("%s is a DYNAMIC_DNS wildcard ServiceEntry: its dynamic forward proxy cluster is not reconstructed", svc.Hostname)
	case b.in.Port.Protocol == "UDP":
		return fmt.Errorf("port %d of %s is UDP: istiod builds no cluster for it", b.in.Port.Number, svc.Hostname)
	}
	return nil
}

// clusterName mirrors model.BuildSubsetKey.
func clusterName(subset, host string, port uint32) string {
	return "outbound|" + fmtU32(port) + "|" + subset + "|" + host
}

// sniName mirrors model.BuildDNSSrvSubsetKey: the default ISTIO_MUTUAL SNI.
func sniName(subset, host string, port uint32) string {
	return "outbound_." + fmtU32(port) + "_." + subset + "_." + host
}

// build builds the default cluster (i < 0) or subset cluster i.
func (b *builder) build(i int) Built {
	d := &diagnostics{}
	def := b.defaultPolicy(d)
	eff := def
	subset := ""
	if i >= 0 {
		eff = b.resolveSubset(def, i, d)
		subset = b.in.Rule.Spec.Subsets[i].GetName()
	}
	host := b.in.Service.Hostname
	port := b.in.Port.Number
	rec := getRecorder()
	defer putRecorder(rec)
	st := &clusterState{b: b, rec: rec, d: d, eff: eff, subset: subset, subsetIndex: i,
		defaultSNI: sniName(subset, host, port)}
	name := clusterName(subset, host, port)
	out := Built{Name: name, Subset: subset}
	if !st.buildCluster(name, def) {
		out.Diagnostics = diag.Sort(d.list, diag.SameMessage)
		return out
	}
	st.applyTrafficPolicy()
	st.applyEdsConfig()
	st.applyMetadataExchange()
	st.applyRuleMetadata()
	st.c.Metadata = b.in.shared.metadata(st.meta)
	st.finish()
	st.addShadows()
	out.Cluster = st.c
	if b.in.templates != nil {
		out.traces = st.rec.TakeShared(b.in.templates)
	} else {
		out.Origins = st.rec.TakeTraces()
	}
	out.Diagnostics = diag.Sort(d.list, diag.SameMessage)
	return out
}

// recorders holds the Recorders of finished builds: their buffers, grown to the size of a
// cluster, are reused by the next build.
var recorders = sync.Pool{New: func() any { return provenance.NewRecorderSize(64) }}

func getRecorder() *provenance.Recorder { return recorders.Get().(*provenance.Recorder) }

// putRecorder empties rec and returns it to recorders.
func putRecorder(rec *provenance.Recorder) {
	rec.Reset()
	recorders.Put(rec)
}

// set records a trace (scratch states record too: their traces become shadows).
func (st *clusterState) set(path, value string, o provenance.Origin) { st.rec.Set(path, value, o) }

func (st *clusterState) notSent(path, value string, o provenance.Origin) {
	st.rec.SetNotSent(path, value, o)
}

// discoveryType mirrors cluster.go convertResolution.
func (b *builder) discoveryType() (clusterv3.Cluster_DiscoveryType, provenance.Origin) {
	svc := b.in.Service
	if svc.Resolution == index.Passthrough && b.router() {
		return clusterv3.Cluster_EDS, b.proxyOrigin(b.in.Proxy.RouterField, "a gateway cannot use a passthrough cluster: the endpoints come from EDS")
	}
	switch svc.Resolution {
	case index.DNSLB:
		if strings.EqualFold(svc.Annotations["istio.io/connect-strategy"], "RACE_FIRST_TCP_CONNECT") {
			return clusterv3.Cluster_LOGICAL_DNS, b.registryOrigin("metadata.annotations[istio.io/connect-strategy]", "RACE_FIRST_TCP_CONNECT turns a DNS ServiceEntry into LOGICAL_DNS")
		}
		return clusterv3.Cluster_STRICT_DNS, b.registryOrigin("spec.resolution", "resolution DNS")
	case index.DNSRoundRobinLB:
		return clusterv3.Cluster_LOGICAL_DNS, b.registryOrigin("spec.resolution", "resolution DNS_ROUND_ROBIN")
	case index.Passthrough:
		if svc.Kubernetes {
			if b.flags.EDSForHeadless {
				return clusterv3.Cluster_EDS, flagOrigin("PILOT_ENABLE_EDS_FOR_HEADLESS_SERVICES", "headless Services use EDS")
			}
			return clusterv3.Cluster_ORIGINAL_DST, b.registryOrigin("spec.clusterIP", "headless Service (clusterIP: None): sidecars connect to the original destination")
		}
		return clusterv3.Cluster_ORIGINAL_DST, b.registryOrigin("spec.resolution", "resolution NONE: sidecars connect to the original destination")
	default:
		if svc.Kubernetes {
			return clusterv3.Cluster_EDS, b.registryOrigin("spec.clusterIP", "ClusterIP Service: endpoints come from EDS")
		}
		return clusterv3.Cluster_EDS, b.registryOrigin("spec.resolution", "endpoints come from EDS")
	}
}

// passthroughLB reports whether a policy's loadBalancer.simple is PASSTHROUGH.
func passthroughLB(p *networking.TrafficPolicy) bool {
	return p.GetLoadBalancer().GetSimple() == networking.LoadBalancerSettings_PASSTHROUGH
}

// redisMaglev mirrors the PILOT_ENABLE_REDIS_FILTER early return of applyLoadBalancer.
func (b *builder) redisMaglev() bool {
	return b.flags.RedisFilter && b.in.Port.Protocol == "Redis"
}

// finalDefaultType is the discovery type of the default cluster after its traffic policy:
// applyLoadBalancer turns PASSTHROUGH into ORIGINAL_DST. Subset clusters start from it
// (buildSubsetCluster reads opts.mutable.cluster.GetType()).
func (b *builder) finalDefaultType(def *effective) (clusterv3.Cluster_DiscoveryType, provenance.Origin, bool) {
	t, o := b.discoveryType()
	if t != clusterv3.Cluster_ORIGINAL_DST && !b.redisMaglev() && passthroughLB(def.policy) {
		return clusterv3.Cluster_ORIGINAL_DST, b.origin(def.src[bLoadBalancer], "loadBalancer.simple"), true
	}
	return t, o, false
}

// buildCluster mirrors cluster_builder.go buildCluster (and, for subsets, the start of
// buildSubsetCluster). It returns false when istiod generates no cluster: a DNS cluster whose
// (subset-filtered) endpoints are empty.
func (st *clusterState) buildCluster(name string, def *effective) bool {
	b := st.b
	svc := b.in.Service
	port := b.in.Port
	dt, dtOrigin := b.discoveryType()
	var subsetLabels map[string]string
	if st.subsetIndex >= 0 {
		// A DNS service without endpoints loses its default cluster, and buildOutboundClusters
		// then skips applyDestinationRule: no subset cluster either, whatever its policy.
		if (svc.Resolution == index.DNSLB || svc.Resolution == index.DNSRoundRobinLB) && len(svc.Endpoints[port.Number]) == 0 {
			return false
		}
		ss := b.in.Rule.Spec.Subsets[st.subsetIndex]
		subsetLabels = ss.GetLabels()
		ft, fo, _ := b.finalDefaultType(def)
		dt, dtOrigin = ft, fo
		if passthroughLB(ss.GetTrafficPolicy()) {
			dt = clusterv3.Cluster_ORIGINAL_DST
			dtOrigin = b.origin(source{layer: provenance.LayerSubset, ref: b.subsetRef(st.subsetIndex),
				prefix: fmt.Sprintf("spec.subsets[name=%s].trafficPolicy", ss.GetName())}, "loadBalancer.simple")
		}
	}
	// The cluster and the two messages every cluster has are allocated together.
	parts := &struct {
		c   clusterv3.Cluster
		typ clusterv3.Cluster_Type
		lb  clusterv3.Cluster_CommonLbConfig
	}{}
	c := &parts.c
	parts.typ.Type = dt
	c.Name, c.ClusterDiscoveryType, c.CommonLbConfig = name, &parts.typ, &parts.lb
	st.c = c
	nameOrigin := b.registryOrigin(b.portField(), "outbound|<port>|<subset>|<host> (model.BuildSubsetKey)")
	if st.subset != "" {
		nameOrigin = b.origin(b.subsetSource(st.subsetIndex), "name")
		nameOrigin.Field = "spec.subsets[name=" + st.subset + "].name"
		nameOrigin.Position = b.position(nameOrigin.Resource, nameOrigin.Field)
		nameOrigin.Note = "outbound|<port>|<subset>|<host> (model.BuildSubsetKey)"
	}
	st.set("name", name, nameOrigin)
	st.set("type", dt.String(), dtOrigin)
	c.AltStatName = name + ";"
	st.set("altStatName", c.AltStatName, istioDefault("cluster name plus ';' (util.DelimitedStatsPrefix)"))

	switch dt {
	case clusterv3.Cluster_STRICT_DNS, clusterv3.Cluster_LOGICAL_DNS:
		fam, famOrigin := b.dnsLookupFamily()
		c.DnsLookupFamily = fam
		c.TypedDnsResolverConfig = &corev3.TypedExtensionConfig{Name: "envoy.network.dns_resolver.cares",
			TypedConfig: copyAny(b.caresConfig())}
		st.set("typedDnsResolverConfig", fmt.Sprintf("c-ares, udpMaxQueries %d", b.flags.DNSCaresUDPMaxQueries),
			flagOrigin("PILOT_DNS_CARES_UDP_MAX_QUERIES", "DNS clusters resolve with c-ares"))
		c.DnsJitter = durationpb.New(b.flags.DNSJitter) //nolint:staticcheck // istiod still sets it
		st.set("dnsJitter", b.flags.DNSJitter.String(), flagOrigin("PILOT_DNS_JITTER_DURATION", ""))
		c.DnsRefreshRate = b.mesh.GetDnsRefreshRate()                                           //nolint:staticcheck // istiod still sets it
		st.set("dnsRefreshRate", fmtDuration(c.DnsRefreshRate), b.meshOrigin("dnsRefreshRate")) //nolint:staticcheck
		c.RespectDnsTtl = true                                                                  //nolint:staticcheck // istiod still sets it
		st.set("respectDnsTtl", "true", istioDefault("DNS clusters honour the record TTL"))
		if strings.EqualFold(svc.Annotations["istio.io/connect-strategy"], "RACE_FIRST_TCP_CONNECT") {
			c.DnsLookupFamily = clusterv3.Cluster_ALL
			famOrigin = b.registryOrigin("metadata.annotations[istio.io/connect-strategy]", "RACE_FIRST_TCP_CONNECT resolves both families")
		}
		st.set("dnsLookupFamily", c.DnsLookupFamily.String(), famOrigin)
		eps := endpointsMatching(svc.Endpoints[port.Number], subsetLabels)
		if len(eps) == 0 {
			// No endpoints: istiod generates no cluster (index.HostDiagnostics reports D17/D18).
			return false
		}
		lle := b.localityLbEndpoints(eps, st.subset)
		c.LoadAssignment = &endpointv3.ClusterLoadAssignment{ClusterName: name, Endpoints: lle}
		st.set("loadAssignment", fmt.Sprintf("%d endpoints", len(eps)), b.registryOrigin("", "endpoints of the ServiceEntry, or of the workloads it selects, on this port"))
		if st.subsetIndex < 0 {
			// cluster.go buildOutboundClusters wraps only the first locality group for failover
			// priorities of DNS clusters; subset clusters get none.
			st.dnsWrapped = &wrappedLocality{endpoints: svc.Endpoints[port.Number], lle: lle[0]}
		}
	case clusterv3.Cluster_ORIGINAL_DST:
		if svc.Resolution == index.Passthrough && !svc.Kubernetes && port.TargetPort != 0 {
			c.LbConfig = &clusterv3.Cluster_OriginalDstLbConfig_{OriginalDstLbConfig: &clusterv3.Cluster_OriginalDstLbConfig{
				UpstreamPortOverride: u32(port.TargetPort)}}
			st.set("originalDstLbConfig.upstreamPortOverride", fmtU32(port.TargetPort),
				b.registryOrigin(b.portField()+".targetPort", "resolution NONE with a targetPort rewrites the original destination port"))
		}
	}

	st.setUpstreamProtocol()
	st.addTelemetryMetadata()
	if f := b.mesh.GetOutboundClusterStatName(); f != "" {
		c.AltStatName = b.statPrefix(f, st.subset) + ";"
		st.set("altStatName", c.AltStatName, b.meshOrigin("outboundClusterStatName"))
	}
	if st.subsetIndex < 0 && supportsDrainingEndpoints(svc) {
		c.CommonLbConfig.OverrideHostStatus = &corev3.HealthStatusSet{Statuses: []corev3.HealthStatus{
			corev3.HealthStatus_HEALTHY, corev3.HealthStatus_DRAINING, corev3.HealthStatus_UNKNOWN, corev3.HealthStatus_DEGRADED}}
		st.set("commonLbConfig.overrideHostStatus", "HEALTHY, DRAINING, UNKNOWN, DEGRADED",
			b.registryOrigin("metadata.labels", "persistent-session label: draining endpoints stay selectable by cookie or header"))
	}
	return true
}

func (b *builder) subsetSource(i int) source {
	return source{layer: provenance.LayerSubset, ref: b.subsetRef(i), prefix: "spec.subsets[name=" + b.in.Rule.Spec.Subsets[i].GetName() + "]"}
}

// supportsDrainingEndpoints mirrors model.Service.SupportsDrainingEndpoints with the default
// PILOT_PERSISTENT_SESSION_LABEL and PILOT_PERSISTENT_SESSION_HEADER_LABEL.
func supportsDrainingEndpoints(svc *index.Service) bool {
	return svc.Labels["istio.io/persistent-session"] != "" || svc.Labels["istio.io/persistent-session-header"] != ""
}

// dnsLookupFamily mirrors util.go SelectDNSLookupFamily over the proxy IPs.
func (b *builder) dnsLookupFamily() (clusterv3.Cluster_DnsLookupFamily, provenance.Origin) {
	ips := b.in.Proxy.IPs
	v4, v6 := 0, 0
	for _, ip := range ips {
		if strings.Contains(ip, ":") {
			v6++
		} else {
			v4++
		}
	}
	switch {
	case len(ips) == 0:
		return clusterv3.Cluster_V4_ONLY, b.proxyOrigin("status.podIPs", "no proxy IPs known: V4_ONLY")
	case v6 == 0:
		return clusterv3.Cluster_V4_ONLY, b.proxyOrigin("status.podIPs", "IPv4 proxy")
	case v4 == 0:
		if b.flags.IPv4OutboundForIPv6 {
			return clusterv3.Cluster_ALL, flagOrigin("ISTIO_ENABLE_IPV4_OUTBOUND_LISTENER_FOR_IPV6_CLUSTERS", "IPv6-only proxy resolves both families")
		}
		return clusterv3.Cluster_V6_ONLY, b.proxyOrigin("status.podIPs", "IPv6 proxy")
	default:
		if b.flags.DualStack {
			return clusterv3.Cluster_ALL, flagOrigin("ISTIO_DUAL_STACK", "dual-stack proxy resolves both families")
		}
		return clusterv3.Cluster_V4_ONLY, b.proxyOrigin("status.podIPs", "dual-stack proxy without ISTIO_DUAL_STACK: V4_ONLY")
	}
}

// statPrefix mirrors telemetry.go BuildStatPrefix for an outbound cluster.
func (b *builder) statPrefix(pattern, subset string) string {
	svc := b.in.Service
	short, name := svc.Hostname, svc.Hostname
	if svc.Kubernetes {
		short = svc.Name + "." + svc.Namespace
		name = svc.Name
	}
	// The replacement order is istiod's.
	p := strings.ReplaceAll(pattern, "%SERVICE%", short)
	p = strings.ReplaceAll(p, "%SERVICE_NAME%", name)
	p = strings.ReplaceAll(p, "%SERVICE_FQDN%", svc.Hostname)
	p = strings.ReplaceAll(p, "%SUBSET_NAME%", subset)
	p = strings.ReplaceAll(p, "%TARGET_PORT%", "0")
	p = strings.ReplaceAll(p, "%SERVICE_PORT%", fmtU32(b.in.Port.Number))
	p = strings.ReplaceAll(p, "%SERVICE_PORT_NAME%", b.in.Port.Name)
	return p
}

// isHTTP mirrors protocol.Instance.IsHTTP.
func isHTTP(p index.Protocol) bool {
	switch p {
	case "HTTP", "HTTP2", "HTTP_PROXY", "GRPC", "GRPC-Web":
		return true
	}
	return false
}

// isHTTP2 mirrors protocol.Instance.IsHTTP2.
func isHTTP2(p index.Protocol) bool {
	switch p {
	case "HTTP2", "GRPC", "GRPC-Web":
		return true
	}
	return false
}

func isAuto(p index.Protocol) bool { return p == "UnsupportedProtocol" || p == "" }

// ensureHPO returns the HttpProtocolOptions, creating it.
func (st *clusterState) ensureHPO() *httpv3.HttpProtocolOptions {
	if st.hpo == nil {
		st.hpo = &httpv3.HttpProtocolOptions{}
	}
	return st.hpo
}

// setH2Options mirrors cluster_builder.go setH2Options: explicit HTTP/2 unless a protocol was
// already chosen.
func (st *clusterState) setH2Options(o provenance.Origin) bool {
	h := st.ensureHPO()
	if h.UpstreamProtocolOptions != nil {
		return false
	}
	h.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
		ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: &corev3.Http2ProtocolOptions{}}}}
	st.set(pHPO+".explicitHttpConfig.http2ProtocolOptions", "{} (HTTP/2)", o)
	return true
}

// preserveCaseFormatter mirrors cluster_builder.go preserveCaseFormatterConfig.
func preserveCaseFormatter() *corev3.Http1ProtocolOptions {
	return &corev3.Http1ProtocolOptions{HeaderKeyFormat: &corev3.Http1ProtocolOptions_HeaderKeyFormat{
		HeaderFormat: &corev3.Http1ProtocolOptions_HeaderKeyFormat_StatefulFormatter{StatefulFormatter: &corev3.TypedExtensionConfig{
			Name:        "preserve_case",
			TypedConfig: &anypb.Any{TypeUrl: "type.googleapis.com/envoy.extensions.http.header_formatters.preserve_case.v3.PreserveCaseFormatterConfig"},
		}}}}
}

// setUpstreamProtocol mirrors cluster_builder.go setUpstreamProtocol for a sidecar.
func (st *clusterState) setUpstreamProtocol() {
	b := st.b
	proto := b.in.Port.Protocol
	if isHTTP2(proto) {
		st.setH2Options(b.registryOrigin(b.portField(), fmt.Sprintf("port protocol %s: explicit HTTP/2 upstream", proto)))
		return
	}
	if (proto == "HTTP" || isAuto(proto)) && b.mesh.GetDefaultConfig().GetProxyHeaders().GetPreserveHttp1HeaderCase().GetValue() {
		h := st.ensureHPO()
		h.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
			ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_HttpProtocolOptions{HttpProtocolOptions: preserveCaseFormatter()}}}
		st.set(pHPO+".explicitHttpConfig.httpProtocolOptions", "preserve_case header formatter",
			b.meshOrigin("defaultConfig.proxyHeaders.preserveHttp1HeaderCase"))
	}
	if isAuto(proto) && !b.router() {
		// Not on a gateway, which sniffs no protocol (cluster_builder.go applyH2Upgrade's
		// caller, setUseDownstreamProtocol only for sidecars and waypoints).
		st.setUseDownstreamProtocol(b.registryOrigin(b.portField(), "unnamed port (protocol sniffed): the upstream uses the downstream protocol"))
	}
}

// router reports whether the client proxy is a gateway's.
func (b *builder) router() bool { return b.in.router() }

// router reports whether the input's client proxy is a gateway's.
func (in *Input) router() bool {
	return in.Proxy != nil && in.Proxy.Router
}

// setUseDownstreamProtocol mirrors cluster_builder.go setUseDownstreamProtocol: it replaces any
// explicit protocol config, keeping explicit HTTP/1 options.
func (st *clusterState) setUseDownstreamProtocol(o provenance.Origin) {
	h := st.ensureHPO()
	h1 := &corev3.Http1ProtocolOptions{}
	h1Origin := o
	if opts := h.GetExplicitHttpConfig().GetHttpProtocolOptions(); opts != nil {
		h1 = opts
		if t, ok := st.rec.Get(pHPO + ".explicitHttpConfig.httpProtocolOptions"); ok {
			h1Origin = t.Origin
		}
	}
	h.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_UseDownstreamProtocolConfig{UseDownstreamProtocolConfig: &httpv3.HttpProtocolOptions_UseDownstreamHttpConfig{
		HttpProtocolOptions: h1, Http2ProtocolOptions: &corev3.Http2ProtocolOptions{}}}
	st.rec.Delete(pHPO + ".explicitHttpConfig")
	st.set(pHPO+".useDownstreamProtocolConfig.httpProtocolOptions", "HTTP/1.1 when the downstream is HTTP/1.1", h1Origin)
	st.set(pHPO+".useDownstreamProtocolConfig.http2ProtocolOptions", "HTTP/2 when the downstream is HTTP/2", o)
}

// addTelemetryMetadata mirrors cluster_builder.go addTelemetryMetadata for an outbound cluster.
func (st *clusterState) addTelemetryMetadata() {
	b := st.b
	if !b.flags.TelemetryLabel {
		return
	}
	svc := b.in.Service
	name := svc.Name
	if !svc.Kubernetes {
		// ServiceEntry services carry the host as their name (serviceentry/conversion.go).
		name = svc.Hostname
	}
	sh := b.in.shared
	if sh.servicesOf != svc {
		sh.servicesOf = svc
		// The list, its one struct and their wrappers are allocated together.
		p := &struct {
			list       structpb.Value
			listKind   structpb.Value_ListValue
			values     structpb.ListValue
			elem       [1]*structpb.Value
			st         structpb.Value
			structKind structpb.Value_StructValue
			fields     structpb.Struct
		}{}
		p.fields.Fields = map[string]*structpb.Value{
			"host":      stringValue(svc.Hostname),
			"name":      stringValue(name),
			"namespace": stringValue(svc.Namespace),
		}
		p.structKind.StructValue, p.st.Kind = &p.fields, &p.structKind
		p.elem[0] = &p.st
		p.values.Values = p.elem[:]
		p.listKind.ListValue, p.list.Kind = &p.values, &p.listKind
		sh.services = &p.list
		sh.servicesValue = "[{host: " + svc.Hostname + ", name: " + name + ", namespace: " + svc.Namespace + "}]"
	}
	st.meta.services = sh.services
	o := b.registryOrigin("metadata", "service identity for telemetry (PILOT_ENABLE_TELEMETRY_LABEL)")
	st.set(pIstioMeta+".services", sh.servicesValue, o)
}

// metadata returns the Metadata message of clusters whose `istio` filter metadata is m (nil
// when m is empty), made once per host: the default clusters of a host's ports carry the same
// metadata, and so do the clusters of one subset.
func (sh *hostShared) metadata(m clusterMeta) *corev3.Metadata {
	if m == (clusterMeta{}) {
		return nil
	}
	for _, x := range sh.metas {
		if x.meta == m {
			return x.out
		}
	}
	fields := make(map[string]*structpb.Value, 3)
	if m.services != nil {
		fields["services"] = m.services
	}
	if m.external {
		fields["external"] = structpb.NewBoolValue(true)
	}
	if m.config != nil {
		fields["config"] = m.config
	}
	if m.inSubset {
		fields["subset"] = stringValue(m.subset)
	}
	if m.alpnOverride {
		fields["alpn_override"] = stringValue("false")
	}
	p := &struct {
		out   corev3.Metadata
		istio structpb.Struct
	}{}
	p.istio.Fields = fields
	p.out.FilterMetadata = map[string]*structpb.Struct{"istio": &p.istio}
	out := &p.out
	sh.metas = append(sh.metas, sharedMeta{meta: m, out: out})
	return out
}

// sharedMeta is the Metadata message made for a clusterMeta.
type sharedMeta struct {
	meta clusterMeta
	out  *corev3.Metadata
}

// applyEdsConfig mirrors cluster_builder.go maybeApplyEdsConfig, run after the traffic policy
// (which may have turned the cluster into ORIGINAL_DST).
func (st *clusterState) applyEdsConfig() {
	c := st.c
	if c.GetType() != clusterv3.Cluster_EDS {
		return
	}
	c.EdsClusterConfig = &clusterv3.Cluster_EdsClusterConfig{ServiceName: c.Name, EdsConfig: common.edsConfig}
	st.set("edsClusterConfig.serviceName", c.Name, istioDefault("EDS resource name is the cluster name"))
	st.set("edsClusterConfig.edsConfig", "ADS, initialFetchTimeout 0s, V3", istioDefault("maybeApplyEdsConfig"))
}

// applyMetadataExchange mirrors cluster_builder.go applyMetadataExchange.
func (st *clusterState) applyMetadataExchange() {
	if !st.b.flags.MetadataExchange {
		return
	}
	st.c.Filters = append(st.c.Filters, common.metadataExchange)
	st.set(filterPath(len(st.c.Filters)-1), "istio.metadata_exchange",
		flagOrigin("PILOT_ENABLE_METADATA_EXCHANGE", "peer metadata exchange over istio-peer-exchange"))
}

// applyRuleMetadata writes the DestinationRule metadata (util.go AddConfigInfoMetadata,
// AddSubsetToMetadata, AddALPNOverrideToMetadata) and, for the default cluster, `external`.
func (st *clusterState) applyRuleMetadata() {
	b := st.b
	svc := b.in.Service
	if st.subsetIndex < 0 && svc.MeshExternal {
		st.meta.external = true
		st.set(pIstioMeta+".external", "true", b.registryOrigin("spec.location", "MESH_EXTERNAL"))
	}
	r := b.in.Rule
	if r == nil {
		return
	}
	sh := b.in.shared
	if sh.ruleOf != r {
		prim := r.Primary
		sh.ruleOf, sh.rulePrimary = r, &prim
		sh.ruleConfig = "/apis/networking.istio.io/v1/namespaces/" + r.Primary.Namespace + "/destination-rule/" + r.Primary.Name
		sh.ruleConfigValue = stringValue(sh.ruleConfig)
		sh.rulePosition = b.namePosition(sh.rulePrimary)
	}
	st.meta.config = sh.ruleConfigValue
	st.set(pIstioMeta+".config", sh.ruleConfig, provenance.Origin{Layer: provenance.LayerDestinationRule, Resource: sh.rulePrimary,
		Note: "the first DestinationRule of the merge names the cluster (util.go AddConfigInfoMetadata)", Position: sh.rulePosition})
	if st.subsetIndex >= 0 {
		st.meta.subset, st.meta.inSubset = st.subset, true
		o := b.origin(b.subsetSource(st.subsetIndex), "name")
		st.set(pIstioMeta+".subset", st.subset, o)
	}
	if tls := st.eff.policy.GetTls(); tls != nil && (tls.Mode == networking.ClientTLSSettings_SIMPLE || tls.Mode == networking.ClientTLSSettings_MUTUAL) {
		st.meta.alpnOverride = true
		st.set(pIstioMeta+".alpn_override", "false", b.origin(st.eff.src[bTLS], "tls.mode"))
	}
}

// finish mirrors clusterWrapper.build: HttpProtocolOptions are marshalled into
// typed_extension_protocol_options, with HTTP/1.1 when nothing chose a protocol.
func (st *clusterState) finish() {
	c := st.c
	if h := st.hpo; h != nil {
		if h.UpstreamProtocolOptions == nil {
			h.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
				ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_HttpProtocolOptions{HttpProtocolOptions: &corev3.Http1ProtocolOptions{}}}}
			st.set(pHPO+".explicitHttpConfig.httpProtocolOptions", "{} (HTTP/1.1)",
				istioDefault("Envoy requires an upstream protocol once HttpProtocolOptions exist: istiod fills HTTP/1.1 (clusterWrapper.build)"))
		}
		if h.CommonHttpProtocolOptions != nil && proto.Size(h.CommonHttpProtocolOptions) == 0 {
			st.set(pHPO+".commonHttpProtocolOptions", "{}", st.commonHTTPFrom)
		}
		c.TypedExtensionProtocolOptions = map[string]*anypb.Any{hpoTypeName: mustAny(h)}
	}
	if proto.Size(c.CommonLbConfig) == 0 {
		st.set("commonLbConfig", "{}", istioDefault("always present on service clusters (buildCluster)"))
	}
}

// copyAny returns a new Any with the type and bytes of a (the bytes are shared, never written).
func copyAny(a *anypb.Any) *anypb.Any { return &anypb.Any{TypeUrl: a.TypeUrl, Value: a.Value} }

// mustAny mirrors protoconv.MessageToAny: deterministic bytes under type.googleapis.com/.
func mustAny(m proto.Message) *anypb.Any {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("marshalling %T: %v", m, err))
	}
	return &anypb.Any{TypeUrl: "type.googleapis.com/" + string(m.ProtoReflect().Descriptor().FullName()), Value: b}
}
