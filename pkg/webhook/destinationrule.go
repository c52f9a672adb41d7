package webhook

import (
	"fmt"
	"math"

	networking "istio.io/api/networking/v1alpha3"
)

// DestinationRule returns what ValidateDestinationRule rejects among the traffic policy values
// the cluster engine reads: the top-level trafficPolicy, its portLevelSettings, and those of
// every subset, after the metadata checks. Errors appear in Istio's order.
func DestinationRule(m Meta, spec *networking.DestinationRule) []Problem {
	if ps := dryRun(m, false, ""); ps != nil {
		return ps
	}
	var l list
	l.trafficPolicy("spec.trafficPolicy", spec.GetTrafficPolicy())
	for i, s := range spec.GetSubsets() {
		l.trafficPolicy(fmt.Sprintf("spec.subsets[%d].trafficPolicy", i), s.GetTrafficPolicy())
	}
	return l
}

// trafficPolicy is validateTrafficPolicy: each block, then each portLevelSettings entry
// (validatePortTrafficPolicies).
func (l *list) trafficPolicy(at string, tp *networking.TrafficPolicy) {
	if tp == nil {
		return
	}
	l.outlierDetection(at+".outlierDetection", tp.GetOutlierDetection())
	l.connectionPool(at+".connectionPool", tp.GetConnectionPool())
	l.loadBalancer(at+".loadBalancer", tp.GetLoadBalancer())
	l.tls(at+".tls", tp.GetTls())
	for i, p := range tp.GetPortLevelSettings() {
		pl := fmt.Sprintf("%s.portLevelSettings[%d]", at, i)
		l.outlierDetection(pl+".outlierDetection", p.GetOutlierDetection())
		l.connectionPool(pl+".connectionPool", p.GetConnectionPool())
		l.loadBalancer(pl+".loadBalancer", p.GetLoadBalancer())
		l.tls(pl+".tls", p.GetTls())
	}
}

// thresholdKept is what istiod does with a negative circuit-breaker value: applyConnectionPool
// (pilot/pkg/networking/core/cluster_traffic_policy.go) sets the threshold only from a value
// above 0, so getDefaultCircuitBreakerThresholds' 4294967295 stays.
func thresholdKept(envoyField string) string {
	return fmt.Sprintf("istiod sets the circuit breaker's %s only from a value above 0, so its default stays: %d (no limit)", envoyField, uint32(math.MaxUint32))
}

// wrapped is what istiod does with a negative value it converts to uint32 (applyConnectionPool).
func wrapped(envoyField string, v int32) string {
	return fmt.Sprintf("istiod converts it to an unsigned number: %s becomes %d", envoyField, uint32(v))
}

func (l *list) connectionPool(at string, cp *networking.ConnectionPoolSettings) {
	if cp == nil {
		return
	}
	if h := cp.GetHttp(); h != nil {
		if h.Http1MaxPendingRequests < 0 {
			l.add(at+".http.http1MaxPendingRequests", "http1 max pending requests must be non-negative", thresholdKept("max_pending_requests"))
		}
		if h.Http2MaxRequests < 0 {
			l.add(at+".http.http2MaxRequests", "http2 max requests must be non-negative", thresholdKept("max_requests"))
		}
		if h.MaxRequestsPerConnection < 0 {
			l.add(at+".http.maxRequestsPerConnection", "max requests per connection must be non-negative", wrapped("max_requests_per_connection", h.MaxRequestsPerConnection))
		}
		if h.MaxRetries < 0 {
			l.add(at+".http.maxRetries", "max retries must be non-negative", thresholdKept("max_retries"))
		}
		l.checkDuration(at+".http.idleTimeout", h.GetIdleTimeout(), asWritten)
		if h.H2UpgradePolicy == networking.ConnectionPoolSettings_HTTPSettings_UPGRADE && h.UseClientProtocol {
			l.add(at+".http.useClientProtocol", "use client protocol must not be true when H2UpgradePolicy is UPGRADE", asWritten)
		}
		if h.MaxConcurrentStreams < 0 {
			l.add(at+".http.maxConcurrentStreams", "max concurrent streams must be non-negative", wrapped("max_concurrent_streams", h.MaxConcurrentStreams))
		}
		if ka := h.GetHttp2KeepAlive(); ka != nil {
			if ka.Interval == nil {
				l.add(at+".http.http2KeepAlive.interval", "http2 keepalive interval is required", asWritten)
			} else {
				l.checkDuration(at+".http.http2KeepAlive.interval", ka.Interval, asWritten)
			}
			if ka.Timeout == nil {
				l.add(at+".http.http2KeepAlive.timeout", "http2 keepalive timeout is required", asWritten)
			} else {
				l.checkDuration(at+".http.http2KeepAlive.timeout", ka.Timeout, asWritten)
			}
		}
	}
	if t := cp.GetTcp(); t != nil {
		if t.MaxConnections < 0 {
			l.add(at+".tcp.maxConnections", "max connections must be non-negative", thresholdKept("max_connections"))
		}
		if t.ConnectTimeout != nil {
			istiod := asWritten
			if t.ConnectTimeout.AsDuration() <= 0 {
				// Envoy's Cluster.connect_timeout carries the proto rule `gt: 0s`.
				istiod = "istiod copies it into the Cluster's connect_timeout as written; Envoy rejects a Cluster whose connect_timeout is not above 0s, so the proxy NACKs the update"
			}
			l.checkDuration(at+".tcp.connectTimeout", t.ConnectTimeout, istiod)
		}
		l.checkDuration(at+".tcp.maxConnectionDuration", t.GetMaxConnectionDuration(), asWritten)
		// Istio skips idleTimeout 0s: it disables the timeout.
		if t.IdleTimeout != nil && t.IdleTimeout.AsDuration().Milliseconds() != 0 {
			l.checkDuration(at+".tcp.idleTimeout", t.IdleTimeout, asWritten)
		}
		if ka := t.GetTcpKeepalive(); ka != nil {
			l.checkDuration(at+".tcp.tcpKeepalive.time", ka.Time, asWritten)
			l.checkDuration(at+".tcp.tcpKeepalive.interval", ka.Interval, asWritten)
		}
	}
}

