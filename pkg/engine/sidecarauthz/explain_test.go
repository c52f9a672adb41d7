package sidecarauthz

import (
	"encoding/json"
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
)

// snapshot decodes the objects of a multi-document YAML, as files would give them.
func snapshot(t *testing.T, docs ...string) (*model.Snapshot, *corev1.Pod) {
	t.Helper()
	snap := &model.Snapshot{MeshConfig: &meshv1alpha1.MeshConfig{TrustDomain: "cluster.local", RootNamespace: "istio-system"}}
	var pod *corev1.Pod
	for _, d := range docs {
		js, err := yaml.YAMLToJSON([]byte(d))
		if err != nil {
			t.Fatal(err)
		}
		var head struct{ Kind string }
		_ = json.Unmarshal(js, &head)
		var into any
		switch head.Kind {
		case "Pod":
			p := &corev1.Pod{}
			snap.Pods, pod, into = append(snap.Pods, p), p, p
		case "Service":
			s := &corev1.Service{}
			snap.Services, into = append(snap.Services, s), s
		case "PeerAuthentication":
			p := &securityv1.PeerAuthentication{}
			snap.PeerAuthentications, into = append(snap.PeerAuthentications, p), p
		case "AuthorizationPolicy":
			p := &securityv1.AuthorizationPolicy{}
			snap.AuthorizationPolicies, into = append(snap.AuthorizationPolicies, p), p
		default:
			t.Fatalf("kind %q", head.Kind)
		}
		if err := json.Unmarshal(js, into); err != nil {
			t.Fatal(err)
		}
	}
	return snap, pod
}

const sidecarPod = `
kind: Pod
metadata:
  name: a
  namespace: foo
  labels: {app: a}
  annotations: {sidecar.istio.io/status: "{}"}
spec:
  containers:
  - name: app
    ports: [{name: http, containerPort: 8080}, {name: db, containerPort: 5432}]
status: {podIP: 10.244.1.10}
`

const service = `
kind: Service
metadata: {name: a, namespace: foo}
spec:
  selector: {app: a}
  ports:
  - {name: http, port: 80, targetPort: 8080}
  - {name: tcp-db, port: 15432, targetPort: db}
`

func chains(r *explain.Result) []*listenerv3.FilterChain {
	var out []*listenerv3.FilterChain
	for _, o := range r.Objects {
		if fc, ok := o.Message.(*listenerv3.FilterChain); ok {
			out = append(out, fc)
		}
	}
	return out
}

// chainSummary is `name port transport alpn-count tls filters` per chain.
func chainSummary(r *explain.Result) []string {
	var out []string
	for _, c := range chains(r) {
		var fs []string
		for _, f := range c.Filters {
			fs = append(fs, strings.TrimPrefix(f.Name, "envoy.filters."))
		}
		tls := "-"
		if c.TransportSocket != nil {
			tls = "tls"
		}
		out = append(out, strings.Join([]string{c.Name, itoa(c.GetFilterChainMatch().GetDestinationPort().GetValue()), c.GetFilterChainMatch().GetTransportProtocol(), tls, strings.Join(fs, "+")}, " "))
	}
	return out
}

func itoa(u uint32) string { b, _ := json.Marshal(u); return string(b) }

func diagIDs(r *explain.Result) string {
	var ids []string
	for _, d := range r.Diagnostics {
		ids = append(ids, d.ID)
	}
	return strings.Join(ids, ",")
}

