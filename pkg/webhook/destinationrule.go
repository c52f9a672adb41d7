package webhook

import (
	"fmt"
	"math"
	"net/netip"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
)

// DestinationRule returns what ValidateDestinationRule rejects, after the metadata checks, in
// Istio's order: host, the top-level trafficPolicy (with its portLevelSettings), each subset
// (name, labels, trafficPolicy), exportTo, workloadSelector.
func DestinationRule(m Meta, spec *networking.DestinationRule) []Problem {
	if ps := checkMetadata(m, false, ""); ps != nil {
		return ps
	}
	var l list
	if msg := wildcardDomain(spec.GetHost()); msg != "" {
		l.add("spec.host", msg, hostAsWritten)
	}
	l.trafficPolicy("spec.trafficPolicy", m.Namespace, spec.GetTrafficPolicy())
	seen := map[string]bool{}
	for i, s := range spec.GetSubsets() {
		at := fmt.Sprintf("spec.subsets[%d]", i)
		if s == nil {
			l.add(at, "subset may not be null", "istiod's cluster builder reads the name of the null entry (buildSubsetCluster, pilot/pkg/networking/core/cluster_builder.go), a nil pointer dereference")
			continue
		}
		if seen[s.GetName()] {
			l.add(at+".name", "duplicate subset names: "+s.GetName(), "istiod builds a cluster for each entry under the same name (outbound|PORT|NAME|HOST) and keeps the first (normalizeClusters, pilot/pkg/networking/core/cluster_builder.go): this entry's labels and policy are dropped")
		}
		seen[s.GetName()] = true
		// validateSubset: validateSubsetName, labels.Instance.Validate, validateTrafficPolicy.
		switch {
		case s.GetName() == "":
			l.add(at+".name", "subset name cannot be empty", "istiod names the subset's clusters with an empty subset (outbound|PORT||HOST), the name of the service's own cluster")
		case !isDNS1123Label(s.GetName()):
			l.add(at+".name", "subset name is invalid: "+s.GetName(), "istiod does not check it and names the subset's clusters with it as written (outbound|PORT|NAME|HOST)")
		}
		for _, msg := range labelErrors(s.GetLabels()) {
			l.add(at+".labels", msg, "istiod selects the subset's endpoints by the labels as written; no pod can carry such a label, so the subset's clusters get no endpoints from pods")
		}
		l.trafficPolicy(at+".trafficPolicy", m.Namespace, s.GetTrafficPolicy())
	}
	for _, p := range exportToErrors(m.Namespace, spec.GetExportTo(), false, spec.GetWorkloadSelector() != nil) {
		field := "spec.exportTo"
		if p.at >= 0 {
			field = fmt.Sprintf("spec.exportTo[%d]", p.at)
		}
		l.add(field, p.msg, exportToIstiod(p.msg, "rule"))
	}
	for _, msg := range selectorErrors(spec.GetWorkloadSelector().GetMatchLabels()) {
		l.add("spec.workloadSelector.matchLabels", msg, selectorMatchesNothing)
	}
	return l
}

// hostAsWritten is what istiod does with a host the webhook rejects: setDestinationRules
// (pilot/pkg/model/push_context.go) completes a short name with the namespace and keys the rule
// by the result, without checking its form.
const hostAsWritten = "istiod does not check it: it keys the rule by the host as written (a short name completed with the rule's namespace), so the rule applies only to a service whose hostname is exactly that"

// exportToIstiod is what istiod does with an exportTo the webhook rejects on a `what` (rule or
// service): setDestinationRules (pilot/pkg/model/push_context.go) and the service index read
// the entries as a set of names; a DestinationRule with a workload selector ignores them.
func exportToIstiod(msg, what string) string {
	switch {
	case strings.HasPrefix(msg, "duplicate"):
		return "istiod reads exportTo as a set, so the repeated entry changes nothing"
	case strings.HasPrefix(msg, "destination rule with workload selector"):
		return "istiod ignores exportTo on a rule with a workload selector: the rule stays visible in its own namespace only"
	case strings.HasPrefix(msg, "cannot have both public"):
		return fmt.Sprintf("istiod reads exportTo as a set: with `*` in it, the %s is visible in every namespace and the other entries change nothing", what)
	case strings.HasPrefix(msg, "cannot export service entry to no one"):
		// initServiceRegistry: `*` wins, then `~` hides the service whatever else is listed.
		return "istiod reads exportTo as a set: unless `*` is in it, `~` hides the service from every namespace, whatever the other entries name"
	case strings.HasPrefix(msg, "exportTo ~"):
		return fmt.Sprintf("istiod matches `~` against no namespace: the entry exports the %s nowhere (not even to its own namespace, unless another entry does)", what)
	}
	return fmt.Sprintf("istiod reads the entry as a namespace name, which no namespace can have: it exports the %s nowhere", what)
}

