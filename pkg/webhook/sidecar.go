package webhook

import (
	"fmt"
	"net"
	"net/netip"
	"path"
	"strconv"
	"strings"

	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"
)

// sidecarAsWritten is what istiod does with most Sidecar values the webhook rejects.
const sidecarAsWritten = "istiod does not check it and builds the proxy's listeners from the Sidecar as written"

// egressHostIstiod is what istiod does with an egress host the webhook rejects:
// convertIstioListenerToWrapper (pilot/pkg/model/sidecar.go) skips an entry without exactly one
// `/`, and matches the others against namespaces and hostnames as written.
func egressHostIstiod(h string) string {
	if strings.Count(h, "/") != 1 {
		return "istiod logs the entry as an illegal host and skips it: it imports nothing"
	}
	return "istiod matches the entry as written against namespace names and hostnames; in this form it imports no Kubernetes Service"
}

// Sidecar returns what ValidateSidecar rejects, after the metadata checks, in Istio's order:
// the workload selector and an empty Sidecar (each ends validation), ingress listeners (with
// validateTLSOptions), the inbound connection pool, egress listeners (ports, binds, the catch-all
// listener, hosts) and the outbound traffic policy. Its warnings are not reported.
func Sidecar(m Meta, spec *networking.Sidecar) []Problem {
	if ps := metadataAndSelector(m, spec.GetWorkloadSelector()); ps != nil {
		return ps
	}
	var l list
	if len(spec.GetEgress()) == 0 && len(spec.GetIngress()) == 0 && spec.GetOutboundTrafficPolicy() == nil && spec.GetInboundConnectionPool() == nil {
		l.add("spec", "sidecar: empty configuration provided", "istiod gives the selected proxies the default egress listener (`*/*`), as without a Sidecar (initSidecarScopeInternalIndexes, pilot/pkg/model/sidecar.go)")
		return l
	}
	ports := map[uint32]bool{}
	for i, in := range spec.GetIngress() {
		at := fmt.Sprintf("spec.ingress[%d]", i)
		if in == nil {
			l.add(at, "sidecar: ingress may not be null", sidecarAsWritten)
			continue
		}
		if in.Port == nil {
			l.add(at+".port", "sidecar: port is required for ingress listeners", sidecarAsWritten)
			continue
		}
		//nolint:staticcheck // targetPort is deprecated, and still validated.
		if in.Port.TargetPort > 0 {
			l.add(at+".port.targetPort", "targetPort has no impact on Sidecars", "istiod ignores it")
		}
		l.sidecarPort(at+".port", in.Port, false)
		if in.Bind != "" {
			if _, err := netip.ParseAddr(in.Bind); err != nil {
				l.add(at+".bind", in.Bind+" is not a valid IP", sidecarAsWritten)
			}
		}
		if ports[in.Port.Number] {
			l.add(at+".port.number", "sidecar: ports on IP bound listeners must be unique", sidecarAsWritten)
		}
		ports[in.Port.Number] = true
		if ep := in.DefaultEndpoint; ep != "" {
			l.defaultEndpoint(at+".defaultEndpoint", ep)
		}
		if t := in.Tls; t != nil {
			ta := at + ".tls"
			if len(t.SubjectAltNames) > 0 {
				l.add(ta+".subjectAltNames", "sidecar: subjectAltNames is not supported in ingress tls", sidecarAsWritten)
			}
			if t.HttpsRedirect {
				l.add(ta+".httpsRedirect", "sidecar: httpsRedirect is not supported", sidecarAsWritten)
			}
			if t.CredentialName != "" {
				l.add(ta+".credentialName", "sidecar: credentialName is not currently supported", sidecarAsWritten)
			}
			if len(t.CredentialNames) > 0 {
				l.add(ta+".credentialNames", "sidecar: credentialNames is not currently supported", sidecarAsWritten)
			}
			if len(t.TlsCertificates) > 0 {
				l.add(ta+".tlsCertificates", "sidecar: tls_certificates is not currently supported", sidecarAsWritten)
			}
			if t.Mode == networking.ServerTLSSettings_ISTIO_MUTUAL || t.Mode == networking.ServerTLSSettings_AUTO_PASSTHROUGH {
				l.add(ta+".mode", fmt.Sprintf("configuration is invalid: cannot set mode to %s in sidecar ingress tls", t.Mode), sidecarAsWritten)
			}
			if !protocolIsTLS(protocolOf(in.Port.Protocol)) {
				l.add(ta, "server cannot have TLS settings for non HTTPS/TLS ports", sidecarAsWritten)
			}
			l.serverTLS(ta, t)
		}
		l.connectionPool(at+".connectionPool", in.GetConnectionPool())
	}
	l.connectionPool("spec.inboundConnectionPool", spec.GetInboundConnectionPool())
	ports = map[uint32]bool{}
	uds := map[string]bool{}
	catchAll := false
	for i, eg := range spec.GetEgress() {
		at := fmt.Sprintf("spec.egress[%d]", i)
		if eg == nil {
			l.add(at, "egress listener may not be null", sidecarAsWritten)
			continue
		}
		if eg.Port == nil {
			if catchAll {
				l.add(at, "sidecar: egress can have only one listener with empty port", sidecarAsWritten)
				continue
			}
			if i == len(spec.GetEgress())-1 {
				catchAll = true
			} else {
				l.add(at, "sidecar: the egress listener with empty port should be the last listener in the list", sidecarAsWritten)
			}
		} else {
			//nolint:staticcheck // targetPort is deprecated, and still validated.
			if eg.Port.TargetPort > 0 {
				l.add(at+".port.targetPort", "targetPort has no impact on Sidecars", "istiod ignores it")
			}
			l.sidecarPort(at+".port", eg.Port, true)
			if eg.Port.Number == 0 {
				// validateSidecarEgressPortBindAndCaptureMode for a unix domain socket.
				if rest, ok := strings.CutPrefix(eg.Bind, "unix://"); !ok {
					l.add(at+".bind", "sidecar: ports with 0 value must have a unix domain socket bind address", sidecarAsWritten)
				} else if msg := unixAddress(rest); msg != "" {
					l.add(at+".bind", msg, sidecarAsWritten)
				}
				if eg.CaptureMode != networking.CaptureMode_DEFAULT && eg.CaptureMode != networking.CaptureMode_NONE {
					l.add(at+".captureMode", "sidecar: captureMode must be DEFAULT/NONE for unix domain socket listeners", sidecarAsWritten)
				}
				if uds[eg.Bind] {
					l.add(at+".bind", "sidecar: unix domain socket values for listeners must be unique", sidecarAsWritten)
				}
				uds[eg.Bind] = true
			} else {
				if eg.Bind != "" {
					if _, err := netip.ParseAddr(eg.Bind); err != nil {
						l.add(at+".bind", eg.Bind+" is not a valid IP", sidecarAsWritten)
					}
				}
				if ports[eg.Port.Number] {
					l.add(at+".port.number", "sidecar: ports on IP bound listeners must be unique", sidecarAsWritten)
				}
				ports[eg.Port.Number] = true
			}
		}
		if len(eg.GetHosts()) == 0 {
			l.add(at+".hosts", "sidecar: egress listener must contain at least one host", "istiod imports nothing through the listener")
			continue
		}
		for j, h := range eg.GetHosts() {
			for _, msg := range namespaceSlashHostname(h) {
				l.add(fmt.Sprintf("%s.hosts[%d]", at, j), msg, egressHostIstiod(h))
			}
		}
	}
	l.outboundTrafficPolicy("spec.outboundTrafficPolicy", spec.GetOutboundTrafficPolicy())
	return l
}

