package sidecarauthz

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// listenerProtocol is istionetworking.ListenerProtocol.
type listenerProtocol string

const (
	protoHTTP listenerProtocol = "HTTP"
	protoTCP  listenerProtocol = "TCP"
	protoAuto listenerProtocol = "AUTO"
)

// toListenerProtocol is ModelProtocolToListenerProtocol.
func toListenerProtocol(p index.Protocol) listenerProtocol {
	switch p {
	case index.ProtocolHTTP, index.ProtocolHTTP2, "HTTP_PROXY", index.ProtocolGRPC, index.ProtocolGRPCWeb:
		return protoHTTP
	case "TCP", index.ProtocolHTTPS, index.ProtocolTLS, "Mongo", "Redis", "MySQL":
		return protoTCP
	case "UDP":
		return ""
	}
	return protoAuto
}

// target is one inbound port of the pod: a Service port resolved to the pod's (target) port.
type target struct {
	svc       *corev1.Service
	portIndex int
	port      corev1.ServicePort
	target    uint32
	protocol  index.Protocol
	// conflicts are later Services on the same target port, ignored.
	conflicts []*corev1.Service
}

func (t *target) origin(snap *model.Snapshot, note string) provenance.Origin {
	k := model.ObjectKey{Kind: "Service", Namespace: t.svc.Namespace, Name: t.svc.Name}
	field := fmt.Sprintf("spec.ports[%d].targetPort", t.portIndex)
	// An unset targetPort, or one equal to port (the API server writes port there when it is
	// left out), is the port field, so live and file reads name the same field.
	if tp := t.port.TargetPort; tp.Type == intstr.Int && (tp.IntVal == 0 || tp.IntVal == t.port.Port) {
		field = fmt.Sprintf("spec.ports[%d].port", t.portIndex)
	}
	o := snap.Origin(provenance.LayerRegistry, k, field)
	o.Note = note
	return o
}

// findPort is the kube controller's FindPort: a named target port is looked up among the
// containers' (and native sidecar init containers') ports of the same protocol.
func findPort(pod *corev1.Pod, sp corev1.ServicePort) (uint32, bool) {
	tp := sp.TargetPort
	if tp.Type == intstr.String {
		proto := sp.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		lists := [][]corev1.Container{pod.Spec.Containers}
		var native []corev1.Container
		for _, c := range pod.Spec.InitContainers {
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				native = append(native, c)
			}
		}
		lists = append(lists, native)
		for _, cs := range lists {
			for _, c := range cs {
				for _, p := range c.Ports {
					pp := p.Protocol
					if pp == "" {
						pp = corev1.ProtocolTCP
					}
					if p.Name == tp.StrVal && pp == proto {
						return uint32(p.ContainerPort), true
					}
				}
			}
		}
		return 0, false
	}
	if tp.IntVal == 0 {
		// The API server defaults targetPort to port; files may leave it out.
		return uint32(sp.Port), true
	}
	return uint32(tp.IntVal), true
}

