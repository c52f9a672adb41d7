// Package sidecarauthz reproduces the part of istiod's inbound listener for a sidecar
// (`virtualInbound`) that decides who gets in: per port, the filter chains istiod builds from
// the effective PeerAuthentication (TLS only for STRICT, TLS and plaintext for PERMISSIVE,
// plaintext for DISABLE), the catch-all chains, the TLS context from MeshConfig meshMTLS, and
// the RBAC and ext_authz filters of every chain (built by envoyrbac), with the origin of every
// field, the diagnostics and a plain reading per port.
//
// It owns: the pod's service targets (pilot/pkg/serviceregistry/kube/controller
// GetProxyServiceTargetsByPod), the sidecar's PeerAuthentication composition
// (pilot/pkg/security/authn ComposePeerAuthentication), the inbound chain options
// (pilot/pkg/networking/core listener_inbound.go, filterchain_options.go), the downstream TLS
// context (pilot/pkg/security/authn/utils BuildInboundTLS), AuthorizationPolicy selection for a
// sidecar (pilot/pkg/model policyattachment.go, authorization.go).
// It may import: envoyrbac, model, explain, provenance; go-control-plane and Istio API types.
// It must not import cli, render, source, cobra, lipgloss or client-go clients.
//
// Emulated version: istio.io/istio v0.0.0-20260827124520-eed52ebb66ad with istiod's default
// feature flags (PILOT_ENABLE_METADATA_EXCHANGE on, PILOT_DISABLE_MX_ALPN off, PILOT_HTTP10
// off), a sidecar with iptables redirection (REDIRECT) and no Sidecar ingress listeners.
package sidecarauthz