// sidecarPort checks a listener port: the name (if any) a DNS-1123 label, the protocol known,
// and, unless it is an egress unix domain socket (number 0), the number 1..65535.
func (l *list) sidecarPort(at string, p *networking.SidecarPort, egress bool) {
	if p.Name != "" && !isDNS1123Label(p.Name) {
		l.add(at+".name", "invalid port name: "+p.Name, sidecarAsWritten)
	}
	if p.Protocol != "" && protocolOf(p.Protocol) == "" {
		l.add(at+".protocol", "unsupported protocol: "+p.Protocol, "istiod reads an unknown protocol as unsupported, and treats the port as one whose protocol it detects (as for a port without protocol)")
	}
	if egress && p.Number == 0 {
		return
	}
	if msg := portNumber(int(p.Number)); msg != "" {
		l.add(at+".number", msg, sidecarAsWritten)
	}
}

// unixAddress is ValidateUnixAddress: an absolute file path, or an abstract socket (`@`).
func unixAddress(addr string) string {
	switch {
	case addr == "":
		return "unix address must not be empty"
	case strings.HasPrefix(addr, "@"):
		return ""
	case !path.IsAbs(addr) || strings.HasSuffix(addr, "/"):
		return addr + " is not an absolute path to a file"
	}
	return ""
}

