package envoycluster

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	proxyprotocolv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/proxy_protocol/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain/diag"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// tlsSettings is the ClientTLSSettings istiod builds the context from, with the origin of each part.
type tlsSettings struct {
	tls *networking.ClientTLSSettings
	// auto is true for auto-mTLS (mtlsContextType autoDetected).
	auto  bool
	mode  provenance.Origin
	sni   provenance.Origin
	sans  provenance.Origin
	certs provenance.Origin
	root  provenance.Origin
}

// epTLSMode is the endpoint's security.istio.io/tlsMode as istiod records it: "disabled" when
// the label is absent, "" when it is there and empty (a pod created with the label set to null
// or ""), which istiod tells apart: only "disabled" makes a passthrough service DISABLE
// (BestEffortInferServiceMTLSMode), and neither is written to the endpoint's metadata
// (AppendLbEndpointMetadata in pilot/pkg/networking/util/util.go).
func epTLSMode(ep *index.Endpoint) string { return ep.TLSMode }

// serviceMTLSMode mirrors push_context.go BestEffortInferServiceMTLSMode. The passthrough check
// reads the DestinationRule top-level policy (default cluster) or the subset's own policy
// (subset cluster), not the port-resolved one.
func (st *clusterState) serviceMTLSMode() (index.MTLSMode, provenance.Origin) {
	b := st.b
	svc := b.in.Service
	if svc.MeshExternal {
		return index.MTLSUnknown, b.registryOrigin("spec.location", "MESH_EXTERNAL: istiod infers no mTLS mode")
	}
	var tp *networking.TrafficPolicy
	if r := b.in.Rule; r != nil && r.Spec != nil {
		tp = r.Spec.GetTrafficPolicy()
		if st.subsetIndex >= 0 {
			tp = r.Spec.Subsets[st.subsetIndex].GetTrafficPolicy()
		}
	}
	if svc.Resolution == index.Passthrough || passthroughLB(tp) {
		eps := svc.Endpoints[b.in.Port.Number]
		if len(eps) == 0 {
			return index.MTLSDisable, b.registryOrigin("", fmt.Sprintf("passthrough destination without endpoints on port %d: istiod infers DISABLE", b.in.Port.Number))
		}
		for _, ep := range eps {
			if epTLSMode(&ep) == "disabled" {
				return index.MTLSDisable, b.registryOrigin("", fmt.Sprintf("passthrough destination and endpoint %s has no sidecar: istiod infers DISABLE", ep.Address))
			}
		}
	}
	if m := b.in.MTLS.Mode; m != index.MTLSUnknown {
		return m, b.in.MTLS.Origin
	}
	return index.MTLSPermissive, istioDefault("no namespace or mesh-wide PeerAuthentication: istiod assumes PERMISSIVE")
}

// autoMTLSOrigin is the origin of synthesized ISTIO_MUTUAL: the PeerAuthentication (or default)
// behind the inferred mode.
// The note is computed once for the clusters of a host that share mode and why's note.
func (b *builder) autoMTLSOrigin(mode index.MTLSMode, why provenance.Origin) provenance.Origin {
	o := why
	o.Layer = provenance.LayerAutoMTLS
	if sh := b.in.shared; sh.autoNote == "" || sh.autoMode != mode || sh.autoWhy != why.Note {
		note := fmt.Sprintf("enableAutoMtls, no DestinationRule tls for this cluster, and the service's mTLS mode is %s", mode)
		if why.Note != "" {
			note += " (" + why.Note + ")"
		}
		sh.autoMode, sh.autoWhy, sh.autoNote = mode, why.Note, note
	}
	o.Note = b.in.shared.autoNote
	return o
}

// upstreamTLSSettings mirrors cluster_tls.go buildUpstreamTLSSettings (proxy metadata client
// certificates are not modelled): it fills out (the caller's, which stays on its stack) and
// returns it, or returns nil for no TLS.
func (st *clusterState) upstreamTLSSettings(tls *networking.ClientTLSSettings, out *tlsSettings) (*tlsSettings, index.MTLSMode) {
	// A DestinationRule tls block is used as written, except ISTIO_MUTUAL, which gets the default
	// SNI and the service's identities when it names none. Without a tls block, auto-mTLS
	// synthesizes ISTIO_MUTUAL unless the host is external, enableAutoMtls is off or the inferred
	// mode is DISABLE.
	b := st.b
	svc := b.in.Service
	sas := svc.ServiceAccounts
	sasOrigin := b.registryOrigin("", "service accounts of the endpoints (and ServiceEntry subjectAltNames)")
	sniDefault := istioDefault("outbound_.<port>_.<subset>_.<host> (model.BuildDNSSrvSubsetKey)")
	if tls != nil {
		o := func(f string) provenance.Origin { return st.blockOrigin(bTLS, "tls."+f) }
		*out = tlsSettings{tls: tls, mode: o("mode"), sni: o("sni"), sans: o("subjectAltNames")}
		switch tls.Mode {
		case networking.ClientTLSSettings_DISABLE, networking.ClientTLSSettings_SIMPLE, networking.ClientTLSSettings_MUTUAL:
			return out, index.MTLSUnknown
		}
		// ISTIO_MUTUAL: the DR's SNI and SANs if given, else the defaults.
		sni := tls.Sni
		if sni == "" {
			sni = st.defaultSNI
			out.sni = sniDefault
		}
		san := tls.SubjectAltNames
		if san == nil {
			san = sas
			out.sans = sasOrigin
		}
		out.tls = &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_ISTIO_MUTUAL, SubjectAltNames: san, Sni: sni, InsecureSkipVerify: tls.InsecureSkipVerify}
		return out, index.MTLSUnknown
	}
	mode, why := st.serviceMTLSMode()
	if svc.MeshExternal || !b.mesh.GetEnableAutoMtls().GetValue() || mode == index.MTLSUnknown || mode == index.MTLSDisable {
		return nil, mode
	}
	out.auto, out.mode, out.sni, out.sans = true, b.autoMTLSOrigin(mode, why), sniDefault, sasOrigin
	out.tls = &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_ISTIO_MUTUAL, SubjectAltNames: sas, Sni: st.defaultSNI}
	return out, mode
}

