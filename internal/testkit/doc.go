// Package testkit is the scaffolding the tests of this module share: a Snapshot builder for
// hand-made objects, the module root, and the scenario folders of testdata/scenarios.
//
// It owns: Snapshot and Add (objects into a model.Snapshot), RepoRoot, ScenarioDirs, ReadArgs
// and ScenarioArgs.
// It may import: model and the API types; never an engine, index, source, render or cli, so
// that the tests of every package can use it. Only tests, benchmarks and hack/ import it.
//
// Its subpackage meshgen is the seeded synthetic mesh of the benchmarks. It loads its files as
// `-f` does and drives the cluster engine (source, index, envoycluster), so only external test
// packages (package X_test), hack/meshgen and the conformance module import it.
//
// Its subpackage scenariogen generates the small seeded scenarios (a host, an ambient pod, a
// pod with a sidecar, a waypoint) that the conformance module compares with Istio, and edits
// them from a fuzzer's bytes for the engines' fuzz target (pkg/check). It imports only YAML.
//
// It lives at the module root, not under pkg/internal, so that hack/meshgen and the
// conformance module can import meshgen and scenariogen too.
package testkit
