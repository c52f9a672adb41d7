// Package source is the one loader every command uses: it reads Kubernetes and Istio objects
// from files (-f FILE|DIR|-, with the file:line:col of every document and field) or from a live
// cluster (kubeconfig through cli-runtime, list and get only), optionally lays files over the
// cluster (--overlay), and computes the effective MeshConfig the way istiod does. The result is a
// model.Snapshot; the engines never parse flags or talk to clusters.
//
// It owns: Spec and Read, file and stream decoding (strict, with located errors), the
// FieldLocator over YAML nodes, live reads (paging, bounded concurrency, forbidden and
// missing-CRD degradation, kubectl-style connection errors), DefaultMeshConfig and
// ParseMeshConfig.
// It may import: model, provenance; client-go, istio client-go, cli-runtime, istio.io/api,
// k8s.io/api and apimachinery, YAML and JSON libraries. It must not import cli, render, index,
// engines, cobra or lipgloss, and it knows nothing about what is computed from its output.
//
// Reference: istio.io/istio pkg/config/mesh (DefaultMeshConfig, ApplyMeshConfig),
// pkg/config/mesh/kubemesh (the mesh ConfigMap), pilot/pkg/bootstrap/mesh.go (its name per
// revision); k8s.io/apimachinery pkg/util/yaml (how kubectl splits YAML streams).
package source