// applyTLS mirrors applyUpstreamTLSSettings and applyUpstreamProxyProtocol.
func (st *clusterState) applyTLS(userTLS *networking.ClientTLSSettings, pp *networking.TrafficPolicy_ProxyProtocol) {
	// Auto-mTLS goes into transport_socket_matches (istio for sidecar endpoints, plaintext for the
	// rest) except on ORIGINAL_DST clusters; a user-supplied mode is a plain transport_socket with
	// no per-endpoint fallback. The socket paths are decided before recording so PROXY protocol
	// wrapping (applied last) is traced at its final place.
	b, c := st.b, st.c
	var settings tlsSettings
	ts, mode := st.upstreamTLSSettings(userTLS, &settings)
	st.tlsDiagnostics(userTLS, ts, mode)
	ctx, ok := st.tlsContext(ts)
	if !ok {
		ctx = nil
	}
	matches := ts != nil && ts.auto && c.GetType() != clusterv3.Cluster_ORIGINAL_DST
	ppPrefix := func(p string) string {
		if pp != nil {
			return p + ".typedConfig.transportSocket"
		}
		return p
	}
	switch {
	case ctx != nil && matches:
		p := b.tlsSocket(ctx)
		p.match = clusterv3.Cluster_TransportSocketMatch{Name: "tlsMode-istio", Match: common.tlsModeIstio, TransportSocket: &p.sock}
		p.matches = [2]*clusterv3.Cluster_TransportSocketMatch{&p.match, common.plaintextMatch}
		c.TransportSocketMatches = p.matches[:]
		st.set("transportSocketMatches[0].name", "tlsMode-istio", ts.mode)
		st.set("transportSocketMatches[0].match", "tlsMode: istio",
			istioDefault("endpoints whose EDS metadata says tlsMode istio (sidecar injected, mTLS not disabled) get Istio mTLS"))
		st.traceTLSContext(ppPrefix("transportSocketMatches[0].transportSocket"), ctx, ts)
		st.set("transportSocketMatches[1]", "tlsMode-disabled: plaintext",
			istioDefault("endpoints without a sidecar get plaintext (defaultTransportSocketMatch)"))
	case ctx != nil:
		c.TransportSocket = &b.tlsSocket(ctx).sock
		st.traceTLSContext(ppPrefix("transportSocket"), ctx, ts)
	case pp == nil:
		// No socket at all: the cluster connects in plaintext. Recorded so the table says why.
		st.notSent("transportSocket", "plaintext", st.plaintextOrigin(ts, ok))
	}
	if pp != nil {
		st.applyProxyProtocol(pp)
	}
}

// plaintextOrigin is why a cluster gets no transport socket (ts and ok as applyTLS has them):
// a DestinationRule tls block that sends none, or, without one, why auto-mTLS did not apply.
func (st *clusterState) plaintextOrigin(ts *tlsSettings, ok bool) provenance.Origin {
	b := st.b
	if ts != nil {
		switch {
		case !ok:
			return withNote(ts.mode, "istiod cannot build this TLS context and sends the cluster without one")
		case ts.tls.GetMode() == networking.ClientTLSSettings_DISABLE:
			return withNote(ts.mode, "tls.mode DISABLE")
		}
		return withNote(st.blockOrigin(bTLS, "tls.credentialName"), "ignored on a sidecar without a workloadSelector: no TLS")
	}
	switch {
	case b.in.Service.MeshExternal:
		return b.registryOrigin("spec.location", "MESH_EXTERNAL and no DestinationRule tls: no auto-mTLS")
	case !b.mesh.GetEnableAutoMtls().GetValue():
		return withNote(b.meshOrigin("enableAutoMtls"), "auto-mTLS is off and no DestinationRule sets tls")
	}
	mode, why := st.serviceMTLSMode()
	o := why
	o.Layer = provenance.LayerAutoMTLS
	o.Note = fmt.Sprintf("auto-mTLS: the service's mTLS mode is %s", mode)
	if why.Note != "" {
		o.Note += " (" + why.Note + ")"
	}
	return o
}

// tlsContext mirrors cluster_tls.go buildUpstreamClusterTLSContext. ok is false when istiod logs
// an error and sends no context.
func (st *clusterState) tlsContext(ts *tlsSettings) (*tlsv3.UpstreamTlsContext, bool) {
	if ts == nil {
		return nil, true
	}
	b := st.b
	tls := ts.tls
	// credentialName on a sidecar with a selector-less DestinationRule is skipped (configmap://
	// excepted) so sidecars do not wait for secrets they may not read.
	withSelector := b.in.Rule != nil && b.in.Rule.Spec.GetWorkloadSelector() != nil
	if tls.CredentialName != "" && !strings.HasPrefix(tls.CredentialName, "configmap://") && !withSelector && !b.router() &&
		(tls.Mode == networking.ClientTLSSettings_SIMPLE || tls.Mode == networking.ClientTLSSettings_MUTUAL) {
		st.d.add(diag.CredentialNameIgnored.New(
			fmt.Sprintf("%s sets tls.credentialName %q, which istiod ignores on sidecars for DestinationRules without a workloadSelector: cluster %s goes out in plaintext", st.eff.src[bTLS].title(), tls.CredentialName, st.c.Name),
			"add a workloadSelector to the DestinationRule, mount the certificates and use clientCertificate/privateKey/caCertificates, or originate TLS at an egress gateway",
			refsOf(st.eff.src[bTLS].ref)...))
		return nil, true
	}
	switch tls.Mode {
	case networking.ClientTLSSettings_ISTIO_MUTUAL:
		h2 := st.hpo.GetExplicitHttpConfig().GetHttp2ProtocolOptions() != nil
		mx := b.flags.MetadataExchange && !b.flags.DisableMxALPN
		var alpn []string
		switch {
		case h2 && mx:
			alpn = alpnMxH2
		case h2:
			alpn = alpnH2
		case mx:
			alpn = alpnMx
		default:
			alpn = alpnIstio
		}
		ctx := b.istioMutualContext(tls.SubjectAltNames, alpn)
		ctx.Sni = tls.Sni
		if ctx.Sni == "" {
			ctx.Sni = st.c.Name
		}
		ts.certs = istioDefault("the workload certificate served by istio-agent SDS (default)")
		ts.root = istioDefault("the mesh root certificate served by istio-agent SDS (ROOTCA)")
		return ctx, true
	case networking.ClientTLSSettings_SIMPLE:
		return st.constructUpstreamTLS(ts, false)
	case networking.ClientTLSSettings_MUTUAL:
		return st.constructUpstreamTLS(ts, true)
	}
	return nil, true
}

