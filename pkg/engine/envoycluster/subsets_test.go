package envoycluster

import (
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	caresv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/network/dns_resolver/cares/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// A10: cluster_builder_test.go TestApplyDestinationRule "destination rule with subsets",
// "destination rule with subset traffic policy".
func TestSubsetClustersOnEDS(t *testing.T) {
	r := rule(&networking.DestinationRule{Host: fooHost, Subsets: []*networking.Subset{{Name: "foobar", Labels: map[string]string{"foo": "bar"},
		TrafficPolicy: &networking.TrafficPolicy{ConnectionPool: &networking.ConnectionPoolSettings{Http: &networking.ConnectionPoolSettings_HTTPSettings{MaxRetries: 10}}}}}})
	all, err := BuildClusters(in(fooService(), httpPort, r, meshConfig(nil)))
	if err != nil {
		t.Fatal(err)
	}
	requireTraced(t, all)
	if got, want := names(all), []string{"outbound|8080||" + fooHost, "outbound|8080|foobar|" + fooHost}; !slices.Equal(got, want) {
		t.Fatalf("clusters %v, want %v", got, want)
	}
	requireCluster(t, withRule(edsCluster(httpPort, ""), ""), all[0].Cluster)
	want := withRule(edsCluster(httpPort, "foobar"), "foobar")
	want.CircuitBreakers.Thresholds[0].MaxRetries = wrapperspb.UInt32(10)
	requireCluster(t, want, all[1].Cluster)
	requireOrigin(t, all[1], pIstioMeta+".subset", provenance.LayerSubset, "spec.subsets[name=foobar].name")
	requireOrigin(t, all[1], "edsClusterConfig.serviceName", provenance.LayerIstioDefault, "")
}

// docs/semantics/cluster.md#subsets: a subset inherits the DestinationRule's blocks it does not
// set, and its own
// portLevelSettings entry replaces the four port blocks wholesale.
func TestSubsetLayering(t *testing.T) {
	top := &networking.TrafficPolicy{
		ConnectionPool:   &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 50}},
		OutlierDetection: &networking.OutlierDetection{Consecutive_5XxErrors: wrapperspb.UInt32(3)},
		LoadBalancer:     &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_ROUND_ROBIN}},
	}
	t.Run("subset blocks replace inherited blocks whole and inherit the rest", func(t *testing.T) {
		r := rule(&networking.DestinationRule{Host: fooHost, TrafficPolicy: top, Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"},
			TrafficPolicy: &networking.TrafficPolicy{ConnectionPool: &networking.ConnectionPoolSettings{Http: &networking.ConnectionPoolSettings_HTTPSettings{MaxRetries: 2}}}}}})
		b := build(t, in(fooService(), httpPort, r, meshConfig(nil)), "outbound|8080|v1|"+fooHost)
		if got := b.Cluster.CircuitBreakers.Thresholds[0]; got.MaxConnections.GetValue() != 4294967295 || got.MaxRetries.GetValue() != 2 {
			t.Errorf("subset connectionPool must replace the top-level one whole: %v", got)
		}
		if b.Cluster.LbPolicy != clusterv3.Cluster_ROUND_ROBIN || b.Cluster.GetOutlierDetection().GetConsecutive_5Xx().GetValue() != 3 {
			t.Errorf("subset must inherit loadBalancer and outlierDetection: %v %v", b.Cluster.LbPolicy, b.Cluster.OutlierDetection)
		}
		requireOrigin(t, b, "outlierDetection.consecutive5xx", provenance.LayerDestinationRule, "spec.trafficPolicy.outlierDetection.consecutive5xxErrors")
		tr := trace(t, b, pCB+".maxConnections")
		if !slices.ContainsFunc(tr.Shadowed, func(s provenance.Shadow) bool {
			return s.Value == "50" && strings.HasPrefix(s.Reason, "overridden: ")
		}) {
			t.Errorf("the inherited maxConnections 50 should be an overridden shadow: %+v", tr.Shadowed)
		}
	})
	t.Run("subset portLevelSettings wipe the port blocks, including the subset's own top level", func(t *testing.T) {
		r := rule(&networking.DestinationRule{Host: fooHost, TrafficPolicy: top, Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"},
			TrafficPolicy: &networking.TrafficPolicy{
				ConnectionPool: &networking.ConnectionPoolSettings{Http: &networking.ConnectionPoolSettings_HTTPSettings{MaxRetries: 2}},
				PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{Port: &networking.PortSelector{Number: 8080},
					LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_RANDOM}}}},
			}}}})
		b := build(t, in(fooService(), httpPort, r, meshConfig(nil)), "outbound|8080|v1|"+fooHost)
		want := withRule(edsCluster(httpPort, "v1"), "v1")
		want.LbPolicy = clusterv3.Cluster_RANDOM
		requireCluster(t, want, b.Cluster)
		if !slices.Contains(diagIDs(b), "D14") {
			t.Errorf("the dropped subset connectionPool should be reported (D14): %v", b.Diagnostics)
		}
		// On the other port the subset's top level applies.
		b = build(t, in(fooService(), autoPort, r, meshConfig(nil)), "outbound|9090|v1|"+fooHost)
		if b.Cluster.CircuitBreakers.Thresholds[0].MaxRetries.GetValue() != 2 || b.Cluster.LbPolicy != clusterv3.Cluster_ROUND_ROBIN {
			t.Errorf("port 9090 should use the subset top level and the inherited ROUND_ROBIN: %v", b.Cluster)
		}
	})
	t.Run("the mesh baseline is not re-applied at subset port level", func(t *testing.T) {
		mesh := meshConfig(func(m *meshv1alpha1.MeshConfig) {
			m.DefaultTrafficPolicy = &meshv1alpha1.MeshConfig_DefaultTrafficPolicy{
				ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 33}}}
		})
		r := rule(&networking.DestinationRule{Host: fooHost, Subsets: []*networking.Subset{{Name: "v1", TrafficPolicy: &networking.TrafficPolicy{
			PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{Port: &networking.PortSelector{Number: 8080},
				OutlierDetection: &networking.OutlierDetection{Consecutive_5XxErrors: wrapperspb.UInt32(1)}}}}}}})
		b := build(t, in(fooService(), httpPort, r, mesh), "outbound|8080|v1|"+fooHost)
		if got := b.Cluster.CircuitBreakers.Thresholds[0].MaxConnections.GetValue(); got != 4294967295 {
			t.Errorf("maxConnections %d, want Istio's default: the baseline is lost at subset port level", got)
		}
		if !slices.Contains(diagIDs(b), "D26") {
			t.Errorf("want D26: %v", b.Diagnostics)
		}
		def := build(t, in(fooService(), httpPort, r, mesh), "outbound|8080||"+fooHost)
		if got := def.Cluster.CircuitBreakers.Thresholds[0].MaxConnections.GetValue(); got != 33 {
			t.Errorf("default cluster maxConnections %d, want the baseline 33", got)
		}
	})
}

