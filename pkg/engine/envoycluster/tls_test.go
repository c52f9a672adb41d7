package envoycluster

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	proxyprotocolv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/proxy_protocol/v3"
	rawbufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/raw_buffer/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

var (
	alpnMesh   = []string{"istio-peer-exchange", "istio"}
	alpnMeshH2 = []string{"istio-peer-exchange", "istio", "h2"}
	h2Port     = index.Port{Name: "http2", Number: 8443, Protocol: "HTTP2"}
)

func tlsRule(tls *networking.ClientTLSSettings) *index.ConsolidatedRule {
	return rule(&networking.DestinationRule{Host: fooHost, TrafficPolicy: &networking.TrafficPolicy{Tls: tls}})
}

func withALPNOverride(c *clusterv3.Cluster) *clusterv3.Cluster {
	c.Metadata.FilterMetadata["istio"].Fields["alpn_override"] = structpb.NewStringValue("false")
	return c
}

func autoSNI(san bool) *corev3.UpstreamHttpProtocolOptions {
	return &corev3.UpstreamHttpProtocolOptions{AutoSni: true, AutoSanValidation: san}
}

// A21: cluster_tls_test.go TestBuildUpstreamClusterTLSContext, TestApplyUpstreamTLSSettings.
func TestUserTLSContexts(t *testing.T) {
	simpleCtx := func(root string, sni string, alpn []string, sans ...string) *tlsv3.UpstreamTlsContext {
		return &tlsv3.UpstreamTlsContext{Sni: sni, CommonTlsContext: &tlsv3.CommonTlsContext{TlsParams: tlsParams(), AlpnProtocols: alpn,
			ValidationContextType: &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
				DefaultValidationContext:         &tlsv3.CertificateValidationContext{MatchSubjectAltNames: exact(sans...)},
				ValidationContextSdsSecretConfig: sdsConfig(root, false),
			}}}}
	}
	selector := &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "client"}}
	cases := []struct {
		name     string
		tls      *networking.ClientTLSSettings
		port     index.Port
		selector bool
		want     func(c *clusterv3.Cluster)
		diags    []string
		// plainField is the DestinationRule field a cluster sent without TLS traces its plaintext to.
		plainField string
	}{
		{name: "ISTIO_MUTUAL keeps the DestinationRule's SAN and SNI",
			tls:  &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_ISTIO_MUTUAL, SubjectAltNames: []string{"spiffe://foo/ns/default/sa/default"}, Sni: "custom.foo.com"},
			port: httpPort,
			want: func(c *clusterv3.Cluster) {
				c.TransportSocket = tlsSocket(istioMutualContext("custom.foo.com", alpnMesh, "spiffe://foo/ns/default/sa/default"))
			}},
		{name: "ISTIO_MUTUAL defaults to the service accounts and the outbound_ SNI, with h2 ALPN on HTTP/2",
			tls:  &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_ISTIO_MUTUAL},
			port: h2Port,
			want: func(c *clusterv3.Cluster) {
				c.TransportSocket = tlsSocket(istioMutualContext("outbound_.8443_._."+fooHost, alpnMeshH2, fooSA))
				setHPO(c, &httpv3.HttpProtocolOptions{UpstreamProtocolOptions: explicitHTTP2(nil)})
			}},
		{name: "SIMPLE without caCertificates validates against the system CA, with auto SNI and SAN validation",
			tls:  &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_SIMPLE},
			port: httpPort,
			want: func(c *clusterv3.Cluster) {
				withALPNOverride(c)
				c.TransportSocket = tlsSocket(simpleCtx("file-root:system", "", nil))
				setHPO(c, &httpv3.HttpProtocolOptions{UpstreamHttpProtocolOptions: autoSNI(true), UpstreamProtocolOptions: explicitHTTP1()})
			}, diags: []string{"D19"}},
		{name: "SIMPLE with insecureSkipVerify has an empty validation context and no SAN validation",
			tls:  &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_SIMPLE, InsecureSkipVerify: wrapperspb.Bool(true)},
			port: httpPort,
			want: func(c *clusterv3.Cluster) {
				withALPNOverride(c)
				c.TransportSocket = tlsSocket(&tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{TlsParams: tlsParams(),
					ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{}}}})
				setHPO(c, &httpv3.HttpProtocolOptions{UpstreamHttpProtocolOptions: autoSNI(false), UpstreamProtocolOptions: explicitHTTP1()})
			}, diags: []string{"D19"}},
		{name: "SIMPLE on an HTTP/2 port advertises h2 and keeps the SNI",
			tls:  &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_SIMPLE, Sni: "api.foo.com", CaCertificates: "/etc/ca.pem"},
			port: h2Port,
			want: func(c *clusterv3.Cluster) {
				withALPNOverride(c)
				c.TransportSocket = tlsSocket(simpleCtx("file-root:/etc/ca.pem", "api.foo.com", []string{"h2"}))
				setHPO(c, &httpv3.HttpProtocolOptions{UpstreamProtocolOptions: explicitHTTP2(nil)})
			}},
		{name: "MUTUAL with files, SANs, SNI and CRL",
			tls: &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_MUTUAL, ClientCertificate: "cert-chain.pem", PrivateKey: "key.pem",
				CaCertificates: "root-cert.pem", SubjectAltNames: []string{"SAN"}, Sni: "some-sni.com", CaCrl: "crl.pem"},
			port: httpPort,
			want: func(c *clusterv3.Cluster) {
				withALPNOverride(c)
				ctx := simpleCtx("file-root:root-cert.pem", "some-sni.com", nil, "SAN")
				ctx.CommonTlsContext.GetCombinedValidationContext().DefaultValidationContext.Crl = &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: "crl.pem"}}
				ctx.CommonTlsContext.TlsCertificateSdsSecretConfigs = []*tlsv3.SdsSecretConfig{sdsConfig("file-cert:cert-chain.pem~key.pem", false)}
				c.TransportSocket = tlsSocket(ctx)
			}, diags: []string{"D19"}},
		{name: "MUTUAL without client certificate sends no TLS but still sets auto SNI",
			tls:  &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_MUTUAL},
			port: httpPort, plainField: "spec.trafficPolicy.tls.mode",
			want: func(c *clusterv3.Cluster) {
				withALPNOverride(c)
				setHPO(c, &httpv3.HttpProtocolOptions{UpstreamHttpProtocolOptions: autoSNI(true), UpstreamProtocolOptions: explicitHTTP1()})
			}, diags: []string{"D19", "D19"}},
		{name: "DISABLE sends no TLS even with auto-mTLS",
			tls:  &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_DISABLE},
			port: httpPort, plainField: "spec.trafficPolicy.tls.mode",
			want: func(c *clusterv3.Cluster) {}},
		{name: "credentialName on a sidecar without workloadSelector is ignored: plaintext with alpn_override",
			tls:  &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_SIMPLE, CredentialName: "my-cred"},
			port: httpPort, plainField: "spec.trafficPolicy.tls.credentialName",
			want:  func(c *clusterv3.Cluster) { withALPNOverride(c) },
			diags: []string{"D20", "D19"}},
		{name: "credentialName with a workloadSelector fetches the secret over ADS",
			tls:  &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_MUTUAL, CredentialName: "my-cred", Sni: "x.foo.com"},
			port: httpPort, selector: true,
			want: func(c *clusterv3.Cluster) {
				withALPNOverride(c)
				ads := &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}, ResourceApiVersion: corev3.ApiVersion_V3}
				c.TransportSocket = tlsSocket(&tlsv3.UpstreamTlsContext{Sni: "x.foo.com", CommonTlsContext: &tlsv3.CommonTlsContext{TlsParams: tlsParams(),
					TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{Name: "kubernetes://my-cred", SdsConfig: ads}},
					ValidationContextType: &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
						DefaultValidationContext:         &tlsv3.CertificateValidationContext{},
						ValidationContextSdsSecretConfig: &tlsv3.SdsSecretConfig{Name: "kubernetes://my-cred-cacert", SdsConfig: ads},
					}}}})
			}, diags: []string{"D19"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := fooService()
			svc.Ports = append(svc.Ports, h2Port)
			r := tlsRule(tc.tls)
			if tc.selector {
				r.Spec.WorkloadSelector = selector
			}
			b := build(t, in(svc, tc.port, r, meshConfig(autoMTLSOn)), clusterName("", fooHost, tc.port.Number))
			want := withRule(edsCluster(tc.port, ""), "")
			tc.want(want)
			requireCluster(t, want, b.Cluster)
			if !slices.Equal(diagIDs(b), tc.diags) {
				t.Errorf("diagnostics %v, want %v", b.Diagnostics, tc.diags)
			}
			if b.Cluster.TransportSocket != nil {
				requireOrigin(t, b, "transportSocket.name", provenance.LayerDestinationRule, "spec.trafficPolicy.tls.mode")
			} else {
				requirePlaintext(t, b, provenance.LayerDestinationRule, tc.plainField)
			}
		})
	}
}