// The in-mesh ALPN lists of ISTIO_MUTUAL contexts (util.ALPNInMesh and its variants).
var (
	alpnMxH2  = []string{"istio-peer-exchange", "istio", "h2"}
	alpnH2    = []string{"istio", "h2"}
	alpnMx    = []string{"istio-peer-exchange", "istio"}
	alpnIstio = []string{"istio"}
)

// mutualContext is the ISTIO_MUTUAL UpstreamTlsContext of the last cluster of a host. The
// clusters of one host differ only in SNI unless a subset names other subject alt names: the
// context is reused with its SNI replaced, and its bytes without SNI are marshalled once.
type mutualContext struct {
	sans, alpn []string
	ctx        *tlsv3.UpstreamTlsContext
	// noSNI is the deterministic encoding of ctx without SNI.
	noSNI []byte
	// parts are the messages of ctx, allocated with it.
	parts struct {
		ctx      tlsv3.UpstreamTlsContext
		common   tlsv3.CommonTlsContext
		combined tlsv3.CommonTlsContext_CombinedValidationContext
		cvc      tlsv3.CommonTlsContext_CombinedCertificateValidationContext
		dvc      tlsv3.CertificateValidationContext
	}
}

// hostShared is what the builds of one host share: the builder of each port starts from the
// ISTIO_MUTUAL context of the previous one, and every cluster of the host carries the same
// telemetry service metadata. The clusters share these messages: read them, never write them.
type hostShared struct {
	// mutual are the ISTIO_MUTUAL contexts made for the host, one per ALPN list its ports use.
	mutual []*mutualContext
	// services is the `istio.services` metadata value of servicesOf, and servicesValue its
	// display form.
	servicesOf    *index.Service
	services      *structpb.Value
	servicesValue string
	// autoNote is the note of autoMTLSOrigin for autoMode and autoWhy, the inferred mode and
	// the note of what decided it.
	autoMode          index.MTLSMode
	autoWhy, autoNote string
	// rulePrimary and ruleConfig are the Resource and the `istio.config` metadata of the primary
	// DestinationRule of ruleOf, ruleConfigValue the metadata value and rulePosition the
	// position of the rule's name.
	ruleOf          *index.ConsolidatedRule
	rulePrimary     *provenance.Ref
	ruleConfig      string
	ruleConfigValue *structpb.Value
	rulePosition    *provenance.Position
	// outliers are the OutlierDetection messages made for the host, by block, and breakers
	// its CircuitBreakers messages, by pair of connectionPool and retryBudget blocks.
	outliers []sharedOutlier
	breakers []sharedBreakers
	// metas are the Metadata messages made for the host's clusters, by content.
	metas []sharedMeta
	// workloads are index.WorkloadPeerAuthentications of workloadsOf in ix, looked up on first
	// use (workloadsDone).
	workloadsOf   *index.Service
	ix            *index.Index
	workloads     []index.WorkloadMTLS
	workloadsDone bool
}

// workloadMTLS is in.WorkloadMTLS, or else the workload PeerAuthentications of the host the
// builds share, looked up once.
func (b *builder) workloadMTLS() []index.WorkloadMTLS {
	if b.in.WorkloadMTLS != nil {
		return b.in.WorkloadMTLS
	}
	sh := b.in.shared
	if sh == nil || sh.ix == nil || sh.workloadsOf != b.in.Service {
		return nil
	}
	if !sh.workloadsDone {
		sh.workloads, sh.workloadsDone = sh.ix.WorkloadPeerAuthentications(sh.workloadsOf), true
	}
	return sh.workloads
}

// sharedBreakers is the CircuitBreakers message made for a connectionPool and a retryBudget
// block (either may be nil).
type sharedBreakers struct {
	cp  *networking.ConnectionPoolSettings
	rb  *networking.TrafficPolicy_RetryBudget
	out *clusterv3.CircuitBreakers
}

// sharedOutlier is the OutlierDetection message made for a DestinationRule (or MeshConfig)
// outlierDetection block.
type sharedOutlier struct {
	in  *networking.OutlierDetection
	out *clusterv3.OutlierDetection
}

// istioMutualContext returns the ISTIO_MUTUAL context for sans and alpn, its Sni to be set by
// the caller. The context is the host's: it is marshalled into the cluster, never kept.
func (b *builder) istioMutualContext(sans, alpn []string) *tlsv3.UpstreamTlsContext {
	for _, m := range b.in.shared.mutual {
		if slices.Equal(m.sans, sans) && slices.Equal(m.alpn, alpn) {
			return m.ctx
		}
	}
	m := &mutualContext{sans: sans, alpn: alpn, noSNI: mutualContextBytes(sans, alpn)}
	p := &m.parts
	p.dvc.MatchSubjectAltNames = exactMatchers(sans)
	p.cvc.DefaultValidationContext, p.cvc.ValidationContextSdsSecretConfig = &p.dvc, sdsSecret("ROOTCA")
	p.combined.CombinedValidationContext = &p.cvc
	// The TLS parameters and the certificate list of ISTIO_MUTUAL contexts never vary: every
	// context shares one of each.
	p.common.TlsParams, p.common.TlsCertificateSdsSecretConfigs = common.mutualTLSParams, mutualCerts()
	p.common.ValidationContextType, p.common.AlpnProtocols = &p.combined, alpn
	p.ctx.CommonTlsContext = &p.common
	m.ctx = &p.ctx
	b.in.shared.mutual = append(b.in.shared.mutual, m)
	return m.ctx
}

