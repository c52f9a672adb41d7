package envoycluster

import (
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// A1: cluster_builder_test.go TestBuildDefaultCluster, cluster_test.go TestConnectionPoolSettings "no settings".
func TestDefaultEDSClusterWithoutDestinationRule(t *testing.T) {
	mesh := meshConfig(func(m *meshv1alpha1.MeshConfig) { m.ConnectTimeout = &durationpb.Duration{Seconds: 10, Nanos: 1} })
	b := build(t, in(fooService(), httpPort, nil, mesh), "outbound|8080||"+fooHost)
	want := edsCluster(httpPort, "")
	want.ConnectTimeout = &durationpb.Duration{Seconds: 10, Nanos: 1}
	requireCluster(t, want, b.Cluster)
	requireOrigin(t, b, "connectTimeout", provenance.LayerMeshConfig, "connectTimeout")
	requireOrigin(t, b, "lbPolicy", provenance.LayerIstioDefault, "")
	requireOrigin(t, b, pCB+".maxRetries", provenance.LayerIstioDefault, "")
	requireOrigin(t, b, "commonLbConfig.healthyPanicThreshold", provenance.LayerIstiodFlag, "PILOT_AUTO_SEND_UNHEALTHY_ENDPOINTS")
	if tr := trace(t, b, "circuitBreakers.thresholds[1]"); !tr.NotSent {
		t.Errorf("HIGH priority thresholds should be traced as not sent: %+v", tr)
	}
	if tr := trace(t, b, "leastRequestLbConfig.choiceCount"); !tr.NotSent || tr.Value != "2" {
		t.Errorf("choiceCount should be Envoy's 2, not sent: %+v", tr)
	}
	if len(b.Diagnostics) != 0 {
		t.Errorf("unexpected diagnostics %v", b.Diagnostics)
	}
}

// A3: cluster_test.go TestConnectionPoolSettings "destination rule settings no sidecar"
// (outbound part), A23: cluster_builder_test.go TestApplyConnectionPool.
func TestConnectionPoolMapping(t *testing.T) {
	full := &networking.ConnectionPoolSettings{
		Http: &networking.ConnectionPoolSettings_HTTPSettings{Http1MaxPendingRequests: 1, Http2MaxRequests: 2, MaxRequestsPerConnection: 3, MaxRetries: 4},
		Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 1, ConnectTimeout: dur(2 * time.Second),
			TcpKeepalive:          &networking.ConnectionPoolSettings_TCPSettings_TcpKeepalive{Probes: 3, Time: dur(4 * time.Second), Interval: dur(5 * time.Second)},
			MaxConnectionDuration: dur(6 * time.Second)},
	}
	cases := []struct {
		name string
		cp   *networking.ConnectionPoolSettings
		port index.Port
		want func(*clusterv3.Cluster)
	}{
		{
			name: "every connectionPool field lands in circuit breakers, keepalive and HTTP options",
			cp:   full, port: httpPort,
			want: func(c *clusterv3.Cluster) {
				c.CircuitBreakers.Thresholds[0] = &clusterv3.CircuitBreakers_Thresholds{MaxConnections: wrapperspb.UInt32(1), MaxPendingRequests: wrapperspb.UInt32(1),
					MaxRequests: wrapperspb.UInt32(2), MaxRetries: wrapperspb.UInt32(4)}
				c.ConnectTimeout = dur(2 * time.Second)
				c.UpstreamConnectionOptions = &clusterv3.UpstreamConnectionOptions{TcpKeepalive: &corev3.TcpKeepalive{
					KeepaliveProbes: wrapperspb.UInt32(3), KeepaliveTime: wrapperspb.UInt32(4), KeepaliveInterval: wrapperspb.UInt32(5)}}
				setHPO(c, &httpv3.HttpProtocolOptions{
					CommonHttpProtocolOptions: &corev3.HttpProtocolOptions{MaxRequestsPerConnection: wrapperspb.UInt32(3), MaxConnectionDuration: dur(6 * time.Second)},
					UpstreamProtocolOptions:   explicitHTTP1(),
				})
			},
		},
		{
			name: "on an unnamed port the HTTP options keep use_downstream_protocol_config",
			cp:   full, port: autoPort,
			want: func(c *clusterv3.Cluster) {
				c.CircuitBreakers.Thresholds[0] = &clusterv3.CircuitBreakers_Thresholds{MaxConnections: wrapperspb.UInt32(1), MaxPendingRequests: wrapperspb.UInt32(1),
					MaxRequests: wrapperspb.UInt32(2), MaxRetries: wrapperspb.UInt32(4)}
				c.ConnectTimeout = dur(2 * time.Second)
				c.UpstreamConnectionOptions = &clusterv3.UpstreamConnectionOptions{TcpKeepalive: &corev3.TcpKeepalive{
					KeepaliveProbes: wrapperspb.UInt32(3), KeepaliveTime: wrapperspb.UInt32(4), KeepaliveInterval: wrapperspb.UInt32(5)}}
				setHPO(c, &httpv3.HttpProtocolOptions{
					CommonHttpProtocolOptions: &corev3.HttpProtocolOptions{MaxRequestsPerConnection: wrapperspb.UInt32(3), MaxConnectionDuration: dur(6 * time.Second)},
					UpstreamProtocolOptions:   downstreamProtocol(),
				})
			},
		},
		{
			name: "tcp idleTimeout alone becomes the HTTP idle timeout",
			cp:   &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{IdleTimeout: dur(10 * time.Second)}},
			port: httpPort,
			want: func(c *clusterv3.Cluster) {
				setHPO(c, &httpv3.HttpProtocolOptions{CommonHttpProtocolOptions: &corev3.HttpProtocolOptions{IdleTimeout: dur(10 * time.Second)}, UpstreamProtocolOptions: explicitHTTP1()})
			},
		},
		{
			name: "http idleTimeout wins over tcp idleTimeout",
			cp: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{IdleTimeout: dur(10 * time.Second)},
				Http: &networking.ConnectionPoolSettings_HTTPSettings{IdleTimeout: dur(20 * time.Second)}},
			port: httpPort,
			want: func(c *clusterv3.Cluster) {
				setHPO(c, &httpv3.HttpProtocolOptions{CommonHttpProtocolOptions: &corev3.HttpProtocolOptions{IdleTimeout: dur(20 * time.Second)}, UpstreamProtocolOptions: explicitHTTP1()})
			},
		},
		{
			name: "idle timeout, max requests per connection and max connection duration together",
			cp: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnectionDuration: dur(500 * time.Second)},
				Http: &networking.ConnectionPoolSettings_HTTPSettings{IdleTimeout: dur(22 * time.Second), MaxRequestsPerConnection: 22}},
			port: httpPort,
			want: func(c *clusterv3.Cluster) {
				setHPO(c, &httpv3.HttpProtocolOptions{CommonHttpProtocolOptions: &corev3.HttpProtocolOptions{IdleTimeout: dur(22 * time.Second),
					MaxRequestsPerConnection: wrapperspb.UInt32(22), MaxConnectionDuration: dur(500 * time.Second)}, UpstreamProtocolOptions: explicitHTTP1()})
			},
		},
		{
			name: "maxRetries 0 cannot be told from unset and keeps Istio's maximum",
			cp:   &networking.ConnectionPoolSettings{Http: &networking.ConnectionPoolSettings_HTTPSettings{MaxRetries: 0, Http2MaxRequests: 9}},
			port: httpPort,
			want: func(c *clusterv3.Cluster) { c.CircuitBreakers.Thresholds[0].MaxRequests = wrapperspb.UInt32(9) },
		},
		{
			name: "maxConcurrentStreams needs an explicit HTTP/2 cluster and is dropped on HTTP/1",
			cp:   &networking.ConnectionPoolSettings{Http: &networking.ConnectionPoolSettings_HTTPSettings{MaxConcurrentStreams: 200}},
			port: httpPort,
			want: func(c *clusterv3.Cluster) {
				setHPO(c, &httpv3.HttpProtocolOptions{CommonHttpProtocolOptions: &corev3.HttpProtocolOptions{}, UpstreamProtocolOptions: explicitHTTP1()})
			},
		},
		{
			name: "maxConcurrentStreams and http2KeepAlive land on an upgraded cluster",
			cp: &networking.ConnectionPoolSettings{Http: &networking.ConnectionPoolSettings_HTTPSettings{MaxConcurrentStreams: 200,
				H2UpgradePolicy: networking.ConnectionPoolSettings_HTTPSettings_UPGRADE,
				Http2KeepAlive:  &networking.ConnectionPoolSettings_HTTPSettings_ConnectionKeepalive{Interval: dur(time.Second), Timeout: dur(2 * time.Second)}}},
			port: httpPort,
			want: func(c *clusterv3.Cluster) {
				setHPO(c, &httpv3.HttpProtocolOptions{CommonHttpProtocolOptions: &corev3.HttpProtocolOptions{},
					UpstreamProtocolOptions: explicitHTTP2(&corev3.Http2ProtocolOptions{MaxConcurrentStreams: wrapperspb.UInt32(200),
						ConnectionKeepalive: &corev3.KeepaliveSettings{Interval: dur(time.Second), Timeout: dur(2 * time.Second)}})})
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rule(&networking.DestinationRule{Host: fooHost, TrafficPolicy: &networking.TrafficPolicy{ConnectionPool: tc.cp}})
			b := build(t, in(fooService(), tc.port, r, meshConfig(nil)), clusterName("", fooHost, tc.port.Number))
			want := withRule(edsCluster(tc.port, ""), "")
			tc.want(want)
			requireCluster(t, want, b.Cluster)
		})
	}
}

