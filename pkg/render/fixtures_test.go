package render

import (
	"testing"
	"time"

	udpav1 "github.com/cncf/xds/go/udpa/type/v1"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	caresv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/network/dns_resolver/cares/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// The fixtures are hand-built Results: they exercise every part of the schema a renderer
// reads, independently of what the engines currently produce.

var (
	drReviews  = provenance.Ref{Kind: "DestinationRule", Namespace: "bookinfo", Name: "reviews"}
	svcReviews = provenance.Ref{Kind: "Service", Namespace: "bookinfo", Name: "reviews"}
	drFile     = func(line, col int) *provenance.Position {
		return &provenance.Position{File: "scenarios/bookinfo/dr.yaml", Line: line, Col: col}
	}
)

func drOrigin(layer provenance.Layer, field string, pos *provenance.Position) provenance.Origin {
	ref := drReviews
	return provenance.Origin{Layer: layer, Resource: &ref, Field: field, Position: pos}
}

func registryOrigin(field string) provenance.Origin {
	ref := svcReviews
	return provenance.Origin{Layer: provenance.LayerRegistry, Resource: &ref, Field: field}
}

func mustAny(t testing.TB, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// reviewsCluster is a Cluster carrying every Any type istiod uses in outbound clusters.
func reviewsCluster(t testing.TB, name string) *clusterv3.Cluster {
	t.Helper()
	mx, err := structpb.NewStruct(map[string]any{"protocol": "istio-peer-exchange"})
	if err != nil {
		t.Fatal(err)
	}
	return &clusterv3.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		ConnectTimeout:       durationpb.New(2 * time.Second),
		LbPolicy:             clusterv3.Cluster_LEAST_REQUEST,
		CircuitBreakers: &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{
			MaxConnections: wrapperspb.UInt32(100),
			MaxRetries:     wrapperspb.UInt32(4294967295),
		}}},
		TypedExtensionProtocolOptions: map[string]*anypb.Any{
			"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": mustAny(t, &httpv3.HttpProtocolOptions{
				CommonHttpProtocolOptions: &corev3.HttpProtocolOptions{IdleTimeout: durationpb.New(time.Hour)},
				UpstreamProtocolOptions: &httpv3.HttpProtocolOptions_UseDownstreamProtocolConfig{
					UseDownstreamProtocolConfig: &httpv3.HttpProtocolOptions_UseDownstreamHttpConfig{},
				},
			}),
		},
		TypedDnsResolverConfig: &corev3.TypedExtensionConfig{
			Name:        "envoy.network.dns_resolver.cares",
			TypedConfig: mustAny(t, &caresv3.CaresDnsResolverConfig{UdpMaxQueries: wrapperspb.UInt32(100)}),
		},
		Filters: []*clusterv3.Filter{{
			Name:        "istio.metadata_exchange",
			TypedConfig: mustAny(t, &udpav1.TypedStruct{TypeUrl: "type.googleapis.com/envoy.tcp.metadataexchange.config.MetadataExchange", Value: mx}),
		}},
		TransportSocketMatches: []*clusterv3.Cluster_TransportSocketMatch{{
			Name: "tlsMode-istio",
			TransportSocket: &corev3.TransportSocket{
				Name: "envoy.transport_sockets.tls",
				ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(t, &tlsv3.UpstreamTlsContext{
					Sni: "outbound_.9080_._.reviews.bookinfo.svc.cluster.local",
				})},
			},
		}},
	}
}

