package envoycluster

import (
	"fmt"
	"math"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// blockOrigin is the origin of field (relative to the TrafficPolicy) of block k of the cluster's
// effective policy.
func (st *clusterState) blockOrigin(k block, field string) provenance.Origin {
	return st.b.origin(st.eff.src[k], field)
}

// applyTrafficPolicy mirrors cluster_traffic_policy.go applyTrafficPolicy for an outbound
// sidecar cluster: h2 upgrade, connection pool (with retry budget and keepalive), outlier
// detection, load balancer, TLS, proxy protocol; ORIGINAL_DST clusters end CLUSTER_PROVIDED.
func (st *clusterState) applyTrafficPolicy() {
	p := st.eff.policy
	cp := p.GetConnectionPool()
	if cp == nil {
		cp = &networking.ConnectionPoolSettings{}
	}
	st.applyH2Upgrade(cp)
	st.applyConnectionPool(cp, p.GetRetryBudget())
	st.applyOutlierDetection(p.GetOutlierDetection())
	st.applyLoadBalancer(p.GetLoadBalancer())
	st.applyTLS(p.GetTls(), p.GetProxyProtocol())
	if st.c.GetType() == clusterv3.Cluster_ORIGINAL_DST {
		st.c.LbPolicy = clusterv3.Cluster_CLUSTER_PROVIDED
		o := istioDefault("ORIGINAL_DST clusters pick the original destination")
		if t, ok := st.rec.Get("type"); ok {
			o = withNote(t.Origin, "ORIGINAL_DST clusters pick the original destination")
		}
		st.set("lbPolicy", "CLUSTER_PROVIDED", o)
	}
	st.policyDiagnostics()
}

func withNote(o provenance.Origin, note string) provenance.Origin {
	o.Note = note
	return o
}

// shouldH2Upgrade mirrors cluster_traffic_policy.go shouldH2Upgrade.
func (st *clusterState) shouldH2Upgrade(cp *networking.ConnectionPoolSettings) (bool, provenance.Origin) {
	if h := cp.GetHttp(); h != nil {
		if h.UseClientProtocol {
			return false, provenance.Origin{}
		}
		switch h.H2UpgradePolicy {
		case networking.ConnectionPoolSettings_HTTPSettings_UPGRADE:
			return true, st.blockOrigin(bConnectionPool, "connectionPool.http.h2UpgradePolicy")
		case networking.ConnectionPoolSettings_HTTPSettings_DO_NOT_UPGRADE:
			return false, provenance.Origin{}
		}
	}
	if !isHTTP(st.b.in.Port.Protocol) {
		return false, provenance.Origin{}
	}
	if st.b.mesh.GetH2UpgradePolicy() == meshv1alpha1.MeshConfig_UPGRADE {
		return true, st.b.meshOrigin("h2UpgradePolicy")
	}
	return false, provenance.Origin{}
}

// applyH2Upgrade mirrors cluster_traffic_policy.go applyH2Upgrade.
func (st *clusterState) applyH2Upgrade(cp *networking.ConnectionPoolSettings) {
	up, o := st.shouldH2Upgrade(cp)
	if !up {
		return
	}
	proto := st.b.in.Port.Protocol
	fromDR := cp.GetHttp().GetH2UpgradePolicy() == networking.ConnectionPoolSettings_HTTPSettings_UPGRADE
	if fromDR && !isHTTP(proto) {
		st.d.add(diag.H2UpgradeOnNonHTTPPort.New(
			fmt.Sprintf("%s sets h2UpgradePolicy UPGRADE on port %d, whose protocol is %s: cluster %s speaks HTTP/2 to the upstream whatever the traffic is", st.eff.src[bConnectionPool].title(), st.b.in.Port.Number, protoName(proto), st.c.Name),
			"set UPGRADE only for ports that carry HTTP, or name the port (http-…) so the protocol is known",
			refsOf(st.eff.src[bConnectionPool].ref)...))
	}
	if !st.setH2Options(o) {
		st.d.add(diag.HTTP2SettingsWithoutEffect.New(
			fmt.Sprintf("h2 upgrade is decided for cluster %s but has no effect: the cluster already uses %s", st.c.Name, st.protocolChoice()),
			"name the port with an HTTP protocol, or set connectionPool.http.useClientProtocol instead",
			refsOf(o.Resource)...))
	}
}

func protoName(p index.Protocol) string {
	if isAuto(p) {
		return "auto-detected"
	}
	return string(p)
}

func (st *clusterState) protocolChoice() string {
	switch {
	case st.hpo.GetUseDownstreamProtocolConfig() != nil:
		return "the downstream protocol (unnamed port)"
	case st.hpo.GetExplicitHttpConfig().GetHttpProtocolOptions() != nil:
		return "explicit HTTP/1.1 options (preserveHttp1HeaderCase)"
	default:
		return "an explicit protocol"
	}
}

// applyConnectionPool mirrors cluster_traffic_policy.go applyConnectionPool: the circuit
// breaker thresholds, the connect timeout, TCP keepalive, then the settings that land in the
// HTTP protocol options.
func (st *clusterState) applyConnectionPool(cp *networking.ConnectionPoolSettings, rb *networking.TrafficPolicy_RetryBudget) {
	// The thresholds are built on the stack and kept once per host and pair of blocks
	// (circuitBreakers).
	var thresholds clusterv3.CircuitBreakers_Thresholds
	th := &thresholds
	st.defaultThresholds(th)
	st.applyRetryBudget(th, rb)
	st.applyHTTPThresholds(th, cp.GetHttp())
	st.applyConnectTimeout(cp.GetTcp())
	if t := cp.GetTcp(); t != nil && t.MaxConnections > 0 {
		st.setU32(&th.MaxConnections, pCB+".maxConnections", uint32(t.MaxConnections), st.blockOrigin(bConnectionPool, "connectionPool.tcp.maxConnections"))
	}
	st.applyTCPKeepalive(cp.GetTcp())
	st.c.CircuitBreakers = st.b.in.shared.circuitBreakers(cp, rb, th)
	st.applyHTTPProtocolOptions(st.httpPoolSettings(cp))
	if cp.GetHttp().GetUseClientProtocol() {
		st.applyUseClientProtocol()
	}
}

// defaultThresholds writes getDefaultCircuitBreakerThresholds into th: every outbound cluster
// carries one DEFAULT-priority threshold with Istio's maxima; the HIGH priority is never
// configured.
func (st *clusterState) defaultThresholds(th *clusterv3.CircuitBreakers_Thresholds) {
	def := istioDefault("Istio raises Envoy's circuit-breaker defaults (getDefaultCircuitBreakerThresholds)")
	st.setU32(&th.MaxConnections, pCB+".maxConnections", math.MaxUint32, def)
	st.setU32(&th.MaxPendingRequests, pCB+".maxPendingRequests", math.MaxUint32, def)
	st.setU32(&th.MaxRequests, pCB+".maxRequests", math.MaxUint32, def)
	st.setU32(&th.MaxRetries, pCB+".maxRetries", math.MaxUint32, withNote(def, "Envoy's own default is 3, too low during pod churn (getDefaultCircuitBreakerThresholds)"))
	st.setBool(&th.TrackRemaining, pCB+".trackRemaining", !st.b.flags.DisableTrackRemainingCBMetrics,
		flagOrigin("DISABLE_TRACK_REMAINING_CB_METRICS", "track_remaining = !flag"))
	if !st.scratch {
		st.notSent("circuitBreakers.thresholds[1]", "HIGH priority: maxConnections 1024, maxPendingRequests 1024, maxRequests 1024, maxRetries 3",
			envoyDefault("istiod configures only the DEFAULT priority; HIGH priority routes get Envoy's limits"))
	}
}

// applyHTTPThresholds writes the thresholds connectionPool.http sets. A value of 0 cannot be
// told from unset: istiod keeps its default.
func (st *clusterState) applyHTTPThresholds(th *clusterv3.CircuitBreakers_Thresholds, h *networking.ConnectionPoolSettings_HTTPSettings) {
	if h == nil {
		return
	}
	if h.Http2MaxRequests > 0 {
		st.setU32(&th.MaxRequests, pCB+".maxRequests", uint32(h.Http2MaxRequests), st.blockOrigin(bConnectionPool, "connectionPool.http.http2MaxRequests"))
	}
	if h.Http1MaxPendingRequests > 0 {
		st.setU32(&th.MaxPendingRequests, pCB+".maxPendingRequests", uint32(h.Http1MaxPendingRequests), st.blockOrigin(bConnectionPool, "connectionPool.http.http1MaxPendingRequests"))
	}
	if h.MaxRetries > 0 {
		st.setU32(&th.MaxRetries, pCB+".maxRetries", uint32(h.MaxRetries), st.blockOrigin(bConnectionPool, "connectionPool.http.maxRetries"))
	}
}

// applyConnectTimeout mirrors applyDefaultConnectionPool: the connect timeout starts from
// MeshConfig, and connectionPool.tcp.connectTimeout overrides it. The messages are shared with
// the inputs: clusters are never written to once built.
func (st *clusterState) applyConnectTimeout(t *networking.ConnectionPoolSettings_TCPSettings) {
	if ct := st.b.mesh.GetConnectTimeout(); ct != nil {
		st.setDuration(&st.c.ConnectTimeout, "connectTimeout", ct, st.b.meshOrigin("connectTimeout"))
	}
	if t.GetConnectTimeout() != nil {
		st.setDuration(&st.c.ConnectTimeout, "connectTimeout", t.ConnectTimeout, st.blockOrigin(bConnectionPool, "connectionPool.tcp.connectTimeout"))
	}
}

// httpPoolSettings are the connection-pool fields that land in HttpProtocolOptions.
type httpPoolSettings struct {
	idle            *durationpb.Duration
	idleOrigin      provenance.Origin
	maxReqPerConn   uint32
	maxStreams      uint32
	maxConnDuration *durationpb.Duration
	keepalive       *networking.ConnectionPoolSettings_HTTPSettings_ConnectionKeepalive
}

// any reports whether a setting creates HttpProtocolOptions.
func (s *httpPoolSettings) any() bool {
	return s.maxConnDuration != nil || s.idle != nil || s.maxReqPerConn > 0 || s.maxStreams > 0 || s.keepalive != nil
}

// httpPoolSettings gathers the fields of cp that land in HttpProtocolOptions: http.idleTimeout
// wins over tcp.idleTimeout, and zero values count as unset (istiod cannot tell them apart).
func (st *clusterState) httpPoolSettings(cp *networking.ConnectionPoolSettings) httpPoolSettings {
	var s httpPoolSettings
	if h := cp.GetHttp(); h != nil {
		s.idle = h.IdleTimeout
		if s.idle != nil {
			s.idleOrigin = st.blockOrigin(bConnectionPool, "connectionPool.http.idleTimeout")
		}
		s.maxReqPerConn = uint32(h.MaxRequestsPerConnection)
		s.maxStreams = uint32(h.MaxConcurrentStreams)
		s.keepalive = h.GetHttp2KeepAlive()
	}
	if t := cp.GetTcp(); t != nil {
		s.maxConnDuration = t.MaxConnectionDuration
		if s.idle == nil && t.IdleTimeout != nil {
			s.idle = t.IdleTimeout
			s.idleOrigin = st.blockOrigin(bConnectionPool, "connectionPool.tcp.idleTimeout")
		}
	}
	return s
}

// applyHTTPProtocolOptions writes the HTTP connection-pool settings. Any of them creates
// HttpProtocolOptions, even on a TCP port (which then gets an explicit HTTP/1.1 config in
// clusterWrapper.build); the HTTP/2-only ones are silently dropped unless the cluster is
// already explicit HTTP/2 (D21).
func (st *clusterState) applyHTTPProtocolOptions(s httpPoolSettings) {
	if !s.any() {
		return
	}
	h := st.ensureHPO()
	if h.CommonHttpProtocolOptions == nil {
		h.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{}
		st.commonHTTPFrom = withNote(st.blockOrigin(bConnectionPool, "connectionPool.http"),
			"HTTP connection-pool settings create the HTTP protocol options even when none lands in them")
	}
	common := h.CommonHttpProtocolOptions
	const pCommon = pHPO + ".commonHttpProtocolOptions"
	if s.idle != nil {
		st.setDuration(&common.IdleTimeout, pCommon+".idleTimeout", s.idle, s.idleOrigin)
	}
	if s.maxReqPerConn > 0 {
		st.setU32(&common.MaxRequestsPerConnection, pCommon+".maxRequestsPerConnection", s.maxReqPerConn, st.blockOrigin(bConnectionPool, "connectionPool.http.maxRequestsPerConnection"))
	}
	if s.maxConnDuration != nil {
		st.setDuration(&common.MaxConnectionDuration, pCommon+".maxConnectionDuration", s.maxConnDuration, st.blockOrigin(bConnectionPool, "connectionPool.tcp.maxConnectionDuration"))
	}
	h2 := h.GetExplicitHttpConfig().GetHttp2ProtocolOptions()
	if h2 == nil {
		if s.maxStreams > 0 || s.keepalive != nil {
			st.d.add(diag.HTTP2SettingsWithoutEffect.New(
				fmt.Sprintf("%s sets maxConcurrentStreams or http2KeepAlive, but cluster %s is not explicit HTTP/2, so istiod drops them", st.eff.src[bConnectionPool].title(), st.c.Name),
				"use an HTTP/2 port protocol (http2-, grpc-) or h2UpgradePolicy UPGRADE on an HTTP port",
				refsOf(st.eff.src[bConnectionPool].ref)...))
		}
		return
	}
	const pH2 = pHPO + ".explicitHttpConfig.http2ProtocolOptions"
	if s.maxStreams > 0 {
		st.setU32(&h2.MaxConcurrentStreams, pH2+".maxConcurrentStreams", s.maxStreams, st.blockOrigin(bConnectionPool, "connectionPool.http.maxConcurrentStreams"))
	}
	if ka := s.keepalive; ka != nil {
		h2.ConnectionKeepalive = &corev3.KeepaliveSettings{Interval: ka.Interval, Timeout: ka.Timeout}
		st.set(pH2+".connectionKeepalive", fmt.Sprintf("interval %s, timeout %s", fmtDuration(ka.Interval), fmtDuration(ka.Timeout)),
			st.blockOrigin(bConnectionPool, "connectionPool.http.http2KeepAlive"))
	}
}

// applyUseClientProtocol writes connectionPool.http.useClientProtocol: the cluster uses the
// downstream protocol, which replaces explicit HTTP/2 options (D21 when they had settings).
func (st *clusterState) applyUseClientProtocol() {
	if h2 := st.hpo.GetExplicitHttpConfig().GetHttp2ProtocolOptions(); h2 != nil && (h2.MaxConcurrentStreams != nil || h2.ConnectionKeepalive != nil) {
		st.d.add(diag.HTTP2SettingsWithoutEffect.New(
			fmt.Sprintf("useClientProtocol replaces the explicit HTTP/2 options of cluster %s, dropping maxConcurrentStreams and http2KeepAlive", st.c.Name),
			"drop useClientProtocol or the HTTP/2 settings",
			refsOf(st.eff.src[bConnectionPool].ref)...))
	}
	st.setUseDownstreamProtocol(st.blockOrigin(bConnectionPool, "connectionPool.http.useClientProtocol"))
}

// applyRetryBudget mirrors cluster_traffic_policy.go applyRetryBudget.
func (st *clusterState) applyRetryBudget(th *clusterv3.CircuitBreakers_Thresholds, rb *networking.TrafficPolicy_RetryBudget) {
	if rb == nil {
		return
	}
	percent := 20.0
	pOrigin := istioDefault("retryBudget.percent unset: Istio uses 20%")
	if rb.Percent != nil {
		percent = rb.Percent.Value
		pOrigin = st.blockOrigin(bRetryBudget, "retryBudget.percent")
	}
	conc := uint32(3)
	cOrigin := istioDefault("retryBudget.minRetryConcurrency unset: Istio uses 3")
	if rb.MinRetryConcurrency > 0 {
		conc = rb.MinRetryConcurrency
		cOrigin = st.blockOrigin(bRetryBudget, "retryBudget.minRetryConcurrency")
	}
	budget := &clusterv3.CircuitBreakers_Thresholds_RetryBudget{}
	th.RetryBudget = budget
	st.setPercent(&budget.BudgetPercent, pCB+".retryBudget.budgetPercent", percent, pOrigin)
	st.setU32(&budget.MinRetryConcurrency, pCB+".retryBudget.minRetryConcurrency", conc, cOrigin)
	if rb.BudgetInterval != nil {
		st.setDuration(&budget.BudgetInterval, pCB+".retryBudget.budgetInterval", rb.BudgetInterval, st.blockOrigin(bRetryBudget, "retryBudget.budgetInterval"))
	}
}

// applyTCPKeepalive mirrors cluster.go applyTCPKeepalive: MeshConfig tcpKeepalive first, then the
// effective connectionPool.tcp.tcpKeepalive field by field.
func (st *clusterState) applyTCPKeepalive(tcp *networking.ConnectionPoolSettings_TCPSettings) {
	st.setKeepalive(st.b.mesh.GetTcpKeepalive(), func(f string) provenance.Origin { return st.b.meshOrigin("tcpKeepalive" + f) })
	if tcp != nil {
		st.setKeepalive(tcp.TcpKeepalive, func(f string) provenance.Origin {
			return st.blockOrigin(bConnectionPool, "connectionPool.tcp.tcpKeepalive"+f)
		})
	}
}

// setKeepalive mirrors cluster.go setKeepAliveSettings.
func (st *clusterState) setKeepalive(ka *networking.ConnectionPoolSettings_TCPSettings_TcpKeepalive, origin func(string) provenance.Origin) {
	if ka == nil {
		return
	}
	c := st.c
	if c.UpstreamConnectionOptions == nil {
		c.UpstreamConnectionOptions = &clusterv3.UpstreamConnectionOptions{TcpKeepalive: &corev3.TcpKeepalive{}}
		st.set(pKeepalive, "{} (SO_KEEPALIVE on; unset fields use the OS defaults)", origin(""))
	}
	k := c.UpstreamConnectionOptions.TcpKeepalive
	if ka.Probes > 0 {
		st.setU32(&k.KeepaliveProbes, pKeepalive+".keepaliveProbes", ka.Probes, origin(".probes"))
	}
	if ka.Time != nil {
		st.setU32(&k.KeepaliveTime, pKeepalive+".keepaliveTime", uint32(ka.Time.Seconds), withSecondsNote(origin(".time"), ka.Time))
	}
	if ka.Interval != nil {
		st.setU32(&k.KeepaliveInterval, pKeepalive+".keepaliveInterval", uint32(ka.Interval.Seconds), withSecondsNote(origin(".interval"), ka.Interval))
	}
}

func withSecondsNote(o provenance.Origin, d *durationpb.Duration) provenance.Origin {
	if d.Nanos != 0 {
		o.Note = fmt.Sprintf("%s truncated to whole seconds", fmtDuration(d))
	}
	return o
}

// forcesUnhealthy mirrors model.Service.ForcesSupportUnhealthyEndpoints.
func (b *builder) forcesUnhealthy() (bool, provenance.Origin) {
	if b.flags.SendUnhealthyEndpoints {
		return true, flagOrigin("PILOT_SEND_UNHEALTHY_ENDPOINTS", "unhealthy endpoints are sent, so the panic threshold is disabled")
	}
	if b.in.Service.TrafficDistribution != "" {
		return true, b.registryOrigin("spec.trafficDistribution", "traffic distribution needs endpoint health, so unhealthy endpoints are sent")
	}
	return false, provenance.Origin{}
}

// applyOutlierDetection mirrors cluster_traffic_policy.go applyOutlierDetection. This istiod
// version does not read outlierDetectionHttpErrorCodes.
func (st *clusterState) applyOutlierDetection(od *networking.OutlierDetection) {
	if od == nil {
		return
	}
	// The message is built on the stack and kept once per host and block (clusters are never
	// written to once built).
	var built clusterv3.OutlierDetection
	out := &built
	// A present block (even {}) always disables success-rate ejection.
	st.setU32(&out.EnforcingSuccessRate, "outlierDetection.enforcingSuccessRate", 0, istioDefault("success-rate ejection is always disabled (applyOutlierDetection)"))
	st.applyConsecutiveErrors(od, out)
	st.applyEjection(od, out)
	if od.SplitExternalLocalOriginErrors {
		st.applyLocalOriginErrors(od, out)
	}
	st.c.OutlierDetection = st.b.in.shared.outlierDetection(od, out)
	st.applyPanicThreshold(od)
}

// odOrigin is the origin of a field (`outlierDetection.interval`) of the effective
// outlierDetection block.
func (st *clusterState) odOrigin(field string) provenance.Origin {
	return st.blockOrigin(bOutlierDetection, field)
}

// applyConsecutiveErrors writes the consecutive error counters: each is enforced at 100% when
// positive and 0% when explicitly 0.
func (st *clusterState) applyConsecutiveErrors(od *networking.OutlierDetection, out *clusterv3.OutlierDetection) {
	if e := od.Consecutive_5XxErrors; e != nil {
		v, o := e.GetValue(), st.odOrigin("outlierDetection.consecutive5xxErrors")
		st.setU32(&out.Consecutive_5Xx, "outlierDetection.consecutive5xx", v, o)
		st.setU32(&out.EnforcingConsecutive_5Xx, "outlierDetection.enforcingConsecutive5xx", enforcing(v), withNote(o, "100 when consecutive5xxErrors > 0, else 0"))
	} else if !st.scratch {
		st.notSent("outlierDetection.consecutive5xx", "5", envoyDefault("consecutive5xxErrors unset: Envoy still ejects after 5 consecutive 5xx"))
		st.notSent("outlierDetection.enforcingConsecutive5xx", "100", envoyDefault("5xx ejection is enforced by Envoy default"))
	}
	if e := od.ConsecutiveGatewayErrors; e != nil {
		v, o := e.GetValue(), st.odOrigin("outlierDetection.consecutiveGatewayErrors")
		st.setU32(&out.ConsecutiveGatewayFailure, "outlierDetection.consecutiveGatewayFailure", v, o)
		st.setU32(&out.EnforcingConsecutiveGatewayFailure, "outlierDetection.enforcingConsecutiveGatewayFailure", enforcing(v), withNote(o, "100 when consecutiveGatewayErrors > 0, else 0"))
	}
}

// enforcing is the enforcement percentage istiod pairs with a consecutive error counter.
func enforcing(v uint32) uint32 {
	if v > 0 {
		return 100
	}
	return 0
}

// applyEjection writes the interval, the base ejection time and the maximum ejection
// percentage, or the Envoy defaults that stand for them.
func (st *clusterState) applyEjection(od *networking.OutlierDetection, out *clusterv3.OutlierDetection) {
	if od.Interval != nil {
		st.setDuration(&out.Interval, "outlierDetection.interval", od.Interval, st.odOrigin("outlierDetection.interval"))
	} else if !st.scratch {
		st.notSent("outlierDetection.interval", "10s", envoyDefault(""))
	}
	if od.BaseEjectionTime != nil {
		st.setDuration(&out.BaseEjectionTime, "outlierDetection.baseEjectionTime", od.BaseEjectionTime, st.odOrigin("outlierDetection.baseEjectionTime"))
	} else if !st.scratch {
		st.notSent("outlierDetection.baseEjectionTime", "30s", envoyDefault(""))
	}
	if od.MaxEjectionPercent > 0 {
		st.setU32(&out.MaxEjectionPercent, "outlierDetection.maxEjectionPercent", uint32(od.MaxEjectionPercent), st.odOrigin("outlierDetection.maxEjectionPercent"))
	} else if !st.scratch {
		st.notSent("outlierDetection.maxEjectionPercent", "10", envoyDefault(""))
	}
}

// applyLocalOriginErrors writes splitExternalLocalOriginErrors and the local-origin counters.
func (st *clusterState) applyLocalOriginErrors(od *networking.OutlierDetection, out *clusterv3.OutlierDetection) {
	st.setBool(&out.SplitExternalLocalOriginErrors, "outlierDetection.splitExternalLocalOriginErrors", true, st.odOrigin("outlierDetection.splitExternalLocalOriginErrors"))
	if v := od.ConsecutiveLocalOriginFailures.GetValue(); v > 0 {
		o := st.odOrigin("outlierDetection.consecutiveLocalOriginFailures")
		st.setU32(&out.ConsecutiveLocalOriginFailure, "outlierDetection.consecutiveLocalOriginFailure", v, o)
		st.setU32(&out.EnforcingConsecutiveLocalOriginFailure, "outlierDetection.enforcingConsecutiveLocalOriginFailure", 100, withNote(o, "enforced when set"))
	}
	st.setU32(&out.EnforcingLocalOriginSuccessRate, "outlierDetection.enforcingLocalOriginSuccessRate", 0, istioDefault("local-origin success-rate ejection is always disabled"))
}

// applyPanicThreshold disables the panic threshold by default: minHealthPercent (0 when
// unset) is always written, and 0 when unhealthy endpoints are forced.
func (st *clusterState) applyPanicThreshold(od *networking.OutlierDetection) {
	mhp := od.MinHealthPercent
	if mhp < 0 {
		return
	}
	po := st.odOrigin("outlierDetection.minHealthPercent")
	if mhp == 0 {
		po.Note = "unset or 0: the panic threshold is disabled"
	}
	if forced, fo := st.b.forcesUnhealthy(); forced {
		mhp = 0
		po = fo
	}
	st.setPercent(&st.c.CommonLbConfig.HealthyPanicThreshold, "commonLbConfig.healthyPanicThreshold", float64(mhp), po)
}

// outlierDetection returns the host's OutlierDetection message for block od: the one made for
// an earlier cluster, or a copy of m, the message applyOutlierDetection built for it.
func (sh *hostShared) outlierDetection(od *networking.OutlierDetection, m *clusterv3.OutlierDetection) *clusterv3.OutlierDetection {
	for _, s := range sh.outliers {
		if s.in == od {
			return s.out
		}
	}
	out := copyOutlierDetection(m)
	sh.outliers = append(sh.outliers, sharedOutlier{in: od, out: out})
	return out
}

// circuitBreakers returns the host's CircuitBreakers message for the connectionPool and
// retryBudget blocks cp and rb: the one made for an earlier cluster, or one holding a copy of
// th, the thresholds applyConnectionPool built for them.
func (sh *hostShared) circuitBreakers(cp *networking.ConnectionPoolSettings, rb *networking.TrafficPolicy_RetryBudget, th *clusterv3.CircuitBreakers_Thresholds) *clusterv3.CircuitBreakers {
	for _, s := range sh.breakers {
		if s.cp == cp && s.rb == rb {
			return s.out
		}
	}
	out := &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{copyThresholds(th)}}
	sh.breakers = append(sh.breakers, sharedBreakers{cp: cp, rb: rb, out: out})
	return out
}

