package source

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/golang/protobuf/jsonpb" //nolint:staticcheck // istiod decodes MeshConfig with the legacy jsonpb; its merge rules are what we reproduce.
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	networkingv1alpha3 "istio.io/api/networking/v1alpha3"
	sigsyaml "sigs.k8s.io/yaml"
)

// MeshConfigKey is the key of the mesh ConfigMap that holds the MeshConfig YAML
// (istio.io/istio pkg/config/mesh/kubemesh MeshConfigKey).
const MeshConfigKey = "mesh"

// MeshConfigMapName is the name of the mesh ConfigMap istiod of revision rev reads: `istio`, or
// `istio-<rev>` for a revision other than "default" (pilot/pkg/bootstrap/mesh.go getMeshConfigMapName).
func MeshConfigMapName(rev string) string {
	if rev == "" || rev == "default" {
		return "istio"
	}
	return "istio-" + rev
}

// DefaultMeshConfig returns istiod's built-in MeshConfig, the base every mesh ConfigMap is merged
// over. It is a copy of DefaultMeshConfig in istio.io/istio pkg/config/mesh/mesh.go, field for
// field; keep the two in step when the Istio version we follow changes.
func DefaultMeshConfig() *meshv1alpha1.MeshConfig {
	return &meshv1alpha1.MeshConfig{
		EnableTracing:               true,
		AccessLogFile:               "",
		AccessLogEncoding:           meshv1alpha1.MeshConfig_TEXT,
		AccessLogFormat:             "",
		EnableEnvoyAccessLogService: false,
		ProtocolDetectionTimeout:    durationpb.New(0),
		IngressService:              "istio-ingressgateway",
		IngressControllerMode:       meshv1alpha1.MeshConfig_STRICT,
		IngressClass:                "istio",
		TrustDomain:                 "cluster.local",
		TrustDomainAliases:          []string{},
		EnableAutoMtls:              wrapperspb.Bool(true),
		OutboundTrafficPolicy: &meshv1alpha1.MeshConfig_OutboundTrafficPolicy{
			Mode: meshv1alpha1.MeshConfig_OutboundTrafficPolicy_ALLOW_ANY,
		},
		InboundTrafficPolicy: &meshv1alpha1.MeshConfig_InboundTrafficPolicy{
			Mode: meshv1alpha1.MeshConfig_InboundTrafficPolicy_PASSTHROUGH,
		},
		LocalityLbSetting: &networkingv1alpha3.LocalityLoadBalancerSetting{
			Enabled: wrapperspb.Bool(true),
		},
		Certificates:  []*meshv1alpha1.Certificate{},
		DefaultConfig: defaultProxyConfig(),

		RootNamespace:                  "istio-system",
		ProxyListenPort:                15001,
		ProxyInboundListenPort:         15006,
		ConnectTimeout:                 durationpb.New(10 * time.Second),
		DefaultServiceExportTo:         []string{"*"},
		DefaultVirtualServiceExportTo:  []string{"*"},
		DefaultDestinationRuleExportTo: []string{"*"},
		DnsRefreshRate:                 durationpb.New(60 * time.Second),
		ServiceSettings:                make([]*meshv1alpha1.MeshConfig_ServiceSettings, 0),

		EnablePrometheusMerge: wrapperspb.Bool(true),
		DefaultProviders:      &meshv1alpha1.MeshConfig_DefaultProviders{},
		ExtensionProviders: []*meshv1alpha1.MeshConfig_ExtensionProvider{
			{
				Name: "prometheus",
				Provider: &meshv1alpha1.MeshConfig_ExtensionProvider_Prometheus{
					Prometheus: &meshv1alpha1.MeshConfig_ExtensionProvider_PrometheusMetricsProvider{},
				},
			},
			{
				Name: "stackdriver",
				Provider: &meshv1alpha1.MeshConfig_ExtensionProvider_Stackdriver{
					Stackdriver: &meshv1alpha1.MeshConfig_ExtensionProvider_StackdriverProvider{},
				},
			},
			{
				Name: "envoy",
				Provider: &meshv1alpha1.MeshConfig_ExtensionProvider_EnvoyFileAccessLog{
					EnvoyFileAccessLog: &meshv1alpha1.MeshConfig_ExtensionProvider_EnvoyFileAccessLogProvider{
						Path: "/dev/stdout",
					},
				},
			},
		},
	}
}