// Each case pins one rule of istiod's inbound listener (pilot/pkg/networking/core
// listener_inbound.go, filterchain_options.go) or of policy selection.
func TestExplainPod(t *testing.T) {
	for _, tc := range []struct {
		name  string
		docs  []string
		want  []string
		diags string
	}{
		{
			name: "no policy: PERMISSIVE, the catch-all chains and two chains per declared port",
			docs: []string{sidecarPod, service},
			want: []string{
				"virtualInbound-blackhole 15006  - ",
				"virtualInbound-catchall-http 0 tls tls ", "virtualInbound-catchall-http 0 raw_buffer - ",
				"virtualInbound 0 tls tls ", "virtualInbound 0 raw_buffer - ", "virtualInbound 0 tls - ",
				"0.0.0.0_5432 5432 tls tls ", "0.0.0.0_5432 5432 tls - ", "0.0.0.0_5432 5432 raw_buffer - ",
				"0.0.0.0_8080 8080 tls tls ", "0.0.0.0_8080 8080 raw_buffer - ",
			},
		},
		{
			name: "STRICT workload with a DENY policy: TLS only, the RBAC filter on every chain but the blackhole",
			docs: []string{sidecarPod, service,
				"kind: PeerAuthentication\nmetadata: {name: strict, namespace: foo}\nspec: {selector: {matchLabels: {app: a}}, mtls: {mode: STRICT}}",
				"kind: AuthorizationPolicy\nmetadata: {name: deny, namespace: foo}\nspec: {action: DENY, rules: [{from: [{source: {notNamespaces: [foo]}}]}]}"},
			want: []string{
				"virtualInbound-blackhole 15006  - ",
				"virtualInbound-catchall-http 0 tls tls http.rbac",
				"virtualInbound 0 tls tls network.rbac",
				"0.0.0.0_5432 5432 tls tls network.rbac",
				"0.0.0.0_8080 8080 tls tls http.rbac",
			},
		},
		{
			name: "a port-level key that is the Service port, not the target port: the target port keeps the workload mode",
			docs: []string{sidecarPod, service,
				"kind: PeerAuthentication\nmetadata: {name: pl, namespace: foo}\nspec: {selector: {matchLabels: {app: a}}, mtls: {mode: STRICT}, portLevelMtls: {\"80\": {mode: DISABLE}}}"},
			want: []string{
				"virtualInbound-blackhole 15006  - ",
				"virtualInbound-catchall-http 0 tls tls ", "virtualInbound 0 tls tls ",
				"virtualInbound-catchall-http 80 raw_buffer - ", "virtualInbound 80 raw_buffer - ",
				"0.0.0.0_5432 5432 tls tls ", "0.0.0.0_8080 8080 tls tls ",
			},
			diags: "S07,S08",
		},
		{
			name: "targetRef policies and root-namespace PeerAuthentications with a selector are not applied",
			docs: []string{sidecarPod, service,
				"kind: PeerAuthentication\nmetadata: {name: rootsel, namespace: istio-system}\nspec: {selector: {matchLabels: {app: a}}, mtls: {mode: DISABLE}}",
				"kind: AuthorizationPolicy\nmetadata: {name: tr, namespace: foo}\nspec: {targetRefs: [{kind: Service, group: \"\", name: a}], action: DENY, rules: [{}]}"},
			want: []string{
				"virtualInbound-blackhole 15006  - ",
				"virtualInbound-catchall-http 0 tls tls ", "virtualInbound-catchall-http 0 raw_buffer - ",
				"virtualInbound 0 tls tls ", "virtualInbound 0 raw_buffer - ", "virtualInbound 0 tls - ",
				"0.0.0.0_5432 5432 tls tls ", "0.0.0.0_5432 5432 tls - ", "0.0.0.0_5432 5432 raw_buffer - ",
				"0.0.0.0_8080 8080 tls tls ", "0.0.0.0_8080 8080 raw_buffer - ",
			},
			diags: "S09,S10",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap, pod := snapshot(t, tc.docs...)
			r := ExplainPod(snap, pod)
			got := chainSummary(r)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("chains:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if ids := diagIDs(r); ids != tc.diags {
				t.Errorf("diagnostics %s, want %s: %+v", ids, tc.diags, r.Diagnostics)
			}
			for _, o := range r.Objects {
				for _, tr := range o.Origins {
					if tr.Origin.Layer == 0 {
						t.Errorf("%s %s has no origin", o.Name, tr.Path)
					}
				}
			}
		})
	}
}
