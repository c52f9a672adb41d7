package sidecarauthz

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/envoyrbac"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/index"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// AnnotationSidecarStatus is the annotation the injector sets on a pod it gave a sidecar; istiod
// and istioctl recognise a sidecar pod by it (annotation.SidecarStatus).
const AnnotationSidecarStatus = "sidecar.istio.io/status"

// HasSidecar reports whether the pod has a sidecar, as istiod and istioctl decide it.
func HasSidecar(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[AnnotationSidecarStatus]
	return ok
}

// Object kinds of a sidecar explanation.
const (
	// ChainKind is the kind of a filter chain object (its Message is what -o envoy prints).
	ChainKind = "envoy.config.listener.v3.FilterChain"
	// DataPlaneSection is the title of the section that says which data plane answered.
	DataPlaneSection = "Data plane"
)

// listenerPort is MeshConfig proxyInboundListenPort's default, the port of virtualInbound.
const listenerPort = 15006

// explanation is the state of one pod's explanation.
type explanation struct {
	x    *Explainer
	snap *model.Snapshot
	pod  *corev1.Pod
	root string
	// aps and ras are the AuthorizationPolicies and RequestAuthentications of the pod's
	// namespace and the root namespace, in snapshot order.
	aps     []*securityv1.AuthorizationPolicy
	ras     []*securityv1.RequestAuthentication
	pa      *peerAuthn
	targets []*target
	chains  []*chain
	// perPortPassthrough are the port-level ports no Service exposes, in the order used.
	perPortPassthrough []uint32
	selected           []*securityv1.AuthorizationPolicy
	targetRef          []*securityv1.AuthorizationPolicy
	rbac               *envoyrbac.Result
	res                *explain.Result
}

// ExplainPod is ExplainPod for one pod of the indexed snapshot.
func (x *Explainer) ExplainPod(pod *corev1.Pod) *explain.Result {
	snap := x.snap
	e := x.newExplanation(pod)
	e.res.Sections = append(e.res.Sections, e.dataPlaneSection(), e.peerAuthnSection(), e.portSection(), e.policySection())
	if s := e.notAppliedSection(); s != nil {
		e.res.Sections = append(e.res.Sections, *s)
	}
	e.res.Sections = append(e.res.Sections, e.readingSection())
	e.addObjects()
	e.res.Diagnostics = e.sortedDiagnostics()
	for _, kind := range []string{"PeerAuthentication", "AuthorizationPolicy", "Pod", "Service"} {
		if why, ok := snap.Incomplete[kind]; ok {
			e.res.Warnings = append(e.res.Warnings, fmt.Sprintf("%s objects could not be read (%s): the answer may be incomplete", kind, why))
		}
	}
	return e.res
}

// newExplanation decides everything the answer and its diagnostics are made of: the
// PeerAuthentication of each port, the pod's service targets, the policies and their RBAC
// filters, and the filter chains.
func (x *Explainer) newExplanation(pod *corev1.Pod) *explanation {
	snap := x.snap
	podRef := provenance.Ref{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name}
	e := &explanation{x: x, snap: snap, pod: pod, root: x.root, aps: x.aps.in(x.root, pod.Namespace), ras: x.ras.in(x.root, pod.Namespace), res: &explain.Result{
		APIVersion: explain.APIVersion,
		Kind:       explain.KindAuthzExplanation,
		Subject:    explain.Subject{Kind: "Workload", Namespace: pod.Namespace, Workload: "pod/" + pod.Name, Resource: &podRef},
	}}
	e.pa = composePeerAuthn(e.root, x.pas.in(e.root, pod.Namespace), pod)
	e.targets = serviceTargets(x.services.in(pod.Namespace, pod.Namespace), pod)
	e.selectPolicies()
	e.rbac = x.build(e)
	e.buildChains()
	return e
}

// build is the RBAC of e's selected policies, built once for every pod that selects the same
// policies: the build reads nothing of the pod but them (the rest is the snapshot's), and
// nothing changes its result.
func (x *Explainer) build(e *explanation) *envoyrbac.Result {
	var key []byte
	for _, ap := range e.selected {
		i, ok := x.apAt[ap]
		if !ok {
			return e.build()
		}
		key = strconv.AppendInt(key, int64(i), 10)
		key = append(key, ',')
	}
	x.mu.Lock()
	r, ok := x.builds[string(key)]
	x.mu.Unlock()
	if ok {
		return r
	}
	r = e.build()
	x.mu.Lock()
	x.builds[string(key)] = r
	x.mu.Unlock()
	return r
}

