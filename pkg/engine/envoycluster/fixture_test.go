package envoycluster

import (
	"math"
	"testing"
	"time"

	udpatypev1 "github.com/cncf/xds/go/udpa/type/v1"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rawbufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/raw_buffer/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/internal/explaintest"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// The upstream tests' service: foo.default.svc.cluster.local with 8080 named HTTP and 9090
// unnamed (protocol sniffed).
const fooHost = "foo.default.svc.cluster.local"

var (
	httpPort = index.Port{Name: "default", Number: 8080, Protocol: "HTTP"}
	autoPort = index.Port{Name: "auto", Number: 9090, Protocol: "UnsupportedProtocol"}
	fooSA    = "spiffe://cluster.local/ns/default/sa/foo"
)

func fooService() *index.Service {
	return &index.Service{
		Hostname:   fooHost,
		Namespace:  "default",
		Name:       "foo",
		Ref:        provenance.Ref{Kind: "Service", Namespace: "default", Name: "foo"},
		Kubernetes: true,
		Ports:      []index.Port{httpPort, autoPort},
		Endpoints: map[uint32][]index.Endpoint{
			8080: {{Address: "10.0.0.1", Port: 8080, Labels: map[string]string{"app": "foo", "version": "v1"}, TLSMode: "istio", TLSModeIstio: true,
				ServiceAccount: fooSA, Ref: provenance.Ref{Kind: "Pod", Namespace: "default", Name: "foo-1"}}},
			9090: {{Address: "10.0.0.1", Port: 9090, Labels: map[string]string{"app": "foo", "version": "v1"}, TLSMode: "istio", TLSModeIstio: true,
				ServiceAccount: fooSA, Ref: provenance.Ref{Kind: "Pod", Namespace: "default", Name: "foo-1"}}},
		},
		ServiceAccounts: []string{fooSA},
	}
}

var drRef = provenance.Ref{Kind: "DestinationRule", Namespace: "default", Name: "acme"}

// rule wraps a DestinationRule spec as the single-rule merge the index would return.
func rule(spec *networking.DestinationRule) *index.ConsolidatedRule {
	r := &index.ConsolidatedRule{Spec: spec, Primary: drRef, From: []provenance.Ref{drRef}}
	if spec.TrafficPolicy != nil {
		ref := drRef
		r.TrafficPolicyFrom = &ref
	}
	for range spec.Subsets {
		r.SubsetFrom = append(r.SubsetFrom, drRef)
	}
	return r
}

// meshConfig is istiod's default mesh with auto-mTLS off (as most upstream harnesses run) and
// the changes of f.
func meshConfig(f func(*meshv1alpha1.MeshConfig)) *meshv1alpha1.MeshConfig {
	m := DefaultMeshConfig()
	m.EnableAutoMtls = wrapperspb.Bool(false)
	if f != nil {
		f(m)
	}
	return m
}

func autoMTLSOn(m *meshv1alpha1.MeshConfig) { m.EnableAutoMtls = wrapperspb.Bool(true) }

func in(svc *index.Service, port index.Port, r *index.ConsolidatedRule, mesh *meshv1alpha1.MeshConfig) Input {
	return Input{Mesh: mesh, Service: svc, Port: port, Rule: r, Proxy: &index.Proxy{Namespace: "default", Description: "sidecar in namespace default"},
		MTLS: NamespaceMTLS{Mode: index.MTLSPermissive, Origin: provenance.Origin{Layer: provenance.LayerIstioDefault}}}
}

func dur(d time.Duration) *durationpb.Duration { return durationpb.New(d) }

// --- expected clusters ---------------------------------------------------------------------

func mxFilter() *clusterv3.Filter {
	v, _ := structpb.NewStruct(map[string]any{"protocol": "istio-peer-exchange", "enable_discovery": true})
	a, _ := anypb.New(&udpatypev1.TypedStruct{TypeUrl: "type.googleapis.com/envoy.tcp.metadataexchange.config.MetadataExchange", Value: v})
	return &clusterv3.Filter{Name: "istio.metadata_exchange", TypedConfig: a}
}

func defaultThresholds() *clusterv3.CircuitBreakers_Thresholds {
	return &clusterv3.CircuitBreakers_Thresholds{
		MaxConnections:     wrapperspb.UInt32(math.MaxUint32),
		MaxPendingRequests: wrapperspb.UInt32(math.MaxUint32),
		MaxRequests:        wrapperspb.UInt32(math.MaxUint32),
		MaxRetries:         wrapperspb.UInt32(math.MaxUint32),
	}
}

func servicesMeta(host, name, ns string) *structpb.Value {
	return structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
		"host": structpb.NewStringValue(host), "name": structpb.NewStringValue(name), "namespace": structpb.NewStringValue(ns)}})}})
}