// copyThresholds copies every field of th into a new message, as copyOutlierDetection does.
func copyThresholds(th *clusterv3.CircuitBreakers_Thresholds) *clusterv3.CircuitBreakers_Thresholds {
	return &clusterv3.CircuitBreakers_Thresholds{
		Priority:           th.Priority,
		MaxConnections:     th.MaxConnections,
		MaxPendingRequests: th.MaxPendingRequests,
		MaxRequests:        th.MaxRequests,
		MaxRetries:         th.MaxRetries,
		RetryBudget:        th.RetryBudget,
		TrackRemaining:     th.TrackRemaining,
		MaxConnectionPools: th.MaxConnectionPools,
	}
}

// copyOutlierDetection copies every field of m into a new message (proto.Clone would move m,
// built on the caller's stack, to the heap). TestCopiesKeepEveryField fails when
// go-control-plane adds a field this leaves out.
func copyOutlierDetection(m *clusterv3.OutlierDetection) *clusterv3.OutlierDetection {
	return &clusterv3.OutlierDetection{
		Consecutive_5Xx:                        m.Consecutive_5Xx,
		Interval:                               m.Interval,
		BaseEjectionTime:                       m.BaseEjectionTime,
		MaxEjectionPercent:                     m.MaxEjectionPercent,
		EnforcingConsecutive_5Xx:               m.EnforcingConsecutive_5Xx,
		EnforcingSuccessRate:                   m.EnforcingSuccessRate,
		SuccessRateMinimumHosts:                m.SuccessRateMinimumHosts,
		SuccessRateRequestVolume:               m.SuccessRateRequestVolume,
		SuccessRateStdevFactor:                 m.SuccessRateStdevFactor,
		ConsecutiveGatewayFailure:              m.ConsecutiveGatewayFailure,
		EnforcingConsecutiveGatewayFailure:     m.EnforcingConsecutiveGatewayFailure,
		SplitExternalLocalOriginErrors:         m.SplitExternalLocalOriginErrors,
		ConsecutiveLocalOriginFailure:          m.ConsecutiveLocalOriginFailure,
		EnforcingConsecutiveLocalOriginFailure: m.EnforcingConsecutiveLocalOriginFailure,
		EnforcingLocalOriginSuccessRate:        m.EnforcingLocalOriginSuccessRate,
		FailurePercentageThreshold:             m.FailurePercentageThreshold,
		EnforcingFailurePercentage:             m.EnforcingFailurePercentage,
		EnforcingFailurePercentageLocalOrigin:  m.EnforcingFailurePercentageLocalOrigin,
		FailurePercentageMinimumHosts:          m.FailurePercentageMinimumHosts,
		FailurePercentageRequestVolume:         m.FailurePercentageRequestVolume,
		MaxEjectionTime:                        m.MaxEjectionTime,
		MaxEjectionTimeJitter:                  m.MaxEjectionTimeJitter,
		SuccessfulActiveHealthCheckUnejectHost: m.SuccessfulActiveHealthCheckUnejectHost,
		Monitors:                               m.Monitors,
		AlwaysEjectOneHost:                     m.AlwaysEjectOneHost,
		DetectDegradedHosts:                    m.DetectDegradedHosts,
	}
}