// A17: cluster_test.go TestAutoMTLSClusterSubsets.
func TestAutoMTLSMatchesAndUserIstioMutual(t *testing.T) {
	r := rule(&networking.DestinationRule{Host: fooHost, Subsets: []*networking.Subset{{Name: "foobar", Labels: map[string]string{"foo": "bar"},
		TrafficPolicy: &networking.TrafficPolicy{
			ConnectionPool: &networking.ConnectionPoolSettings{Http: &networking.ConnectionPoolSettings_HTTPSettings{MaxRequestsPerConnection: 1}},
			PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{Port: &networking.PortSelector{Number: 8080},
				Tls: &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_ISTIO_MUTUAL, Sni: "custom.sni.com"}}},
		}}}})
	mesh := meshConfig(autoMTLSOn)

	b := build(t, in(fooService(), httpPort, r, mesh), "outbound|8080|foobar|"+fooHost)
	want := withRule(edsCluster(httpPort, "foobar"), "foobar")
	want.TransportSocket = tlsSocket(istioMutualContext("custom.sni.com", alpnMesh, fooSA))
	requireCluster(t, want, b.Cluster)
	requireOrigin(t, b, "transportSocket.typedConfig.sni", provenance.LayerSubsetPortLevel, "spec.subsets[name=foobar].trafficPolicy.portLevelSettings[port=8080].tls.sni")
	requireOrigin(t, b, "transportSocket.typedConfig.commonTlsContext.combinedValidationContext.defaultValidationContext.matchSubjectAltNames", provenance.LayerRegistry, "")

	b = build(t, in(fooService(), httpPort, r, mesh), "outbound|8080||"+fooHost)
	want = withRule(edsCluster(httpPort, ""), "")
	want.TransportSocketMatches = autoMTLSMatches(istioMutualContext("outbound_.8080_._."+fooHost, alpnMesh, fooSA))
	requireCluster(t, want, b.Cluster)
	requireOrigin(t, b, "transportSocketMatches[0].name", provenance.LayerAutoMTLS, "")

	b = build(t, in(fooService(), autoPort, r, mesh), "outbound|9090|foobar|"+fooHost)
	want = withRule(edsCluster(autoPort, "foobar"), "foobar")
	want.TransportSocketMatches = autoMTLSMatches(istioMutualContext("outbound_.9090_.foobar_."+fooHost, alpnMesh, fooSA))
	setHPO(want, &httpv3.HttpProtocolOptions{CommonHttpProtocolOptions: &corev3.HttpProtocolOptions{MaxRequestsPerConnection: wrapperspb.UInt32(1)},
		UpstreamProtocolOptions: downstreamProtocol()})
	requireCluster(t, want, b.Cluster)
}