// serviceTargets is GetProxyServiceTargets for a pod: the Services of its namespace whose
// non-empty selector matches it, oldest first (then by hostname), each port resolved to its
// target port (deduplicated per Service), and one chain config per target port: the first
// Service wins (getFilterChainsByServicePort). services are the Services to look in: those of
// the pod's namespace, or more.
func serviceTargets(services []*corev1.Service, pod *corev1.Pod) []*target {
	var svcs []*corev1.Service
	for _, s := range services {
		if s.Namespace == pod.Namespace && len(s.Spec.Selector) > 0 && subsetOf(s.Spec.Selector, pod.Labels) {
			svcs = append(svcs, s)
		}
	}
	slices.SortStableFunc(svcs, func(a, b *corev1.Service) int {
		if c := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	byPort := map[uint32]*target{}
	var out []*target
	for _, s := range svcs {
		type key struct {
			port  uint32
			proto index.Protocol
		}
		seen := map[key]bool{}
		for i, sp := range s.Spec.Ports {
			tp, ok := findPort(pod, sp)
			if !ok {
				continue
			}
			proto := index.ConvertProtocol(sp.Port, sp.Name, sp.Protocol, sp.AppProtocol)
			if proto == "UDP" {
				continue
			}
			k := key{tp, proto}
			if seen[k] {
				continue
			}
			seen[k] = true
			if old, ok := byPort[tp]; ok {
				if old.svc != s {
					old.conflicts = append(old.conflicts, s)
				}
				continue
			}
			t := &target{svc: s, portIndex: i, port: sp, target: tp, protocol: proto}
			byPort[tp] = t
			out = append(out, t)
		}
	}
	slices.SortStableFunc(out, func(a, b *target) int { return int(a.target) - int(b.target) })
	return out
}

// chainOpt is FilterChainMatchOptions.
type chainOpt struct {
	alpn      []string
	transport string
	protocol  listenerProtocol
	tls       bool
}

var (
	plaintextHTTPALPNs  = []string{"http/1.1", "h2c"}
	mtlsHTTPALPNs       = []string{"istio-http/1.0", "istio-http/1.1", "istio-h2"}
	allIstioMtlsALPNs   = []string{"istio", "istio-peer-exchange", "istio-http/1.0", "istio-http/1.1", "istio-h2"}
	mtlsTCPWithMxcALPNs = []string{"istio-peer-exchange", "istio"}
)

// chainOptions is getFilterChainMatchOptions.
func chainOptions(mode Mode, lp listenerProtocol) []chainOpt {
	switch lp {
	case protoHTTP:
		switch mode {
		case ModeStrict:
			return []chainOpt{{protocol: protoHTTP, transport: "tls", tls: true}}
		case ModePermissive:
			return []chainOpt{
				{alpn: allIstioMtlsALPNs, transport: "tls", protocol: protoHTTP, tls: true},
				{protocol: protoHTTP, transport: "raw_buffer"},
			}
		}
		return []chainOpt{{protocol: protoHTTP, transport: "raw_buffer"}}
	case protoAuto:
		switch mode {
		case ModeStrict:
			return []chainOpt{
				{alpn: mtlsHTTPALPNs, protocol: protoHTTP, transport: "tls", tls: true},
				{protocol: protoTCP, transport: "tls", tls: true},
			}
		case ModePermissive:
			return []chainOpt{
				{alpn: mtlsHTTPALPNs, transport: "tls", protocol: protoHTTP, tls: true},
				{alpn: plaintextHTTPALPNs, protocol: protoHTTP, transport: "raw_buffer"},
				{alpn: mtlsTCPWithMxcALPNs, transport: "tls", protocol: protoTCP, tls: true},
				{protocol: protoTCP, transport: "raw_buffer"},
				{transport: "tls", protocol: protoTCP},
			}
		}
		return []chainOpt{
			{alpn: plaintextHTTPALPNs, protocol: protoHTTP, transport: "raw_buffer"},
			{protocol: protoTCP, transport: "raw_buffer"},
		}
	}
	switch mode {
	case ModeStrict:
		return []chainOpt{{protocol: protoTCP, transport: "tls", tls: true}}
	case ModePermissive:
		return []chainOpt{
			{alpn: allIstioMtlsALPNs, transport: "tls", protocol: protoTCP, tls: true},
			{transport: "tls", protocol: protoTCP},
			{protocol: protoTCP, transport: "raw_buffer"},
		}
	}
	return []chainOpt{{protocol: protoTCP, transport: "raw_buffer"}}
}

// supportedCiphers is authn/utils SupportedCiphers, the default for meshMTLS.cipherSuites.
var supportedCiphers = []string{
	"ECDHE-ECDSA-AES256-GCM-SHA384",
	"ECDHE-RSA-AES256-GCM-SHA384",
	"ECDHE-ECDSA-AES128-GCM-SHA256",
	"ECDHE-RSA-AES128-GCM-SHA256",
	"AES256-GCM-SHA384",
	"AES128-GCM-SHA256",
}

// trustDomainsForValidation is plugin/authn TrustDomainsForValidation: the trust domain, its
// aliases and the trust domains of caCertificates, deduplicated, empty ones left out.
func trustDomainsForValidation(mc *meshv1alpha1.MeshConfig) []string {
	tds := append([]string{mc.GetTrustDomain()}, mc.GetTrustDomainAliases()...)
	for _, c := range mc.GetCaCertificates() {
		tds = append(tds, c.GetTrustDomains()...)
	}
	var out []string
	for _, td := range tds {
		if td != "" && !slices.Contains(out, td) {
			out = append(out, td)
		}
	}
	return out
}

func sdsSecret(name string) *tlsv3.SdsSecretConfig {
	return &tlsv3.SdsSecretConfig{Name: name, SdsConfig: &corev3.ConfigSource{
		ConfigSourceSpecifier: &corev3.ConfigSource_ApiConfigSource{ApiConfigSource: &corev3.ApiConfigSource{
			ApiType:                   corev3.ApiConfigSource_GRPC,
			SetNodeOnFirstMessageOnly: true,
			TransportApiVersion:       corev3.ApiVersion_V3,
			GrpcServices: []*corev3.GrpcService{{TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{
				EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: "sds-grpc"}}}},
		}},
		InitialFetchTimeout: durationpb.New(0),
		ResourceApiVersion:  corev3.ApiVersion_V3,
	}}
}

// inboundTLS is BuildInboundTLS for ISTIO_MUTUAL: the workload certificate, client
// certificates required and validated against the mesh root and trust domains.
func inboundTLS(mode Mode, lp listenerProtocol, mc *meshv1alpha1.MeshConfig) *tlsv3.DownstreamTlsContext {
	if mode == ModeDisable {
		return nil
	}
	alpn := []string{"h2", "http/1.1"}
	if lp == protoTCP {
		alpn = []string{"istio-peer-exchange", "h2", "http/1.1"}
	}
	ciphers := supportedCiphers
	if mc.GetMeshMTLS() != nil && mc.GetMeshMTLS().CipherSuites != nil {
		ciphers = mc.GetMeshMTLS().CipherSuites
	}
	minV := tlsv3.TlsParameters_TLSv1_2
	if mc.GetMeshMTLS().GetMinProtocolVersion() == meshv1alpha1.MeshConfig_TLSConfig_TLSV1_3 {
		minV = tlsv3.TlsParameters_TLSv1_3
	}
	var san []*matcherpb.StringMatcher
	for _, td := range trustDomainsForValidation(mc) {
		san = append(san, &matcherpb.StringMatcher{MatchPattern: &matcherpb.StringMatcher_Prefix{Prefix: "spiffe://" + td + "/"}})
	}
	return &tlsv3.DownstreamTlsContext{
		RequireClientCertificate: wrapperspb.Bool(true),
		CommonTlsContext: &tlsv3.CommonTlsContext{
			AlpnProtocols: alpn,
			TlsParams: &tlsv3.TlsParameters{
				CipherSuites:              ciphers,
				TlsMinimumProtocolVersion: minV,
				TlsMaximumProtocolVersion: tlsv3.TlsParameters_TLSv1_3,
			},
			TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{sdsSecret("default")},
			ValidationContextType: &tlsv3.CommonTlsContext_CombinedValidationContext{
				CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
					DefaultValidationContext:         &tlsv3.CertificateValidationContext{MatchSubjectAltNames: san},
					ValidationContextSdsSecretConfig: sdsSecret("ROOTCA"),
				},
			},
		},
	}
}