// supportsUnhealthy mirrors model.Service.SupportsUnhealthyEndpoints.
func (b *builder) supportsUnhealthy() (bool, provenance.Origin) {
	if b.flags.AutoSendUnhealthyEndpoints {
		return true, flagOrigin("PILOT_AUTO_SEND_UNHEALTHY_ENDPOINTS", "unhealthy endpoints are sent by default, so the panic threshold is disabled")
	}
	return b.forcesUnhealthy()
}

// applyLoadBalancer mirrors cluster_traffic_policy.go applyLoadBalancer.
func (st *clusterState) applyLoadBalancer(lb *networking.LoadBalancerSettings) {
	b := st.b
	c := st.c
	// Order as istiod: CLUSTER_PROVIDED (dynamic forward proxy) stops; the panic threshold
	// defaults to 0 while unhealthy endpoints are sent; locality settings; ORIGINAL_DST stops;
	// Redis ports are MAGLEV; the simple policy; consistent hash last, overriding it.
	if c.LbPolicy == clusterv3.Cluster_CLUSTER_PROVIDED {
		return
	}
	if c.CommonLbConfig.HealthyPanicThreshold == nil {
		if ok, o := b.supportsUnhealthy(); ok {
			st.setPercent(&c.CommonLbConfig.HealthyPanicThreshold, "commonLbConfig.healthyPanicThreshold", 0, o)
		} else if !st.scratch {
			st.notSent("commonLbConfig.healthyPanicThreshold", "50%", envoyDefault("no panic threshold sent"))
		}
	}
	st.applyLocality(lb)

	if c.GetType() == clusterv3.Cluster_ORIGINAL_DST {
		return
	}
	if b.redisMaglev() {
		st.setLbPolicy(clusterv3.Cluster_MAGLEV, flagOrigin("PILOT_ENABLE_REDIS_FILTER", "Redis ports use MAGLEV for client-side sharding"))
		return
	}
	// An unset (or UNSPECIFIED) simple policy is Istio's LEAST_REQUEST, not Envoy's ROUND_ROBIN.
	simple := lb.GetSimple()
	so := st.blockOrigin(bLoadBalancer, "loadBalancer.simple")
	switch simple {
	case networking.LoadBalancerSettings_LEAST_CONN, networking.LoadBalancerSettings_LEAST_REQUEST: //nolint:staticcheck // LEAST_CONN is LEAST_REQUEST
		st.applyLeastRequest(lb, so)
	case networking.LoadBalancerSettings_RANDOM:
		st.setLbPolicy(clusterv3.Cluster_RANDOM, so)
	case networking.LoadBalancerSettings_ROUND_ROBIN:
		st.applyRoundRobin(lb, so)
	case networking.LoadBalancerSettings_PASSTHROUGH:
		st.setLbPolicy(clusterv3.Cluster_CLUSTER_PROVIDED, so)
		c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_ORIGINAL_DST}
		st.set("type", "ORIGINAL_DST", withNote(so, "PASSTHROUGH turns the cluster into ORIGINAL_DST"))
		if c.LoadAssignment != nil {
			c.LoadAssignment = nil
			st.rec.Delete("loadAssignment")
			st.set("loadAssignment", "removed", withNote(so, "PASSTHROUGH wipes the load assignment"))
		}
	default:
		st.applyLeastRequest(lb, istioDefault("Istio's default load balancer (defaultLBAlgorithm)"))
	}
	st.applyConsistentHash(lb)
}