// A18: cluster_test.go TestAutoMTLSClusterIgnoreWorkloadLevelPeerAuthn.
func TestAutoMTLSIgnoresWorkloadPeerAuthentication(t *testing.T) {
	r := rule(&networking.DestinationRule{Host: fooHost, TrafficPolicy: &networking.TrafficPolicy{
		ConnectionPool: &networking.ConnectionPoolSettings{Http: &networking.ConnectionPoolSettings_HTTPSettings{MaxRequestsPerConnection: 1}},
		PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{Port: &networking.PortSelector{Number: 9090},
			Tls: &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_DISABLE}}},
	}})
	svc := fooService()
	input := in(svc, httpPort, r, meshConfig(autoMTLSOn))
	strictPA := provenance.Ref{Kind: "PeerAuthentication", Namespace: "default", Name: "strict-v1"}
	input.WorkloadMTLS = []index.WorkloadMTLS{{PeerAuthentication: strictPA, Mode: index.MTLSStrict, Endpoints: svc.Endpoints[9090]}}

	b := build(t, input, "outbound|8080||"+fooHost)
	want := withRule(edsCluster(httpPort, ""), "")
	want.TransportSocketMatches = autoMTLSMatches(istioMutualContext("outbound_.8080_._."+fooHost, alpnMesh, fooSA))
	setHPO(want, &httpv3.HttpProtocolOptions{CommonHttpProtocolOptions: &corev3.HttpProtocolOptions{MaxRequestsPerConnection: wrapperspb.UInt32(1)},
		UpstreamProtocolOptions: explicitHTTP1()})
	requireCluster(t, want, b.Cluster)

	input.Port = autoPort
	b = build(t, input, "outbound|9090||"+fooHost)
	want = withRule(edsCluster(autoPort, ""), "")
	requireCluster(t, want, b.Cluster)
	if !slices.Contains(diagIDs(b), "D19") {
		t.Errorf("DISABLE towards STRICT workloads should be reported: %v", b.Diagnostics)
	}
}