// mutualContextBytes is the deterministic encoding of the ISTIO_MUTUAL context that
// istioMutualContext builds, without SNI, assembled from parts instead of marshalled: only the
// subject alt names vary from host to host, and marshalling the whole context was a tenth of the
// time of building every cluster of a proxy. Deterministic marshalling writes the fields of a
// message in field number order; TestTLSAnyEqualsMarshal compares the result with proto.Marshal.
//
//	UpstreamTlsContext    1 common_tls_context
//	CommonTlsContext      1 tls_params, 4 alpn_protocols, 6 tls_certificate_sds_secret_configs (default),
//	                      8 combined_validation_context
//	CombinedCertificateValidationContext  1 default_validation_context, 2 validation_context_sds_secret_config (ROOTCA)
//	CertificateValidationContext          9 match_subject_alt_names: StringMatcher 1 exact
func mutualContextBytes(sans, alpn []string) []byte {
	var dvc []byte
	for _, san := range sans {
		dvc = protowire.AppendTag(dvc, 9, protowire.BytesType)
		dvc = protowire.AppendVarint(dvc, uint64(protowire.SizeTag(1)+protowire.SizeBytes(len(san))))
		dvc = protowire.AppendTag(dvc, 1, protowire.BytesType)
		dvc = protowire.AppendString(dvc, san)
	}
	parts := mutualParts()
	combined := protowire.SizeTag(1) + protowire.SizeBytes(len(dvc)) + len(parts.rootCA)
	head := commonHead(alpn)
	common := len(head) + protowire.SizeTag(8) + protowire.SizeBytes(combined)
	out := make([]byte, 0, protowire.SizeTag(1)+protowire.SizeBytes(common))
	out = protowire.AppendTag(out, 1, protowire.BytesType)
	out = protowire.AppendVarint(out, uint64(common))
	out = append(out, head...)
	out = protowire.AppendTag(out, 8, protowire.BytesType)
	out = protowire.AppendVarint(out, uint64(combined))
	out = protowire.AppendTag(out, 1, protowire.BytesType)
	out = protowire.AppendBytes(out, dvc)
	return append(out, parts.rootCA...)
}

// mutualParts are the constant parts of mutualContextBytes: the ROOTCA validation secret as
// field 2 of the combined validation context.
var mutualParts = sync.OnceValue(func() struct{ rootCA []byte } {
	root, err := proto.MarshalOptions{Deterministic: true}.Marshal(rootCASecret())
	if err != nil {
		panic(fmt.Sprintf("marshalling the ROOTCA secret: %v", err))
	}
	v := protowire.AppendTag(nil, 2, protowire.BytesType)
	return struct{ rootCA []byte }{protowire.AppendBytes(v, root)}
})

// commonHeads holds, per ALPN list, the encoded CommonTlsContext fields before the validation
// context: the TLS parameters, the ALPN protocols and the default certificate secret. The ALPN
// lists are istiod's few constants.
var commonHeads sync.Map // string -> []byte

func commonHead(alpn []string) []byte {
	key := strings.Join(alpn, "\x00")
	if v, ok := commonHeads.Load(key); ok {
		return v.([]byte)
	}
	c := defaultCommonTLSContext()
	c.AlpnProtocols = alpn
	c.TlsCertificateSdsSecretConfigs = []*tlsv3.SdsSecretConfig{sdsSecret("default")}
	head, err := proto.MarshalOptions{Deterministic: true}.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("marshalling a CommonTlsContext: %v", err))
	}
	v, _ := commonHeads.LoadOrStore(key, head)
	return v.([]byte)
}

// tlsSocketParts are the messages of a cluster's TLS transport socket, allocated together: the
// socket, its typed config (fillTLSAny of the context) and, for auto-mTLS, its socket match.
type tlsSocketParts struct {
	sock    corev3.TransportSocket
	typed   corev3.TransportSocket_TypedConfig
	any     anypb.Any
	match   clusterv3.Cluster_TransportSocketMatch
	matches [2]*clusterv3.Cluster_TransportSocketMatch
}

// tlsSocket returns the parts of a TLS transport socket of ctx with the socket filled in.
func (b *builder) tlsSocket(ctx *tlsv3.UpstreamTlsContext) *tlsSocketParts {
	p := &tlsSocketParts{}
	b.fillTLSAny(&p.any, ctx)
	p.typed.TypedConfig = &p.any
	p.sock.Name, p.sock.ConfigType = "envoy.transport_sockets.tls", &p.typed
	return p
}

// upstreamTLSType is the type URL of an UpstreamTlsContext in an Any.
const upstreamTLSType = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"

// fillTLSAny sets the type and bytes of a, a new Any, to mustAny(ctx)'s. For the builder's
// ISTIO_MUTUAL context it appends the SNI (field 2, the last one set) to the bytes without it:
// deterministic marshalling writes fields in number order, so the result is the same.
func (b *builder) fillTLSAny(a *anypb.Any, ctx *tlsv3.UpstreamTlsContext) {
	var m *mutualContext
	for _, mc := range b.in.shared.mutual {
		if mc.ctx == ctx {
			m = mc
		}
	}
	if m == nil {
		whole := mustAny(ctx)
		a.TypeUrl, a.Value = whole.TypeUrl, whole.Value
		return
	}
	v := make([]byte, len(m.noSNI), len(m.noSNI)+len(ctx.Sni)+8)
	copy(v, m.noSNI)
	if ctx.Sni != "" {
		v = protowire.AppendTag(v, 2, protowire.BytesType)
		v = protowire.AppendString(v, ctx.Sni)
	}
	a.TypeUrl, a.Value = upstreamTLSType, v
}

func defaultCommonTLSContext() *tlsv3.CommonTlsContext {
	return &tlsv3.CommonTlsContext{TlsParams: &tlsv3.TlsParameters{
		TlsMaximumProtocolVersion: tlsv3.TlsParameters_TLSv1_3,
		TlsMinimumProtocolVersion: tlsv3.TlsParameters_TLSv1_2,
	}}
}

func exactMatchers(in []string) []*matcherv3.StringMatcher {
	if len(in) == 0 {
		return nil
	}
	// The matchers and their patterns are allocated together.
	parts := make([]struct {
		m     matcherv3.StringMatcher
		exact matcherv3.StringMatcher_Exact
	}, len(in))
	out := make([]*matcherv3.StringMatcher, len(in))
	for i, s := range in {
		p := &parts[i]
		p.exact.Exact = s
		p.m.MatchPattern = &p.exact
		out[i] = &p.m
	}
	return out
}

