package explaintest

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

func TestLeafValuesSpellTracedValues(t *testing.T) {
	got := LeafValues(sample(t))
	want := map[string]string{
		"connectTimeout": "10s",
		"lbPolicy":       "LEAST_REQUEST",
		"circuitBreakers.thresholds[0].maxConnections": "7",
		"typedExtensionProtocolOptions[envoy.extensions.upstreams.http.v3.HttpProtocolOptions].commonHttpProtocolOptions.idleTimeout": "15s",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("leaf values (-want +got):\n%s", d)
	}
}

func TestTraceMismatches(t *testing.T) {
	obj := explain.Object{Name: "c", Message: sample(t), Origins: []provenance.FieldTrace{
		{Path: "connectTimeout", Value: "10s"},
		{Path: "lbPolicy", Value: "ROUND_ROBIN"},
		{Path: "circuitBreakers.thresholds[0].maxConnections", Value: "1024", NotSent: true},
		{Path: "name", Value: "anything"},
	}}
	bad, compared := TraceMismatches(obj)
	if want := []string{`lbPolicy: traced "ROUND_ROBIN", the field holds "LEAST_REQUEST"`}; compared != 2 || !cmp.Equal(bad, want) {
		t.Fatalf("mismatches %q of %d compared, want %q of 2", bad, compared, want)
	}
}