// defaultProxyConfig is istiod's DefaultProxyConfig (pkg/config/mesh/mesh.go), the base of
// MeshConfig defaultConfig.
func defaultProxyConfig() *meshv1alpha1.ProxyConfig {
	return &meshv1alpha1.ProxyConfig{
		ConfigPath:               "./etc/istio/proxy",
		ClusterName:              &meshv1alpha1.ProxyConfig_ServiceCluster{ServiceCluster: "istio-proxy"},
		DrainDuration:            durationpb.New(45 * time.Second),
		TerminationDrainDuration: durationpb.New(5 * time.Second),
		ProxyAdminPort:           15000,
		ControlPlaneAuthPolicy:   meshv1alpha1.AuthenticationPolicy_MUTUAL_TLS,
		DiscoveryAddress:         "istiod.istio-system.svc:15012",
		BinaryPath:               "/usr/local/bin/envoy",
		StatNameLength:           189,
		StatusPort:               15020,
	}
}

// ParseMeshConfig decodes the MeshConfig YAML of a mesh ConfigMap the way istiod does: over
// DefaultMeshConfig, with ApplyMeshConfig's rules (istio.io/istio pkg/config/mesh/mesh.go).
// It returns the effective MeshConfig and the top-level fields the YAML sets, in proto JSON
// spelling. An error means istiod would reject the YAML and run with its defaults.
func ParseMeshConfig(yaml string) (*meshv1alpha1.MeshConfig, map[string]bool, error) {
	mc, user, _, err := parseMeshConfig(yaml)
	return mc, user, err
}

// parseMeshConfig is ParseMeshConfig plus the unknown fields, which istiod ignores (it retries
// the decode with AllowUnknownFields) and we report as warnings.
func parseMeshConfig(yml string) (*meshv1alpha1.MeshConfig, map[string]bool, []fieldError, error) {
	js, err := sigsyaml.YAMLToJSON([]byte(yml))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("invalid YAML: %s", trimYAMLError(err))
	}
	md := (&meshv1alpha1.MeshConfig{}).ProtoReflect().Descriptor()
	problems := checkProto(md, js, "")
	var unknown []fieldError
	for _, p := range problems {
		if p.Unknown {
			unknown = append(unknown, p)
		}
	}

	// ApplyMeshConfig: every top-level field the YAML sets replaces the default, except
	// defaultConfig (merged into the default ProxyConfig), defaultProviders (merged), and
	// extensionProviders and trustDomainAliases (combined with the defaults).
	mc := DefaultMeshConfig()
	prevProxyConfig := mc.DefaultConfig
	prevDefaultProviders := mc.DefaultProviders
	prevExtensionProviders := mc.ExtensionProviders
	prevTrustDomainAliases := mc.TrustDomainAliases

	mc.DefaultConfig = defaultProxyConfig()
	if err := applyJSON(js, mc); err != nil {
		return nil, nil, unknown, describeDecodeError(problems, err)
	}
	mc.DefaultConfig = prevProxyConfig

	raw := map[string]any{}
	if err := sigsyaml.Unmarshal([]byte(yml), &raw); err != nil {
		return nil, nil, unknown, fmt.Errorf("invalid YAML: %s", trimYAMLError(err))
	}
	if pc, ok := raw["defaultConfig"]; ok && pc != nil {
		if err := mergeProxyConfig(pc, mc.DefaultConfig); err != nil {
			return nil, nil, unknown, err
		}
	}

	mc.DefaultProviders = prevDefaultProviders
	if dp, ok := raw["defaultProviders"]; ok && dp != nil {
		b, err := sigsyaml.Marshal(dp)
		if err != nil {
			return nil, nil, unknown, fmt.Errorf("defaultProviders: %v", err)
		}
		if err := applyYAML(b, mc.DefaultProviders); err != nil {
			return nil, nil, unknown, fmt.Errorf("could not parse default providers: %v", err)
		}
	}

	newExtensionProviders := mc.ExtensionProviders
	mc.ExtensionProviders = prevExtensionProviders
	for _, p := range newExtensionProviders {
		found := false
		for _, e := range mc.ExtensionProviders {
			if p.Name == e.Name {
				e.Provider = p.Provider
				found = true
				break
			}
		}
		if !found {
			mc.ExtensionProviders = append(mc.ExtensionProviders, p)
		}
	}

	aliases := append(slices.Clone(mc.TrustDomainAliases), prevTrustDomainAliases...)
	slices.Sort(aliases)
	mc.TrustDomainAliases = slices.Compact(aliases)
	if mc.TrustDomainAliases == nil {
		mc.TrustDomainAliases = []string{}
	}

	if err := validateMeshConfig(mc); err != nil {
		return nil, nil, unknown, err
	}

	user := map[string]bool{}
	fields := md.Fields()
	for k, v := range raw {
		if v == nil {
			continue
		}
		fd := fields.ByJSONName(k)
		if fd == nil {
			fd = fields.ByName(protoreflect.Name(k))
		}
		if fd != nil {
			user[fd.JSONName()] = true
		}
	}
	return mc, user, unknown, nil
}