// sdsSecret mirrors pkg/model ConstructSdsSecretConfig: istio-agent SDS over the sds-grpc
// cluster; the default and ROOTCA resources also wait 0s on first fetch. Those two are shared:
// the TLS contexts holding them are marshalled into the cluster, never changed.
func sdsSecret(name string) *tlsv3.SdsSecretConfig {
	switch name {
	case "default":
		return defaultSecret()
	case "ROOTCA":
		return rootCASecret()
	}
	return newSDSSecret(name)
}

var (
	defaultSecret = sync.OnceValue(func() *tlsv3.SdsSecretConfig { return newSDSSecret("default") })
	rootCASecret  = sync.OnceValue(func() *tlsv3.SdsSecretConfig { return newSDSSecret("ROOTCA") })
	mutualCerts   = sync.OnceValue(func() []*tlsv3.SdsSecretConfig { return []*tlsv3.SdsSecretConfig{defaultSecret()} })
)

func newSDSSecret(name string) *tlsv3.SdsSecretConfig {
	src := &corev3.ConfigSource{
		ConfigSourceSpecifier: &corev3.ConfigSource_ApiConfigSource{ApiConfigSource: &corev3.ApiConfigSource{
			ApiType:                   corev3.ApiConfigSource_GRPC,
			SetNodeOnFirstMessageOnly: true,
			TransportApiVersion:       corev3.ApiVersion_V3,
			GrpcServices: []*corev3.GrpcService{{TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{
				EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: "sds-grpc"}}}},
		}},
		ResourceApiVersion: corev3.ApiVersion_V3,
	}
	if name == "default" || name == "ROOTCA" {
		src.InitialFetchTimeout = durationpb.New(0)
	}
	return &tlsv3.SdsSecretConfig{Name: name, SdsConfig: src}
}

// credentialSecret mirrors ConstructSdsSecretConfigForCredential without a credential socket or
// SDS extension provider: the secret is fetched from istiod over ADS.
func credentialSecret(name string) *tlsv3.SdsSecretConfig {
	switch {
	case name == "":
		return nil
	case name == "builtin://":
		return sdsSecret("default")
	case name == "builtin://-cacert":
		return sdsSecret("ROOTCA")
	}
	name = strings.TrimPrefix(name, "sds://")
	res := name
	switch {
	case strings.HasPrefix(name, "builtin://"):
		res = "default"
	case strings.HasPrefix(name, "invalid://"):
		res = "invalid://"
	case strings.HasPrefix(name, "configmap://"), strings.HasPrefix(name, "kubernetes://"), strings.HasPrefix(name, "kubernetes-gateway://"):
	default:
		res = "kubernetes://" + name
	}
	return &tlsv3.SdsSecretConfig{Name: res, SdsConfig: &corev3.ConfigSource{
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
		ResourceApiVersion:    corev3.ApiVersion_V3,
	}}
}

// constructUpstreamTLS mirrors cluster_tls.go constructUpstreamTLS for SIMPLE and MUTUAL.
func (st *clusterState) constructUpstreamTLS(ts *tlsSettings, mutual bool) (*tlsv3.UpstreamTlsContext, bool) {
	b := st.b
	tls := ts.tls
	o := func(f string) provenance.Origin { return st.blockOrigin(bTLS, "tls."+f) }
	ctx := &tlsv3.UpstreamTlsContext{CommonTlsContext: defaultCommonTLSContext(), Sni: tls.Sni}
	st.setAutoSniAndSanValidation(tls)
	sans := tls.SubjectAltNames
	if !b.in.Service.Kubernetes && len(sans) == 0 {
		// ServiceEntry hosts use the ServiceEntry's subjectAltNames.
		sans = b.in.Service.ServiceAccounts
		ts.sans = b.registryOrigin("spec.subjectAltNames", "no DestinationRule subjectAltNames: the ServiceEntry's are used")
	}
	// credentialName secrets come from istiod over ADS; otherwise mounted files are served by
	// istio-agent SDS (`file-cert:`, `file-root:`), the CA defaulting to the system bundle.
	cc := ctx.CommonTlsContext
	if tls.CredentialName != "" {
		ts.certs = o("credentialName")
		ts.root = withNote(o("credentialName"), "CA from the <credentialName>-cacert secret")
		if mutual {
			cc.TlsCertificateSdsSecretConfigs = []*tlsv3.SdsSecretConfig{credentialSecret(tls.CredentialName)}
		}
		if !tls.GetInsecureSkipVerify().GetValue() {
			cc.ValidationContextType = &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
				DefaultValidationContext:         &tlsv3.CertificateValidationContext{MatchSubjectAltNames: exactMatchers(sans)},
				ValidationContextSdsSecretConfig: credentialSecret(tls.CredentialName + "-cacert"),
			}}
		}
	} else {
		ca := tls.CaCertificates
		ts.root = o("caCertificates")
		if ca == "" {
			ca = "system"
			ts.root = withNote(o("caCertificates"), "unset: the system CA bundle")
		}
		if mutual {
			if tls.ClientCertificate == "" || tls.PrivateKey == "" {
				st.d.add(diag.TLSConflict.New(
					fmt.Sprintf("%s sets tls.mode MUTUAL without clientCertificate and privateKey (or credentialName): istiod sends cluster %s without TLS", st.eff.src[bTLS].title(), st.c.Name),
					"set clientCertificate and privateKey, or credentialName with a workloadSelector",
					refsOf(st.eff.src[bTLS].ref)...))
				return nil, false
			}
			cc.TlsCertificateSdsSecretConfigs = []*tlsv3.SdsSecretConfig{sdsSecret("file-cert:" + tls.ClientCertificate + "~" + tls.PrivateKey)}
			ts.certs = o("clientCertificate")
		}
		if tls.GetInsecureSkipVerify().GetValue() {
			cc.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{}
		} else {
			dvc := &tlsv3.CertificateValidationContext{MatchSubjectAltNames: exactMatchers(sans)}
			if tls.GetCaCrl() != "" {
				dvc.Crl = &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: tls.GetCaCrl()}}
			}
			cc.ValidationContextType = &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
				DefaultValidationContext:         dvc,
				ValidationContextSdsSecretConfig: sdsSecret("file-root:" + ca),
			}}
		}
	}
	if d := b.mesh.GetTlsDefaults(); d != nil {
		if len(d.EcdhCurves) > 0 {
			cc.TlsParams.EcdhCurves = d.EcdhCurves
		}
		if len(d.CipherSuites) > 0 {
			cc.TlsParams.CipherSuites = d.CipherSuites
		}
	}
	if st.hpo.GetExplicitHttpConfig().GetHttp2ProtocolOptions() != nil {
		cc.AlpnProtocols = []string{"h2"}
	}
	ts.tls = &networking.ClientTLSSettings{Mode: tls.Mode, Sni: tls.Sni, SubjectAltNames: sans, CaCrl: tls.CaCrl,
		InsecureSkipVerify: tls.InsecureSkipVerify, CredentialName: tls.CredentialName}
	return ctx, true
}

