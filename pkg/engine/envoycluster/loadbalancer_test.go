package envoycluster

import (
	"slices"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// A5: cluster_test.go TestApplyOutlierDetection, TestDisablePanicThresholdAsDefault.
func TestOutlierDetectionMapping(t *testing.T) {
	cases := []struct {
		name  string
		od    *networking.OutlierDetection
		want  *clusterv3.OutlierDetection
		panic float64
		diags []string
	}{
		{name: "an empty block only disables success-rate ejection", od: &networking.OutlierDetection{},
			want: &clusterv3.OutlierDetection{EnforcingSuccessRate: wrapperspb.UInt32(0)}, diags: []string{"D24"}},
		{name: "consecutive 5xx and gateway errors are enforced at 100%",
			od: &networking.OutlierDetection{Consecutive_5XxErrors: wrapperspb.UInt32(4), ConsecutiveGatewayErrors: wrapperspb.UInt32(3)},
			want: &clusterv3.OutlierDetection{Consecutive_5Xx: wrapperspb.UInt32(4), EnforcingConsecutive_5Xx: wrapperspb.UInt32(100),
				ConsecutiveGatewayFailure: wrapperspb.UInt32(3), EnforcingConsecutiveGatewayFailure: wrapperspb.UInt32(100), EnforcingSuccessRate: wrapperspb.UInt32(0)}},
		{name: "consecutive5xxErrors 0 turns 5xx ejection off",
			od:   &networking.OutlierDetection{Consecutive_5XxErrors: wrapperspb.UInt32(0)},
			want: &clusterv3.OutlierDetection{Consecutive_5Xx: wrapperspb.UInt32(0), EnforcingConsecutive_5Xx: wrapperspb.UInt32(0), EnforcingSuccessRate: wrapperspb.UInt32(0)}},
		{name: "split local-origin errors",
			od: &networking.OutlierDetection{SplitExternalLocalOriginErrors: true, ConsecutiveLocalOriginFailures: wrapperspb.UInt32(10)},
			want: &clusterv3.OutlierDetection{SplitExternalLocalOriginErrors: true, ConsecutiveLocalOriginFailure: wrapperspb.UInt32(10),
				EnforcingConsecutiveLocalOriginFailure: wrapperspb.UInt32(100), EnforcingLocalOriginSuccessRate: wrapperspb.UInt32(0), EnforcingSuccessRate: wrapperspb.UInt32(0)},
			diags: []string{"D24"}},
		{name: "interval, ejection time and percent are copied; minHealthPercent is the panic threshold",
			od: &networking.OutlierDetection{Consecutive_5XxErrors: wrapperspb.UInt32(5), Interval: dur(time.Second), BaseEjectionTime: dur(time.Minute),
				MaxEjectionPercent: 30, MinHealthPercent: 10},
			want: &clusterv3.OutlierDetection{Consecutive_5Xx: wrapperspb.UInt32(5), EnforcingConsecutive_5Xx: wrapperspb.UInt32(100),
				Interval: dur(time.Second), BaseEjectionTime: dur(time.Minute), MaxEjectionPercent: wrapperspb.UInt32(30), EnforcingSuccessRate: wrapperspb.UInt32(0)},
			panic: 10},
		// A6: this istiod version does not read outlierDetectionHttpErrorCodes (no error_matcher).
		{name: "outlierDetectionHttpErrorCodes is ignored by this istiod version",
			od:    &networking.OutlierDetection{Consecutive_5XxErrors: wrapperspb.UInt32(3), OutlierDetectionHttpErrorCodes: []uint32{429, 503}},
			want:  &clusterv3.OutlierDetection{Consecutive_5Xx: wrapperspb.UInt32(3), EnforcingConsecutive_5Xx: wrapperspb.UInt32(100), EnforcingSuccessRate: wrapperspb.UInt32(0)},
			diags: []string{"D24"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rule(&networking.DestinationRule{Host: fooHost, TrafficPolicy: &networking.TrafficPolicy{OutlierDetection: tc.od}})
			b := build(t, in(fooService(), httpPort, r, meshConfig(nil)), "outbound|8080||"+fooHost)
			want := withRule(edsCluster(httpPort, ""), "")
			want.OutlierDetection = tc.want
			want.CommonLbConfig.HealthyPanicThreshold = &typev3.Percent{Value: tc.panic}
			requireCluster(t, want, b.Cluster)
			if !slices.Equal(diagIDs(b), tc.diags) {
				t.Errorf("diagnostics %v, want %v", b.Diagnostics, tc.diags)
			}
			requireOrigin(t, b, "commonLbConfig.healthyPanicThreshold", provenance.LayerDestinationRule, "spec.trafficPolicy.outlierDetection.minHealthPercent")
			if tc.od.Consecutive_5XxErrors == nil {
				if tr := trace(t, b, "outlierDetection.consecutive5xx"); !tr.NotSent || tr.Value != "5" {
					t.Errorf("unset consecutive5xxErrors should trace Envoy's 5 as not sent: %+v", tr)
				}
			}
		})
	}
}

// A24 (panic threshold part): cluster_test.go TestSidecarLocalityLB.
func TestPanicThresholdFromMinHealthPercent(t *testing.T) {
	r := rule(&networking.DestinationRule{Host: fooHost, TrafficPolicy: &networking.TrafficPolicy{
		OutlierDetection: &networking.OutlierDetection{MinHealthPercent: 10}}})
	b := build(t, in(fooService(), httpPort, r, meshConfig(nil)), "outbound|8080||"+fooHost)
	if got := b.Cluster.GetCommonLbConfig().GetHealthyPanicThreshold().GetValue(); got != 10 {
		t.Fatalf("panic threshold %v, want 10", got)
	}
	// A service with a traffic distribution forces unhealthy endpoints, hence panic threshold 0.
	svc := fooService()
	svc.TrafficDistribution = "PreferSameZone"
	b = build(t, in(svc, httpPort, r, meshConfig(nil)), "outbound|8080||"+fooHost)
	if got := b.Cluster.GetCommonLbConfig().GetHealthyPanicThreshold().GetValue(); got != 0 {
		t.Fatalf("panic threshold %v, want 0 with a traffic distribution", got)
	}
	// With the traffic distribution, failover is forced: locality weighted LB is configured.
	if b.Cluster.GetCommonLbConfig().GetLocalityWeightedLbConfig() == nil {
		t.Errorf("PreferSameZone should configure locality_weighted_lb_config")
	}
}

// A7: TestApplyRingHashLoadBalancer, TestBuildGatewayClustersWithRingHashLb.
// A8: TestWarmup, TestSlowStartConfig. cluster_traffic_policy.go applyLoadBalancer.
func TestLoadBalancerMapping(t *testing.T) {
	slow := func(window time.Duration, minw, aggr float64) *clusterv3.Cluster_SlowStartConfig {
		return &clusterv3.Cluster_SlowStartConfig{SlowStartWindow: dur(window), MinWeightPercent: &typev3.Percent{Value: minw},
			Aggression: &corev3.RuntimeDouble{DefaultValue: aggr, RuntimeKey: "("}}
	}
	warmup := &networking.WarmupConfiguration{Duration: dur(60 * time.Second), MinimumPercent: wrapperspb.Double(2), Aggression: wrapperspb.Double(5.5)}
	hash := func(h *networking.LoadBalancerSettings_ConsistentHashLB) *networking.LoadBalancerSettings {
		return &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{ConsistentHash: h}}
	}
	cookie := &networking.LoadBalancerSettings_ConsistentHashLB_HttpCookie{HttpCookie: &networking.LoadBalancerSettings_ConsistentHashLB_HTTPCookie{Name: "hash-cookie", Ttl: dur(0)}}
	simple := func(s networking.LoadBalancerSettings_SimpleLB) *networking.LoadBalancerSettings {
		return &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: s}}
	}
	withWarmup := func(lb *networking.LoadBalancerSettings, w *networking.WarmupConfiguration) *networking.LoadBalancerSettings {
		lb.Warmup = w
		return lb
	}
	cases := []struct {
		name   string
		lb     *networking.LoadBalancerSettings
		policy clusterv3.Cluster_LbPolicy
		config func(*clusterv3.Cluster)
	}{
		{name: "ROUND_ROBIN", lb: simple(networking.LoadBalancerSettings_ROUND_ROBIN), policy: clusterv3.Cluster_ROUND_ROBIN},
		{name: "RANDOM", lb: simple(networking.LoadBalancerSettings_RANDOM), policy: clusterv3.Cluster_RANDOM},
		{name: "LEAST_CONN is LEAST_REQUEST", lb: simple(networking.LoadBalancerSettings_LEAST_CONN), policy: clusterv3.Cluster_LEAST_REQUEST},
		{name: "consistent hash with the deprecated minimumRingSize 0 sends ring size 1024",
			lb: hash(&networking.LoadBalancerSettings_ConsistentHashLB{HashKey: cookie}), policy: clusterv3.Cluster_RING_HASH,
			config: func(c *clusterv3.Cluster) {
				c.LbConfig = &clusterv3.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterv3.Cluster_RingHashLbConfig{MinimumRingSize: wrapperspb.UInt64(1024)}}
			}},
		{name: "consistent hash with the deprecated minimumRingSize 2",
			lb: hash(&networking.LoadBalancerSettings_ConsistentHashLB{HashKey: cookie, MinimumRingSize: 2}), policy: clusterv3.Cluster_RING_HASH,
			config: func(c *clusterv3.Cluster) {
				c.LbConfig = &clusterv3.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterv3.Cluster_RingHashLbConfig{MinimumRingSize: wrapperspb.UInt64(2)}}
			}},
		{name: "maglev without table size has no lb config",
			lb:     hash(&networking.LoadBalancerSettings_ConsistentHashLB{HashKey: cookie, HashAlgorithm: &networking.LoadBalancerSettings_ConsistentHashLB_Maglev{Maglev: &networking.LoadBalancerSettings_ConsistentHashLB_MagLev{}}}),
			policy: clusterv3.Cluster_MAGLEV},
		{name: "maglev table size",
			lb:     hash(&networking.LoadBalancerSettings_ConsistentHashLB{HashKey: cookie, HashAlgorithm: &networking.LoadBalancerSettings_ConsistentHashLB_Maglev{Maglev: &networking.LoadBalancerSettings_ConsistentHashLB_MagLev{TableSize: 1000003}}}),
			policy: clusterv3.Cluster_MAGLEV,
			config: func(c *clusterv3.Cluster) {
				c.LbConfig = &clusterv3.Cluster_MaglevLbConfig_{MaglevLbConfig: &clusterv3.Cluster_MaglevLbConfig{TableSize: wrapperspb.UInt64(1000003)}}
			}},
		{name: "ringHash without size has no lb config",
			lb:     hash(&networking.LoadBalancerSettings_ConsistentHashLB{HashKey: cookie, HashAlgorithm: &networking.LoadBalancerSettings_ConsistentHashLB_RingHash_{RingHash: &networking.LoadBalancerSettings_ConsistentHashLB_RingHash{}}}),
			policy: clusterv3.Cluster_RING_HASH},
		{name: "ringHash minimumRingSize wins over the deprecated field",
			lb: hash(&networking.LoadBalancerSettings_ConsistentHashLB{HashKey: cookie, MinimumRingSize: 1000,
				HashAlgorithm: &networking.LoadBalancerSettings_ConsistentHashLB_RingHash_{RingHash: &networking.LoadBalancerSettings_ConsistentHashLB_RingHash{MinimumRingSize: 10}}}),
			policy: clusterv3.Cluster_RING_HASH,
			config: func(c *clusterv3.Cluster) {
				c.LbConfig = &clusterv3.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterv3.Cluster_RingHashLbConfig{MinimumRingSize: wrapperspb.UInt64(10)}}
			}},
		{name: "ROUND_ROBIN with warmup", lb: withWarmup(simple(networking.LoadBalancerSettings_ROUND_ROBIN), warmup), policy: clusterv3.Cluster_ROUND_ROBIN,
			config: func(c *clusterv3.Cluster) {
				c.LbConfig = &clusterv3.Cluster_RoundRobinLbConfig_{RoundRobinLbConfig: &clusterv3.Cluster_RoundRobinLbConfig{SlowStartConfig: slow(60*time.Second, 2, 5.5)}}
			}},
		{name: "LEAST_REQUEST with warmup", lb: withWarmup(simple(networking.LoadBalancerSettings_LEAST_REQUEST), warmup), policy: clusterv3.Cluster_LEAST_REQUEST,
			config: func(c *clusterv3.Cluster) {
				c.LbConfig = &clusterv3.Cluster_LeastRequestLbConfig_{LeastRequestLbConfig: &clusterv3.Cluster_LeastRequestLbConfig{SlowStartConfig: slow(60*time.Second, 2, 5.5)}}
			}},
		{name: "warmup duration only gets Istio's 10% and linear aggression",
			lb:     withWarmup(simple(networking.LoadBalancerSettings_ROUND_ROBIN), &networking.WarmupConfiguration{Duration: dur(30 * time.Second)}),
			policy: clusterv3.Cluster_ROUND_ROBIN,
			config: func(c *clusterv3.Cluster) {
				c.LbConfig = &clusterv3.Cluster_RoundRobinLbConfig_{RoundRobinLbConfig: &clusterv3.Cluster_RoundRobinLbConfig{SlowStartConfig: slow(30*time.Second, 10, 1)}}
			}},
		{name: "warmup without a simple policy slows the default LEAST_REQUEST",
			lb: &networking.LoadBalancerSettings{Warmup: warmup}, policy: clusterv3.Cluster_LEAST_REQUEST,
			config: func(c *clusterv3.Cluster) {
				c.LbConfig = &clusterv3.Cluster_LeastRequestLbConfig_{LeastRequestLbConfig: &clusterv3.Cluster_LeastRequestLbConfig{SlowStartConfig: slow(60*time.Second, 2, 5.5)}}
			}},
		{name: "RANDOM ignores warmup", lb: withWarmup(simple(networking.LoadBalancerSettings_RANDOM), warmup), policy: clusterv3.Cluster_RANDOM},
		{name: "deprecated warmupDurationSecs sets only the window",
			lb:     &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_ROUND_ROBIN}, WarmupDurationSecs: dur(15 * time.Second)},
			policy: clusterv3.Cluster_ROUND_ROBIN,
			config: func(c *clusterv3.Cluster) {
				c.LbConfig = &clusterv3.Cluster_RoundRobinLbConfig_{RoundRobinLbConfig: &clusterv3.Cluster_RoundRobinLbConfig{SlowStartConfig: &clusterv3.Cluster_SlowStartConfig{SlowStartWindow: dur(15 * time.Second)}}}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rule(&networking.DestinationRule{Host: fooHost, TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: tc.lb}})
			b := build(t, in(fooService(), httpPort, r, meshConfig(nil)), "outbound|8080||"+fooHost)
			want := withRule(edsCluster(httpPort, ""), "")
			want.LbPolicy = tc.policy
			if tc.config != nil {
				tc.config(want)
			}
			requireCluster(t, want, b.Cluster)
			wantLayer := provenance.LayerIstioDefault
			if tc.lb.GetLbPolicy() != nil {
				wantLayer = provenance.LayerDestinationRule
			}
			if got := trace(t, b, "lbPolicy").Origin.Layer; got != wantLayer {
				t.Errorf("lbPolicy layer %s, want %s", got, wantLayer)
			}
		})
	}
}