// A3 origins: every connectionPool value names its DestinationRule field and shadows the
// default it replaced.
func TestConnectionPoolOriginsShadowDefaults(t *testing.T) {
	r := rule(&networking.DestinationRule{Host: fooHost, TrafficPolicy: &networking.TrafficPolicy{ConnectionPool: &networking.ConnectionPoolSettings{
		Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 100, ConnectTimeout: dur(2 * time.Second)}}}})
	b := build(t, in(fooService(), httpPort, r, meshConfig(nil)), "outbound|8080||"+fooHost)
	requireOrigin(t, b, pCB+".maxConnections", provenance.LayerDestinationRule, "spec.trafficPolicy.connectionPool.tcp.maxConnections")
	requireOrigin(t, b, "connectTimeout", provenance.LayerDestinationRule, "spec.trafficPolicy.connectionPool.tcp.connectTimeout")
	ct := trace(t, b, "connectTimeout")
	if len(ct.Shadowed) != 1 || ct.Shadowed[0].Value != "10s" || ct.Shadowed[0].Origin.Layer != provenance.LayerMeshConfig {
		t.Errorf("connectTimeout should shadow MeshConfig's 10s: %+v", ct.Shadowed)
	}
	mc := trace(t, b, pCB+".maxConnections")
	if len(mc.Shadowed) != 1 || mc.Shadowed[0].Value != "4294967295" || mc.Shadowed[0].Origin.Layer != provenance.LayerIstioDefault {
		t.Errorf("maxConnections should shadow Istio's default: %+v", mc.Shadowed)
	}
	if mc.Origin.Resource == nil || *mc.Origin.Resource != drRef {
		t.Errorf("maxConnections resource = %v, want %v", mc.Origin.Resource, drRef)
	}
}