// mergeProxyConfig is istiod's MergeProxyConfig: the YAML's top-level ProxyConfig fields replace
// the current ones, proxyMetadata is merged key by key, and proxyHeaders keeps the current
// value of every header setting the YAML leaves empty.
func mergeProxyConfig(pc any, cur *meshv1alpha1.ProxyConfig) error {
	b, err := sigsyaml.Marshal(pc)
	if err != nil {
		return fmt.Errorf("defaultConfig: %v", err)
	}
	origMetadata := cur.ProxyMetadata
	origHeaders := cur.ProxyHeaders
	if err := applyYAML(b, cur); err != nil {
		return fmt.Errorf("could not parse proxy config: %v", err)
	}
	if origMetadata != nil || cur.ProxyMetadata != nil {
		merged := map[string]string{}
		for k, v := range origMetadata {
			merged[k] = v
		}
		for k, v := range cur.ProxyMetadata {
			merged[k] = v
		}
		cur.ProxyMetadata = merged
	}
	if ph := cur.ProxyHeaders; ph != nil && origHeaders != nil {
		if ph.ForwardedClientCert == 0 {
			ph.ForwardedClientCert = origHeaders.ForwardedClientCert
		}
		if ph.RequestId == nil {
			ph.RequestId = origHeaders.RequestId
		}
		if ph.AttemptCount == nil {
			ph.AttemptCount = origHeaders.AttemptCount
		}
		if ph.Server == nil {
			ph.Server = origHeaders.Server
		}
		if ph.EnvoyDebugHeaders == nil {
			ph.EnvoyDebugHeaders = origHeaders.EnvoyDebugHeaders
		}
	}
	return nil
}

// applyJSON is istio's protomarshal.ApplyJSON: a strict legacy-jsonpb decode, retried with
// unknown fields allowed. Fields present in js replace the message's fields wholesale.
func applyJSON(js []byte, pb proto.Message) error {
	u := jsonpb.Unmarshaler{}
	if err := u.Unmarshal(bytes.NewReader(js), protoadapt.MessageV1Of(pb)); err != nil {
		u.AllowUnknownFields = true
		return u.Unmarshal(bytes.NewReader(js), protoadapt.MessageV1Of(pb))
	}
	return nil
}

// applyYAML is istio's protomarshal.ApplyYAML.
func applyYAML(yml []byte, pb proto.Message) error {
	js, err := sigsyaml.YAMLToJSON(yml)
	if err != nil {
		return err
	}
	return applyJSON(js, pb)
}

// describeDecodeError prefers the located problem found by checkProto over jsonpb's message.
func describeDecodeError(problems []fieldError, err error) error {
	for _, p := range problems {
		if !p.Unknown {
			if p.Path == "" {
				return errors.New(p.Message)
			}
			return fmt.Errorf("%s: %s", p.Path, p.Message)
		}
	}
	return fmt.Errorf("cannot decode: %v", err)
}