func (st *clusterState) applyLeastRequest(lb *networking.LoadBalancerSettings, o provenance.Origin) {
	st.setLbPolicy(clusterv3.Cluster_LEAST_REQUEST, o)
	if !st.scratch {
		st.notSent("leastRequestLbConfig.choiceCount", "2", envoyDefault("power of two choices"))
	}
	if ss := st.slowStart(lb, "leastRequestLbConfig"); ss != nil {
		st.c.LbConfig = &clusterv3.Cluster_LeastRequestLbConfig_{LeastRequestLbConfig: &clusterv3.Cluster_LeastRequestLbConfig{SlowStartConfig: ss}}
	}
}

func (st *clusterState) applyRoundRobin(lb *networking.LoadBalancerSettings, o provenance.Origin) {
	st.setLbPolicy(clusterv3.Cluster_ROUND_ROBIN, o)
	if ss := st.slowStart(lb, "roundRobinLbConfig"); ss != nil {
		st.c.LbConfig = &clusterv3.Cluster_RoundRobinLbConfig_{RoundRobinLbConfig: &clusterv3.Cluster_RoundRobinLbConfig{SlowStartConfig: ss}}
	}
}

// slowStart mirrors setWarmup (and the deprecated setSlowStartConfig).
func (st *clusterState) slowStart(lb *networking.LoadBalancerSettings, cfg string) *clusterv3.Cluster_SlowStartConfig {
	if w := lb.GetWarmup(); w != nil {
		p := cfg + ".slowStartConfig"
		ss := &clusterv3.Cluster_SlowStartConfig{}
		if w.Duration != nil {
			st.setDuration(&ss.SlowStartWindow, p+".slowStartWindow", w.Duration, st.blockOrigin(bLoadBalancer, "loadBalancer.warmup.duration"))
		}
		aggr := 1.0
		ao := istioDefault("warmup.aggression unset: Istio ramps linearly (1.0); runtime key is a fixed placeholder")
		if w.Aggression != nil {
			aggr = w.Aggression.GetValue()
			ao = withNote(st.blockOrigin(bLoadBalancer, "loadBalancer.warmup.aggression"), "runtime key is a fixed placeholder")
		}
		ss.Aggression = &corev3.RuntimeDouble{DefaultValue: aggr, RuntimeKey: "("}
		st.set(p+".aggression", fmtFloat(aggr), ao)
		minw := 10.0
		mo := istioDefault("warmup.minimumPercent unset: Istio uses 10%, Envoy's default")
		if w.MinimumPercent != nil {
			minw = w.MinimumPercent.GetValue()
			mo = st.blockOrigin(bLoadBalancer, "loadBalancer.warmup.minimumPercent")
		}
		st.setPercent(&ss.MinWeightPercent, p+".minWeightPercent", minw, mo)
		return ss
	}
	if d := lb.GetWarmupDurationSecs(); d != nil {
		ss := &clusterv3.Cluster_SlowStartConfig{}
		st.setDuration(&ss.SlowStartWindow, cfg+".slowStartConfig.slowStartWindow", d, st.blockOrigin(bLoadBalancer, "loadBalancer.warmupDurationSecs"))
		return ss
	}
	return nil
}