// edsCluster is istiod's cluster for a port of foo without any configuration (auto-mTLS off).
func edsCluster(port index.Port, subset string) *clusterv3.Cluster {
	name := clusterName(subset, fooHost, port.Number)
	c := &clusterv3.Cluster{
		Name:                 name,
		AltStatName:          name + ";",
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig: &clusterv3.Cluster_EdsClusterConfig{ServiceName: name, EdsConfig: &corev3.ConfigSource{
			ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
			InitialFetchTimeout:   durationpb.New(0),
			ResourceApiVersion:    corev3.ApiVersion_V3,
		}},
		ConnectTimeout:  dur(10 * time.Second),
		LbPolicy:        clusterv3.Cluster_LEAST_REQUEST,
		CircuitBreakers: &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{defaultThresholds()}},
		CommonLbConfig:  &clusterv3.Cluster_CommonLbConfig{HealthyPanicThreshold: &typev3.Percent{}},
		Filters:         []*clusterv3.Filter{mxFilter()},
		Metadata: &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"istio": {Fields: map[string]*structpb.Value{
			"services": servicesMeta(fooHost, "foo", "default")}}}},
	}
	if port.Protocol == "UnsupportedProtocol" {
		setHPO(c, &httpv3.HttpProtocolOptions{UpstreamProtocolOptions: downstreamProtocol()})
	}
	return c
}

// withRule adds the DestinationRule (and subset) metadata istiod writes when a rule applies.
func withRule(c *clusterv3.Cluster, subset string) *clusterv3.Cluster {
	f := c.Metadata.FilterMetadata["istio"].Fields
	f["config"] = structpb.NewStringValue("/apis/networking.istio.io/v1/namespaces/default/destination-rule/acme")
	if subset != "" {
		f["subset"] = structpb.NewStringValue(subset)
	}
	return c
}

func downstreamProtocol() *httpv3.HttpProtocolOptions_UseDownstreamProtocolConfig {
	return &httpv3.HttpProtocolOptions_UseDownstreamProtocolConfig{UseDownstreamProtocolConfig: &httpv3.HttpProtocolOptions_UseDownstreamHttpConfig{
		HttpProtocolOptions: &corev3.Http1ProtocolOptions{}, Http2ProtocolOptions: &corev3.Http2ProtocolOptions{}}}
}

func explicitHTTP1() *httpv3.HttpProtocolOptions_ExplicitHttpConfig_ {
	return &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
		ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_HttpProtocolOptions{HttpProtocolOptions: &corev3.Http1ProtocolOptions{}}}}
}

func explicitHTTP2(o *corev3.Http2ProtocolOptions) *httpv3.HttpProtocolOptions_ExplicitHttpConfig_ {
	if o == nil {
		o = &corev3.Http2ProtocolOptions{}
	}
	return &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
		ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: o}}}
}

func setHPO(c *clusterv3.Cluster, h *httpv3.HttpProtocolOptions) {
	a, err := anypb.New(h)
	if err != nil {
		panic(err)
	}
	c.TypedExtensionProtocolOptions = map[string]*anypb.Any{"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": a}
}

func hpoOf(t *testing.T, c *clusterv3.Cluster) *httpv3.HttpProtocolOptions {
	t.Helper()
	a := c.GetTypedExtensionProtocolOptions()["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
	if a == nil {
		return nil
	}
	h := &httpv3.HttpProtocolOptions{}
	if err := a.UnmarshalTo(h); err != nil {
		t.Fatal(err)
	}
	return h
}

func sdsConfig(name string, initialFetch bool) *tlsv3.SdsSecretConfig {
	s := &corev3.ConfigSource{
		ConfigSourceSpecifier: &corev3.ConfigSource_ApiConfigSource{ApiConfigSource: &corev3.ApiConfigSource{
			ApiType: corev3.ApiConfigSource_GRPC, SetNodeOnFirstMessageOnly: true, TransportApiVersion: corev3.ApiVersion_V3,
			GrpcServices: []*corev3.GrpcService{{TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: "sds-grpc"}}}},
		}},
		ResourceApiVersion: corev3.ApiVersion_V3,
	}
	if initialFetch {
		s.InitialFetchTimeout = durationpb.New(0)
	}
	return &tlsv3.SdsSecretConfig{Name: name, SdsConfig: s}
}