// setAutoSniAndSanValidation mirrors cluster_tls.go setAutoSniAndAutoSanValidation for a
// non-DFP cluster.
func (st *clusterState) setAutoSniAndSanValidation(tls *networking.ClientTLSSettings) {
	insecure := tls.GetInsecureSkipVerify().GetValue()
	autoSni := tls.Sni == ""
	autoSan := autoSni && len(tls.SubjectAltNames) == 0 && !insecure
	if !autoSni && !autoSan {
		return
	}
	h := st.ensureHPO()
	if h.UpstreamHttpProtocolOptions == nil {
		h.UpstreamHttpProtocolOptions = &corev3.UpstreamHttpProtocolOptions{}
	}
	o := withNote(st.blockOrigin(bTLS, "tls.sni"), "unset: Envoy sends the HTTP host as SNI (HTTP upstreams only)")
	if autoSni {
		h.UpstreamHttpProtocolOptions.AutoSni = true
		st.set(pHPO+".upstreamHttpProtocolOptions.autoSni", "true", o)
	}
	if autoSan {
		h.UpstreamHttpProtocolOptions.AutoSanValidation = true
		st.set(pHPO+".upstreamHttpProtocolOptions.autoSanValidation", "true",
			withNote(st.blockOrigin(bTLS, "tls.subjectAltNames"), "unset with no sni: Envoy verifies the certificate against the HTTP host"))
	}
}

// tlsPaths are the output paths traceTLSContext writes below one transport socket.
type tlsPaths struct {
	name, minVersion, maxVersion, ecdhCurves, cipherSuites, certs string
	sans, anyCert, crl, root, noVerify, alpn, sni                 string
}

func newTLSPaths(p string) *tlsPaths {
	t := p + ".typedConfig"
	cc := t + ".commonTlsContext"
	vp := cc + ".combinedValidationContext"
	return &tlsPaths{
		name:         p + ".name",
		minVersion:   cc + ".tlsParams.tlsMinimumProtocolVersion",
		maxVersion:   cc + ".tlsParams.tlsMaximumProtocolVersion",
		ecdhCurves:   cc + ".tlsParams.ecdhCurves",
		cipherSuites: cc + ".tlsParams.cipherSuites",
		certs:        cc + ".tlsCertificateSdsSecretConfigs",
		sans:         vp + ".defaultValidationContext.matchSubjectAltNames",
		anyCert:      vp + ".defaultValidationContext",
		crl:          vp + ".defaultValidationContext.crl",
		root:         vp + ".validationContextSdsSecretConfig",
		noVerify:     cc + ".validationContext",
		alpn:         cc + ".alpnProtocols",
		sni:          t + ".sni",
	}
}

// knownTLSPaths are the tlsPaths of the sockets applyTLS writes: the transport socket or the
// first transport socket match, bare or wrapped in PROXY protocol.
var knownTLSPaths = sync.OnceValue(func() map[string]*tlsPaths {
	m := map[string]*tlsPaths{}
	for _, p := range []string{"transportSocket", "transportSocketMatches[0].transportSocket"} {
		m[p] = newTLSPaths(p)
		m[p+".typedConfig.transportSocket"] = newTLSPaths(p + ".typedConfig.transportSocket")
	}
	return m
})

func tlsPathsFor(p string) *tlsPaths {
	if t, ok := knownTLSPaths()[p]; ok {
		return t
	}
	return newTLSPaths(p)
}

// tlsSocketModes are the display values of TLS transport sockets, by the mode that made them.
var tlsSocketModes = func() map[networking.ClientTLSSettings_TLSmode]string {
	m := map[networking.ClientTLSSettings_TLSmode]string{}
	for v := range networking.ClientTLSSettings_TLSmode_name {
		mode := networking.ClientTLSSettings_TLSmode(v)
		m[mode] = "envoy.transport_sockets.tls: " + mode.String()
	}
	return m
}()