func (l *list) outlierDetection(at string, o *networking.OutlierDetection) {
	if o == nil {
		return
	}
	l.checkDuration(at+".baseEjectionTime", o.BaseEjectionTime, asWritten)
	if !o.SplitExternalLocalOriginErrors && o.ConsecutiveLocalOriginFailures.GetValue() > 0 {
		l.add(at+".consecutiveLocalOriginFailures",
			"outlier detection consecutive local origin failures is specified, but split external local origin errors is set to false",
			"istiod reads consecutiveLocalOriginFailures only with splitExternalLocalOriginErrors, so the value is dropped")
	}
	l.checkDuration(at+".interval", o.Interval, asWritten)
	if msg := percent(o.MaxEjectionPercent); msg != "" {
		istiod := "istiod copies it into max_ejection_percent as written"
		if o.MaxEjectionPercent < 0 {
			istiod = "istiod copies max_ejection_percent only from a value above 0, so Envoy's default (10%) applies"
		}
		l.add(at+".maxEjectionPercent", msg, istiod)
	}
	if msg := percent(o.MinHealthPercent); msg != "" {
		// applyOutlierDetection sets healthy_panic_threshold from a value of 0 or more; Envoy's
		// type.v3.Percent carries the proto rule 0..100.
		istiod := "istiod copies it into healthy_panic_threshold; Envoy rejects a percentage above 100, so the proxy NACKs the update"
		if o.MinHealthPercent < 0 {
			// applyLoadBalancer still writes 0 while unhealthy endpoints are sent, which
			// PILOT_AUTO_SEND_UNHEALTHY_ENDPOINTS does by default
			// (bad-input-outlier-min-health-percent-negative shows it).
			istiod = "istiod sets healthy_panic_threshold only from a value of 0 or more: it stays 0 (disabled) while unhealthy endpoints are sent (PILOT_AUTO_SEND_UNHEALTHY_ENDPOINTS, on by default), otherwise Envoy's default (50%) applies"
		}
		l.add(at+".minHealthPercent", msg, istiod)
	}
}