// A16 (adapted: no proxy metadata certificates): cluster_test.go
// TestBuildClustersWithMutualTlsAndNodeMetadataCertfileOverrides. A subset port-level entry
// without tls drops the DestinationRule's MUTUAL for that port.
func TestSubsetPortLevelEntryWithoutTLSDropsMutual(t *testing.T) {
	mutual := &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_MUTUAL, ClientCertificate: "/certs/cert.pem", PrivateKey: "/certs/key.pem", CaCertificates: "/certs/ca.pem"}
	r := rule(&networking.DestinationRule{Host: fooHost, TrafficPolicy: &networking.TrafficPolicy{Tls: mutual},
		Subsets: []*networking.Subset{{Name: "foobar", Labels: map[string]string{"foo": "bar"}, TrafficPolicy: &networking.TrafficPolicy{
			PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{Port: &networking.PortSelector{Number: 8080},
				ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 7}}}},
		}}}})
	mutualCtx := &tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{TlsParams: tlsParams(),
		TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{sdsConfig("file-cert:/certs/cert.pem~/certs/key.pem", false)},
		ValidationContextType: &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
			DefaultValidationContext: &tlsv3.CertificateValidationContext{}, ValidationContextSdsSecretConfig: sdsConfig("file-root:/certs/ca.pem", false)}}}}
	mesh := meshConfig(nil)

	b := build(t, in(fooService(), httpPort, r, mesh), "outbound|8080|foobar|"+fooHost)
	want := withRule(edsCluster(httpPort, "foobar"), "foobar")
	want.CircuitBreakers.Thresholds[0].MaxConnections = wrapperspb.UInt32(7)
	requireCluster(t, want, b.Cluster)
	tr := trace(t, b, "transportSocket")
	if len(tr.Shadowed) != 1 || tr.Shadowed[0].Value != "tls MUTUAL" || !tr.NotSent || tr.Value != "plaintext" ||
		tr.Origin.Layer != provenance.LayerMeshConfig || tr.Origin.Field != "enableAutoMtls" {
		t.Errorf("the dropped MUTUAL should be a shadow on a plaintext transportSocket that auto-mTLS, off, leaves out: %+v", tr)
	}

	for _, tc := range []struct {
		port   index.Port
		subset string
	}{{httpPort, ""}, {autoPort, ""}, {autoPort, "foobar"}} {
		b := build(t, in(fooService(), tc.port, r, mesh), clusterName(tc.subset, fooHost, tc.port.Number))
		want := withALPNOverride(withRule(edsCluster(tc.port, tc.subset), tc.subset))
		want.TransportSocket = tlsSocket(mutualCtx)
		up := explicitHTTP1()
		var upo httpv3.HttpProtocolOptions
		upo.UpstreamHttpProtocolOptions = autoSNI(true)
		if tc.port.Protocol == "UnsupportedProtocol" {
			upo.UpstreamProtocolOptions = downstreamProtocol()
		} else {
			upo.UpstreamProtocolOptions = up
		}
		setHPO(want, &upo)
		requireCluster(t, want, b.Cluster)
	}
}