// A9: cluster_test.go TestClusterDiscoveryTypeAndLbPolicyPassthrough, …RoundRobin.
func TestPassthroughAndHeadless(t *testing.T) {
	passthrough := rule(&networking.DestinationRule{Host: fooHost, TrafficPolicy: &networking.TrafficPolicy{
		LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_PASSTHROUGH}}}})
	b := build(t, in(fooService(), httpPort, passthrough, meshConfig(nil)), "outbound|8080||"+fooHost)
	want := withRule(edsCluster(httpPort, ""), "")
	want.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_ORIGINAL_DST}
	want.LbPolicy = clusterv3.Cluster_CLUSTER_PROVIDED
	want.EdsClusterConfig = nil
	requireCluster(t, want, b.Cluster)
	requireOrigin(t, b, "type", provenance.LayerDestinationRule, "spec.trafficPolicy.loadBalancer.simple")
	if !slices.Contains(diagIDs(b), "D29") {
		t.Errorf("PASSTHROUGH on a ClusterIP service should report D29: %v", b.Diagnostics)
	}

	headless := fooService()
	headless.Resolution = index.Passthrough
	rr := rule(&networking.DestinationRule{Host: fooHost, TrafficPolicy: &networking.TrafficPolicy{
		LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_ROUND_ROBIN}}}})
	b = build(t, in(headless, httpPort, rr, meshConfig(nil)), "outbound|8080||"+fooHost)
	requireCluster(t, want, b.Cluster)
	requireOrigin(t, b, "type", provenance.LayerRegistry, "spec.clusterIP")
}