func (l *list) loadBalancer(at string, lb *networking.LoadBalancerSettings) {
	if lb == nil {
		return
	}
	if ch := lb.GetConsistentHash(); ch != nil {
		if c := ch.GetHttpCookie(); c != nil {
			if c.GetName() == "" {
				l.add(at+".consistentHash.httpCookie.name", "name required for HttpCookie", asWritten)
			}
			seen := map[string]bool{}
			for i, a := range c.GetAttributes() {
				f := fmt.Sprintf("%s.consistentHash.httpCookie.attributes[%d].name", at, i)
				switch {
				case a.GetName() == "":
					l.add(f, "cookie attribute name cannot be empty", asWritten)
				case seen[a.GetName()]:
					l.add(f, "duplicate cookie attribute name: "+a.GetName(), asWritten)
				}
				seen[a.GetName()] = true
			}
		}
		//nolint:staticcheck // minimumRingSize is deprecated, and still read by istiod.
		if ch.MinimumRingSize != 0 && ch.GetHashAlgorithm() != nil {
			l.add(at+".consistentHash.minimumRingSize", "only one of MinimumRingSize or Maglev/Ringhash can be specified", asWritten)
		}
		if m := ch.GetMaglev(); m != nil {
			f := at + ".consistentHash.maglev.tableSize"
			if m.TableSize == 0 {
				l.add(f, "tableSize must be set for maglev", "istiod leaves the table size unset, so Envoy's default applies")
			}
			if m.TableSize >= 5000011 {
				l.add(f, "tableSize must be less than 5000011 for maglev", asWritten)
			}
			if !isPrime(m.TableSize) {
				l.add(f, "tableSize must be a prime number for maglev", asWritten)
			}
		}
	}
	if lb.GetLocalityLbSetting() != nil && lb.GetZoneAwareLbSetting() != nil {
		l.add(at+".zoneAwareLbSetting", "only one of localityLbSetting and zoneAwareLbSetting can be set", asWritten)
	}
	if w := lb.GetWarmup(); w != nil {
		if w.Duration == nil {
			l.add(at+".warmup.duration", "duration is required", asWritten)
		} else {
			l.checkDuration(at+".warmup.duration", w.Duration, asWritten)
		}
		if w.MinimumPercent.GetValue() > 100 {
			l.add(at+".warmup.minimumPercent", "minimumPercent value should be less than or equal to 100", asWritten)
		}
		if w.Aggression != nil && w.Aggression.GetValue() <= 0 {
			l.add(at+".warmup.aggression", "aggression should be greater than 0", asWritten)
		}
	}
}

// isPrime is Istio's copy of Envoy's primality test for the Maglev table size.
func isPrime(x uint64) bool {
	if x != 0 && x < 4 {
		return true
	} else if x&1 == 0 {
		return false
	}
	limit := uint64(math.Sqrt(float64(x)))
	for f := uint64(3); f <= limit; f += 2 {
		if x%f == 0 {
			return false
		}
	}
	return true
}

// tlsAsWritten is what istiod does with a TLS combination the webhook rejects.
const tlsAsWritten = "istiod does not check it and builds the TLS context from what it reads (the answer's tls rows and diagnostics say what that is)"

// mutualWithoutCert is what istiod does with MUTUAL without a client certificate or key:
// constructUpstreamTLS (pilot/pkg/networking/core/cluster_tls.go) fails, and the Cluster is
// sent without TLS.
const mutualWithoutCert = "istiod cannot build the TLS context (client certificate and private key must not be empty), logs an error and sends the Cluster without TLS: the connection goes out in plaintext"

// tls is agent.ValidateTLS, without its configmap:// credentialName checks.
func (l *list) tls(at string, t *networking.ClientTLSSettings) {
	if t == nil {
		return
	}
	if t.GetInsecureSkipVerify().GetValue() {
		if t.Mode == networking.ClientTLSSettings_SIMPLE && (t.CaCertificates != "" || t.CredentialName != "" || t.SubjectAltNames != nil) {
			l.add(at+".insecureSkipVerify", "cannot specify CaCertificates or CredentialName or SubjectAltNames when InsecureSkipVerify is set true", tlsAsWritten)
		}
		if t.Mode == networking.ClientTLSSettings_MUTUAL && (t.CaCertificates != "" || t.SubjectAltNames != nil) {
			l.add(at+".insecureSkipVerify", "cannot specify CaCertificates or SubjectAltNames when InsecureSkipVerify is set true", tlsAsWritten)
		}
	}
	if (t.Mode == networking.ClientTLSSettings_SIMPLE || t.Mode == networking.ClientTLSSettings_MUTUAL) && t.CredentialName != "" {
		if t.ClientCertificate != "" || t.CaCertificates != "" || t.PrivateKey != "" || t.CaCrl != "" {
			l.add(at+".credentialName", "cannot specify client certificates or CA certificate or CA CRL If credentialName is set", tlsAsWritten)
		}
		return
	}
	if t.Mode == networking.ClientTLSSettings_MUTUAL {
		if t.ClientCertificate == "" {
			l.add(at+".clientCertificate", "client certificate required for mutual tls", mutualWithoutCert)
		}
		if t.PrivateKey == "" {
			l.add(at+".privateKey", "private key required for mutual tls", mutualWithoutCert)
		}
	}
}
