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

// Every field of an OutlierDetection, set, survives copyOutlierDetection.
func TestCopyOutlierDetectionKeepsEveryField(t *testing.T) {
	m := &clusterv3.OutlierDetection{}
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
		default:
			t.Fatalf("field %s of kind %s: the test sets no value for it", fd.Name(), fd.Kind())
		}
	}
	got := copyOutlierDetection(m)
	if !proto.Equal(got, m) {
		t.Errorf("copyOutlierDetection dropped fields:\n got %v\nwant %v", got, m)
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