func transportSocket(ctx *tlsv3.DownstreamTlsContext) *corev3.TransportSocket {
	if ctx == nil {
		return nil
	}
	a, err := anypb.New(ctx)
	if err != nil {
		panic(fmt.Sprintf("packing a DownstreamTlsContext: %v", err))
	}
	return &corev3.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: a}}
}

// wildcard is the bind address of the virtual inbound chains: 0.0.0.0, or :: for a pod with
// only IPv6 addresses (getWildcardsAndLocalHost).
func wildcard(pod *corev1.Pod) string {
	ips := []string{pod.Status.PodIP}
	for _, ip := range pod.Status.PodIPs {
		ips = append(ips, ip.IP)
	}
	v4, v6 := false, false
	for _, s := range ips {
		a, err := netip.ParseAddr(s)
		if err != nil {
			continue
		}
		if a.Is4() {
			v4 = true
		} else {
			v6 = true
		}
	}
	if v6 && !v4 {
		return "::"
	}
	return "0.0.0.0"
}

// chain is one filter chain of the virtual inbound listener, before its filters are attached.
type chain struct {
	name        string
	port        uint32 // 0: the catch-all chain for every port
	passthrough bool
	blackhole   bool
	opt         chainOpt
	mode        Mode
	modeOrigin  provenance.Origin
	tgt         *target
	match       *listenerv3.FilterChainMatch
	tls         *tlsv3.DownstreamTlsContext
}

func (c *chain) httpChain() bool { return c.opt.protocol == protoHTTP }
