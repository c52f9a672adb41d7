package model

import (
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

func TestMeshConfigOrigin(t *testing.T) {
	src := &provenance.Ref{Kind: "ConfigMap", Namespace: "istio-system", Name: "istio"}
	pos := &provenance.Position{File: "mesh.yaml", Line: 7, Col: 3}
	snap := &Snapshot{MeshConfigSource: src, MeshConfigPosition: pos, MeshConfigUserFields: map[string]bool{"tcpKeepalive": true}}

	o, set := snap.MeshConfigOrigin("tcpKeepalive.time", "n")
	if !set || o.Layer != provenance.LayerMeshConfig || o.Field != "tcpKeepalive.time" || o.Note != "n" ||
		o.Resource == nil || *o.Resource != *src || o.Resource == src || o.Position != pos {
		t.Errorf("a field under a top-level field the user set: got %+v, set %v", o, set)
	}
	for _, tc := range []struct {
		name string
		snap *Snapshot
	}{{"a field the user did not set", snap}, {"a nil snapshot", nil}} {
		o, set := tc.snap.MeshConfigOrigin("connectTimeout", "")
		if set || o.Resource != nil || o.Position != nil || o.Field != "connectTimeout" {
			t.Errorf("%s: got %+v, set %v", tc.name, o, set)
		}
	}
}