// clusterResult has two clusters, a normal and a wide-only section, every origin shape (file
// position, note, not sent, shadowed, dropped-only placeholder), three diagnostics and a warning.
func clusterResult(t testing.TB) *explain.Result {
	t.Helper()
	svc := svcReviews
	const name = "outbound|9080||reviews.bookinfo.svc.cluster.local"
	const subsetName = "outbound|9080|v1|reviews.bookinfo.svc.cluster.local"
	mesh := provenance.Origin{Layer: provenance.LayerMeshConfig, Field: "connectTimeout"}
	return &explain.Result{
		APIVersion: explain.APIVersion,
		Kind:       explain.KindClusterExplanation,
		Subject: explain.Subject{
			Kind: "Host", Host: "reviews.bookinfo.svc.cluster.local", Namespace: "bookinfo", Port: 9080, Resource: &svc,
		},
		Proxy: &explain.Proxy{
			Description: "sidecar of pod bookinfo/productpage-v1", Namespace: "bookinfo", Pod: "productpage-v1",
			Labels: map[string]string{"app": "productpage", "version": "v1"}, IPs: []string{"10.0.0.7"},
		},
		Sections: []explain.Section{
			{
				Title:   "DestinationRule selection",
				Columns: []string{"step", "namespace", "result"},
				Rows: [][]string{
					{"client namespace", "bookinfo", "DestinationRule bookinfo/reviews (selected)"},
					{"service namespace", "bookinfo", "(same as client namespace)"},
					{"root namespace", "istio-system", "not consulted"},
				},
			},
			{
				Title:   "Services in scope",
				Columns: []string{"host", "from"},
				Rows:    [][]string{{"reviews.bookinfo.svc.cluster.local", "default Sidecar scope (all namespaces)"}},
				Wide:    true,
			},
		},
		Objects: []explain.Object{
			{
				Kind: "envoy.config.cluster.v3.Cluster",
				Name: name,
				Summary: []explain.Summary{
					{Name: "discovery type", Value: "EDS"},
					{Name: "rules applied", Value: "DestinationRule bookinfo/reviews"},
				},
				Value:   []byte(`{"name":"` + name + `","type":"EDS","connectTimeout":"2s"}`),
				Message: reviewsCluster(t, name),
				Origins: []provenance.FieldTrace{
					{Path: "circuitBreakers.thresholds[0].maxConnections", Value: "100",
						Origin: func() provenance.Origin {
							o := drOrigin(provenance.LayerPortLevel,
								"spec.trafficPolicy.portLevelSettings[port=9080].connectionPool.tcp.maxConnections", drFile(14, 17))
							o.Note = "portLevelSettings[9080] replaces the top-level connectionPool"
							return o
						}(),
						Shadowed: []provenance.Shadow{{
							Origin: drOrigin(provenance.LayerDestinationRule, "spec.trafficPolicy.connectionPool.tcp.maxConnections", drFile(9, 15)),
							Value:  "10", Reason: "dropped: portLevelSettings[9080] replaces the whole connectionPool",
						}}},
					{Path: "circuitBreakers.thresholds[0].maxRetries", Value: "4294967295",
						Origin: provenance.Origin{Layer: provenance.LayerIstioDefault}},
					{Path: "circuitBreakers.thresholds[0].trackRemaining", Value: "false", NotSent: true,
						Origin: provenance.Origin{Layer: provenance.LayerEnvoyDefault, Note: "DISABLE_TRACK_REMAINING_CB_METRICS=true"}},
					{Path: "connectTimeout", Value: "2s",
						Origin:   drOrigin(provenance.LayerDestinationRule, "spec.trafficPolicy.connectionPool.tcp.connectTimeout", drFile(8, 23)),
						Shadowed: []provenance.Shadow{{Origin: mesh, Value: "10s", Reason: "overridden"}}},
					{Path: "lbPolicy", Value: "LEAST_REQUEST", Origin: provenance.Origin{Layer: provenance.LayerIstioDefault}},
					{Path: "name", Value: name, Origin: registryOrigin("")},
					{Path: "outlierDetection", Shadowed: []provenance.Shadow{{
						Origin: provenance.Origin{Layer: provenance.LayerMeshDefaultTrafficPolicy, Field: "outlierDetection"},
						Reason: "dropped: the DestinationRule sets a connectionPool, the mesh baseline blocks are replaced",
					}}},
					{Path: "transportSocketMatches[0].transportSocket", Value: "ISTIO_MUTUAL",
						Origin: provenance.Origin{Layer: provenance.LayerAutoMTLS, Note: "PeerAuthentication istio-system/default is STRICT"}},
					{Path: "type", Value: "EDS", Origin: registryOrigin("spec.type")},
					{Path: "typedExtensionProtocolOptions[envoy.extensions.upstreams.http.v3.HttpProtocolOptions].commonHttpProtocolOptions.idleTimeout",
						Value:  "1h0m0s",
						Origin: drOrigin(provenance.LayerDestinationRule, "spec.trafficPolicy.connectionPool.http.idleTimeout", drFile(11, 22))},
				},
			},
			{
				Kind: "envoy.config.cluster.v3.Cluster",
				Name: subsetName,
				Summary: []explain.Summary{
					{Name: "discovery type", Value: "EDS"},
					{Name: "rules applied", Value: "DestinationRule bookinfo/reviews subset v1"},
				},
				Message: reviewsCluster(t, subsetName),
				Origins: []provenance.FieldTrace{
					{Path: "name", Value: subsetName, Origin: drOrigin(provenance.LayerSubset, "spec.subsets[name=v1]", drFile(20, 5))},
				},
			},
		},
		Diagnostics: []explain.Diagnostic{
			{ID: "D3", Severity: explain.SeverityError,
				Message:   "DestinationRule other/reviews is not visible from namespace bookinfo (exportTo: .)",
				Resources: []provenance.Ref{{Kind: "DestinationRule", Namespace: "other", Name: "reviews"}},
				Fix:       "add bookinfo to spec.exportTo, or move the rule to namespace bookinfo"},
			{ID: "D14", Severity: explain.SeverityWarning,
				Message:   "portLevelSettings[9080] drops the top-level connectionPool",
				Resources: []provenance.Ref{drReviews}},
			{ID: "D25", Severity: explain.SeverityInfo, Message: "the DestinationRule replaces the mesh baseline connectionPool"},
		},
		Warnings: []string{"could not list PeerAuthentications in namespace istio-system: forbidden (mTLS inference is incomplete)"},
	}
}

