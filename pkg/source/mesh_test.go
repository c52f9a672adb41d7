package source

import (
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
)

func TestDefaultMeshConfigMatchesIstiod(t *testing.T) {
	mc := DefaultMeshConfig()
	checks := []struct {
		name      string
		got, want any
	}{
		{"connectTimeout", mc.GetConnectTimeout().AsDuration(), 10 * time.Second},
		{"rootNamespace", mc.GetRootNamespace(), "istio-system"},
		{"trustDomain", mc.GetTrustDomain(), "cluster.local"},
		{"enableAutoMtls", mc.GetEnableAutoMtls().GetValue(), true},
		{"enablePrometheusMerge", mc.GetEnablePrometheusMerge().GetValue(), true},
		{"defaultDestinationRuleExportTo", mc.GetDefaultDestinationRuleExportTo(), []string{"*"}},
		{"defaultServiceExportTo", mc.GetDefaultServiceExportTo(), []string{"*"}},
		{"defaultVirtualServiceExportTo", mc.GetDefaultVirtualServiceExportTo(), []string{"*"}},
		{"outboundTrafficPolicy", mc.GetOutboundTrafficPolicy().GetMode(), meshv1alpha1.MeshConfig_OutboundTrafficPolicy_ALLOW_ANY},
		{"localityLbSetting.enabled", mc.GetLocalityLbSetting().GetEnabled().GetValue(), true},
		{"dnsRefreshRate", mc.GetDnsRefreshRate().AsDuration(), 60 * time.Second},
		{"protocolDetectionTimeout", mc.GetProtocolDetectionTimeout().AsDuration(), time.Duration(0)},
		{"proxyListenPort", mc.GetProxyListenPort(), int32(15001)},
		{"defaultConfig.drainDuration", mc.GetDefaultConfig().GetDrainDuration().AsDuration(), 45 * time.Second},
		{"defaultConfig.discoveryAddress", mc.GetDefaultConfig().GetDiscoveryAddress(), "istiod.istio-system.svc:15012"},
		{"extensionProviders", providerNames(mc), []string{"prometheus", "stackdriver", "envoy"}},
	}
	for _, c := range checks {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
	if DefaultMeshConfig() == DefaultMeshConfig() {
		t.Error("DefaultMeshConfig must return a fresh value each call")
	}
}

func providerNames(mc *meshv1alpha1.MeshConfig) []string {
	var out []string
	for _, p := range mc.GetExtensionProviders() {
		out = append(out, p.GetName())
	}
	return out
}

func TestParseMeshConfig(t *testing.T) {
	tests := []struct {
		name     string
		yaml     string
		check    func(t *testing.T, mc *meshv1alpha1.MeshConfig)
		wantUser []string
	}{
		{
			name: "empty yaml is istiod's defaults",
			yaml: "",
			check: func(t *testing.T, mc *meshv1alpha1.MeshConfig) {
				if !proto.Equal(mc, DefaultMeshConfig()) {
					t.Errorf("got %v, want the defaults", mc)
				}
			},
		},
		{
			name: "a top-level field replaces the default",
			yaml: "connectTimeout: 1s\nrootNamespace: istio-config\nenableAutoMtls: false\n",
			check: func(t *testing.T, mc *meshv1alpha1.MeshConfig) {
				if mc.GetConnectTimeout().AsDuration() != time.Second || mc.GetRootNamespace() != "istio-config" || mc.GetEnableAutoMtls().GetValue() {
					t.Errorf("got connectTimeout %v rootNamespace %q enableAutoMtls %v", mc.GetConnectTimeout().AsDuration(), mc.GetRootNamespace(), mc.GetEnableAutoMtls())
				}
				if mc.GetTrustDomain() != "cluster.local" {
					t.Errorf("unset trustDomain = %q, want the default cluster.local", mc.GetTrustDomain())
				}
			},
			wantUser: []string{"connectTimeout", "enableAutoMtls", "rootNamespace"},
		},
		{
			name: "a list replaces the default list rather than appending to it",
			yaml: "defaultDestinationRuleExportTo: [\".\"]\n",
			check: func(t *testing.T, mc *meshv1alpha1.MeshConfig) {
				if diff := cmp.Diff([]string{"."}, mc.GetDefaultDestinationRuleExportTo()); diff != "" {
					t.Errorf("defaultDestinationRuleExportTo (-want +got):\n%s", diff)
				}
			},
			wantUser: []string{"defaultDestinationRuleExportTo"},
		},
		{
			name: "a message replaces the default message wholesale",
			yaml: "localityLbSetting:\n  distribute:\n  - from: us/*\n    to: {\"us/*\": 100}\n",
			check: func(t *testing.T, mc *meshv1alpha1.MeshConfig) {
				if mc.GetLocalityLbSetting().GetEnabled() != nil {
					t.Errorf("localityLbSetting.enabled = %v, want unset (the default block is replaced)", mc.GetLocalityLbSetting().GetEnabled())
				}
				if len(mc.GetLocalityLbSetting().GetDistribute()) != 1 {
					t.Errorf("distribute = %v", mc.GetLocalityLbSetting().GetDistribute())
				}
			},
			wantUser: []string{"localityLbSetting"},
		},
		{
			name: "proto field names are accepted and reported in JSON spelling",
			yaml: "connect_timeout: 3s\n",
			check: func(t *testing.T, mc *meshv1alpha1.MeshConfig) {
				if mc.GetConnectTimeout().AsDuration() != 3*time.Second {
					t.Errorf("connectTimeout = %v, want 3s", mc.GetConnectTimeout().AsDuration())
				}
			},
			wantUser: []string{"connectTimeout"},
		},
		{
			name: "defaultConfig is merged into the default proxy config",
			yaml: "defaultConfig:\n  proxyMetadata: {ISTIO_META_DNS_CAPTURE: \"true\"}\n  concurrency: 2\n",
			check: func(t *testing.T, mc *meshv1alpha1.MeshConfig) {
				pc := mc.GetDefaultConfig()
				if pc.GetDrainDuration().AsDuration() != 45*time.Second || pc.GetDiscoveryAddress() != "istiod.istio-system.svc:15012" {
					t.Errorf("defaults lost: %v", pc)
				}
				if pc.GetConcurrency().GetValue() != 2 || pc.GetProxyMetadata()["ISTIO_META_DNS_CAPTURE"] != "true" {
					t.Errorf("user values lost: %v", pc)
				}
			},
			wantUser: []string{"defaultConfig"},
		},
		{
			name: "extension providers are merged by name",
			yaml: "extensionProviders:\n- name: envoy\n  envoyFileAccessLog: {path: /dev/stderr}\n- name: otel\n  opentelemetry: {service: otel.observability.svc.cluster.local, port: 4317}\n",
			check: func(t *testing.T, mc *meshv1alpha1.MeshConfig) {
				if diff := cmp.Diff([]string{"prometheus", "stackdriver", "envoy", "otel"}, providerNames(mc)); diff != "" {
					t.Errorf("providers (-want +got):\n%s", diff)
				}
				if got := mc.GetExtensionProviders()[2].GetEnvoyFileAccessLog().GetPath(); got != "/dev/stderr" {
					t.Errorf("envoy provider path = %q, want /dev/stderr", got)
				}
			},
			wantUser: []string{"extensionProviders"},
		},
		{
			name: "trust domain aliases are sorted and deduplicated",
			yaml: "trustDomainAliases: [b.local, a.local, b.local]\n",
			check: func(t *testing.T, mc *meshv1alpha1.MeshConfig) {
				if diff := cmp.Diff([]string{"a.local", "b.local"}, mc.GetTrustDomainAliases()); diff != "" {
					t.Errorf("aliases (-want +got):\n%s", diff)
				}
			},
			wantUser: []string{"trustDomainAliases"},
		},
		{
			name: "defaultProviders are applied",
			yaml: "defaultProviders: {accessLogging: [envoy]}\n",
			check: func(t *testing.T, mc *meshv1alpha1.MeshConfig) {
				if diff := cmp.Diff([]string{"envoy"}, mc.GetDefaultProviders().GetAccessLogging()); diff != "" {
					t.Errorf("accessLogging (-want +got):\n%s", diff)
				}
			},
			wantUser: []string{"defaultProviders"},
		},
		{
			name: "unknown fields are ignored, as istiod ignores them",
			yaml: "connectTimeout: 2s\nnotAField: 1\n",
			check: func(t *testing.T, mc *meshv1alpha1.MeshConfig) {
				if mc.GetConnectTimeout().AsDuration() != 2*time.Second {
					t.Errorf("connectTimeout = %v, want 2s", mc.GetConnectTimeout().AsDuration())
				}
			},
			wantUser: []string{"connectTimeout"},
		},
		{
			name: "a null field keeps the default",
			yaml: "connectTimeout: null\n",
			check: func(t *testing.T, mc *meshv1alpha1.MeshConfig) {
				if mc.GetConnectTimeout().AsDuration() != 10*time.Second {
					t.Errorf("connectTimeout = %v, want 10s", mc.GetConnectTimeout().AsDuration())
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mc, user, err := ParseMeshConfig(tt.yaml)
			if err != nil {
				t.Fatalf("ParseMeshConfig: %v", err)
			}
			tt.check(t, mc)
			var got []string
			for k, v := range user {
				if v {
					got = append(got, k)
				}
			}
			sort.Strings(got)
			if diff := cmp.Diff(tt.wantUser, got); diff != "" {
				t.Errorf("user fields (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseMeshConfigRejectsWhatIstiodRejects(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string
	}{
		{"connect timeout below 1ms", "connectTimeout: 0s\n", "invalid connect timeout: duration must be greater than 1ms"},
		{"empty trust domain", "trustDomain: \"\"\n", "trustDomain: empty domain name not allowed"},
		{"bad duration", "connectTimeout: ten\n", `connectTimeout: invalid duration "ten" (use a duration such as 5s, 100ms or 1h30m)`},
		{"bad enum", "outboundTrafficPolicy: {mode: OPEN}\n", `outboundTrafficPolicy.mode: invalid value "OPEN" (valid values: REGISTRY_ONLY, ALLOW_ANY, ALLOW_ANY_DYNAMIC_DNS)`},
		{"bad port", "proxyListenPort: 70000\n", "invalid proxy listen port: port number 70000 must be in the range 1..65535"},
		{"not a mapping", "hello\n", `expected an object, got string "hello"`},
		{"not yaml", "connectTimeout: [\n", "invalid YAML: line 1: did not find expected node content"},
		{"empty connection pool", "defaultTrafficPolicy: {connectionPool: {}}\n", "defaultTrafficPolicy: connection pool must have at least one field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseMeshConfig(tt.yaml)
			if err == nil || err.Error() != tt.want {
				t.Errorf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestMeshConfigSources(t *testing.T) {
	const cm = `apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  namespace: %s
data:
  mesh: |-
    connectTimeout: 5s
`
	tests := []struct {
		name       string
		files      map[string]string
		spec       Spec
		wantSource string
		wantPos    string
		wantCT     time.Duration
		wantIssues []issue
	}{
		{
			name:       "the istio ConfigMap in istio-system",
			files:      map[string]string{"cm.yaml": fmt.Sprintf(cm, "istio", "istio-system")},
			wantSource: "ConfigMap istio-system/istio", wantPos: "cm.yaml:7:3", wantCT: 5 * time.Second,
		},
		{
			name:   "a ConfigMap named istio in another namespace is not the mesh config",
			files:  map[string]string{"cm.yaml": fmt.Sprintf(cm, "istio", "default")},
			wantCT: 10 * time.Second,
		},
		{
			name:       "--istio-namespace moves the ConfigMap",
			files:      map[string]string{"cm.yaml": fmt.Sprintf(cm, "istio", "istio-control")},
			spec:       Spec{IstioNamespace: "istio-control"},
			wantSource: "ConfigMap istio-control/istio", wantPos: "cm.yaml:7:3", wantCT: 5 * time.Second,
		},
		{
			name:       "--revision reads istio-<revision>",
			files:      map[string]string{"cm.yaml": fmt.Sprintf(cm, "istio", "istio-system") + "---\n" + fmt.Sprintf(cm, "istio-canary", "istio-system")},
			spec:       Spec{Revision: "canary"},
			wantSource: "ConfigMap istio-system/istio-canary", wantPos: "cm.yaml:16:3", wantCT: 5 * time.Second,
		},
		{
			name:       "--meshconfig replaces the ConfigMap",
			files:      map[string]string{"cm.yaml": fmt.Sprintf(cm, "istio", "istio-system"), "mesh.conf": "connectTimeout: 7s\n"},
			spec:       Spec{MeshConfigFile: "mesh.conf"},
			wantSource: "MeshConfig mesh.conf", wantPos: "mesh.conf:1:1", wantCT: 7 * time.Second,
		},
		{
			name:   "a ConfigMap without the mesh key leaves the defaults",
			files:  map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio, namespace: istio-system}\ndata: {meshNetworks: \"{}\"}\n"},
			wantCT: 10 * time.Second,
		},
		{
			name:   "an invalid mesh config is an error and istiod's defaults apply",
			files:  map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio, namespace: istio-system}\ndata:\n  mesh: \"connectTimeout: 0s\"\n"},
			wantCT: 10 * time.Second,
			wantIssues: []issue{{
				Severity: "error", Resource: "ConfigMap istio-system/istio", Position: "cm.yaml:5:3", Field: "data.mesh",
				Message: "invalid mesh config, istiod ignores it and uses its defaults: invalid connect timeout: duration must be greater than 1ms",
			}},
		},
		{
			name:       "unknown mesh fields are warnings",
			files:      map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio, namespace: istio-system}\ndata:\n  mesh: \"conectTimeout: 1s\"\n"},
			wantSource: "ConfigMap istio-system/istio", wantPos: "cm.yaml:5:3", wantCT: 10 * time.Second,
			wantIssues: []issue{{
				Severity: "warning", Resource: "ConfigMap istio-system/istio", Position: "cm.yaml:5:3", Field: "data.mesh",
				Message: `mesh config conectTimeout: unknown field "conectTimeout" (did you mean "connectTimeout"?); istiod ignores it`,
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			for name, content := range tt.files {
				write(t, filepath.Join(dir, name), content)
			}
			s := tt.spec
			s.Files = []string{"cm.yaml"}
			snap, err := load(t.Context(), s, nil)
			if err != nil {
				t.Fatal(err)
			}
			gotSource, gotPos := "", ""
			if snap.MeshConfigSource != nil {
				gotSource = snap.MeshConfigSource.String()
			}
			if snap.MeshConfigPosition != nil {
				gotPos = snap.MeshConfigPosition.String()
			}
			if gotSource != tt.wantSource || gotPos != tt.wantPos {
				t.Errorf("source = %q at %q, want %q at %q", gotSource, gotPos, tt.wantSource, tt.wantPos)
			}
			if got := snap.MeshConfig.GetConnectTimeout().AsDuration(); got != tt.wantCT {
				t.Errorf("connectTimeout = %v, want %v", got, tt.wantCT)
			}
			if tt.wantSource == "" && len(snap.MeshConfigUserFields) != 0 {
				t.Errorf("user fields %v without a mesh config", snap.MeshConfigUserFields)
			}
			if diff := cmp.Diff(tt.wantIssues, issues(snap)); diff != "" {
				t.Errorf("issues (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMeshConfigFileErrors(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	write(t, "svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: a}\n")
	write(t, "bad.yaml", "connectTimeout: 0s\n")
	tests := []struct{ file, want string }{
		{"missing.yaml", `the mesh config file "missing.yaml" does not exist`},
		{"bad.yaml", "invalid mesh config bad.yaml: invalid connect timeout: duration must be greater than 1ms"},
	}
	for _, tt := range tests {
		_, err := load(t.Context(), Spec{Files: []string{"svc.yaml"}, MeshConfigFile: tt.file}, nil)
		if err == nil || err.Error() != tt.want {
			t.Errorf("--meshconfig %s: error = %v, want %q", tt.file, err, tt.want)
		}
	}
}
