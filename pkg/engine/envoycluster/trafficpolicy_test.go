package envoycluster

import (
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
)

// Every field of the messages built on the stack, set, survives the copy that keeps them.
func TestCopiesKeepEveryField(t *testing.T) {
	od := &clusterv3.OutlierDetection{}
	setEveryField(t, od)
	if got := copyOutlierDetection(od); !proto.Equal(got, od) {
		t.Errorf("copyOutlierDetection dropped fields:\n got %v\nwant %v", got, od)
	}
	th := &clusterv3.CircuitBreakers_Thresholds{}
	setEveryField(t, th)
	if got := copyThresholds(th); !proto.Equal(got, th) {
		t.Errorf("copyThresholds dropped fields:\n got %v\nwant %v", got, th)
	}
}

// setEveryField gives every field of m a value that is not its zero value.
func setEveryField(t *testing.T, m proto.Message) {
	t.Helper()
	r := m.ProtoReflect()
	fields := r.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		switch {
		case fd.IsList():
			l := r.Mutable(fd).List()
			l.Append(l.NewElement())
		case fd.Kind() == protoreflect.MessageKind:
			r.Set(fd, r.NewField(fd))
		case fd.Kind() == protoreflect.BoolKind:
			r.Set(fd, protoreflect.ValueOfBool(true))
		case fd.Kind() == protoreflect.EnumKind:
			r.Set(fd, protoreflect.ValueOfEnum(fd.Enum().Values().Get(fd.Enum().Values().Len()-1).Number()))
		default:
			t.Fatalf("%s: the test sets no value for a field of kind %s", fd.FullName(), fd.Kind())
		}
	}
}

// The clusters of a host share the OutlierDetection message of one outlierDetection block and
// the CircuitBreakers message of one pair of connectionPool and retryBudget blocks; a subset's
// own blocks get their own messages, with their values.
// TestMetadataSharedPerHost builds both ports of foo with one hostShared, as an Explainer
// does: the default clusters of the two ports carry one Metadata message, the clusters of one
// subset another, and each holds the metadata istiod writes for it.
func TestMetadataSharedPerHost(t *testing.T) {
	dr := &networking.DestinationRule{Host: fooHost, Subsets: []*networking.Subset{
		{Name: "v1", Labels: map[string]string{"version": "v1"}},
		{Name: "v2", Labels: map[string]string{"version": "v2"}},
	}}
	shared, svc, r := &hostShared{}, fooService(), rule(dr)
	byPort := map[uint32][]Built{}
	for _, port := range []index.Port{httpPort, autoPort} {
		input := in(svc, port, r, meshConfig(nil))
		input.shared = shared
		built, err := BuildClusters(input)
		if err != nil {
			t.Fatal(err)
		}
		if len(built) != 3 {
			t.Fatalf("port %d: %d clusters, want 3", port.Number, len(built))
		}
		byPort[port.Number] = built
	}
	config := structpb.NewStringValue("/apis/networking.istio.io/v1/namespaces/default/destination-rule/acme")
	want := func(subset string) *corev3.Metadata {
		fields := map[string]*structpb.Value{"services": servicesMeta(fooHost, "foo", "default"), "config": config}
		if subset != "" {
			fields["subset"] = structpb.NewStringValue(subset)
		}
		return &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"istio": {Fields: fields}}}
	}
	for i, subset := range []string{"", "v1", "v2"} {
		a, b := byPort[8080][i].Cluster.Metadata, byPort[9090][i].Cluster.Metadata
		if a != b {
			t.Errorf("subset %q: the clusters of ports 8080 and 9090 carry Metadata %p and %p, want one message", subset, a, b)
		}
		if !proto.Equal(a, want(subset)) {
			t.Errorf("subset %q: Metadata = %v, want %v", subset, a, want(subset))
		}
	}
	if byPort[8080][1].Cluster.Metadata == byPort[8080][2].Cluster.Metadata {
		t.Error("subsets v1 and v2 share a Metadata message")
	}
}

func TestPolicyMessagesSharedPerBlock(t *testing.T) {
	dr := &networking.DestinationRule{
		Host: fooHost,
		TrafficPolicy: &networking.TrafficPolicy{
			OutlierDetection: &networking.OutlierDetection{Consecutive_5XxErrors: wrapperspb.UInt32(7), Interval: durationpb.New(5e9)},
			ConnectionPool:   &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 10}},
		},
		Subsets: []*networking.Subset{
			{Name: "v1", Labels: map[string]string{"version": "v1"}},
			{Name: "v2", Labels: map[string]string{"version": "v2"}, TrafficPolicy: &networking.TrafficPolicy{
				OutlierDetection: &networking.OutlierDetection{Consecutive_5XxErrors: wrapperspb.UInt32(3)},
				ConnectionPool:   &networking.ConnectionPoolSettings{Http: &networking.ConnectionPoolSettings_HTTPSettings{Http2MaxRequests: 20}},
			}},
		},
	}
	built, err := BuildClusters(in(fooService(), httpPort, rule(dr), meshConfig(nil)))
	if err != nil {
		t.Fatal(err)
	}
	if len(built) != 3 {
		t.Fatalf("%d clusters, want 3", len(built))
	}
	topCB, ownCB := defaultThresholds(), defaultThresholds()
	topCB.MaxConnections, ownCB.MaxRequests = wrapperspb.UInt32(10), wrapperspb.UInt32(20)
	for _, tc := range []struct {
		name           string
		get            func(*clusterv3.Cluster) proto.Message
		wantTop, wantV proto.Message
	}{
		{"OutlierDetection", func(c *clusterv3.Cluster) proto.Message { return c.OutlierDetection },
			&clusterv3.OutlierDetection{EnforcingSuccessRate: wrapperspb.UInt32(0), Consecutive_5Xx: wrapperspb.UInt32(7), EnforcingConsecutive_5Xx: wrapperspb.UInt32(100), Interval: durationpb.New(5e9)},
			&clusterv3.OutlierDetection{EnforcingSuccessRate: wrapperspb.UInt32(0), Consecutive_5Xx: wrapperspb.UInt32(3), EnforcingConsecutive_5Xx: wrapperspb.UInt32(100)}},
		{"CircuitBreakers", func(c *clusterv3.Cluster) proto.Message { return c.CircuitBreakers },
			&clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{topCB}},
			&clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{ownCB}}},
	} {
		def, v1, v2 := tc.get(built[0].Cluster), tc.get(built[1].Cluster), tc.get(built[2].Cluster)
		if def != v1 {
			t.Errorf("%s of the default and v1 clusters: %p and %p, want one message", tc.name, def, v1)
		}
		if v2 == def {
			t.Errorf("%s of the v2 cluster is the top-level one", tc.name)
		}
		if !proto.Equal(def, tc.wantTop) {
			t.Errorf("%s of the default cluster = %v, want %v", tc.name, def, tc.wantTop)
		}
		if !proto.Equal(v2, tc.wantV) {
			t.Errorf("%s of the v2 cluster = %v, want %v", tc.name, v2, tc.wantV)
		}
	}
}