// A20: cluster_test.go TestBuildSidecarClustersWithIstioMutualAndSNI.
func TestIstioMutualDefaultSNI(t *testing.T) {
	for _, tc := range []struct{ sni, want string }{{"", "outbound_.8080_.foobar_." + fooHost}, {"foo.com", "foo.com"}} {
		t.Run("sni "+tc.sni, func(t *testing.T) {
			r := rule(&networking.DestinationRule{Host: fooHost, Subsets: []*networking.Subset{{Name: "foobar", Labels: map[string]string{"foo": "bar"},
				TrafficPolicy: &networking.TrafficPolicy{PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{Port: &networking.PortSelector{Number: 8080},
					Tls: &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_ISTIO_MUTUAL, Sni: tc.sni}}}}}}})
			b := build(t, in(fooService(), httpPort, r, meshConfig(nil)), "outbound|8080|foobar|"+fooHost)
			want := withRule(edsCluster(httpPort, "foobar"), "foobar")
			want.TransportSocket = tlsSocket(istioMutualContext(tc.want, alpnMesh, fooSA))
			requireCluster(t, want, b.Cluster)
		})
	}
}

// docs/semantics/cluster.md#auto-mtls: auto-mTLS is off for MESH_EXTERNAL hosts, DISABLE
// namespaces and passthrough services whose endpoints lack sidecars; on for headless services
// whose endpoints all have sidecars, with a plain transport socket (ORIGINAL_DST).
func TestAutoMTLSInference(t *testing.T) {
	istioCtx := istioMutualContext("outbound_.8080_._."+fooHost, alpnMesh, fooSA)
	cases := []struct {
		name  string
		svc   func(*index.Service)
		mode  index.MTLSMode
		plain bool
		match bool
		// noTLS is the layer and field of the plaintext transportSocket's origin, when none is sent.
		noTLS      provenance.Layer
		noTLSField string
	}{
		{name: "PERMISSIVE namespace gets transport socket matches", mode: index.MTLSPermissive, match: true},
		{name: "STRICT namespace gets transport socket matches", mode: index.MTLSStrict, match: true},
		{name: "DISABLE namespace gets no TLS", mode: index.MTLSDisable, noTLS: provenance.LayerAutoMTLS, noTLSField: "spec.mtls.mode"},
		{name: "MESH_EXTERNAL hosts get no auto-mTLS", mode: index.MTLSStrict, svc: func(s *index.Service) { s.MeshExternal = true },
			noTLS: provenance.LayerRegistry, noTLSField: "spec.location"},
		{name: "headless service with sidecars gets a plain socket", mode: index.MTLSPermissive, plain: true,
			svc: func(s *index.Service) { s.Resolution = index.Passthrough }},
		{name: "headless service with a plaintext endpoint gets no TLS", mode: index.MTLSStrict, noTLS: provenance.LayerAutoMTLS,
			svc: func(s *index.Service) {
				s.Resolution = index.Passthrough
				s.Endpoints[8080] = append(s.Endpoints[8080], index.Endpoint{Address: "10.0.0.9", Port: 8080, TLSMode: "disabled"})
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := fooService()
			if tc.svc != nil {
				tc.svc(svc)
			}
			input := in(svc, httpPort, nil, meshConfig(autoMTLSOn))
			input.MTLS = NamespaceMTLS{Mode: tc.mode, Origin: provenance.Origin{Layer: provenance.LayerPeerAuthentication,
				Resource: &provenance.Ref{Kind: "PeerAuthentication", Namespace: "default", Name: "default"}, Field: "spec.mtls.mode"}}
			b := build(t, input, "outbound|8080||"+fooHost)
			switch {
			case tc.match:
				want := edsCluster(httpPort, "")
				want.TransportSocketMatches = autoMTLSMatches(istioCtx)
				requireCluster(t, want, b.Cluster)
				tr := trace(t, b, "transportSocketMatches[0].name")
				if tr.Origin.Layer != provenance.LayerAutoMTLS || tr.Origin.Resource == nil || tr.Origin.Resource.Name != "default" {
					t.Errorf("auto-mTLS should name the PeerAuthentication: %+v", tr.Origin)
				}
			case tc.plain:
				if b.Cluster.TransportSocket == nil || len(b.Cluster.TransportSocketMatches) != 0 {
					t.Errorf("want a plain socket, got %v / %v", b.Cluster.TransportSocket, b.Cluster.TransportSocketMatches)
				}
			default:
				if b.Cluster.TransportSocket != nil || len(b.Cluster.TransportSocketMatches) != 0 {
					t.Errorf("want no TLS, got %v / %v", b.Cluster.TransportSocket, b.Cluster.TransportSocketMatches)
				}
				requirePlaintext(t, b, tc.noTLS, tc.noTLSField)
			}
		})
	}
}