// A4: cluster_test.go TestDefaultTrafficPolicy, cluster_traffic_policy_test.go TestApplyDefaultTrafficPolicy.
func TestMeshDefaultTrafficPolicyBaseline(t *testing.T) {
	mesh := meshConfig(func(m *meshv1alpha1.MeshConfig) {
		m.DefaultTrafficPolicy = &meshv1alpha1.MeshConfig_DefaultTrafficPolicy{
			ConnectionPool:   &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 33}},
			OutlierDetection: &networking.OutlierDetection{Consecutive_5XxErrors: wrapperspb.UInt32(7)},
		}
	})
	outlier7 := &clusterv3.OutlierDetection{Consecutive_5Xx: wrapperspb.UInt32(7), EnforcingConsecutive_5Xx: wrapperspb.UInt32(100), EnforcingSuccessRate: wrapperspb.UInt32(0)}
	cases := []struct {
		name      string
		rule      *index.ConsolidatedRule
		maxConns  uint32
		connLayer provenance.Layer
		connField string
		diags     []string
	}{
		{name: "no DestinationRule: both baseline blocks apply", maxConns: 33,
			connLayer: provenance.LayerMeshDefaultTrafficPolicy, connField: "defaultTrafficPolicy.connectionPool.tcp.maxConnections"},
		{name: "DestinationRule without trafficPolicy: both baseline blocks apply",
			rule: rule(&networking.DestinationRule{Host: fooHost}), maxConns: 33,
			connLayer: provenance.LayerMeshDefaultTrafficPolicy, connField: "defaultTrafficPolicy.connectionPool.tcp.maxConnections"},
		{name: "a DestinationRule connectionPool replaces the baseline block whole, outlierDetection stays",
			rule:     rule(&networking.DestinationRule{Host: fooHost, TrafficPolicy: &networking.TrafficPolicy{ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 99}}}}),
			maxConns: 99, connLayer: provenance.LayerDestinationRule, connField: "spec.trafficPolicy.connectionPool.tcp.maxConnections",
			diags: []string{"D25"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := build(t, in(fooService(), httpPort, tc.rule, mesh), "outbound|8080||"+fooHost)
			want := edsCluster(httpPort, "")
			if tc.rule != nil {
				withRule(want, "")
			}
			want.CircuitBreakers.Thresholds[0].MaxConnections = wrapperspb.UInt32(tc.maxConns)
			want.OutlierDetection = clone(outlier7)
			requireCluster(t, want, b.Cluster)
			requireOrigin(t, b, pCB+".maxConnections", tc.connLayer, tc.connField)
			requireOrigin(t, b, "outlierDetection.consecutive5xx", provenance.LayerMeshDefaultTrafficPolicy, "defaultTrafficPolicy.outlierDetection.consecutive5xxErrors")
			requireOrigin(t, b, "commonLbConfig.healthyPanicThreshold", provenance.LayerMeshDefaultTrafficPolicy, "defaultTrafficPolicy.outlierDetection.minHealthPercent")
			if got := diagIDs(b); strings.Join(got, ",") != strings.Join(tc.diags, ",") {
				t.Errorf("diagnostics %v, want %v", got, tc.diags)
			}
			if tc.connLayer == provenance.LayerDestinationRule {
				tr := trace(t, b, pCB+".maxConnections")
				var dropped *provenance.Shadow
				for i := range tr.Shadowed {
					if tr.Shadowed[i].Origin.Layer == provenance.LayerMeshDefaultTrafficPolicy {
						dropped = &tr.Shadowed[i]
					}
				}
				if dropped == nil || dropped.Value != "33" || !strings.HasPrefix(dropped.Reason, "dropped: ") {
					t.Errorf("the mesh baseline 33 should be a dropped shadow: %+v", tr.Shadowed)
				}
			}
		})
	}
}