func tlsParams() *tlsv3.TlsParameters {
	return &tlsv3.TlsParameters{TlsMinimumProtocolVersion: tlsv3.TlsParameters_TLSv1_2, TlsMaximumProtocolVersion: tlsv3.TlsParameters_TLSv1_3}
}

func exact(names ...string) []*matcherv3.StringMatcher {
	var out []*matcherv3.StringMatcher
	for _, n := range names {
		out = append(out, &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: n}})
	}
	return out
}

// istioMutualContext is the ISTIO_MUTUAL UpstreamTlsContext istiod builds.
func istioMutualContext(sni string, alpn []string, sans ...string) *tlsv3.UpstreamTlsContext {
	return &tlsv3.UpstreamTlsContext{Sni: sni, CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsParams:                      tlsParams(),
		AlpnProtocols:                  alpn,
		TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{sdsConfig("default", true)},
		ValidationContextType: &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
			DefaultValidationContext:         &tlsv3.CertificateValidationContext{MatchSubjectAltNames: exact(sans...)},
			ValidationContextSdsSecretConfig: sdsConfig("ROOTCA", true),
		}},
	}}
}

func tlsSocket(ctx *tlsv3.UpstreamTlsContext) *corev3.TransportSocket {
	a, _ := anypb.New(ctx)
	return &corev3.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: a}}
}

func autoMTLSMatches(ctx *tlsv3.UpstreamTlsContext) []*clusterv3.Cluster_TransportSocketMatch {
	raw, _ := anypb.New(&rawbufferv3.RawBuffer{})
	return []*clusterv3.Cluster_TransportSocketMatch{
		{Name: "tlsMode-istio", Match: &structpb.Struct{Fields: map[string]*structpb.Value{"tlsMode": structpb.NewStringValue("istio")}}, TransportSocket: tlsSocket(ctx)},
		{Name: "tlsMode-disabled", Match: &structpb.Struct{}, TransportSocket: &corev3.TransportSocket{Name: "envoy.transport_sockets.raw_buffer",
			ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: raw}}},
	}
}

// --- assertions ----------------------------------------------------------------------------

// build returns the built cluster called name, failing the test when it is missing, and
// checks that every field of every built cluster is traced.
func build(t *testing.T, input Input, name string) Built {
	t.Helper()
	all, err := BuildClusters(input)
	if err != nil {
		t.Fatal(err)
	}
	requireTraced(t, all)
	for _, b := range all {
		if b.Name == name {
			if b.Cluster == nil {
				t.Fatalf("cluster %s was dropped", name)
			}
			return b
		}
	}
	t.Fatalf("no cluster %s among %v", name, names(all))
	return Built{}
}

func names(bs []Built) []string {
	var out []string
	for _, b := range bs {
		if b.Cluster != nil {
			out = append(out, b.Name)
		}
	}
	return out
}

// requireTraced wraps built clusters in a Result and runs the shared trace check.
func requireTraced(t *testing.T, bs []Built) {
	t.Helper()
	res := &explain.Result{}
	for _, b := range bs {
		if b.Cluster == nil {
			continue
		}
		res.Objects = append(res.Objects, explain.Object{Kind: ClusterKind, Name: b.Name, Origins: b.Origins, Message: b.Cluster})
	}
	explaintest.RequireEveryFieldTraced(t, res)
}

func requireCluster(t *testing.T, want, got *clusterv3.Cluster) {
	t.Helper()
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("cluster %s (-want +got):\n%s", want.GetName(), diff)
	}
}

func trace(t *testing.T, b Built, path string) provenance.FieldTrace {
	t.Helper()
	for _, tr := range b.Origins {
		if tr.Path == path {
			return tr
		}
	}
	t.Fatalf("%s: no trace at %s", b.Name, path)
	return provenance.FieldTrace{}
}

// requireOrigin checks the layer and input field of the trace at path.
func requireOrigin(t *testing.T, b Built, path string, layer provenance.Layer, field string) {
	t.Helper()
	tr := trace(t, b, path)
	if tr.Origin.Layer != layer || tr.Origin.Field != field {
		t.Errorf("%s: %s comes from %s %q, want %s %q", b.Name, path, tr.Origin.Layer, tr.Origin.Field, layer, field)
	}
}

func diagIDs(b Built) []string {
	var out []string
	for _, d := range b.Diagnostics {
		out = append(out, d.ID)
	}
	return out
}

func clone[T proto.Message](m T) T { return proto.Clone(m).(T) }