// defaultEndpoint checks an ingress listener's defaultEndpoint: unix://PATH, or a loopback or
// unspecified address with a port.
func (l *list) defaultEndpoint(at, ep string) {
	if rest, ok := strings.CutPrefix(ep, "unix://"); ok {
		if msg := unixAddress(rest); msg != "" {
			l.add(at, msg, sidecarAsWritten)
		}
		return
	}
	h, p, err := net.SplitHostPort(ep)
	if err != nil {
		l.add(at, err.Error(), sidecarAsWritten)
	}
	if h != "" && h != "127.0.0.1" && h != "0.0.0.0" && h != "::1" && h != "::" {
		l.add(at, "sidecar: defaultEndpoint must be of form 127.0.0.1:<port>,0.0.0.0:<port>,[::1]:port,[::]:port,unix://filepath or unset", sidecarAsWritten)
	}
	if n, err := strconv.Atoi(p); err != nil {
		l.add(at, fmt.Sprintf("sidecar: defaultEndpoint port (%s) is not a number: %v", p, err), sidecarAsWritten)
	} else if msg := portNumber(n); msg != "" {
		l.add(at, msg, sidecarAsWritten)
	}
}

// namespaceSlashHostname is agent.ValidateNamespaceSlashWildcardHostname for a Sidecar
// (not a gateway): `namespace/dnsName`, the namespace `*`, `.` or a DNS-1123 label (optionally
// `~`-prefixed), the name an FQDN or `*` without partial wildcards. Istio reports a name that
// fails ValidateWildcardDomain twice (once for a sidecar, once for not being an IP), unless it
// is an IP address.
func namespaceSlashHostname(h string) []string {
	ns, name, ok := strings.Cut(h, "/")
	if !ok {
		return []string{"host must be of form namespace/dnsName"}
	}
	var out []string
	if ns == "" || name == "" {
		out = append(out, "config namespace and dnsName in host entry cannot be empty")
	}
	if n := strings.TrimPrefix(ns, "~"); n != "" && n != "*" && n != "." && !isDNS1123Label(n) {
		out = append(out, fmt.Sprintf("invalid namespace value %q in sidecar", ns))
	}
	if name != "*" && !strings.Contains(name, ".") {
		out = append(out, "short names (non FQDN) are not allowed")
	}
	if msg := wildcardDomain(name); msg != "" {
		out = append(out, msg)
		if _, err := netip.ParseAddr(name); err != nil {
			out = append(out, msg)
		}
	}
	if strings.Contains(name, "*") && len(name) != 1 && !strings.HasPrefix(name, "*.") {
		out = append(out, fmt.Sprintf("partial wildcard %q not allowed", name))
	}
	return out
}