// applyConsistentHash mirrors cluster_traffic_policy.go ApplyRingHashLoadBalancer. The hash keys
// themselves go to RDS, not CDS.
func (st *clusterState) applyConsistentHash(lb *networking.LoadBalancerSettings) {
	ch := lb.GetConsistentHash()
	if ch == nil {
		return
	}
	c := st.c
	clearLbConfig := func() {
		st.rec.Delete("leastRequestLbConfig")
		st.rec.Delete("roundRobinLbConfig")
	}
	// ringHash/maglev without a size keep whatever lb config the simple policy set (a slow
	// start config with warmup); the deprecated minimumRingSize path always sends a ring size.
	switch {
	case ch.GetMaglev() != nil:
		st.setLbPolicy(clusterv3.Cluster_MAGLEV, st.blockOrigin(bLoadBalancer, "loadBalancer.consistentHash.maglev"))
		if ts := ch.GetMaglev().TableSize; ts != 0 {
			clearLbConfig()
			m := &clusterv3.Cluster_MaglevLbConfig{}
			c.LbConfig = &clusterv3.Cluster_MaglevLbConfig_{MaglevLbConfig: m}
			st.setU64(&m.TableSize, "maglevLbConfig.tableSize", ts, st.blockOrigin(bLoadBalancer, "loadBalancer.consistentHash.maglev.tableSize"))
		} else if !st.scratch && c.LbConfig == nil {
			st.notSent("maglevLbConfig.tableSize", "65537", envoyDefault(""))
		}
	case ch.GetRingHash() != nil:
		st.setLbPolicy(clusterv3.Cluster_RING_HASH, st.blockOrigin(bLoadBalancer, "loadBalancer.consistentHash.ringHash"))
		if rs := ch.GetRingHash().MinimumRingSize; rs != 0 {
			clearLbConfig()
			r := &clusterv3.Cluster_RingHashLbConfig{}
			c.LbConfig = &clusterv3.Cluster_RingHashLbConfig_{RingHashLbConfig: r}
			st.setU64(&r.MinimumRingSize, "ringHashLbConfig.minimumRingSize", rs, st.blockOrigin(bLoadBalancer, "loadBalancer.consistentHash.ringHash.minimumRingSize"))
		} else if !st.scratch && c.LbConfig == nil {
			st.notSent("ringHashLbConfig.minimumRingSize", "1024", envoyDefault(""))
		}
	default:
		st.setLbPolicy(clusterv3.Cluster_RING_HASH, st.blockOrigin(bLoadBalancer, "loadBalancer.consistentHash"))
		size := uint64(1024)
		so := istioDefault("consistentHash without ringHash or maglev: Istio sends minimumRingSize 1024 explicitly")
		if m := ch.MinimumRingSize; m != 0 { //nolint:staticcheck // deprecated field still read by istiod
			size = m
			so = st.blockOrigin(bLoadBalancer, "loadBalancer.consistentHash.minimumRingSize")
		}
		clearLbConfig()
		r := &clusterv3.Cluster_RingHashLbConfig{}
		c.LbConfig = &clusterv3.Cluster_RingHashLbConfig_{RingHashLbConfig: r}
		st.setU64(&r.MinimumRingSize, "ringHashLbConfig.minimumRingSize", size, so)
	}
	st.rec.Delete("leastRequestLbConfig.choiceCount")
}