// validateMeshConfig reproduces the parts of istiod's ValidateMeshConfig
// (pkg/config/validation/agent/validation.go) that reject a MeshConfig outright: when any
// fails, istiod ignores the whole mesh ConfigMap and runs with its defaults.
func validateMeshConfig(mc *meshv1alpha1.MeshConfig) error {
	var errs []error
	if err := validatePort(int(mc.GetProxyListenPort())); err != nil {
		errs = append(errs, fmt.Errorf("invalid proxy listen port: %v", err))
	}
	if err := validateDuration(mc.GetConnectTimeout()); err != nil {
		errs = append(errs, fmt.Errorf("invalid connect timeout: %v", err))
	} else if d := mc.GetConnectTimeout().AsDuration(); d < time.Millisecond || d > time.Hour {
		errs = append(errs, fmt.Errorf("invalid connect timeout: time %v must be >1ms and <1h0m0s", d))
	}
	if d := mc.GetProtocolDetectionTimeout().AsDuration(); d != 0 && d%time.Millisecond != 0 {
		errs = append(errs, errors.New("invalid protocol detection timeout: only durations to ms precision are supported"))
	}
	if pc := mc.GetDefaultConfig(); pc == nil {
		errs = append(errs, errors.New("missing default config"))
	} else {
		errs = append(errs, validateProxyConfig(pc)...)
	}
	if err := validateTrustDomain(mc.GetTrustDomain()); err != nil {
		errs = append(errs, fmt.Errorf("trustDomain: %v", err))
	}
	for i, tda := range mc.GetTrustDomainAliases() {
		if err := validateTrustDomain(tda); err != nil {
			errs = append(errs, fmt.Errorf("trustDomainAliases[%d], domain `%s` : %v", i, tda, err))
		}
	}
	if cp := mc.GetDefaultTrafficPolicy().GetConnectionPool(); cp != nil && cp.Http == nil && cp.Tcp == nil {
		errs = append(errs, errors.New("defaultTrafficPolicy: connection pool must have at least one field"))
	}
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return errors.New(strings.Join(msgs, "; "))
}

func validateProxyConfig(pc *meshv1alpha1.ProxyConfig) []error {
	var errs []error
	if pc.ConfigPath == "" {
		errs = append(errs, errors.New("config path must be set"))
	}
	if pc.BinaryPath == "" {
		errs = append(errs, errors.New("binary path must be set"))
	}
	switch c := pc.ClusterName.(type) {
	case *meshv1alpha1.ProxyConfig_ServiceCluster:
		if c.ServiceCluster == "" {
			errs = append(errs, errors.New("service cluster must be specified"))
		}
	case *meshv1alpha1.ProxyConfig_TracingServiceName_:
	default:
		errs = append(errs, errors.New("oneof service cluster or tracing service name must be specified"))
	}
	if err := validateDuration(pc.DrainDuration); err != nil {
		errs = append(errs, fmt.Errorf("invalid drain duration: %v", err))
	} else if pc.DrainDuration.AsDuration()%time.Second != 0 {
		errs = append(errs, errors.New("drain time only supports durations to seconds precision"))
	}
	if pc.DiscoveryAddress == "" {
		errs = append(errs, errors.New("discovery address must be set to the proxy discovery service"))
	}
	if err := validatePort(int(pc.ProxyAdminPort)); err != nil {
		errs = append(errs, fmt.Errorf("invalid proxy admin port: %v", err))
	}
	if err := validatePort(int(pc.StatusPort)); err != nil {
		errs = append(errs, fmt.Errorf("invalid status port: %v", err))
	}
	return errs
}

func validatePort(port int) error {
	if 1 <= port && port <= 65535 {
		return nil
	}
	return fmt.Errorf("port number %d must be in the range 1..65535", port)
}

func validateDuration(d *durationpb.Duration) error {
	dur := d.AsDuration()
	if dur < time.Millisecond {
		return errors.New("duration must be greater than 1ms")
	}
	if dur%time.Millisecond != 0 {
		return errors.New("only durations to ms precision are supported")
	}
	return nil
}

// dns1123Label is Istio's label check (pkg/config/labels), which, unlike Kubernetes', accepts
// upper case.
var dns1123Label = regexp.MustCompile(`^[a-zA-Z0-9](?:[-a-zA-Z0-9]*[a-zA-Z0-9])?$`)

func validateTrustDomain(domain string) error {
	if domain == "" {
		return errors.New("empty domain name not allowed")
	}
	parts := strings.Split(domain, ".")
	for i, label := range parts {
		if i == len(parts)-1 && label == "" {
			return nil
		}
		if len(label) > 63 || !dns1123Label.MatchString(label) {
			return fmt.Errorf("trust domain name %q invalid", domain)
		}
	}
	return nil
}

// trimYAMLError drops the conversion prefixes sigs.k8s.io/yaml puts on its errors.
func trimYAMLError(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "error converting YAML to JSON: ")
	s = strings.TrimPrefix(s, "error unmarshaling JSON: ")
	return strings.TrimPrefix(s, "yaml: ")
}