// A15: cluster_test.go TestBuildSidecarClustersWithMeshWideTCPKeepalive.
func TestTCPKeepaliveMergesMeshAndDestinationRuleFieldByField(t *testing.T) {
	cases := []struct {
		name   string
		mesh   *networking.ConnectionPoolSettings_TCPSettings_TcpKeepalive
		dr     *networking.ConnectionPoolSettings_TCPSettings_TcpKeepalive
		want   *corev3.TcpKeepalive
		origin provenance.Layer
	}{
		{name: "neither mesh nor DestinationRule: no keepalive"},
		{name: "mesh only", mesh: &networking.ConnectionPoolSettings_TCPSettings_TcpKeepalive{Time: dur(11 * time.Second)},
			want: &corev3.TcpKeepalive{KeepaliveTime: wrapperspb.UInt32(11)}, origin: provenance.LayerMeshConfig},
		{name: "DestinationRule time overrides mesh time", mesh: &networking.ConnectionPoolSettings_TCPSettings_TcpKeepalive{Time: dur(11 * time.Second)},
			dr:   &networking.ConnectionPoolSettings_TCPSettings_TcpKeepalive{Time: dur(21 * time.Second)},
			want: &corev3.TcpKeepalive{KeepaliveTime: wrapperspb.UInt32(21)}, origin: provenance.LayerSubsetPortLevel},
		{name: "an empty DestinationRule keepalive keeps the mesh time", mesh: &networking.ConnectionPoolSettings_TCPSettings_TcpKeepalive{Time: dur(11 * time.Second)},
			dr:   &networking.ConnectionPoolSettings_TCPSettings_TcpKeepalive{},
			want: &corev3.TcpKeepalive{KeepaliveTime: wrapperspb.UInt32(11)}, origin: provenance.LayerMeshConfig},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mesh := meshConfig(func(m *meshv1alpha1.MeshConfig) { m.TcpKeepalive = tc.mesh })
			entry := &networking.TrafficPolicy_PortTrafficPolicy{Port: &networking.PortSelector{Number: 8080}}
			if tc.dr != nil {
				entry.ConnectionPool = &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{TcpKeepalive: tc.dr}}
			}
			r := rule(&networking.DestinationRule{Host: fooHost, Subsets: []*networking.Subset{{Name: "foobar", Labels: map[string]string{"foo": "bar"},
				TrafficPolicy: &networking.TrafficPolicy{PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{entry}}}}})
			b := build(t, in(fooService(), httpPort, r, mesh), "outbound|8080|foobar|"+fooHost)
			want := withRule(edsCluster(httpPort, "foobar"), "foobar")
			if tc.want != nil {
				want.UpstreamConnectionOptions = &clusterv3.UpstreamConnectionOptions{TcpKeepalive: tc.want}
			}
			requireCluster(t, want, b.Cluster)
			if tc.want != nil {
				if got := trace(t, b, pKeepalive+".keepaliveTime").Origin.Layer; got != tc.origin {
					t.Errorf("keepaliveTime layer %s, want %s", got, tc.origin)
				}
			}
		})
	}
}

