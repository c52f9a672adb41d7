package webhook

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"
	security "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

func fields(ps []Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Field+": "+p.Webhook)
	}
	return out
}

// TestDestinationRule pins ValidateDestinationRule's errors (istio/istio
// pkg/config/validation/validation.go) on the fields the cluster engine reads; the conformance
// module compares them with Istio's own validation on every scenario.
func TestDestinationRule(t *testing.T) {
	meta := Meta{Name: "r", Namespace: "ns"}
	tcp := func(s *networking.ConnectionPoolSettings_TCPSettings) *networking.TrafficPolicy {
		return &networking.TrafficPolicy{ConnectionPool: &networking.ConnectionPoolSettings{Tcp: s}}
	}
	for _, tc := range []struct {
		name string
		dr   *networking.DestinationRule
		want []string
		ann  map[string]string
	}{
		{"validateConnectionPool/connectTimeout negative", &networking.DestinationRule{TrafficPolicy: tcp(&networking.ConnectionPoolSettings_TCPSettings{ConnectTimeout: durationpb.New(-5 * time.Second)})},
			[]string{"spec.trafficPolicy.connectionPool.tcp.connectTimeout: duration must be greater than 1ms"}, nil},
		{"ValidateDuration/not whole milliseconds", &networking.DestinationRule{TrafficPolicy: tcp(&networking.ConnectionPoolSettings_TCPSettings{ConnectTimeout: durationpb.New(1500 * time.Microsecond)})},
			[]string{"spec.trafficPolicy.connectionPool.tcp.connectTimeout: only durations to ms precision are supported"}, nil},
		{"validateConnectionPool/maxConnections negative in a subset's port-level entry", &networking.DestinationRule{Subsets: []*networking.Subset{{Name: "v1",
			TrafficPolicy: &networking.TrafficPolicy{PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{
				Port: &networking.PortSelector{Number: 80}, ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: -1}}}}}}}},
			[]string{"spec.subsets[0].trafficPolicy.portLevelSettings[0].connectionPool.tcp.maxConnections: max connections must be non-negative"}, nil},
		{"validateConnectionPool/idleTimeout 0s disables the timeout", &networking.DestinationRule{TrafficPolicy: tcp(&networking.ConnectionPoolSettings_TCPSettings{IdleTimeout: durationpb.New(0)})}, nil, nil},
		{"validateOutlierDetection/percentages", &networking.DestinationRule{TrafficPolicy: &networking.TrafficPolicy{OutlierDetection: &networking.OutlierDetection{MaxEjectionPercent: 150, MinHealthPercent: -1}}},
			[]string{"spec.trafficPolicy.outlierDetection.maxEjectionPercent: percentage 150 is not in range 0..100", "spec.trafficPolicy.outlierDetection.minHealthPercent: percentage -1 is not in range 0..100"}, nil},
		{"validateOutlierDetection/local origin without split", &networking.DestinationRule{TrafficPolicy: &networking.TrafficPolicy{OutlierDetection: &networking.OutlierDetection{ConsecutiveLocalOriginFailures: wrapperspb.UInt32(3)}}},
			[]string{"spec.trafficPolicy.outlierDetection.consecutiveLocalOriginFailures: outlier detection consecutive local origin failures is specified, but split external local origin errors is set to false"}, nil},
		{"validateLoadBalancer/maglev table size", &networking.DestinationRule{TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{
			ConsistentHash: &networking.LoadBalancerSettings_ConsistentHashLB{HashAlgorithm: &networking.LoadBalancerSettings_ConsistentHashLB_Maglev{Maglev: &networking.LoadBalancerSettings_ConsistentHashLB_MagLev{TableSize: 1000}}}}}}},
			[]string{"spec.trafficPolicy.loadBalancer.consistentHash.maglev.tableSize: tableSize must be a prime number for maglev"}, nil},
		{"ValidateTLS/MUTUAL without certificates", &networking.DestinationRule{TrafficPolicy: &networking.TrafficPolicy{Tls: &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_MUTUAL}}},
			[]string{"spec.trafficPolicy.tls.clientCertificate: client certificate required for mutual tls", "spec.trafficPolicy.tls.privateKey: private key required for mutual tls"}, nil},
		{"ValidateTLS/credentialName with file certificates", &networking.DestinationRule{TrafficPolicy: &networking.TrafficPolicy{Tls: &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_SIMPLE, CredentialName: "c", CaCertificates: "/ca.pem"}}},
			[]string{"spec.trafficPolicy.tls.credentialName: cannot specify client certificates or CA certificate or CA CRL If credentialName is set"}, nil},
		{"checkDryRunAnnotation/not on a DestinationRule", &networking.DestinationRule{TrafficPolicy: tcp(&networking.ConnectionPoolSettings_TCPSettings{MaxConnections: -1})},
			[]string{"metadata.annotations[istio.io/dry-run]: ns/r has unsupported annotation istio.io/dry-run, please remove the annotation"},
			map[string]string{"istio.io/dry-run": "true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := meta
			m.Annotations = tc.ann
			tc.dr.Host = "foo" // a valid host: the cases are about the traffic policies
			if got := fields(DestinationRule(m, tc.dr)); !slices.Equal(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestAuthorizationPolicy pins ValidateAuthorizationPolicy's errors, prefixed as Istio prefixes
// them, and ValidatePeerAuthentication's.
func TestAuthorizationPolicy(t *testing.T) {
	meta := Meta{Name: "p", Namespace: "ns"}
	op := func(o *security.Operation) *security.AuthorizationPolicy {
		return &security.AuthorizationPolicy{Rules: []*security.Rule{{To: []*security.Rule_To{{Operation: o}}}}}
	}
	for _, tc := range []struct {
		name string
		ap   *security.AuthorizationPolicy
		ann  map[string]string
		want []string
	}{
		{"ValidatePorts", op(&security.Operation{Ports: []string{"abc", "99999", "80"}}), nil, []string{
			`spec.rules[0].to[0].operation.ports[0]: invalid policy p.ns: bad port (abc): strconv.ParseUint: parsing "abc": invalid syntax`,
			"spec.rules[0].to[0].operation.ports[1]: invalid policy p.ns: bad port (99999): <nil>"}},
		{"ValidateIPs", &security.AuthorizationPolicy{Rules: []*security.Rule{{From: []*security.Rule_From{{Source: &security.Source{IpBlocks: []string{"not-a-cidr", "10.0.0.0/33"}, RemoteIpBlocks: []string{"1.2.3"}}}}}}}, nil, []string{
			"spec.rules[0].from[0].source.ipBlocks[0]: invalid policy p.ns: bad IP address (not-a-cidr)",
			`spec.rules[0].from[0].source.ipBlocks[1]: invalid policy p.ns: bad CIDR range (10.0.0.0/33): netip.ParsePrefix("10.0.0.0/33"): prefix length out of range`,
			"spec.rules[0].from[0].source.remoteIpBlocks[0]: invalid policy p.ns: bad IP address (1.2.3)"}},
		{"CUSTOM without provider", &security.AuthorizationPolicy{Action: security.AuthorizationPolicy_CUSTOM, Rules: []*security.Rule{{}}}, nil, []string{
			"spec.provider: invalid policy p.ns: `provider.name` must not be empty"}},
		{"DENY without rules", &security.AuthorizationPolicy{Action: security.AuthorizationPolicy_DENY}, nil, []string{
			"spec.rules: invalid policy p.ns: DENY action without `rules` is meaningless as it will never be triggered, add an empty rule `{}` if you want it be triggered for every request"}},
		{"empty source and operation", &security.AuthorizationPolicy{Rules: []*security.Rule{{From: []*security.Rule_From{{Source: &security.Source{}}}, To: []*security.Rule_To{{Operation: &security.Operation{}}}}}}, nil, []string{
			"spec.rules[0].from[0].source: invalid policy p.ns: `from.source` must not be empty, found at rule 0",
			"spec.rules[0].to[0].operation: invalid policy p.ns: `to.operation` must not be empty, found at rule 0"}},
		{"checkDryRunAnnotation/not a boolean", &security.AuthorizationPolicy{}, map[string]string{"istio.io/dry-run": "yes"}, []string{
			`metadata.annotations[istio.io/dry-run]: ns/p has annotation istio.io/dry-run with invalid value (yes): strconv.ParseBool: parsing "yes": invalid syntax`}},
		{"a valid policy", op(&security.Operation{Ports: []string{"0", "65535"}}), map[string]string{"istio.io/dry-run": "true"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := meta
			m.Annotations = tc.ann
			if got := fields(AuthorizationPolicy(m, tc.ap)); !slices.Equal(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
	pa := &security.PeerAuthentication{PortLevelMtls: map[uint32]*security.PeerAuthentication_MutualTLS{0: {}, 8080: {}}}
	want := []string{"spec.portLevelMtls: mesh/namespace peer authentication cannot have port level mTLS", "spec.portLevelMtls[0]: port must be in range 1..65535"}
	if got := fields(PeerAuthentication(meta, pa)); !slices.Equal(got, want) {
		t.Errorf("PeerAuthentication without selector, port 0:\ngot  %q\nwant %q", got, want)
	}
	pa.Selector = &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "a"}}
	pa.PortLevelMtls = map[uint32]*security.PeerAuthentication_MutualTLS{8080: {}}
	if got := PeerAuthentication(meta, pa); len(got) != 0 {
		t.Errorf("a valid workload PeerAuthentication: %q", fields(got))
	}
}

func TestDiagnosticQuotesTheWebhook(t *testing.T) {
	ref := provenance.Ref{Kind: "DestinationRule", Namespace: "ns", Name: "r"}
	d := Problem{Field: "spec.x", Webhook: "max connections must be non-negative", Istiod: "istiod keeps the default"}.Diagnostic(diag.RejectedByValidation, ref)
	want := `spec.x: Istio's validation rejects DestinationRule ns/r (the admission webhook says "max connections must be non-negative"); if it reaches istiod anyway (validation off, or applied from files), istiod keeps the default`
	if d.ID != "D33" || d.Message != want || len(d.Resources) != 1 || d.Resources[0] != ref {
		t.Errorf("got %+v\nwant message %s", d, want)
	}
}
