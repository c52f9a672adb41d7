package model

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

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

func TestProxyType(t *testing.T) {
	proxy := func(args ...string) corev1.Container { return corev1.Container{Name: ProxyContainer, Args: args} }
	app := corev1.Container{Name: "app", Args: []string{"proxy", "router"}}
	for _, tc := range []struct {
		name            string
		spec            corev1.PodSpec
		wantTyp, wantAt string
	}{
		{"sidecar", corev1.PodSpec{Containers: []corev1.Container{app, proxy("proxy", "sidecar", "--domain", "x")}}, ProxySidecar, "spec.containers[1].args[1]"},
		{"gateway", corev1.PodSpec{Containers: []corev1.Container{proxy("proxy", "router")}}, ProxyRouter, "spec.containers[0].args[1]"},
		{"native sidecar", corev1.PodSpec{InitContainers: []corev1.Container{{Name: "istio-validation"}, proxy("proxy", "sidecar")}, Containers: []corev1.Container{app}}, ProxySidecar, "spec.initContainers[1].args[1]"},
		{"waypoint", corev1.PodSpec{Containers: []corev1.Container{proxy("proxy", "waypoint")}}, ProxyWaypoint, "spec.containers[0].args[1]"},
		{"another container's args", corev1.PodSpec{Containers: []corev1.Container{app}}, "", ""},
		{"no args", corev1.PodSpec{Containers: []corev1.Container{proxy()}}, "", ""},
		{"not the agent's proxy command", corev1.PodSpec{Containers: []corev1.Container{proxy("run", "router")}}, "", ""},
	} {
		typ, at := ProxyType(&corev1.Pod{Spec: tc.spec})
		if typ != tc.wantTyp || at != tc.wantAt {
			t.Errorf("%s: ProxyType = %q at %q, want %q at %q", tc.name, typ, at, tc.wantTyp, tc.wantAt)
		}
	}
	// Without the arguments (a pod read in part), the label of istiod's deployment controller.
	for _, tc := range []struct {
		managed, wantTyp string
	}{{"istio.io-mesh-controller", ProxyWaypoint}, {"istio.io-gateway-controller", ProxyRouter}, {"someone-else", ""}} {
		pod := &corev1.Pod{}
		pod.Labels = map[string]string{"gateway.istio.io/managed": tc.managed}
		pod.Spec.Containers = []corev1.Container{proxy()}
		wantAt := ""
		if tc.wantTyp != "" {
			wantAt = "metadata.labels[gateway.istio.io/managed]"
		}
		if typ, at := ProxyType(pod); typ != tc.wantTyp || at != wantAt {
			t.Errorf("managed by %s: ProxyType = %q at %q, want %q at %q", tc.managed, typ, at, tc.wantTyp, wantAt)
		}
	}
	// The arguments decide over the label.
	{
		pod := &corev1.Pod{}
		pod.Labels = map[string]string{"gateway.istio.io/managed": "istio.io-mesh-controller"}
		pod.Spec.Containers = []corev1.Container{proxy("proxy", "router")}
		typ, at := ProxyType(pod)
		if typ != ProxyRouter || at != "spec.containers[0].args[1]" {
			t.Errorf("args and label disagree: ProxyType = %q at %q, want the args' router", typ, at)
		}
	}
}