// build is the RBAC of e's selected policies.
func (e *explanation) build() *envoyrbac.Result {
	snap := e.snap
	return envoyrbac.Build(envoyrbac.Input{
		Policies:           e.selected,
		TrustDomain:        snap.MeshConfig.GetTrustDomain(),
		TrustDomainAliases: snap.MeshConfig.GetTrustDomainAliases(),
		ExtensionProviders: snap.MeshConfig.GetExtensionProviders(),
		LookupCluster:      e.lookupCluster,
		Origin: func(ap *securityv1.AuthorizationPolicy, field, note string) provenance.Origin {
			o := snap.Origin(provenance.LayerAuthorizationPolicy, model.ObjectKey{Kind: "AuthorizationPolicy", Namespace: ap.Namespace, Name: ap.Name}, field)
			o.Note = note
			return o
		},
		MeshOrigin: e.meshOrigin,
	})
}

// sortedDiagnostics are the diagnostics in their one order, never nil.
func (e *explanation) sortedDiagnostics() []explain.Diagnostic {
	ds := sortDiagnostics(e.diagnostics())
	if ds == nil {
		ds = []explain.Diagnostic{}
	}
	return ds
}

// meshOrigin is the origin of a MeshConfig field; one the user did not set is an Istio default.
func (e *explanation) meshOrigin(field, note string) provenance.Origin {
	o, set := e.snap.MeshConfigOrigin(field, note)
	if !set {
		o.Layer = provenance.LayerIstioDefault
	}
	return o
}

// lookupCluster is index.LookupCluster over the snapshot.
func (e *explanation) lookupCluster(service string, port int) (string, string, error) {
	return index.LookupCluster(e.snap, service, port)
}

// selectPolicies is ListAuthorizationPolicies for a sidecar: the policies of the root namespace
// and the pod's namespace, oldest first, whose selector is absent or matches the pod's labels.
// A policy with targetRefs is never applied to a sidecar (ShouldAttachPolicy).
func (e *explanation) selectPolicies() {
	byNs := func(ns string) []*securityv1.AuthorizationPolicy {
		var out []*securityv1.AuthorizationPolicy
		for _, ap := range e.aps {
			if ap.Namespace == ns {
				out = append(out, ap)
			}
		}
		slices.SortStableFunc(out, func(a, b *securityv1.AuthorizationPolicy) int {
			if c := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); c != 0 {
				return c
			}
			return strings.Compare(a.Name, b.Name)
		})
		return out
	}
	nss := []string{e.root}
	if e.pod.Namespace != e.root {
		nss = append(nss, e.pod.Namespace)
	}
	for _, ns := range nss {
		for _, ap := range byNs(ns) {
			if len(ap.Spec.GetTargetRefs()) > 0 || ap.Spec.GetTargetRef() != nil { //nolint:staticcheck // targetRef is read as istiod reads it
				e.targetRef = append(e.targetRef, ap)
				continue
			}
			if sel := ap.Spec.GetSelector(); sel == nil || subsetOf(sel.GetMatchLabels(), e.pod.Labels) {
				e.selected = append(e.selected, ap)
			}
		}
	}
}

// buildChains lays out the chains in istiod's order: the blackhole chain, the catch-all chains
// (for every port, then for each port-level mode of a port no Service exposes), then each
// service target port's chains, by port.
func (e *explanation) buildChains() {
	mc := e.snap.MeshConfig
	e.chains = append(e.chains, &chain{name: "virtualInbound-blackhole", blackhole: true, port: listenerPort,
		match: &listenerv3.FilterChainMatch{DestinationPort: wrapperspb.UInt32(listenerPort)}})
	ports := []uint32{0}
	var extra []uint32
	for p := range e.pa.perPort {
		if !slices.ContainsFunc(e.targets, func(t *target) bool { return t.target == p }) {
			extra = append(extra, p)
		}
	}
	// istiod ranges over a map here: with several such ports the order is not deterministic.
	// Sorted, and said so in a diagnostic.
	slices.Sort(extra)
	e.perPortPassthrough = extra
	ports = append(ports, extra...)
	for _, p := range ports {
		mode, org := e.pa.forPort(e.snap, p)
		for _, opt := range chainOptions(mode, protoAuto) {
			name := "virtualInbound"
			if opt.protocol == protoHTTP {
				name = "virtualInbound-catchall-http"
			}
			e.chains = append(e.chains, e.newChain(name, p, true, opt, mode, org, nil, mc))
		}
	}
	bind := wildcard(e.pod)
	for _, t := range e.targets {
		mode, org := e.pa.forPort(e.snap, t.target)
		lp := toListenerProtocol(t.protocol)
		for _, opt := range chainOptions(mode, lp) {
			name := bind + "_" + strconv.Itoa(int(t.target))
			e.chains = append(e.chains, e.newChain(name, t.target, false, opt, mode, org, t, mc))
		}
	}
}

