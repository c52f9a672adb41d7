package envoycluster

import (
	"strconv"

	udpatypev1 "github.com/cncf/xds/go/udpa/type/v1"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rawbufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/raw_buffer/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// commonMessages are the sub-messages that are the same in every cluster istiod sends. Built
// clusters point at these instead of holding copies, so a built cluster must never be written:
// a caller that wants to change one clones it first (proto.Clone).
type commonMessages struct {
	// edsConfig is maybeApplyEdsConfig's config source: ADS, initial fetch timeout 0, V3.
	edsConfig *corev3.ConfigSource
	// metadataExchange is xdsfilters.TCPClusterMx.
	metadataExchange *clusterv3.Filter
	// tlsModeIstio is the match of the tlsMode-istio transport socket match.
	tlsModeIstio *structpb.Struct
	// plaintextMatch is the tlsMode-disabled transport socket match (defaultTransportSocketMatch).
	plaintextMatch *clusterv3.Cluster_TransportSocketMatch
	// rawBuffer is the typed config of a raw_buffer transport socket.
	rawBuffer *anypb.Any
	// u32 are wrappers of the numbers that clusters carry most: 0, 100 and MaxUint32.
	u32Zero, u32Hundred, u32Max *wrapperspb.UInt32Value
	// mutualTLSParams are the TLS parameters of every ISTIO_MUTUAL context.
	mutualTLSParams *tlsv3.TlsParameters
}

var common = newCommonMessages()

func newCommonMessages() *commonMessages {
	mx, _ := structpb.NewStruct(map[string]any{"protocol": "istio-peer-exchange", "enable_discovery": true})
	raw := mustAny(&rawbufferv3.RawBuffer{})
	return &commonMessages{
		edsConfig: &corev3.ConfigSource{
			ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
			InitialFetchTimeout:   durationpb.New(0),
			ResourceApiVersion:    corev3.ApiVersion_V3,
		},
		metadataExchange: &clusterv3.Filter{Name: "istio.metadata_exchange", TypedConfig: mustAny(&udpatypev1.TypedStruct{
			TypeUrl: "type.googleapis.com/envoy.tcp.metadataexchange.config.MetadataExchange",
			Value:   mx,
		})},
		tlsModeIstio: &structpb.Struct{Fields: map[string]*structpb.Value{"tlsMode": structpb.NewStringValue("istio")}},
		plaintextMatch: &clusterv3.Cluster_TransportSocketMatch{
			Name:  "tlsMode-disabled",
			Match: &structpb.Struct{},
			TransportSocket: &corev3.TransportSocket{Name: "envoy.transport_sockets.raw_buffer",
				ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: raw}},
		},
		rawBuffer:       raw,
		mutualTLSParams: defaultCommonTLSContext().TlsParams,
		u32Zero:         &wrapperspb.UInt32Value{Value: 0},
		u32Hundred:      &wrapperspb.UInt32Value{Value: 100},
		u32Max:          &wrapperspb.UInt32Value{Value: 1<<32 - 1},
	}
}

// stringValue is structpb.NewStringValue(s), the value and its kind allocated together.
func stringValue(s string) *structpb.Value {
	p := &struct {
		v    structpb.Value
		kind structpb.Value_StringValue
	}{}
	p.kind.StringValue = s
	p.v.Kind = &p.kind
	return &p.v
}

// u32 returns a wrapper of v, shared for the common values.
func u32(v uint32) *wrapperspb.UInt32Value {
	switch v {
	case 0:
		return common.u32Zero
	case 100:
		return common.u32Hundred
	case 1<<32 - 1:
		return common.u32Max
	}
	return &wrapperspb.UInt32Value{Value: v}
}

// filterPaths are the output paths of the first cluster filters.
var filterPaths = [...]string{"filters[0]", "filters[1]", "filters[2]", "filters[3]"}

// filterPath is the output path of cluster filter i.
func filterPath(i int) string {
	if i < len(filterPaths) {
		return filterPaths[i]
	}
	return "filters[" + strconv.Itoa(i) + "]"
}
