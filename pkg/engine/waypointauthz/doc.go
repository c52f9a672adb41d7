// Package waypointauthz reproduces what istiod sends an ambient waypoint (a Gateway of class
// istio-waypoint) that decides who gets through it: which Services, ServiceEntries and
// workloads the waypoint serves and why (the istio.io/use-waypoint labels), the filter chains
// of its main_internal listener (one or two per bound service port, then direct-tcp and
// direct-http), and the RBAC and ext_authz filters of every chain, built by envoyrbac with the
// waypoint option (peer identities matched in filter state), every permission and principal
// traced to the AuthorizationPolicy field and the targetRef that attached it.
//
// It owns: waypoint binding (pilot/pkg/serviceregistry/ambient waypoints.go
// fetchWaypointForService, fetchWaypointForWorkload, GetUseWaypoint, makeAllowedRoutes),
// the waypoint's services and chains (pilot/pkg/networking/core waypoint.go
// findWaypointResources, listener_waypoint.go buildWaypointInternal), AuthorizationPolicy
// attachment to a waypoint (pilot/pkg/model policyattachment.go ShouldAttachPolicy with
// IsWaypoint, authorization.go ListAuthorizationPolicies).
// It may import: envoyrbac, index, model, explain, explain/diag, provenance, internal/parallel;
// go-control-plane, Istio and Gateway API types. It must not import cli, render, source,
// cobra, lipgloss or client-go clients.
//
// Emulated version: istio.io/istio v0.0.0-20260827124520-eed52ebb66ad with istiod's default
// feature flags (AMBIENT_ENABLE_MULTI_NETWORK off: no set_dst_address filters, no east-west
// gateway chains).
package waypointauthz