// traceTLSContext records the origin of every part of an UpstreamTlsContext at socket path p.
func (st *clusterState) traceTLSContext(p string, ctx *tlsv3.UpstreamTlsContext, ts *tlsSettings) {
	mode, ok := tlsSocketModes[ts.tls.Mode]
	if !ok {
		mode = "envoy.transport_sockets.tls: " + ts.tls.Mode.String()
	}
	if ts.auto {
		mode = "envoy.transport_sockets.tls: ISTIO_MUTUAL (auto-mTLS)"
	}
	paths := tlsPathsFor(p)
	st.set(paths.name, mode, ts.mode)
	cc := ctx.CommonTlsContext
	tp := istioDefault("Istio's upstream TLS versions (defaultUpstreamCommonTLSContext)")
	st.set(paths.minVersion, cc.TlsParams.TlsMinimumProtocolVersion.String(), tp)
	st.set(paths.maxVersion, cc.TlsParams.TlsMaximumProtocolVersion.String(), tp)
	if len(cc.TlsParams.EcdhCurves) > 0 {
		st.set(paths.ecdhCurves, strings.Join(cc.TlsParams.EcdhCurves, ","), st.b.meshOrigin("tlsDefaults.ecdhCurves"))
	}
	if len(cc.TlsParams.CipherSuites) > 0 {
		st.set(paths.cipherSuites, strings.Join(cc.TlsParams.CipherSuites, ","), st.b.meshOrigin("tlsDefaults.cipherSuites"))
	}
	if len(cc.TlsCertificateSdsSecretConfigs) > 0 {
		st.set(paths.certs, cc.TlsCertificateSdsSecretConfigs[0].GetName(), ts.certs)
	}
	switch v := cc.ValidationContextType.(type) {
	case *tlsv3.CommonTlsContext_CombinedValidationContext:
		dvc := v.CombinedValidationContext.GetDefaultValidationContext()
		if ms := dvc.GetMatchSubjectAltNames(); len(ms) > 0 {
			names := ms[0].GetExact()
			if len(ms) > 1 {
				var b strings.Builder
				for i, m := range ms {
					if i > 0 {
						b.WriteString(", ")
					}
					b.WriteString(m.GetExact())
				}
				names = b.String()
			}
			st.set(paths.sans, names, ts.sans)
		} else if dvc.GetCrl() == nil {
			st.set(paths.anyCert, "{} (any certificate from the trusted CA)", withNote(ts.sans, "no subject alt names to match"))
		}
		if dvc.GetCrl() != nil {
			st.set(paths.crl, dvc.GetCrl().GetFilename(), st.blockOrigin(bTLS, "tls.caCrl"))
		}
		st.set(paths.root, v.CombinedValidationContext.GetValidationContextSdsSecretConfig().GetName(), ts.root)
	case *tlsv3.CommonTlsContext_ValidationContext:
		st.set(paths.noVerify, "{} (no verification)", st.blockOrigin(bTLS, "tls.insecureSkipVerify"))
	}
	if len(cc.AlpnProtocols) > 0 {
		o := istioDefault("in-mesh ALPN (util.ALPNInMesh…)")
		switch {
		case ts.tls.Mode != networking.ClientTLSSettings_ISTIO_MUTUAL:
			o = st.b.registryOrigin(st.b.portField(), "explicit HTTP/2 cluster: ALPN h2")
		case st.b.flags.MetadataExchange && !st.b.flags.DisableMxALPN:
			o = flagOrigin("PILOT_ENABLE_METADATA_EXCHANGE", "istio-peer-exchange ALPN for metadata exchange; h2 on HTTP/2 clusters")
		}
		st.set(paths.alpn, joinALPN(cc.AlpnProtocols), o)
	}
	if ctx.Sni != "" {
		st.set(paths.sni, ctx.Sni, ts.sni)
	}
}

// joinALPN is the display form of an ALPN list, the protocols joined by commas (the in-mesh
// lists without allocating).
func joinALPN(protos []string) string {
	if len(protos) == 2 && protos[0] == "istio-peer-exchange" && protos[1] == "istio" {
		return "istio-peer-exchange,istio"
	}
	if len(protos) == 3 && protos[0] == "istio-peer-exchange" && protos[1] == "istio" && protos[2] == "h2" {
		return "istio-peer-exchange,istio,h2"
	}
	return strings.Join(protos, ",")
}

// applyProxyProtocol mirrors cluster_traffic_policy.go applyUpstreamProxyProtocol: every transport
// socket is wrapped in upstream_proxy_protocol, raw_buffer when there is none.
func (st *clusterState) applyProxyProtocol(pp *networking.TrafficPolicy_ProxyProtocol) {
	c := st.c
	o := st.blockOrigin(bProxyProtocol, "proxyProtocol.version")
	ver := corev3.ProxyProtocolConfig_Version(pp.Version)
	wrap := func(inner *corev3.TransportSocket, name string) *corev3.TransportSocket {
		return &corev3.TransportSocket{Name: name, ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(&proxyprotocolv3.ProxyProtocolUpstreamTransport{
			Config: &corev3.ProxyProtocolConfig{Version: ver}, TransportSocket: inner})}}
	}
	trace := func(p string) {
		st.set(p+".name", "envoy.transport_sockets.upstream_proxy_protocol", o)
		st.set(p+".typedConfig.config", "PROXY protocol "+ver.String(), o)
	}
	if c.TransportSocket == nil && len(c.TransportSocketMatches) == 0 {
		raw := &corev3.TransportSocket{Name: "raw_buffer", ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: common.rawBuffer}}
		c.TransportSocket = wrap(raw, "envoy.transport_sockets.upstream_proxy_protocol")
		trace("transportSocket")
		st.set("transportSocket.typedConfig.transportSocket", "raw_buffer (plaintext)", istioDefault("no TLS: PROXY protocol wraps a raw socket"))
		return
	}
	if c.TransportSocket != nil {
		c.TransportSocket = wrap(c.TransportSocket, "envoy.transport_sockets.upstream_proxy_protocol")
		trace("transportSocket")
	}
	for i, m := range c.TransportSocketMatches {
		// A new match: the plaintext one is shared by every cluster (commonMessages).
		c.TransportSocketMatches[i] = &clusterv3.Cluster_TransportSocketMatch{Name: m.Name, Match: m.Match,
			TransportSocket: wrap(m.TransportSocket, "envoy.transport_sockets.upstream_proxy_protocol")}
		trace(fmt.Sprintf("transportSocketMatches[%d].transportSocket", i))
	}
}

// disableFix is the fix of a tls.mode DISABLE that STRICT servers reject, naming the field in
// the DestinationRule (or MeshConfig) that sets it.
func disableFix(src source) string {
	return fmt.Sprintf("remove %s.tls.mode DISABLE (auto-mTLS then applies) or set ISTIO_MUTUAL", src.prefix)
}

// hasEndpoint reports whether eps holds ep (the same workload, address and port: SameWorkload).
func hasEndpoint(eps []index.Endpoint, ep *index.Endpoint) bool {
	for i := range eps {
		if eps[i].SameWorkload(*ep) && eps[i].Port == ep.Port {
			return true
		}
	}
	return false
}