// docs/semantics/cluster.md#port-level-settings, util.go GetPortLevelTrafficPolicy. A
// portLevelSettings entry replaces the whole
// top-level policy for its port.
func TestPortLevelSettingsReplaceTheTopLevelPolicy(t *testing.T) {
	r := rule(&networking.DestinationRule{Host: fooHost, TrafficPolicy: &networking.TrafficPolicy{
		ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 100}},
		RetryBudget:    &networking.TrafficPolicy_RetryBudget{MinRetryConcurrency: 5},
		PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{
			{Port: &networking.PortSelector{Number: 8080}, LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_RANDOM}}},
			{Port: &networking.PortSelector{Number: 8080}, LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_ROUND_ROBIN}}},
		},
	}})
	b := build(t, in(fooService(), httpPort, r, meshConfig(nil)), "outbound|8080||"+fooHost)
	want := withRule(edsCluster(httpPort, ""), "")
	want.LbPolicy = clusterv3.Cluster_RANDOM // the first matching entry wins
	requireCluster(t, want, b.Cluster)
	requireOrigin(t, b, "lbPolicy", provenance.LayerPortLevel, "spec.trafficPolicy.portLevelSettings[port=8080].loadBalancer.simple")
	tr := trace(t, b, pCB+".maxConnections")
	if !slices.ContainsFunc(tr.Shadowed, func(s provenance.Shadow) bool {
		return s.Value == "100" && s.Reason == "dropped: portLevelSettings[port=8080] replaces the whole top-level policy for this port"
	}) {
		t.Errorf("the top-level maxConnections should be a dropped shadow: %+v", tr.Shadowed)
	}
	if !slices.Contains(diagIDs(b), "D14") {
		t.Errorf("want D14: %v", b.Diagnostics)
	}
	var d14 string
	for _, d := range b.Diagnostics {
		if d.ID == "D14" {
			d14 = d.Message
		}
	}
	if !strings.Contains(d14, "connectionPool") || !strings.Contains(d14, "retryBudget") {
		t.Errorf("D14 should list the lost blocks: %q", d14)
	}
	// Port 9090 has no entry: the top level applies, retry budget included.
	b = build(t, in(fooService(), autoPort, r, meshConfig(nil)), "outbound|9090||"+fooHost)
	if b.Cluster.CircuitBreakers.Thresholds[0].MaxConnections.GetValue() != 100 || b.Cluster.CircuitBreakers.Thresholds[0].RetryBudget == nil {
		t.Errorf("port 9090 should keep the top level: %v", b.Cluster.CircuitBreakers)
	}
}

