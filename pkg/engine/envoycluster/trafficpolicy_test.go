package envoycluster

import (
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"
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

// The clusters of a host share the OutlierDetection message of one outlierDetection block; a
// subset's own block gets its own message.
func TestOutlierDetectionSharedPerBlock(t *testing.T) {
	top := &networking.OutlierDetection{Consecutive_5XxErrors: wrapperspb.UInt32(7), Interval: durationpb.New(5e9)}
	own := &networking.OutlierDetection{Consecutive_5XxErrors: wrapperspb.UInt32(3)}
	dr := &networking.DestinationRule{
		Host:          fooHost,
		TrafficPolicy: &networking.TrafficPolicy{OutlierDetection: top},
		Subsets: []*networking.Subset{
			{Name: "v1", Labels: map[string]string{"version": "v1"}},
			{Name: "v2", Labels: map[string]string{"version": "v2"}, TrafficPolicy: &networking.TrafficPolicy{OutlierDetection: own}},
		},
	}
	built, err := BuildClusters(in(fooService(), httpPort, rule(dr), meshConfig(nil)))
	if err != nil {
		t.Fatal(err)
	}
	if len(built) != 3 {
		t.Fatalf("%d clusters, want 3", len(built))
	}
	def, v1, v2 := built[0].Cluster.OutlierDetection, built[1].Cluster.OutlierDetection, built[2].Cluster.OutlierDetection
	if def == nil || def != v1 {
		t.Errorf("default and v1 clusters: OutlierDetection %p and %p, want one message", def, v1)
	}
	if v2 == nil || v2 == def {
		t.Fatalf("v2 cluster shares the top-level OutlierDetection message")
	}
	if got := def.GetConsecutive_5Xx().GetValue(); got != 7 || def.GetInterval().AsDuration() != 5e9 {
		t.Errorf("default cluster: consecutive5xx %d, interval %v; want 7, 5s", got, def.GetInterval().AsDuration())
	}
	if got := v2.GetConsecutive_5Xx().GetValue(); got != 3 || v2.GetInterval() != nil {
		t.Errorf("v2 cluster: consecutive5xx %d, interval %v; want 3 and no interval", got, v2.GetInterval())
	}
}

// The clusters of a host share the CircuitBreakers message of one pair of connectionPool and
// retryBudget blocks; a subset's own connectionPool gets its own message.
func TestCircuitBreakersSharedPerBlocks(t *testing.T) {
	top := &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 10}}
	own := &networking.ConnectionPoolSettings{Http: &networking.ConnectionPoolSettings_HTTPSettings{Http2MaxRequests: 20}}
	dr := &networking.DestinationRule{
		Host:          fooHost,
		TrafficPolicy: &networking.TrafficPolicy{ConnectionPool: top},
		Subsets: []*networking.Subset{
			{Name: "v1", Labels: map[string]string{"version": "v1"}},
			{Name: "v2", Labels: map[string]string{"version": "v2"}, TrafficPolicy: &networking.TrafficPolicy{ConnectionPool: own}},
		},
	}
	built, err := BuildClusters(in(fooService(), httpPort, rule(dr), meshConfig(nil)))
	if err != nil {
		t.Fatal(err)
	}
	if len(built) != 3 {
		t.Fatalf("%d clusters, want 3", len(built))
	}
	def, v1, v2 := built[0].Cluster.CircuitBreakers, built[1].Cluster.CircuitBreakers, built[2].Cluster.CircuitBreakers
	if def == nil || def != v1 {
		t.Errorf("default and v1 clusters: CircuitBreakers %p and %p, want one message", def, v1)
	}
	if v2 == nil || v2 == def {
		t.Fatalf("v2 cluster shares the top-level CircuitBreakers message")
	}
	want := defaultThresholds()
	want.MaxConnections = wrapperspb.UInt32(10)
	if got := def.GetThresholds(); len(got) != 1 || !proto.Equal(got[0], want) {
		t.Errorf("default cluster thresholds %v, want %v", got, want)
	}
	want = defaultThresholds()
	want.MaxRequests = wrapperspb.UInt32(20)
	if got := v2.GetThresholds(); len(got) != 1 || !proto.Equal(got[0], want) {
		t.Errorf("v2 cluster thresholds %v, want %v", got, want)
	}
}
