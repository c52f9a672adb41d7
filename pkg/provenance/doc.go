// Package provenance is the vocabulary of origins: which resource, layer and field a value came
// from, where that resource was read, and what it shadowed.
//
// The vocabulary is plain data, in origin.go: Ref, Position, Layer, Origin, Shadow, FieldTrace
// (documented for users in docs/origins.md). Beside it sits the machinery engines use to collect
// it: the Recorder (recorder.go), which logs a value's origin as the value is written, and the
// traces kept against templates (shared.go: Templates, SharedTraces), which let the many similar
// objects of a mesh share the bulk of their traces.
//
// It may import: the standard library only. Every other package may import it.
package provenance
