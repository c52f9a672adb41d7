// Package testkit is the scaffolding the tests of this module share: a Snapshot builder for
// hand-made objects, the module root, and the scenario folders of testdata/scenarios.
//
// It owns: Snapshot (objects into a model.Snapshot), RepoRoot, ScenarioDirs, ScenarioArgs.
// The generated mesh of the benchmarks is its subpackage meshgen.
// It may import: model and the API types; never an engine, index, source, render or cli
// (so that every package's tests can use it). Only tests, benchmarks and hack/ import it.
//
// It lives at the module root, not under pkg/internal, so that hack/meshgen and the
// conformance module can import meshgen too.
package testkit
