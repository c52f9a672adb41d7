// Package explaintest holds test helpers shared by the engines' tests: checks that an
// explain.Result accounts for every field it generates.
//
// It owns: RequireEveryFieldTraced and the protobuf leaf walker behind it.
// It may import: explain, provenance, protobuf. Only tests import it.
package explaintest
