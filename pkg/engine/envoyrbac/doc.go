// Package envoyrbac reproduces istiod's AuthorizationPolicy → Envoy RBAC builder: the HTTP and
// network RBAC filters (ALLOW, DENY, AUDIT, dry-run policies as shadow rules) and, for CUSTOM
// policies, the shadow RBAC filter and ext_authz filter of each provider, with the origin of
// every permission and principal. The sidecar inbound listener (sidecarauthz) uses it today; a
// waypoint's listener gets its filters from the same builder.
//
// It owns: the rule model (pilot/pkg/security/authz/model), the builder
// (pilot/pkg/security/authz/builder builder.go and extauthz.go), the matchers
// (pilot/pkg/security/authz/matcher) and the trust-domain alias rewriting
// (pilot/pkg/security/trustdomain).
// It may import: explain, provenance; go-control-plane, istio.io/api and istio.io/client-go API
// types. It must not import cli, render, source, cobra, lipgloss or client-go clients.
//
// Emulated version: istio.io/istio v0.0.0-20260827124520-eed52ebb66ad with istiod's default
// feature flags (PILOT_ENABLE_MULTIPLE_CUSTOM_AUTHZ_PROVIDERS off,
// PILOT_SKIP_VALIDATE_TRUST_DOMAIN off).
package envoyrbac