func seService(host string, res index.Resolution, eps ...index.Endpoint) *index.Service {
	return &index.Service{
		Hostname:   host,
		Namespace:  "default",
		Name:       "foo-se",
		Ref:        provenance.Ref{Kind: "ServiceEntry", Namespace: "default", Name: "foo-se"},
		Ports:      []index.Port{{Name: "default", Number: 8080, Protocol: "HTTP"}},
		Resolution: res,
		Endpoints:  map[uint32][]index.Endpoint{8080: eps},
	}
}

// syntheticDNSEndpoint is the endpoint a DNS ServiceEntry without endpoints gets: its own host.
func syntheticDNSEndpoint(host string) index.Endpoint {
	return index.Endpoint{Address: host, Port: 8080, TLSMode: "disabled", Ref: provenance.Ref{Kind: "ServiceEntry", Namespace: "default", Name: "foo-se"}}
}

// dnsCluster is istiod's STRICT_DNS cluster for a ServiceEntry host with the synthetic endpoint.
func dnsCluster(host, subset string, typ clusterv3.Cluster_DiscoveryType) *clusterv3.Cluster {
	name := clusterName(subset, host, 8080)
	cares, _ := anypb.New(&caresv3.CaresDnsResolverConfig{UdpMaxQueries: wrapperspb.UInt32(100)})
	c := &clusterv3.Cluster{
		Name:                   name,
		AltStatName:            name + ";",
		ClusterDiscoveryType:   &clusterv3.Cluster_Type{Type: typ},
		ConnectTimeout:         dur(10 * time.Second),
		LbPolicy:               clusterv3.Cluster_LEAST_REQUEST,
		CircuitBreakers:        &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{defaultThresholds()}},
		CommonLbConfig:         &clusterv3.Cluster_CommonLbConfig{HealthyPanicThreshold: &typev3.Percent{}},
		DnsLookupFamily:        clusterv3.Cluster_V4_ONLY,
		TypedDnsResolverConfig: &corev3.TypedExtensionConfig{Name: "envoy.network.dns_resolver.cares", TypedConfig: cares},
		DnsJitter:              dur(100 * time.Millisecond),
		DnsRefreshRate:         dur(60 * time.Second),
		RespectDnsTtl:          true,
		LoadAssignment: &endpointv3.ClusterLoadAssignment{ClusterName: name, Endpoints: []*endpointv3.LocalityLbEndpoints{{
			Locality:            &corev3.Locality{},
			LoadBalancingWeight: wrapperspb.UInt32(1),
			LbEndpoints: []*endpointv3.LbEndpoint{{
				HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: &corev3.Address{Address: &corev3.Address_SocketAddress{
					SocketAddress: &corev3.SocketAddress{Address: host, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 8080}}}}}},
				LoadBalancingWeight: wrapperspb.UInt32(1),
				Metadata: &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"istio": {Fields: map[string]*structpb.Value{
					"workload": structpb.NewStringValue("foo-se;default;foo-se;;Kubernetes")}}}},
			}},
		}}},
		Filters: []*clusterv3.Filter{mxFilter()},
		Metadata: &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"istio": {Fields: map[string]*structpb.Value{
			"services": servicesMeta(host, host, "default")}}}},
	}
	return c
}

