package provenance

import "testing"

func TestRecorderShadowsEarlierValue(t *testing.T) {
	r := NewRecorder()
	mesh := Origin{Layer: LayerMeshConfig, Field: "connectTimeout"}
	dr := Origin{Layer: LayerDestinationRule, Resource: &Ref{Kind: "DestinationRule", Namespace: "bookinfo", Name: "reviews"},
		Field: "spec.trafficPolicy.connectionPool.tcp.connectTimeout"}
	r.Set("connectTimeout", "10s", mesh)
	r.Set("connectTimeout", "2s", dr)
	got, ok := r.Get("connectTimeout")
	if !ok || got.Value != "2s" || got.Origin.Layer != LayerDestinationRule {
		t.Fatalf("winner = %+v", got)
	}
	if len(got.Shadowed) != 1 || got.Shadowed[0].Value != "10s" || got.Shadowed[0].Origin.Layer != LayerMeshConfig {
		t.Fatalf("shadowed = %+v", got.Shadowed)
	}
	if s := got.Origin.String(); s != "DestinationRule bookinfo/reviews · spec.trafficPolicy.connectionPool.tcp.connectTimeout" {
		t.Fatalf("origin string = %q", s)
	}
}

func TestRecorderDeleteRemovesSubtree(t *testing.T) {
	r := NewRecorder()
	o := Origin{Layer: LayerIstioDefault}
	r.Set("edsClusterConfig.serviceName", "x", o)
	r.Set("edsClusterConfig.edsConfig.ads", "{}", o)
	r.Set("edsClusterConfigX", "y", o)
	r.Delete("edsClusterConfig")
	if got := r.Traces(); len(got) != 1 || got[0].Path != "edsClusterConfigX" {
		t.Fatalf("traces after delete = %+v", got)
	}
}

func TestCovers(t *testing.T) {
	for _, c := range []struct {
		path, leaf string
		want       bool
	}{
		{"a.b", "a.b", true},
		{"a.b", "a.b.c", true},
		{"a.b", "a.b[0].c", true},
		{"a.b", "a.bc", false},
		{"a.b.c", "a.b", false},
	} {
		if got := Covers(c.path, c.leaf); got != c.want {
			t.Errorf("Covers(%q, %q) = %v, want %v", c.path, c.leaf, got, c.want)
		}
	}
}
