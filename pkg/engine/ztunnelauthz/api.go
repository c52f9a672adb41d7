// Package ztunnelauthz reproduces how istiod turns PeerAuthentication and AuthorizationPolicy
// into the ztunnel Authorization resources of an ambient workload, and records where every
// group, rule and match came from.
//
// It owns: ambient capture, the effective PeerAuthentication chain, PeerAuthentication and
// AuthorizationPolicy conversion, the workload's policy key list, and the authz diagnostics.
// It may import: model, explain, provenance, istio.io/api types.
// It must not import cli, render, source, cobra, lipgloss or client-go.
// Reference: shared/spec/authz.md; the code of istio.io/istio (the version conformance/ pins) wins.
package ztunnelauthz

// WorkloadRef names the workload(s) to explain.
type WorkloadRef struct {
	// Kind is "pod" or "deployment" (a deployment resolves to the pods its selector matches).
	Kind string
	Name string
}

// Query is one `authz` question.
type Query struct {
	// Namespace is `-n`.
	Namespace string
	// Workload is `pod/NAME` or `deployment/NAME`; empty when Selector is used.
	Workload WorkloadRef
	// Selector is a label selector (`-l app=a`) resolved to the pods of Namespace.
	Selector string
}
