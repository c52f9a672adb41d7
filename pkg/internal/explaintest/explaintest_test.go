package explaintest

import (
	"slices"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

func sample(t *testing.T) *clusterv3.Cluster {
	hpo, err := anypb.New(&httpv3.HttpProtocolOptions{
		CommonHttpProtocolOptions: &corev3.HttpProtocolOptions{IdleTimeout: durationpb.New(15e9)},
		UpstreamProtocolOptions: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
			ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_HttpProtocolOptions{HttpProtocolOptions: &corev3.Http1ProtocolOptions{}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	svc, _ := structpb.NewStruct(map[string]any{"services": []any{map[string]any{"host": "a.b.svc.cluster.local", "name": "a"}}})
	return &clusterv3.Cluster{
		Name:           "outbound|80||a.b.svc.cluster.local",
		ConnectTimeout: durationpb.New(10e9),
		LbPolicy:       clusterv3.Cluster_LEAST_REQUEST,
		CommonLbConfig: &clusterv3.Cluster_CommonLbConfig{},
		CircuitBreakers: &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{
			{MaxConnections: wrapperspb.UInt32(7)},
		}},
		TypedExtensionProtocolOptions: map[string]*anypb.Any{"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": hpo},
		Metadata:                      &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"istio": svc}},
	}
}

func TestLeavesUseEnvoyJSONPaths(t *testing.T) {
	got := Leaves(sample(t))
	want := []string{
		"name",
		"connectTimeout",
		"lbPolicy",
		"circuitBreakers.thresholds[0].maxConnections",
		"typedExtensionProtocolOptions[envoy.extensions.upstreams.http.v3.HttpProtocolOptions].commonHttpProtocolOptions.idleTimeout",
		"typedExtensionProtocolOptions[envoy.extensions.upstreams.http.v3.HttpProtocolOptions].explicitHttpConfig.httpProtocolOptions",
		"metadata.filterMetadata[istio].services[0].host",
		"metadata.filterMetadata[istio].services[0].name",
		"commonLbConfig",
	}
	if diff := cmp.Diff(sortedCopy(want), sortedCopy(got)); diff != "" {
		t.Fatalf("leaves (-want +got):\n%s", diff)
	}
}

func TestUncoveredFindsUntracedLeavesAndIgnoresPlaceholders(t *testing.T) {
	o := provenance.Origin{Layer: provenance.LayerIstioDefault}
	obj := explain.Object{Name: "c", Message: sample(t), Origins: []provenance.FieldTrace{
		{Path: "name", Origin: o},
		{Path: "connectTimeout", Origin: o},
		{Path: "lbPolicy", Origin: o},
		{Path: "circuitBreakers", Origin: o},
		{Path: "typedExtensionProtocolOptions[envoy.extensions.upstreams.http.v3.HttpProtocolOptions].commonHttpProtocolOptions", Origin: o},
		{Path: "metadata.filterMetadata[istio].services", Origin: o},
		// A placeholder (shadow only) does not count.
		{Path: "commonLbConfig"},
		// NotSent traces never cover.
		{Path: "typedExtensionProtocolOptions[envoy.extensions.upstreams.http.v3.HttpProtocolOptions].explicitHttpConfig", NotSent: true, Origin: o},
	}}
	want := []string{
		"commonLbConfig",
		"typedExtensionProtocolOptions[envoy.extensions.upstreams.http.v3.HttpProtocolOptions].explicitHttpConfig.httpProtocolOptions",
	}
	if diff := cmp.Diff(sortedCopy(want), sortedCopy(Uncovered(obj))); diff != "" {
		t.Fatalf("uncovered (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"typedExtensionProtocolOptions[envoy.extensions.upstreams.http.v3.HttpProtocolOptions].explicitHttpConfig"}, SentButMarkedNotSent(obj)); diff != "" {
		t.Fatalf("not-sent check (-want +got):\n%s", diff)
	}
}

func TestRequireEveryFieldTracedReportsFailures(t *testing.T) {
	ft := &fakeT{TB: t}
	res := &explain.Result{Objects: []explain.Object{{Name: "c", Message: sample(t)}}}
	RequireEveryFieldTraced(ft, res)
	if ft.errors != 9 {
		t.Fatalf("got %d errors, want one per leaf (9)", ft.errors)
	}
}

type fakeT struct {
	testing.TB
	errors int
}

func (f *fakeT) Helper()                   {}
func (f *fakeT) Errorf(string, ...any)     { f.errors++ }
func (f *fakeT) Fatalf(m string, a ...any) { f.TB.Fatalf(m, a...) }

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