func (e *explanation) newChain(name string, port uint32, passthrough bool, opt chainOpt, mode Mode, org provenance.Origin, t *target, mc interface{}) *chain {
	c := &chain{name: name, port: port, passthrough: passthrough, opt: opt, mode: mode, modeOrigin: org, tgt: t}
	c.match = &listenerv3.FilterChainMatch{ApplicationProtocols: opt.alpn, TransportProtocol: opt.transport}
	if port > 0 {
		c.match.DestinationPort = wrapperspb.UInt32(port)
	}
	if opt.tls {
		c.tls = inboundTLS(mode, opt.protocol, e.snap.MeshConfig)
	}
	return c
}

// filtersOf are the authorization filters of a chain, in order.
func (e *explanation) filtersOf(c *chain) []envoyrbac.Filter {
	if c.blackhole {
		return nil
	}
	if c.httpChain() {
		return append(append([]envoyrbac.Filter{}, e.rbac.HTTPCustom...), e.rbac.HTTPLocal...)
	}
	return append(append([]envoyrbac.Filter{}, e.rbac.TCPCustom...), e.rbac.TCPLocal...)
}

// filterObjectName names an authorization filter object: `http 2: envoy.filters.http.rbac (DENY)`.
func filterObjectName(http bool, i int, f envoyrbac.Filter) string {
	kind := "tcp"
	if http {
		kind = "http"
	}
	s := fmt.Sprintf("%s %d: %s (%s", kind, i+1, f.Name, f.Action)
	if f.Provider != "" {
		s += " " + f.Provider
	}
	return s + ")"
}

// addObjects adds one object per filter chain (what -o envoy prints, in istiod's order) and one
// per distinct authorization filter, with the origin of every permission and principal.
func (e *explanation) addObjects() {
	// names and packed are each filter's object name and the filter istiod sends, by config.
	names := map[proto.Message]string{}
	packed := map[proto.Message]*listenerv3.Filter{}
	var filterObjs []explain.Object
	for _, group := range []struct {
		http bool
		fs   []envoyrbac.Filter
	}{{true, append(append([]envoyrbac.Filter{}, e.rbac.HTTPCustom...), e.rbac.HTTPLocal...)}, {false, append(append([]envoyrbac.Filter{}, e.rbac.TCPCustom...), e.rbac.TCPLocal...)}} {
		for i, f := range group.fs {
			name := filterObjectName(group.http, i, f)
			names[f.Config] = name
			packed[f.Config] = f.Envoy()
			o := explain.Object{Kind: string(f.Config.ProtoReflect().Descriptor().FullName()), Name: name, Origins: f.Traces,
				Summary: []explain.Summary{{Name: "filter", Value: f.Name}, {Name: "action", Value: f.Action}}}
			if f.Provider != "" {
				o.Summary = append(o.Summary, explain.Summary{Name: "provider", Value: f.Provider})
			}
			if f.Broken != "" {
				o.Summary = append(o.Summary, explain.Summary{Name: "fails closed", Value: f.Broken})
			}
			if b, err := protojson.Marshal(packed[f.Config]); err == nil {
				o.Value = compactJSON(b)
			}
			if o.Origins == nil {
				o.Origins = []provenance.FieldTrace{}
			}
			filterObjs = append(filterObjs, o)
		}
	}
	for _, c := range e.chains {
		fc := &listenerv3.FilterChain{Name: c.name, FilterChainMatch: c.match, TransportSocket: transportSocket(c.tls)}
		o := explain.Object{Kind: ChainKind, Name: c.name, Message: fc}
		o.Summary = append(o.Summary, explain.Summary{Name: "port", Value: c.portText()})
		if !c.blackhole {
			o.Summary = append(o.Summary, explain.Summary{Name: "mode", Value: string(c.mode)}, explain.Summary{Name: "accepts", Value: c.acceptsText()})
		}
		o.Origins = e.chainTraces(c)
		for i, f := range e.filtersOf(c) {
			fc.Filters = append(fc.Filters, packed[f.Config])
			o.Origins = append(o.Origins, provenance.FieldTrace{Path: fmt.Sprintf("filters[%d]", i), Value: f.Name + " (" + f.Action + ")",
				Origin: provenance.Origin{Layer: provenance.LayerAuthorizationPolicy, Note: "every permission and principal: object " + names[f.Config]}})
		}
		if len(fc.Filters) == 0 && !c.blackhole {
			o.Summary = append(o.Summary, explain.Summary{Name: "authorization", Value: "none: no policy selects the pod"})
		}
		e.res.Objects = append(e.res.Objects, o)
	}
	e.res.Objects = append(e.res.Objects, filterObjs...)
}