// docs/semantics/cluster.md#proxy-protocol-and-retry-budget; cluster_traffic_policy_test.go
// TestApplyUpstreamProxyProtocol.
func TestProxyProtocolWrapsEveryTransportSocket(t *testing.T) {
	pp := &networking.TrafficPolicy_ProxyProtocol{Version: networking.TrafficPolicy_ProxyProtocol_V2}
	wrap := func(inner *corev3.TransportSocket) *corev3.TransportSocket {
		a, _ := anypb.New(&proxyprotocolv3.ProxyProtocolUpstreamTransport{Config: &corev3.ProxyProtocolConfig{Version: corev3.ProxyProtocolConfig_V2}, TransportSocket: inner})
		return &corev3.TransportSocket{Name: "envoy.transport_sockets.upstream_proxy_protocol", ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: a}}
	}
	r := rule(&networking.DestinationRule{Host: fooHost, TrafficPolicy: &networking.TrafficPolicy{ProxyProtocol: pp}})

	b := build(t, in(fooService(), httpPort, r, meshConfig(autoMTLSOn)), "outbound|8080||"+fooHost)
	want := withRule(edsCluster(httpPort, ""), "")
	want.TransportSocketMatches = autoMTLSMatches(istioMutualContext("outbound_.8080_._."+fooHost, alpnMesh, fooSA))
	for _, m := range want.TransportSocketMatches {
		m.TransportSocket = wrap(m.TransportSocket)
	}
	requireCluster(t, want, b.Cluster)
	requireOrigin(t, b, "transportSocketMatches[0].transportSocket.typedConfig.config", provenance.LayerDestinationRule, "spec.trafficPolicy.proxyProtocol.version")

	b = build(t, in(fooService(), httpPort, r, meshConfig(nil)), "outbound|8080||"+fooHost)
	raw, _ := anypb.New(&rawbufferv3.RawBuffer{})
	want = withRule(edsCluster(httpPort, ""), "")
	want.TransportSocket = wrap(&corev3.TransportSocket{Name: "raw_buffer", ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: raw}})
	requireCluster(t, want, b.Cluster)
}

// TestTLSAnyEqualsMarshal checks that the ISTIO_MUTUAL context bytes assembled from the cached
// encoding without SNI are those of marshalling the whole context.
func TestTLSAnyEqualsMarshal(t *testing.T) {
	// One builder per context, and builders sharing one host's contexts (as the ports of a host
	// do), each starting from the context of the one before.
	shared := &hostShared{}
	for _, own := range []bool{true, false} {
		for _, sans := range [][]string{nil, {""}, {"", ""}, {"spiffe://cluster.local/ns/a/sa/b"}, {"x", "y"}, {"xy"}, {strings.Repeat("a", 200), "b"}} {
			for _, alpn := range [][]string{alpnMxH2, alpnH2, alpnMx, alpnIstio} {
				for _, sni := range []string{"outbound_.80_._.a.b.svc.cluster.local", strings.Repeat("s", 300)} {
					b := &builder{in: Input{shared: shared}}
					if own {
						b.in.shared = &hostShared{}
					}
					ctx := b.istioMutualContext(sans, alpn)
					ctx.Sni = sni
					var got anypb.Any
					b.fillTLSAny(&got, ctx)
					want := mustAny(ctx)
					if got.TypeUrl != want.TypeUrl || !bytes.Equal(got.Value, want.Value) {
						t.Errorf("shared %t, sans %q alpn %v sni %q: fillTLSAny differs from mustAny", !own, sans, alpn, sni)
					}
				}
			}
		}
	}
}

// requirePlaintext requires the cluster's transportSocket to be recorded as left out (plaintext),
// with an origin of layer and field.
func requirePlaintext(t *testing.T, b Built, layer provenance.Layer, field string) {
	t.Helper()
	tr := trace(t, b, "transportSocket")
	if !tr.NotSent || tr.Value != "plaintext" || tr.Origin.Layer != layer || tr.Origin.Field != field || tr.Origin.Note == "" {
		t.Errorf("%s: transportSocket should be plaintext (not sent) from %s %q, with a note: %+v", b.Name, layer, field, tr)
	}
}