// tlsDiagnostics reports the TLS conflicts (D19, docs/semantics/cluster.md#tls-conflicts) and
// TLS origination without SNI
// on non-HTTP ports (D32).
func (st *clusterState) tlsDiagnostics(user *networking.ClientTLSSettings, ts *tlsSettings, mode index.MTLSMode) {
	b := st.b
	svc := b.in.Service
	c := st.c
	src := st.eff.src[bTLS]
	// The endpoints with and without a sidecar count only against a client TLS mode.
	sidecars, plain := 0, 0
	if user != nil {
		eps := svc.Endpoints[b.in.Port.Number]
		for i := range eps {
			if epTLSMode(&eps[i]) == "istio" {
				sidecars++
			} else {
				plain++
			}
		}
	}
	switch {
	case user != nil && user.Mode == networking.ClientTLSSettings_DISABLE && b.in.MTLS.Mode == index.MTLSStrict && !svc.MeshExternal:
		st.d.add(diag.TLSConflict.New(
			fmt.Sprintf("%s sets tls.mode DISABLE, but %s requires mTLS (STRICT): the server sidecars reset the plaintext connections of cluster %s", src.title(), svc.Namespace, c.Name),
			disableFix(src),
			append(refsOf(src.ref), refsOf(b.in.MTLS.Origin.Resource)...)...))
	case user != nil && user.Mode == networking.ClientTLSSettings_ISTIO_MUTUAL && (svc.MeshExternal || plain > 0):
		why := "the host is MESH_EXTERNAL"
		if !svc.MeshExternal {
			why = fmt.Sprintf("%d endpoint(s) on port %d have no sidecar", plain, b.in.Port.Number)
		}
		st.d.add(diag.TLSConflict.New(
			fmt.Sprintf("%s sets tls.mode ISTIO_MUTUAL for cluster %s, but %s: those handshakes fail (no per-endpoint plaintext fallback)", src.title(), c.Name, why),
			"remove tls (auto-mTLS falls back per endpoint) or use SIMPLE/MUTUAL for external hosts",
			refsOf(src.ref)...))
	case user != nil && (user.Mode == networking.ClientTLSSettings_SIMPLE || user.Mode == networking.ClientTLSSettings_MUTUAL) && !svc.MeshExternal && sidecars > 0:
		st.d.add(diag.TLSConflict.At(explain.SeverityWarning,
			fmt.Sprintf("%s originates %s TLS to %s, whose endpoints run sidecars: the server sidecar receives non-Istio TLS (rejected under STRICT, passed through as opaque bytes under PERMISSIVE)", src.title(), user.Mode, svc.Hostname),
			"use ISTIO_MUTUAL, or no tls (auto-mTLS), for in-mesh destinations",
			refsOf(src.ref)...))
	case user == nil && ts == nil && !b.mesh.GetEnableAutoMtls().GetValue() && mode == index.MTLSStrict && !svc.MeshExternal:
		st.d.add(diag.TLSConflict.New(
			fmt.Sprintf("enableAutoMtls is off and no DestinationRule sets tls for cluster %s, but %s requires mTLS (STRICT): connections go out in plaintext and are reset", c.Name, svc.Namespace),
			"set tls.mode ISTIO_MUTUAL in a DestinationRule, or enable enableAutoMtls",
			refsOf(b.in.MTLS.Origin.Resource)...))
	}
	// Only a DISABLE client, or a cluster without TLS in a DISABLE namespace, can contradict a
	// workload-level STRICT policy.
	var workloads []index.WorkloadMTLS
	if (user != nil && user.Mode == networking.ClientTLSSettings_DISABLE) ||
		(user == nil && ts == nil && mode == index.MTLSDisable && b.in.MTLS.Mode == index.MTLSDisable) {
		workloads = b.workloadMTLS()
	}
	// A policy contradicts this cluster through the cluster's endpoints (those of its port, and
	// of its subset) that the policy makes STRICT: not through a portLevelMtls entry of another
	// port, or through workloads of another subset.
	var clusterEndpoints []index.Endpoint
	if len(workloads) > 0 {
		clusterEndpoints = svc.Endpoints[b.in.Port.Number]
		if st.subsetIndex >= 0 {
			clusterEndpoints = endpointsMatching(clusterEndpoints, b.in.Rule.Spec.GetSubsets()[st.subsetIndex].GetLabels())
		}
	}
	for _, w := range workloads {
		strict := 0
		for i := range w.Endpoints {
			if we := &w.Endpoints[i]; w.ModeForPort(we.Port) == index.MTLSStrict && hasEndpoint(clusterEndpoints, we) {
				strict++
			}
		}
		if strict == 0 || svc.MeshExternal {
			continue
		}
		switch {
		case user != nil && user.Mode == networking.ClientTLSSettings_DISABLE:
			st.d.add(diag.TLSConflict.New(
				fmt.Sprintf("%s sets tls.mode DISABLE, but %s requires mTLS (STRICT) for %d endpoint(s) of %s: those reset the plaintext connections of cluster %s", src.title(), w.PeerAuthentication, strict, svc.Hostname, c.Name),
				disableFix(src),
				append(refsOf(src.ref), w.PeerAuthentication)...))
		case user == nil && ts == nil && mode == index.MTLSDisable && b.in.MTLS.Mode == index.MTLSDisable:
			st.d.add(diag.TLSConflict.New(
				fmt.Sprintf("the namespace mTLS mode of %s is DISABLE, so cluster %s has no auto-mTLS, but %s requires mTLS (STRICT) for %d endpoint(s): those reset the plaintext connections", svc.Namespace, c.Name, w.PeerAuthentication, strict),
				"set tls.mode ISTIO_MUTUAL in a DestinationRule for this host, or align the PeerAuthentications",
				append(refsOf(b.in.MTLS.Origin.Resource), w.PeerAuthentication)...))
		}
	}
	if user == nil && st.eff.portEntry {
		if top := b.in.Rule.Spec.GetTrafficPolicy().GetTls(); top != nil && (top.Mode == networking.ClientTLSSettings_SIMPLE || top.Mode == networking.ClientTLSSettings_MUTUAL) {
			st.d.add(diag.TLSConflict.At(explain.SeverityWarning,
				fmt.Sprintf("portLevelSettings[port=%d] has no tls, so cluster %s drops the top-level %s TLS origination (CDS uses auto-mTLS or plaintext, while EDS still marks endpoints by the top-level mode)", b.in.Port.Number, c.Name, top.Mode),
				"repeat the tls block inside the portLevelSettings entry",
				refsOf(b.trafficPolicyRef())...))
		}
	}
	if user != nil && (user.Mode == networking.ClientTLSSettings_SIMPLE || user.Mode == networking.ClientTLSSettings_MUTUAL) && user.Sni == "" && !isHTTP(b.in.Port.Protocol) {
		st.d.add(diag.TLSOriginationWithoutSNI.New(
			fmt.Sprintf("%s originates %s TLS without sni on port %d (%s): auto_sni only works for HTTP, so cluster %s sends no SNI", src.title(), user.Mode, b.in.Port.Number, protoName(b.in.Port.Protocol), c.Name),
			"set tls.sni to the server name",
			refsOf(src.ref)...))
	}
}