// A23: cluster_builder_test.go TestApplyDestinationRule retry-budget cases.
func TestRetryBudget(t *testing.T) {
	cases := []struct {
		name   string
		budget *networking.TrafficPolicy_RetryBudget
		want   *clusterv3.CircuitBreakers_Thresholds_RetryBudget
	}{
		{name: "empty retryBudget gets Istio's 20% and 3", budget: &networking.TrafficPolicy_RetryBudget{},
			want: &clusterv3.CircuitBreakers_Thresholds_RetryBudget{BudgetPercent: &typev3.Percent{Value: 20}, MinRetryConcurrency: wrapperspb.UInt32(3)}},
		{name: "every retryBudget field is copied",
			budget: &networking.TrafficPolicy_RetryBudget{Percent: wrapperspb.Double(0.3), BudgetInterval: dur(10 * time.Second), MinRetryConcurrency: 4},
			want:   &clusterv3.CircuitBreakers_Thresholds_RetryBudget{BudgetPercent: &typev3.Percent{Value: 0.3}, BudgetInterval: dur(10 * time.Second), MinRetryConcurrency: wrapperspb.UInt32(4)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rule(&networking.DestinationRule{Host: fooHost, Subsets: []*networking.Subset{{Name: "foobar", Labels: map[string]string{"foo": "bar"},
				TrafficPolicy: &networking.TrafficPolicy{RetryBudget: tc.budget,
					ConnectionPool: &networking.ConnectionPoolSettings{Http: &networking.ConnectionPoolSettings_HTTPSettings{MaxRetries: 10}}}}}})
			b := build(t, in(fooService(), httpPort, r, meshConfig(nil)), "outbound|8080|foobar|"+fooHost)
			want := withRule(edsCluster(httpPort, "foobar"), "foobar")
			want.CircuitBreakers.Thresholds[0].MaxRetries = wrapperspb.UInt32(10)
			want.CircuitBreakers.Thresholds[0].RetryBudget = tc.want
			requireCluster(t, want, b.Cluster)
			requireOrigin(t, b, pCB+".maxRetries", provenance.LayerSubset, "spec.subsets[name=foobar].trafficPolicy.connectionPool.http.maxRetries")
			// The default cluster keeps Istio's maximum: subset policy applies to the subset only.
			def := build(t, in(fooService(), httpPort, r, meshConfig(nil)), "outbound|8080||"+fooHost)
			requireCluster(t, withRule(edsCluster(httpPort, ""), ""), def.Cluster)
		})
	}
}
