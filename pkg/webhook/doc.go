// Package webhook reproduces the checks of Istio's admission validation (the
// `validation.istio.io` webhook), so that a value the webhook would reject is reported even
// when the object never went through it (files, or a cluster where validation is off). Each
// check returns the exact error text of Istio's validation, the field it is about, and what
// istiod does with the value when the object reaches it anyway. docs/diagnostics.md (D33, A25,
// S18) lists what is checked, and docs/reliability.md what is not.
//
// It owns: Problem, DestinationRule, ServiceEntry, WorkloadEntry, VirtualService, Sidecar,
// AuthorizationPolicy, PeerAuthentication, RequestAuthentication, EnvoyFilter.
// It may import: explain, explain/diag, provenance, istio.io/api types, Envoy's types and the
// JSON decoder Istio decodes EnvoyFilter patches with (github.com/golang/protobuf/jsonpb), and
// the JWK library Istio's validation parses inline JWKS with (github.com/lestrrat-go/jwx/jwk).
//
// The Istio functions it reproduces, in istio/istio pkg/config/validation/validation.go:
// validateMetadata, ValidateDestinationRule (validateTrafficPolicy, validateConnectionPool,
// validateOutlierDetection, validateLoadBalancer, validatePortTrafficPolicies,
// validateTunnelSettings, validateProxyProtocol, validateSubset, validateExportTo,
// validateWorkloadSelector), ValidateServiceEntry and ValidateWorkloadEntry (validateWorkloadEntry),
// ValidateVirtualService (virtualservice.go), ValidateSidecar (with validateTLSOptions),
// ValidateAuthorizationPolicy, ValidatePeerAuthentication and
// ValidateRequestAuthentication; in pkg/config/validation/envoyfilter/envoyfilter.go:
// ValidateEnvoyFilter (its errors; pkg/config/xds BuildXDSObjectFromStruct for the patch value); in
// pkg/config/validation/agent/validation.go: ValidateDuration, ValidateTLS,
// ValidateWildcardDomain, ValidateFQDN, ValidateIPSubnet, ValidateLocalityLbSetting,
// ValidateZoneAwareLbSetting and ValidateNamespaceSlashWildcardHostname; in
// pkg/config/labels/instance.go: Instance.Validate; in pkg/config/security/security.go:
// ValidatePorts, ValidateIPs, CheckEmptyValues, CheckServiceAccount, CheckTrustDomainValues,
// CheckValidPathTemplate, ValidateAttribute, ParseJwksURI. The conformance module runs Istio's
// validation on every scenario and on the case objects of testdata/cases, and requires the
// same errors.
package webhook