// A13: cluster_builder_test.go TestApplyDestinationRule DNS cases, TestBuildStaticClusterWithNoEndPoint.
func TestDNSServiceEntrySubsets(t *testing.T) {
	const host = "foo.example.com"
	labelled := syntheticDNSEndpoint(host)
	labelled.Address = "1.1.1.1"
	labelled.Labels = map[string]string{"foo": "bar"}
	cases := []struct {
		name   string
		res    index.Resolution
		eps    []index.Endpoint
		labels map[string]string
		typ    clusterv3.Cluster_DiscoveryType
		want   []string
	}{
		{name: "subset without labels is built", res: index.DNSLB, eps: []index.Endpoint{syntheticDNSEndpoint(host)}, typ: clusterv3.Cluster_STRICT_DNS,
			want: []string{"outbound|8080||" + host, "outbound|8080|v1|" + host}},
		{name: "subset labels matching endpoint labels", res: index.DNSLB, eps: []index.Endpoint{labelled}, labels: map[string]string{"foo": "bar"}, typ: clusterv3.Cluster_STRICT_DNS,
			want: []string{"outbound|8080||" + host, "outbound|8080|v1|" + host}},
		{name: "subset labels matching no endpoint drop the subset cluster", res: index.DNSLB, eps: []index.Endpoint{labelled}, labels: map[string]string{"foo": "not-match"},
			typ: clusterv3.Cluster_STRICT_DNS, want: []string{"outbound|8080||" + host}},
		{name: "the synthetic endpoint has no labels, so any labelled subset is dropped", res: index.DNSLB, eps: []index.Endpoint{syntheticDNSEndpoint(host)},
			labels: map[string]string{"foo": "bar"}, typ: clusterv3.Cluster_STRICT_DNS, want: []string{"outbound|8080||" + host}},
		{name: "DNS_ROUND_ROBIN is LOGICAL_DNS", res: index.DNSRoundRobinLB, eps: []index.Endpoint{syntheticDNSEndpoint(host)}, typ: clusterv3.Cluster_LOGICAL_DNS,
			want: []string{"outbound|8080||" + host, "outbound|8080|v1|" + host}},
		{name: "a DNS service without endpoints has no clusters at all", res: index.DNSLB, typ: clusterv3.Cluster_STRICT_DNS},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := seService(host, tc.res, tc.eps...)
			r := rule(&networking.DestinationRule{Host: host, Subsets: []*networking.Subset{{Name: "v1", Labels: tc.labels}}})
			all, err := BuildClusters(in(svc, svc.Ports[0], r, meshConfig(nil)))
			if err != nil {
				t.Fatal(err)
			}
			requireTraced(t, all)
			if got := names(all); !slices.Equal(got, tc.want) {
				t.Fatalf("clusters %v, want %v", got, tc.want)
			}
			if len(tc.eps) == 1 && tc.eps[0].Address == host {
				requireCluster(t, withRule(dnsCluster(host, "", tc.typ), ""), all[0].Cluster)
				if len(all[1:]) > 0 && all[1].Cluster != nil {
					requireCluster(t, withRule(dnsCluster(host, "v1", tc.typ), "v1"), all[1].Cluster)
				}
			}
		})
	}
}

