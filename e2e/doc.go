// Package e2e is the end-to-end suite: it builds the plugin, starts a real etcd and
// kube-apiserver with hack/kube-env.sh, installs Istio's CRDs, and runs `kubectl mesh-explain`
// through the real kubectl (so plugin discovery is part of what is tested).
//
// The suite runs only when MESH_EXPLAIN_E2E=1 (`make test` sets it); otherwise TestMain prints
// one line and runs nothing, so `go test ./...` stays fast and needs no apiserver.
//
// What it checks:
//   - every scenario under testdata/scenarios/{cluster,authz,sidecar} gives the same answer live as
//     offline (`-o envoy|ztunnel` byte for byte, `-o envoy` for a sidecar pod, `-o json` after normaliseJSON);
//   - `--overlay -f` explains the changed state without modifying the cluster;
//   - the ClusterRole documented in docs/rbac.md is enough, and the plugin's user only reads;
//   - missing permissions, missing CRDs, unreachable servers and bad credentials degrade as
//     documented;
//   - a cluster with 2,000 DestinationRules and 1,000 Services still answers correctly.
//
// Environment: MESH_EXPLAIN_E2E=1 enables the suite; MESH_EXPLAIN_E2E_KEEP=1 keeps the work
// directory (kubeconfigs, logs, audit log) after the run; MESH_EXPLAIN_E2E_PLUGIN tests a
// prebuilt plugin binary instead of building the work tree; KUBECTL overrides the kubectl binary.
package e2e
