// Package source is the one loader every command uses: it reads Kubernetes and Istio objects
// from files (-f FILE|DIR|-, with the file:line:col of every document and field) or from a live
// cluster (kubeconfig through cli-runtime, list and get only), optionally lays files over the
// cluster (--overlay), and computes the effective MeshConfig the way istiod does. The result is a
// model.Snapshot; the engines never parse flags or talk to clusters.
//
// It owns: Spec and Read, file and stream decoding (strict, with located errors), the
// FieldLocator over YAML nodes, live reads (paging, bounded concurrency; a read that fails on
// its own, forbidden, throttled, failing, slow, cut off or too large, leaves its kind
// incomplete with a warning in words; the bounds of each request in live_guard.go; Istio kinds
// read at the version the cluster serves; kubectl-style connection errors), DefaultMeshConfig
// and ParseMeshConfig.
// It may import: model, provenance; client-go, istio client-go, cli-runtime, istio.io/api,
// k8s.io/api and apimachinery, YAML and JSON libraries. It must not import cli, render, index,
// engines, cobra or lipgloss, and it knows nothing about what is computed from its output.
//
// Files: a header scan skips the documents a read does not need before they are parsed; a
// document in the block style generators write is turned into JSON by blockToJSON (the JSON
// sigs.k8s.io/yaml gives, about five times faster), any other by sigs.k8s.io/yaml; and the
// position tree of a document is built only when a position is asked for. Live: the reads
// run concurrently; each listed object is decoded once as the response streams in (Pods and
// Services from protobuf, item by item, without managedFields and without the Pod fields
// nothing reads; the pages of Istio's kinds with json-iterator); Istio specs go through
// protojson where it decodes them as the legacy jsonpb decoder does, else through jsonpb;
// VirtualServices, and the DestinationRules that cannot apply to the host explained, are
// decoded only in the fields that are read of them (Spec.DestinationRuleInFull,
// Spec.VirtualServiceNeeded). Bad objects and refused reads become load issues, not failures.
//
// Reference: istio.io/istio pkg/config/mesh (DefaultMeshConfig, ApplyMeshConfig),
// pkg/config/mesh/kubemesh (the mesh ConfigMap), pilot/pkg/bootstrap/mesh.go (its name per
// revision); k8s.io/apimachinery pkg/util/yaml (how kubectl splits YAML streams).
package source