// outboundTrafficPolicy is validateSidecarOutboundTrafficPolicy.
func (l *list) outboundTrafficPolicy(at string, tp *networking.OutboundTrafficPolicy) {
	if tp == nil {
		return
	}
	if meshconfig.MeshConfig_OutboundTrafficPolicy_Mode(tp.GetMode()) == meshconfig.MeshConfig_OutboundTrafficPolicy_ALLOW_ANY_DYNAMIC_DNS {
		l.add(at+".mode", "sidecar: ALLOW_ANY_DYNAMIC_DNS mode is only supported in MeshConfig, not in Sidecar resource", sidecarAsWritten)
		return
	}
	ep := tp.GetEgressProxy()
	if ep == nil {
		return
	}
	if tp.GetMode() != networking.OutboundTrafficPolicy_ALLOW_ANY {
		l.add(at+".egressProxy", "sidecar: egress_proxy must be set only with ALLOW_ANY outbound_traffic_policy mode", "istiod uses the egress proxy only with ALLOW_ANY, so it is ignored")
		return
	}
	if msg := fqdn(ep.GetHost()); msg != "" {
		l.add(at+".egressProxy.host", msg, sidecarAsWritten)
	}
	if ep.Port == nil {
		l.add(at+".egressProxy.port", "sidecar: egress_proxy port must be non-nil", sidecarAsWritten)
		return
	}
	l.destination(at+".egressProxy", ep)
}

// serverTLS is validateTLSOptions (pkg/config/validation/validation.go) without its warnings:
// ISTIO_MUTUAL without certificate fields, one certificate source, certificates and a CA
// bundle where the mode needs them, and the CRL rules.
func (l *list) serverTLS(at string, t *networking.ServerTLSSettings) {
	if t.Mode == networking.ServerTLSSettings_ISTIO_MUTUAL {
		for _, c := range []struct {
			set         bool
			field, what string
		}{
			{t.ServerCertificate != "", "serverCertificate", "server certificate"},
			{t.PrivateKey != "", "privateKey", "private key"},
			{t.CaCertificates != "", "caCertificates", "CA bundle"},
			{len(t.TlsCertificates) > 0, "tlsCertificates", "tlsCertificates"},
			{t.CredentialName != "", "credentialName", "credentialName"},
			{len(t.CredentialNames) > 0, "credentialNames", "credentialNames"},
		} {
			if c.set {
				l.add(at+"."+c.field, "ISTIO_MUTUAL TLS cannot have associated "+c.what, sidecarAsWritten)
			}
		}
		return
	}
	sources := 0
	for _, b := range []bool{t.ServerCertificate != "" && t.PrivateKey != "", t.CredentialName != "", len(t.CredentialNames) > 0, len(t.TlsCertificates) > 0} {
		if b {
			sources++
		}
	}
	if sources > 1 {
		l.add(at, "only one of credential_name, credential_names, server_certificate/private_key, tls_certificates should be specified", sidecarAsWritten)
	}
	simple := t.Mode == networking.ServerTLSSettings_SIMPLE
	mutual := t.Mode == networking.ServerTLSSettings_MUTUAL || t.Mode == networking.ServerTLSSettings_OPTIONAL_MUTUAL
	if (simple || mutual) && (t.CredentialName != "" || len(t.CredentialNames) > 0) {
		return
	}
	if simple || mutual {
		prefix := "SIMPLE TLS"
		if mutual {
			prefix = "MUTUAL TLS"
			if t.CaCertificates == "" {
				l.add(at+".caCertificates", prefix+" requires a client CA bundle", sidecarAsWritten)
			}
		}
		certs := t.TlsCertificates
		if len(certs) == 0 {
			certs = []*networking.ServerTLSSettings_TLSCertificate{{ServerCertificate: t.ServerCertificate, PrivateKey: t.PrivateKey}}
		}
		for _, c := range certs {
			if c.GetServerCertificate() == "" {
				l.add(at+".serverCertificate", prefix+" requires a server certificate", sidecarAsWritten)
			}
			if c.GetPrivateKey() == "" {
				l.add(at+".privateKey", prefix+" requires a private key", sidecarAsWritten)
			}
		}
	}
	if t.CaCrl != "" {
		if t.CredentialName != "" {
			l.add(at+".caCrl", "CRL is not supported with credentialName. CRL has to be specified in the credential", sidecarAsWritten)
		}
		if simple {
			l.add(at+".caCrl", "CRL is not supported with SIMPLE TLS", sidecarAsWritten)
		}
	}
}