// authzResult is an ambient workload with one generated and one missing Authorization, both
// in its key list.
func authzResult(pod string) *explain.Result {
	ap := provenance.Ref{Kind: "AuthorizationPolicy", Namespace: "foo", Name: "allow-get"}
	pa := provenance.Ref{Kind: "PeerAuthentication", Namespace: "istio-system", Name: "default"}
	podRef := provenance.Ref{Kind: "Pod", Namespace: "foo", Name: pod}
	return &explain.Result{
		APIVersion: explain.APIVersion,
		Kind:       explain.KindAuthzExplanation,
		Subject:    explain.Subject{Kind: "Workload", Workload: "pod/" + pod, Namespace: "foo", Resource: &podRef},
		Sections: []explain.Section{{
			Title:   "PeerAuthentication chain",
			Columns: []string{"level", "policy", "mode"},
			Rows:    [][]string{{"mesh", "PeerAuthentication istio-system/default", "STRICT"}, {"namespace", "-", "(unset)"}},
		}},
		Objects: []explain.Object{
			{
				Kind:    "istio.security.Authorization",
				Name:    "foo/allow-get",
				Listed:  true,
				Summary: []explain.Summary{{Name: "scope", Value: "WORKLOAD_SELECTOR"}, {Name: "action", Value: "ALLOW"}},
				Value:   []byte(`{"name":"allow-get","namespace":"foo","scope":"WORKLOAD_SELECTOR","action":"ALLOW"}`),
				Origins: []provenance.FieldTrace{
					{Path: "action", Value: "ALLOW", Origin: provenance.Origin{Layer: provenance.LayerAuthorizationPolicy, Resource: &ap, Field: "spec.action"}},
					{Path: "groups[0].rules[0].matches[0].methods[0]", Value: "GET",
						Origin: provenance.Origin{Layer: provenance.LayerAuthorizationPolicy, Resource: &ap, Field: "spec.rules[0].to[0].operation.methods[0]",
							Position: &provenance.Position{File: "ap.yaml", Line: 12, Col: 20}}},
					{Path: "scope", Value: "WORKLOAD_SELECTOR", Origin: provenance.Origin{Layer: provenance.LayerAuthorizationPolicy, Resource: &ap, Field: "spec.selector"}},
				},
			},
			{
				Kind:    "istio.security.Authorization",
				Name:    "istio-system/istio_converted_static_strict",
				Missing: true,
				Listed:  true,
				Origins: []provenance.FieldTrace{
					{Path: "name", Value: "istio_converted_static_strict",
						Origin: provenance.Origin{Layer: provenance.LayerStaticPolicy, Resource: &pa, Note: "referenced by the workload, not generated"}},
				},
			},
		},
		Diagnostics: []explain.Diagnostic{{ID: "A3", Severity: explain.SeverityWarning, Message: "the workload's key list names a policy istiod does not generate",
			Resources: []provenance.Ref{pa}}},
	}
}

// emptyResult is a host for which no cluster is generated, without findings.
func emptyResult() *explain.Result {
	return &explain.Result{
		APIVersion: explain.APIVersion,
		Kind:       explain.KindClusterExplanation,
		Subject:    explain.Subject{Kind: "Host", Host: "api.example.com"},
	}
}
