// Package check finds every diagnostic the per-host (`cluster`) and per-workload (`authz`)
// answers report over a scope: every host, with every port and subset, as seen from every
// client (a sidecar or a gateway's proxy) that sees it differently, and every workload (the
// ztunnel answer for an ambient pod, the sidecar answer for a pod with a sidecar); one finding
// per cause, listing the hosts, clients and workloads it affects, located at the field to
// change.
//
// It owns: client classes (the client proxies that must get the same findings), the host and
// workload loops, deduplication, silencing (--ignore, the mesh-explain.io/ignore annotation),
// the file position of the field to change, and the --diff of two reports.
// It may import: engine/envoycluster, engine/ztunnelauthz, engine/sidecarauthz, index, model,
// explain, provenance.
// It must not import cli, render, source, cobra, lipgloss or client-go.
package check