// A24: cluster_test.go TestSidecarLocalityLB, TestLocalityLBDestinationRuleOverride on a DNS
// cluster, whose load assignment is inline in CDS.
func TestLocalityLoadBalancingOnDNSClusters(t *testing.T) {
	const host = "foo.example.com"
	ep := func(addr, loc string, w uint32) index.Endpoint {
		return index.Endpoint{Address: addr, Port: 8080, Locality: loc, Weight: w, TLSMode: "disabled",
			Ref: provenance.Ref{Kind: "ServiceEntry", Namespace: "default", Name: "foo-se"}}
	}
	svc := seService(host, index.DNSLB, ep("1.1.1.1", "region1/zone1/subzone1", 40), ep("2.2.2.2", "region1/zone1/subzone2", 20), ep("3.3.3.3", "region2/zone1/subzone1", 40))
	outlier := &networking.OutlierDetection{MinHealthPercent: 10}
	distribute := &networking.LocalityLoadBalancerSetting{Distribute: []*networking.LocalityLoadBalancerSetting_Distribute{{
		From: "region1/zone1/subzone1", To: map[string]uint32{"region1/zone1/*": 50, "region2/zone1/subzone1": 50}}}}
	cases := []struct {
		name     string
		mesh     *networking.LocalityLoadBalancerSetting
		dr       *networking.LocalityLoadBalancerSetting
		weights  []uint32
		priority []uint32
		layer    provenance.Layer
	}{
		{name: "mesh distribute splits locality weights by endpoint weight", mesh: distribute, weights: []uint32{34, 17, 50}, priority: []uint32{0, 0, 0}, layer: provenance.LayerMeshConfig},
		{name: "a DestinationRule localityLbSetting replaces the mesh one entirely", mesh: distribute,
			dr: &networking.LocalityLoadBalancerSetting{Distribute: []*networking.LocalityLoadBalancerSetting_Distribute{{
				From: "region1/zone1/subzone1", To: map[string]uint32{"region1/zone1/subzone1": 60, "region2/zone1/subzone1": 40}}}},
			weights: []uint32{60, 0, 40}, priority: []uint32{0, 0, 0}, layer: provenance.LayerDestinationRule},
		{name: "mesh failover gives priorities by locality", mesh: &networking.LocalityLoadBalancerSetting{Failover: []*networking.LocalityLoadBalancerSetting_Failover{{From: "region1", To: "region2"}}},
			weights: []uint32{40, 20, 40}, priority: []uint32{0, 1, 2}, layer: provenance.LayerMeshConfig},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mesh := meshConfig(func(m *meshv1alpha1.MeshConfig) { m.LocalityLbSetting = tc.mesh })
			tp := &networking.TrafficPolicy{OutlierDetection: outlier}
			if tc.dr != nil {
				tp.LoadBalancer = &networking.LoadBalancerSettings{LocalityLbSetting: tc.dr}
			}
			input := in(svc, svc.Ports[0], rule(&networking.DestinationRule{Host: host, TrafficPolicy: tp}), mesh)
			input.Proxy.Locality = "region1/zone1/subzone1"
			b := build(t, input, "outbound|8080||"+host)
			if got := b.Cluster.CommonLbConfig.GetHealthyPanicThreshold().GetValue(); got != 10 {
				t.Errorf("panic threshold %v, want 10", got)
			}
			var weights, prios []uint32
			for _, e := range b.Cluster.LoadAssignment.Endpoints {
				w := e.GetLoadBalancingWeight().GetValue()
				if len(e.LbEndpoints) == 0 {
					w = 0
				}
				weights = append(weights, w)
				prios = append(prios, e.Priority)
			}
			if !slices.Equal(weights, tc.weights) || !slices.Equal(prios, tc.priority) {
				t.Errorf("weights %v priorities %v, want %v %v", weights, prios, tc.weights, tc.priority)
			}
			if b.Cluster.CommonLbConfig.GetLocalityWeightedLbConfig() == nil {
				t.Errorf("locality_weighted_lb_config should be set")
			}
			if got := trace(t, b, "commonLbConfig.localityWeightedLbConfig").Origin.Layer; got != tc.layer {
				t.Errorf("locality config layer %s, want %s", got, tc.layer)
			}
		})
	}
}

// A14: cluster_test.go TestStatNamePattern, TestApplyDestinationRule "OutboundClusterStatName";
// telemetry.go BuildStatPrefix.
func TestOutboundClusterStatName(t *testing.T) {
	cases := []struct {
		name    string
		pattern string
		svc     func() *index.Service
		subset  string
		want    string
	}{
		{name: "service, port name and port of a ServiceEntry host", pattern: "%SERVICE%_%SERVICE_PORT_NAME%_%SERVICE_PORT%",
			svc:  func() *index.Service { return seService("*.example.org", index.ClientSideLB) },
			want: "*.example.org_default_8080;"},
		{name: "subset name on a non-Kubernetes host is the FQDN", pattern: "%SERVICE%_%SUBSET_NAME%_%SERVICE_PORT_NAME%_%SERVICE_PORT%",
			svc:    func() *index.Service { s := fooService(); s.Kubernetes = false; return s },
			subset: "foobar", want: fooHost + "_foobar_default_8080;"},
		{name: "Kubernetes services shorten %SERVICE% to name.namespace", pattern: "%SERVICE%|%SERVICE_NAME%|%SERVICE_FQDN%",
			svc: fooService, want: "foo.default|foo|" + fooHost + ";"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := tc.svc()
			mesh := meshConfig(func(m *meshv1alpha1.MeshConfig) { m.OutboundClusterStatName = tc.pattern })
			r := rule(&networking.DestinationRule{Host: svc.Hostname, Subsets: []*networking.Subset{{Name: "foobar"}}})
			b := build(t, in(svc, svc.Ports[0], r, mesh), clusterName(tc.subset, svc.Hostname, 8080))
			if b.Cluster.AltStatName != tc.want {
				t.Errorf("alt_stat_name %q, want %q", b.Cluster.AltStatName, tc.want)
			}
			requireOrigin(t, b, "altStatName", provenance.LayerMeshConfig, "outboundClusterStatName")
		})
	}
}