// compactJSON removes protojson's deliberately varying whitespace.
func compactJSON(b []byte) []byte {
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		return b
	}
	return c.Bytes()
}

func (c *chain) portText() string {
	switch {
	case c.blackhole:
		return fmt.Sprintf("%d (the listener's own port: dropped)", listenerPort)
	case c.port == 0:
		return "any other port"
	case c.passthrough:
		return fmt.Sprintf("%d (port-level mTLS; no Service)", c.port)
	}
	return fmt.Sprintf("%d (%s)", c.port, c.tgt.protocol)
}

func (c *chain) acceptsText() string {
	kind := "TCP"
	if c.httpChain() {
		kind = "HTTP"
	}
	switch {
	case c.opt.tls:
		return "mutual TLS, " + kind
	case c.opt.transport == "tls":
		return "TLS not terminated by the sidecar (plain TLS from a client without a sidecar), " + kind
	}
	return "plaintext, " + kind
}

// chainTraces are the origins of a chain's match and TLS context.
func (e *explanation) chainTraces(c *chain) []provenance.FieldTrace {
	var out []provenance.FieldTrace
	def := func(note string) provenance.Origin {
		return provenance.Origin{Layer: provenance.LayerIstioDefault, Note: note}
	}
	if c.blackhole {
		return []provenance.FieldTrace{{Path: "filterChainMatch.destinationPort", Value: strconv.Itoa(listenerPort),
			Origin: e.meshOrigin("proxyInboundListenPort", "traffic to the listener's own port is dropped (no authorization filters)")}}
	}
	if c.port > 0 {
		if c.tgt != nil {
			out = append(out, provenance.FieldTrace{Path: "filterChainMatch.destinationPort", Value: strconv.Itoa(int(c.port)), Origin: c.tgt.origin(e.snap, "the pod's (target) port")})
		} else {
			o := e.snap.Origin(provenance.LayerPeerAuthentication, paKey(e.pa.wl), fmt.Sprintf("spec.portLevelMtls[%d]", c.port))
			o.Note = "a port-level mode for a port no Service exposes gets its own catch-all chains"
			out = append(out, provenance.FieldTrace{Path: "filterChainMatch.destinationPort", Value: strconv.Itoa(int(c.port)), Origin: o})
		}
	}
	if len(c.opt.alpn) > 0 {
		out = append(out, provenance.FieldTrace{Path: "filterChainMatch.applicationProtocols", Value: strings.Join(c.opt.alpn, ", "), Origin: def("istiod's ALPN set for this mode and protocol")})
	}
	mo := c.modeOrigin
	mo.Note = strings.TrimPrefix(mo.Note+"; ", "; ") + "mode " + string(c.mode)
	out = append(out, provenance.FieldTrace{Path: "filterChainMatch.transportProtocol", Value: c.opt.transport, Origin: mo})
	if c.tls != nil {
		out = append(out,
			provenance.FieldTrace{Path: "transportSocket", Value: "mutual TLS (client certificate required)", Origin: mo},
			provenance.FieldTrace{Path: "transportSocket.typedConfig.commonTlsContext.alpnProtocols", Value: strings.Join(c.tls.CommonTlsContext.AlpnProtocols, ", "), Origin: def("")},
			provenance.FieldTrace{Path: "transportSocket.typedConfig.commonTlsContext.tlsParams.cipherSuites", Value: strings.Join(c.tls.CommonTlsContext.TlsParams.CipherSuites, ", "), Origin: e.meshOrigin("meshMTLS.cipherSuites", "")},
			provenance.FieldTrace{Path: "transportSocket.typedConfig.commonTlsContext.tlsParams.tlsMinimumProtocolVersion", Value: c.tls.CommonTlsContext.TlsParams.TlsMinimumProtocolVersion.String(), Origin: e.meshOrigin("meshMTLS.minProtocolVersion", "")},
			provenance.FieldTrace{Path: "transportSocket.typedConfig.commonTlsContext.combinedValidationContext.defaultValidationContext.matchSubjectAltNames",
				Value: strings.Join(trustDomainsForValidation(e.snap.MeshConfig), ", "), Origin: e.meshOrigin("trustDomain", "the trust domain and its aliases")},
		)
	}
	return out
}
