// Package render prints an explain.Result: the human table (-o table, -o wide), the Result
// document itself (-o json, -o yaml), the raw Envoy Clusters (-o envoy) and what ztunnel is
// sent (-o ztunnel); and the check report (ForCheck: table, wide, json, yaml, sarif).
// Renderers contain no Istio rules; every fact they show is in the Result or the report, as
// data (an object's Message, Value, Listed, Missing), never parsed back from display text.
//
// Every -o value is a line of the formats table (render.go) naming its printer; each printer
// that is not the table or the document has its own file (envoy.go, ztunnel.go, check.go,
// sarif.go).
//
// It owns: Printer, For, Options, ColorMode, the table layout (layout.go: column widths that
// fit the terminal, cell wrapping, the rows laid out with each cell's escape codes), and every
// style (theme.go is the only place that builds lipgloss styles). The layout is ours, not
// lipgloss's table, which styled, wrapped and measured every cell again; its output is byte for
// byte what lipgloss's table writes for the same cells (TestLayoutMatchesLipglossTable).
// It may import: explain, provenance; lipgloss, termenv, sigs.k8s.io/yaml, protobuf, and the
// go-control-plane packages whose types appear inside Clusters as Any (so protojson can print
// them); go-sarif for -o sarif. It must not import engine, index, source, model, check or cli.
package render
