package envoycluster

import (
	"slices"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
)

// The layering, load-balancer and TLS diagnostics (docs/semantics/cluster.md#diagnostics), one
// rule per case.
func TestClusterDiagnostics(t *testing.T) {
	tcpPort := index.Port{Name: "tcp", Number: 7070, Protocol: "TCP"}
	cookieHash := &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{ConsistentHash: &networking.LoadBalancerSettings_ConsistentHashLB{
		HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_HttpHeaderName{HttpHeaderName: "x-user"}}}}
	cases := []struct {
		name string
		tp   *networking.TrafficPolicy
		port index.Port
		want string
		sev  explain.Severity
	}{
		{name: "D23 consistent hash with warmup", port: httpPort, want: "D23", sev: explain.SeverityWarning,
			tp: &networking.TrafficPolicy{LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: cookieHash.LbPolicy, Warmup: &networking.WarmupConfiguration{Duration: dur(time.Minute)}}}},
		{name: "D23 header hash on a TCP port has no hash input", port: tcpPort, want: "D23", sev: explain.SeverityWarning,
			tp: &networking.TrafficPolicy{LoadBalancer: cookieHash}},
		{name: "D23 top-level consistent hash dropped by a port entry", port: httpPort, want: "D23", sev: explain.SeverityWarning,
			tp: &networking.TrafficPolicy{LoadBalancer: cookieHash, PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{
				Port: &networking.PortSelector{Number: 8080}, ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 1}}}}}},
		{name: "D27 tcp idleTimeout at port level is ignored by the TCP proxy", port: httpPort, want: "D27", sev: explain.SeverityWarning,
			tp: &networking.TrafficPolicy{PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{Port: &networking.PortSelector{Number: 8080},
				ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{IdleTimeout: dur(time.Minute)}}}}}},
		{name: "D32 SIMPLE TLS without sni on a TCP port", port: tcpPort, want: "D32", sev: explain.SeverityWarning,
			tp: &networking.TrafficPolicy{Tls: &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_SIMPLE}}},
		{name: "D19 DISABLE towards a STRICT namespace", port: httpPort, want: "D19", sev: explain.SeverityError,
			tp: &networking.TrafficPolicy{Tls: &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_DISABLE}}},
		{name: "D19 ISTIO_MUTUAL to endpoints without sidecars", port: tcpPort, want: "D19", sev: explain.SeverityError,
			tp: &networking.TrafficPolicy{Tls: &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_ISTIO_MUTUAL}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := fooService()
			svc.Ports = append(svc.Ports, tcpPort)
			svc.Endpoints[7070] = []index.Endpoint{{Address: "10.0.0.7", Port: 7070, TLSMode: "disabled"}}
			input := in(svc, tc.port, rule(&networking.DestinationRule{Host: fooHost, TrafficPolicy: tc.tp}), meshConfig(nil))
			input.MTLS.Mode = index.MTLSStrict
			b := build(t, input, clusterName("", fooHost, tc.port.Number))
			if !slices.ContainsFunc(b.Diagnostics, func(d explain.Diagnostic) bool { return d.ID == tc.want && d.Severity == tc.sev }) {
				t.Errorf("want %s (%s), got %v", tc.want, tc.sev, b.Diagnostics)
			}
		})
	}
}

// cluster.go buildOutboundClusters: a DNS service without endpoints loses its default cluster
// and, with it, every subset cluster, even one that would be ORIGINAL_DST.
func TestDNSServiceWithoutEndpointsHasNoSubsetClusters(t *testing.T) {
	svc := seService("foo.example.com", index.DNSLB)
	r := rule(&networking.DestinationRule{Host: "foo.example.com", Subsets: []*networking.Subset{{Name: "direct",
		TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_PASSTHROUGH}}}}}})
	all, err := BuildClusters(in(svc, svc.Ports[0], r, meshConfig(nil)))
	if err != nil {
		t.Fatal(err)
	}
	if got := names(all); len(got) != 0 {
		t.Fatalf("clusters %v, want none", got)
	}
	if len(all) != 2 || all[1].Subset != "direct" || all[1].Cluster != nil {
		t.Fatalf("the dropped clusters should still be listed without a Cluster: %+v", all)
	}
}

// BuildCluster builds one cluster, and rejects subsets the rule does not define and services
// istiod builds no cluster for.
func TestBuildClusterSelectsOneCluster(t *testing.T) {
	r := rule(&networking.DestinationRule{Host: fooHost, Subsets: []*networking.Subset{{Name: "v1"}}})
	b, err := BuildCluster(in(fooService(), httpPort, r, meshConfig(nil)), "v1")
	if err != nil || b.Cluster.GetName() != "outbound|8080|v1|"+fooHost {
		t.Fatalf("BuildCluster(v1) = %v, %v", b.Name, err)
	}
	if _, err := BuildCluster(in(fooService(), httpPort, r, meshConfig(nil)), "v2"); err == nil {
		t.Errorf("an unknown subset should be an error")
	}
	alias := fooService()
	alias.Resolution = index.Alias
	if _, err := BuildClusters(in(alias, httpPort, nil, meshConfig(nil))); err == nil {
		t.Errorf("an ExternalName alias has no cluster")
	}
	if _, err := BuildClusters(in(fooService(), index.Port{Number: 1234}, nil, meshConfig(nil))); err == nil {
		t.Errorf("a port the service lacks should be an error")
	}
}
