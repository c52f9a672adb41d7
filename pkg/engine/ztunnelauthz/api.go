// Package ztunnelauthz reproduces how istiod turns PeerAuthentication and AuthorizationPolicy
// into the ztunnel Authorization resources of an ambient workload, and records where every
// group, rule and match came from.
//
// It owns: ambient capture, the effective PeerAuthentication chain, PeerAuthentication and
// AuthorizationPolicy conversion, the workload's policy key list, and the authz diagnostics.
// It may import: model, explain, provenance; engine/waypointauthz (which waypoints istiod binds
// in front of the workload, and their identity); istio.io/api and istio.io/client-go API types;
// k8s.io/api and k8s.io/apimachinery types; sigs.k8s.io/yaml.
// It must not import cli, render, source, cobra, lipgloss or client-go clients.
// The rules it follows: docs/semantics/authz.md, with the file and function of istio.io/istio
// (the version conformance/go.mod pins) behind each; where they differ, Istio's code wins.
//
// Entry points: Explain (one Result per pod; the objects of the workload's key list are marked
// Listed, in order, and render's -o ztunnel prints them), and the
// conversions ConvertAuthorizationPolicy and ConvertPeerAuthentication, which the conformance
// module drives like Istio's TestRBACConvert.
//
// Emulated version: istio.io/istio v0.0.0-20260827124520-eed52ebb66ad with istiod's default
// feature flags (AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY off,
// PILOT_AUTO_ALLOW_WAYPOINT_POLICY off, AMBIENT_ENABLE_STATUS on). In that version DENY
// policies with HTTP attributes still get the single "more restrictive" status text.
package ztunnelauthz

// WorkloadRef names the workload(s) to explain.
type WorkloadRef struct {
	// Kind is "pod", "deployment" or "service" (a deployment or a service resolves to the pods
	// its selector matches).
	Kind string
	Name string
}

// Query is one `authz` question.
type Query struct {
	// Namespace is `-n`.
	Namespace string
	// Workload is `pod/NAME`, `deployment/NAME` or `service/NAME`; empty when Selector is used.
	Workload WorkloadRef
	// Selector is a label selector (`-l app=a`) resolved to the pods of Namespace.
	Selector string
	// Revision is the istiod revision whose view is explained (`--revision`). istiod watches
	// only the policies without an `istio.io/rev` label or with this revision
	// (ambientindex.go inRevision); empty means an istiod without revision, which sees all.
	Revision string
}