// trafficPolicy is validateTrafficPolicy: at least one field, not tunnel and proxyProtocol
// together, then each block and each portLevelSettings entry (validatePortTrafficPolicies).
func (l *list) trafficPolicy(at, namespace string, tp *networking.TrafficPolicy) {
	if tp == nil {
		return
	}
	if tp.OutlierDetection == nil && tp.ConnectionPool == nil && tp.LoadBalancer == nil && tp.Tls == nil && tp.PortLevelSettings == nil &&
		tp.Tunnel == nil && tp.ProxyProtocol == nil && tp.RetryBudget == nil {
		l.add(at, "traffic policy must have at least one field", "istiod reads the empty policy as no policy")
		return
	}
	if tp.Tunnel != nil && tp.ProxyProtocol != nil {
		// Istio returns this error alone: nothing else of the policy is checked.
		l.add(at+".proxyProtocol", "tunnel and proxyProtocol must not be set together",
			"istiod applies both: the cluster sends the PROXY protocol header, and outbound TCP listeners tunnel to the target host")
		return
	}
	l.outlierDetection(at+".outlierDetection", tp.GetOutlierDetection())
	l.connectionPool(at+".connectionPool", tp.GetConnectionPool())
	l.loadBalancer(at+".loadBalancer", tp.GetLoadBalancer())
	l.tls(at+".tls", namespace, tp.GetTls())
	for i, p := range tp.GetPortLevelSettings() {
		pl := fmt.Sprintf("%s.portLevelSettings[%d]", at, i)
		if p == nil {
			l.add(pl, "traffic policy may not be null", "istiod does not check it; a null entry is not covered here")
			continue
		}
		if p.Port == nil {
			l.add(pl+".port", "portTrafficPolicy must have valid port", "istiod reads the entry as port 0, which no service port has, so it applies nowhere")
		}
		if p.OutlierDetection == nil && p.ConnectionPool == nil && p.LoadBalancer == nil && p.Tls == nil {
			l.add(pl, "port traffic policy must have at least one field", "istiod applies the entry to its port: the port gets none of the top-level connectionPool, outlierDetection, loadBalancer and tls (MergeTrafficPolicy, pilot/pkg/model/destination_rule.go)")
			continue
		}
		l.outlierDetection(pl+".outlierDetection", p.GetOutlierDetection())
		l.connectionPool(pl+".connectionPool", p.GetConnectionPool())
		l.loadBalancer(pl+".loadBalancer", p.GetLoadBalancer())
		l.tls(pl+".tls", namespace, p.GetTls())
	}
	if t := tp.GetTunnel(); t != nil {
		// validateTunnelSettings; tunnelingconfig.Apply (pilot/pkg/networking/core/tunnelingconfig/apply.go)
		// copies the target into the TCP proxy's tunneling_config and uses POST only for "POST".
		if t.Protocol != "" && t.Protocol != "CONNECT" && t.Protocol != "POST" {
			l.add(at+".tunnel.protocol", `tunnel protocol must be "CONNECT" or "POST"`, "istiod uses POST only for \"POST\": any other value tunnels with CONNECT")
		}
		if fqdnMsg := fqdn(t.TargetHost); fqdnMsg != "" {
			if _, err := netip.ParseAddr(t.TargetHost); err != nil {
				l.add(at+".tunnel.targetHost", fmt.Sprintf("tunnel target host must be valid FQDN or IP address: %s; %s is not a valid IP", fqdnMsg, t.TargetHost),
					"istiod copies the target host into the TCP proxy's tunneling_config hostname as written")
			}
		}
		if t.TargetPort < 1 || t.TargetPort > 65535 {
			l.add(at+".tunnel.targetPort", fmt.Sprintf("tunnel target port is invalid: port number %d must be in the range 1..65535", int(t.TargetPort)),
				"istiod copies the target port into the TCP proxy's tunneling_config hostname as written")
		}
	}
	if pp := tp.GetProxyProtocol(); pp != nil && pp.Version != 0 && pp.Version != 1 {
		// validateProxyProtocol; applyUpstreamProxyProtocol (pilot/pkg/networking/core/cluster_traffic_policy.go)
		// converts the number to Envoy's ProxyProtocolConfig.Version, which defines V1 (0) and V2 (1).
		l.add(at+".proxyProtocol.version", fmt.Sprintf("proxy protocol version is invalid: %d", pp.Version),
			fmt.Sprintf("istiod copies %d into the upstream PROXY protocol transport socket's version, a value Envoy's enum does not define (V1 is 0, V2 is 1)", pp.Version))
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
	l.localityLb(at+".localityLbSetting", lb.GetLocalityLbSetting())
	l.zoneAwareLb(at+".zoneAwareLbSetting", lb.GetZoneAwareLbSetting())
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

// tls is agent.ValidateTLS. namespace is the object's: a configmap:// credentialName must name
// a ConfigMap of it.
func (l *list) tls(at, namespace string, t *networking.ClientTLSSettings) {
	if t == nil {
		return
	}
	if rest, ok := strings.CutPrefix(t.CredentialName, "configmap://"); ok {
		// credentials.ParseResourceName (pilot/pkg/model/credentials/resource.go): namespace/name.
		ns, name, found := strings.Cut(rest, "/")
		name, _, _ = strings.Cut(name, "/")
		msg := ""
		switch {
		case !found:
			msg = fmt.Sprintf("invalid configmap:// credentialName: invalid resource name %q. Expected namespace and name", t.CredentialName)
		case ns == "":
			msg = fmt.Sprintf("invalid configmap:// credentialName: invalid resource name %q. Expected namespace", t.CredentialName)
		case name == "":
			msg = fmt.Sprintf("invalid configmap:// credentialName: invalid resource name %q. Expected name", t.CredentialName)
		case ns != namespace || namespace == "":
			msg = fmt.Sprintf("invalid configmap:// credentialName: namespace must match the configuration namespace %q", namespace)
		}
		if msg != "" {
			l.add(at+".credentialName", msg, tlsAsWritten)
		}
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
