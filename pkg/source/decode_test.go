package source

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMalformedObjectsAreSkippedWithAnIssueNamingResourceAndField loads testdata/bad/bad.yaml:
// every malformed object becomes one error naming the object and the offending field, at the
// field's position, and the valid object next to them still loads.
func TestMalformedObjectsAreSkippedWithAnIssueNamingResourceAndField(t *testing.T) {
	snap, err := load(t.Context(), Spec{Files: []string{"testdata/bad"}, DefaultNamespace: "bookinfo"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const f = "testdata/bad/bad.yaml"
	want := []issue{
		{
			Severity: "error", Resource: "DestinationRule bookinfo/unknown-field", Position: f + ":12:9",
			Field:   "spec.trafficPolicy.connectionPool.tcp.maxConection",
			Message: `unknown field "maxConection" (did you mean "maxConnections"?); the object is skipped`,
		},
		{
			Severity: "error", Resource: "DestinationRule bookinfo/bad-duration", Position: f + ":24:9",
			Field:   "spec.trafficPolicy.connectionPool.tcp.connectTimeout",
			Message: `expected a duration such as "5s" or "100ms", got number 10; the object is skipped`,
		},
		{
			Severity: "error", Resource: "DestinationRule bookinfo/bad-duration", Position: f + ":26:7",
			Field:   "spec.trafficPolicy.outlierDetection.interval",
			Message: `invalid duration "5 seconds" (use a duration such as 5s, 100ms or 1h30m); the object is skipped`,
		},
		{
			Severity: "error", Resource: "PeerAuthentication bookinfo/bad-enum", Position: f + ":35:5",
			Field:   "spec.mtls.mode",
			Message: `invalid value "STRCT" (valid values: UNSET, DISABLE, PERMISSIVE, STRICT); the object is skipped`,
		},
		{
			Severity: "error", Resource: "DestinationRule bookinfo/wrong-type", Position: f + ":52:11",
			Field:   "spec.subsets[1].trafficPolicy.connectionPool.http.http2MaxRequests",
			Message: `expected a 32-bit integer, got string "lots"; the object is skipped`,
		},
		{
			Severity: "error", Resource: "Service bookinfo/bad-port", Position: f + ":64:5",
			Field:   "spec.ports[1].port",
			Message: `expected an integer, got string "nine"; the object is skipped`,
		},
		{
			Severity: "error", Resource: "Service bookinfo/unknown-core-field", Position: f + ":75:5",
			Field:   "spec.ports[0].protocl",
			Message: `unknown field "protocl"; the object is skipped`,
		},
		{
			Severity: "error", Position: f + ":85:1", Field: "apiVersion",
			Message: `no matches for kind "EnvoyFilter" in version "networking.istio.io/v1" (served versions: networking.istio.io/v1alpha3)`,
		},
		{
			Severity: "error", Position: f + ":93:1", Field: "metadata.name",
			Message: "DestinationRule has no name; the object is skipped",
		},
		{
			Severity: "error", Resource: "Service bookinfo/broken-yaml", Position: f + ":102",
			Message: "invalid YAML: did not find expected ',' or '}'; the object is skipped",
		},
		{
			Severity: "error", Resource: "VirtualService bookinfo/spec-typo", Position: f + ":109:1",
			Field: "sepc", Message: `unknown field "sepc"; the object is skipped`,
		},
	}
	if diff := cmp.Diff(want, issues(snap)); diff != "" {
		t.Errorf("issues (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"DestinationRule bookinfo/good"}, keys(snap)); diff != "" {
		t.Errorf("loaded objects (-want +got):\n%s", diff)
	}
}

func TestDecodeProblems(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []issue
	}{
		{
			name: "a quoted integer is accepted, as jsonpb accepts it",
			in:   "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: a, namespace: ns1}\nspec:\n  host: a\n  trafficPolicy: {connectionPool: {tcp: {maxConnections: \"7\"}}}\n",
		},
		{
			name: "proto field names are accepted, as jsonpb accepts them",
			in:   "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: a, namespace: ns1}\nspec:\n  host: a\n  traffic_policy: {connection_pool: {tcp: {max_connections: 7}}}\n",
		},
		{
			name: "an enum given as a number it does not define",
			in:   "apiVersion: security.istio.io/v1\nkind: PeerAuthentication\nmetadata: {name: a, namespace: ns1}\nspec:\n  mtls: {mode: 2}\n  portLevelMtls:\n    \"7070\": {mode: 80}\n",
			want: []issue{{
				Severity: "error", Resource: "PeerAuthentication ns1/a", Position: "<stdin>:7:14", Field: "spec.portLevelMtls[7070].mode",
				Message: "invalid value 80 (valid values: UNSET, DISABLE, PERMISSIVE, STRICT); the object is skipped",
			}},
		},
		{
			name: "label values must be strings",
			in:   "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: ns1\n  labels:\n    version: 1\n",
			want: []issue{{
				Severity: "error", Resource: "Pod ns1/p", Position: "<stdin>:7:5", Field: "metadata.labels.version",
				Message: "expected a string, got number 1; the object is skipped",
			}},
		},
		{
			name: "a namespace the API server rejects",
			in:   "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  namespace: GRPC\n",
			want: []issue{{
				Severity: "error", Position: "<stdin>:5:3", Field: "metadata.namespace",
				Message: `Service "a": invalid namespace "GRPC": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?'); the API server rejects it, and the object is skipped`,
			}},
		},
		{
			name: "a Service name must be a DNS-1035 label, other names a DNS-1123 subdomain",
			in: "apiVersion: v1\nkind: Service\nmetadata: {name: a.b, namespace: ns1}\n---\n" +
				"apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: a.b, namespace: ns1}\nspec: {host: a}\n",
			want: []issue{{
				Severity: "error", Position: "<stdin>:3:12", Field: "metadata.name",
				Message: `Service "a.b": invalid name "a.b": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?'); the API server rejects it, and the object is skipped`,
			}},
		},
		{
			name: "a Service port the API server rejects: 0, a null entry, above 65535",
			in: "apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: ns1}\nspec:\n  ports:\n  - {port: 80}\n  - null\n---\n" +
				"apiVersion: v1\nkind: Service\nmetadata: {name: b, namespace: ns1}\nspec:\n  ports:\n  - {port: 70000}\n---\n" +
				"apiVersion: v1\nkind: Service\nmetadata: {name: c, namespace: ns1}\nspec:\n  ports:\n  - {port: 65535}\n",
			want: []issue{{
				Severity: "error", Resource: "Service ns1/a", Position: "<stdin>:7:5", Field: "spec.ports[1].port",
				Message: "invalid port 0: must be between 1 and 65535, inclusive; the API server rejects it, and the object is skipped",
			}, {
				Severity: "error", Resource: "Service ns1/b", Position: "<stdin>:14:6", Field: "spec.ports[0].port",
				Message: "invalid port 70000: must be between 1 and 65535, inclusive; the API server rejects it, and the object is skipped",
			}},
		},
		{
			name: "a cluster IP the API server rejects: the Service is skipped; None and an IP are kept",
			in: "apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: ns1}\nspec:\n  clusterIP: 10.0.0.300\n---\n" +
				"apiVersion: v1\nkind: Service\nmetadata: {name: b, namespace: ns1}\nspec:\n  clusterIP: 10.0.0.3\n  clusterIPs: [10.0.0.3, \"fd00::x\"]\n---\n" +
				"apiVersion: v1\nkind: Service\nmetadata: {name: c, namespace: ns1}\nspec:\n  clusterIP: None\n  clusterIPs: [None]\n",
			want: []issue{{
				Severity: "error", Resource: "Service ns1/a", Position: "<stdin>:5:3", Field: "spec.clusterIP",
				Message: `invalid cluster IP "10.0.0.300": must be a valid IP address or None; the API server rejects it, and the object is skipped`,
			}, {
				Severity: "error", Resource: "Service ns1/b", Position: "<stdin>:12:26", Field: "spec.clusterIPs[1]",
				Message: `invalid cluster IP "fd00::x": must be a valid IP address or None; the API server rejects it, and the object is skipped`,
			}},
		},
		{
			name: "a container port the API server rejects: the Pod is skipped",
			in: "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns1}\nspec:\n  containers:\n  - name: app\n    ports:\n    - {name: http, containerPort: 8080}\n    - {name: tp0, containerPort: null}\n---\n" +
				"apiVersion: v1\nkind: Pod\nmetadata: {name: q, namespace: ns1}\nspec:\n  initContainers:\n  - name: proxy\n    ports:\n    - {containerPort: 70000}\n",
			want: []issue{{
				Severity: "error", Resource: "Pod ns1/p", Position: "<stdin>:9:19", Field: "spec.containers[0].ports[1].containerPort",
				Message: "invalid container port 0: must be between 1 and 65535, inclusive; the API server rejects it, and the object is skipped",
			}, {
				Severity: "error", Resource: "Pod ns1/q", Position: "<stdin>:18:8", Field: "spec.initContainers[0].ports[0].containerPort",
				Message: "invalid container port 70000: must be between 1 and 65535, inclusive; the API server rejects it, and the object is skipped",
			}},
		},
		{
			name: "a port name the API server rejects: the Service or Pod is skipped",
			in: "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: ns1}\nspec:\n  ports:\n  - {name: HTTP_web, port: 80}\n---\n" +
				"apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns1}\nspec:\n  containers:\n  - name: app\n    ports:\n    - {name: a-port-name-too-long, containerPort: 8080}\n",
			want: []issue{{
				Severity: "error", Resource: "Service ns1/s", Position: "<stdin>:6:6", Field: "spec.ports[0].name",
				Message: `invalid port name "HTTP_web": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?'); the API server rejects it, and the object is skipped`,
			}, {
				Severity: "error", Resource: "Pod ns1/p", Position: "<stdin>:15:8", Field: "spec.containers[0].ports[0].name",
				Message: `invalid port name "a-port-name-too-long": must be no more than 15 characters; the API server rejects it, and the object is skipped`,
			}},
		},
		{
			name: "a pod IP that is no address: the pod is kept without it",
			in:   "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns1}\nstatus:\n  podIP: not-an-ip\n  podIPs:\n  - ip: not-an-ip\n  - ip: fd00::7\n",
			want: []issue{{
				Severity: "warning", Resource: "Pod ns1/p", Position: "<stdin>:5:3", Field: "status.podIP",
				Message: `Pod IP "not-an-ip" is not a valid IP address; the API server rejects it, and the pod is explained without that address`,
			}, {
				Severity: "warning", Resource: "Pod ns1/p", Position: "<stdin>:7:5", Field: "status.podIPs[0].ip",
				Message: `Pod IP "not-an-ip" is not a valid IP address; the API server rejects it, and the pod is explained without that address`,
			}},
		},
		{
			name: "a spec that is not a mapping",
			in:   "apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: a, namespace: ns1}\nspec: [1]\n",
			want: []issue{{
				Severity: "error", Resource: "AuthorizationPolicy ns1/a", Position: "<stdin>:4:1", Field: "spec",
				Message: "expected an object, got a list; the object is skipped",
			}},
		},
		{
			name: "a list where an object belongs",
			in:   "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: v, namespace: ns1}\nspec:\n  hosts: a\n",
			want: []issue{{
				Severity: "error", Resource: "VirtualService ns1/v", Position: "<stdin>:5:3", Field: "spec.hosts",
				Message: `expected a list, got string "a"; the object is skipped`,
			}},
		},
		{
			name: "invalid map key",
			in:   "apiVersion: security.istio.io/v1\nkind: PeerAuthentication\nmetadata: {name: a, namespace: ns1}\nspec:\n  portLevelMtls:\n    http: {mode: STRICT}\n",
			want: []issue{{
				Severity: "error", Resource: "PeerAuthentication ns1/a", Position: "<stdin>:6:5", Field: "spec.portLevelMtls[http]",
				Message: `invalid key "http" (expected a non-negative 32-bit integer); the object is skipped`,
			}},
		},
		{
			name: "duplicate key",
			in:   "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: ns1}\nspec:\n  type: ClusterIP\n  type: NodePort\n",
			want: []issue{{
				Severity: "error", Resource: "Service ns1/s", Position: "<stdin>:6",
				Message: `invalid YAML: key "type" already set in map; the object is skipped`,
			}},
		},
		{
			name: "namespace n is YAML 1.1 false, as kubectl reads it",
			in:   "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n  namespace: n\n",
			want: []issue{{
				Severity: "error", Resource: "Service default/s", Position: "<stdin>:5:3", Field: "metadata.namespace",
				Message: "expected a string, got false; the object is skipped",
			}},
		},
		{
			name: "kind missing",
			in:   "apiVersion: v1\nmetadata: {name: s}\n",
			want: []issue{{Severity: "error", Position: "<stdin>:1:1", Field: "kind", Message: "object has no kind; it is skipped"}},
		},
		{
			name: "apiVersion missing",
			in:   "kind: Service\nmetadata: {name: s}\n",
			want: []issue{{Severity: "error", Position: "<stdin>:1:1", Field: "apiVersion", Message: "Service has no apiVersion; the object is skipped"}},
		},
		{
			name: "not an object",
			in:   "- a\n- b\n",
			want: []issue{{Severity: "error", Position: "<stdin>:1:1", Message: "not a Kubernetes object: expected a mapping with apiVersion and kind, got a list"}},
		},
		{
			name: "kind in a group it does not belong to",
			in:   "apiVersion: security.istio.io/v1\nkind: DestinationRule\nmetadata: {name: s}\n",
			want: []issue{{
				Severity: "error", Position: "<stdin>:1:1", Field: "apiVersion",
				Message: `no matches for kind "DestinationRule" in version "security.istio.io/v1" (DestinationRule is networking.istio.io/v1)`,
			}},
		},
		{
			name: "other groups' kinds are ignored silently",
			in:   "apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: s}\nspec: {whatever: 1}\n",
		},
		{
			name: "invalid JSON",
			in:   "{\"apiVersion\": \"v1\",\n \"kind\": }\n",
			want: []issue{{Severity: "error", Position: "<stdin>:2:11", Message: "invalid JSON: invalid character '}' looking for beginning of value"}},
		},
		{
			name: "invalid separator",
			in:   "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n--- {b: c}\nkind: Namespace\n",
			want: []issue{{Severity: "error", Position: "<stdin>:4", Message: "invalid YAML document separator: {b: c} (only a comment may follow ---)"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap, err := load(t.Context(), Spec{Files: []string{"-"}, Stdin: strings.NewReader(tt.in)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, issues(snap)); diff != "" {
				t.Errorf("issues (-want +got):\n%s", diff)
			}
			if len(tt.want) == 0 && strings.Contains(tt.name, "accepted") && len(snap.Sources) != 1 {
				t.Errorf("object not loaded")
			}
		})
	}
}

func TestProtoNamesDecodeToTheSameValues(t *testing.T) {
	in := "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: a, namespace: ns1}\nspec:\n  host: a\n  traffic_policy: {connection_pool: {tcp: {max_connections: \"7\"}}}\n"
	snap, err := load(t.Context(), Spec{Files: []string{"-"}, Stdin: strings.NewReader(in)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := snap.DestinationRules[0].Spec.GetTrafficPolicy().GetConnectionPool().GetTcp().GetMaxConnections(); got != 7 {
		t.Errorf("maxConnections = %d, want 7", got)
	}
}

func TestInvalidPodIPsDropped(t *testing.T) {
	in := "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns1}\nstatus:\n  podIP: not-an-ip\n  podIPs:\n  - ip: not-an-ip\n  - ip: fd00::7\n"
	snap, err := load(t.Context(), Spec{Files: []string{"-"}, Stdin: strings.NewReader(in)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Pods) != 1 {
		t.Fatalf("pods = %d, want the pod kept", len(snap.Pods))
	}
	st := snap.Pods[0].Status
	if st.PodIP != "" || len(st.PodIPs) != 1 || st.PodIPs[0].IP != "fd00::7" {
		t.Errorf("status = podIP %q, podIPs %v; want only fd00::7 left", st.PodIP, st.PodIPs)
	}
}