// A22: cluster_builder_test.go TestShouldH2Upgrade.
func TestH2Upgrade(t *testing.T) {
	tcpPort := index.Port{Name: "tcp", Number: 7070, Protocol: "TCP"}
	cases := []struct {
		name  string
		mesh  meshv1alpha1.MeshConfig_H2UpgradePolicy
		http  *networking.ConnectionPoolSettings_HTTPSettings
		port  index.Port
		want  string // "h2", "http1" (explicit), "downstream", "" (no HPO)
		diags []string
	}{
		{name: "mesh UPGRADE on an HTTP port", mesh: meshv1alpha1.MeshConfig_UPGRADE, port: httpPort, want: "h2"},
		{name: "DestinationRule UPGRADE on an auto port is decided but the downstream protocol stays", port: autoPort, want: "downstream",
			http: &networking.ConnectionPoolSettings_HTTPSettings{H2UpgradePolicy: networking.ConnectionPoolSettings_HTTPSettings_UPGRADE}, diags: []string{"D21", "D22"}},
		{name: "mesh DO_NOT_UPGRADE", mesh: meshv1alpha1.MeshConfig_DO_NOT_UPGRADE, port: httpPort, want: ""},
		{name: "DestinationRule UPGRADE beats mesh DO_NOT_UPGRADE", mesh: meshv1alpha1.MeshConfig_DO_NOT_UPGRADE, port: httpPort, want: "h2",
			http: &networking.ConnectionPoolSettings_HTTPSettings{H2UpgradePolicy: networking.ConnectionPoolSettings_HTTPSettings_UPGRADE}},
		{name: "DestinationRule DO_NOT_UPGRADE beats mesh UPGRADE", mesh: meshv1alpha1.MeshConfig_UPGRADE, port: httpPort, want: "http1",
			http: &networking.ConnectionPoolSettings_HTTPSettings{H2UpgradePolicy: networking.ConnectionPoolSettings_HTTPSettings_DO_NOT_UPGRADE, MaxRequestsPerConnection: 5}},
		{name: "useClientProtocol never upgrades", mesh: meshv1alpha1.MeshConfig_UPGRADE, port: httpPort, want: "downstream",
			http: &networking.ConnectionPoolSettings_HTTPSettings{UseClientProtocol: true}},
		{name: "mesh UPGRADE leaves auto ports alone", mesh: meshv1alpha1.MeshConfig_UPGRADE, port: autoPort, want: "downstream"},
		{name: "DestinationRule UPGRADE upgrades even a TCP port", port: tcpPort, want: "h2",
			http: &networking.ConnectionPoolSettings_HTTPSettings{H2UpgradePolicy: networking.ConnectionPoolSettings_HTTPSettings_UPGRADE}, diags: []string{"D22"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := fooService()
			svc.Ports = append(svc.Ports, tcpPort)
			mesh := meshConfig(func(m *meshv1alpha1.MeshConfig) { m.H2UpgradePolicy = tc.mesh })
			var r *index.ConsolidatedRule
			if tc.http != nil {
				r = rule(&networking.DestinationRule{Host: fooHost, TrafficPolicy: &networking.TrafficPolicy{ConnectionPool: &networking.ConnectionPoolSettings{Http: tc.http}}})
			}
			b := build(t, in(svc, tc.port, r, mesh), clusterName("", fooHost, tc.port.Number))
			h := hpoOf(t, b.Cluster)
			got := ""
			switch {
			case h == nil:
			case h.GetExplicitHttpConfig().GetHttp2ProtocolOptions() != nil:
				got = "h2"
			case h.GetExplicitHttpConfig().GetHttpProtocolOptions() != nil:
				got = "http1"
			case h.GetUseDownstreamProtocolConfig() != nil:
				got = "downstream"
			}
			if got != tc.want {
				t.Errorf("upstream protocol %q, want %q (%v)", got, tc.want, h)
			}
			if !slices.Equal(diagIDs(b), tc.diags) {
				t.Errorf("diagnostics %v, want %v", b.Diagnostics, tc.diags)
			}
		})
	}
}
