// Package render prints an explain.Result: the human table (-o table, -o wide), the Result
// document itself (-o json, -o yaml), and the raw Envoy Clusters (-o envoy). Renderers contain
// no Istio rules; every fact they show is in the Result.
//
// It owns: Printer, For, Options, ColorMode, the table layout (layout.go: column widths that
// fit the terminal, cell wrapping, the rows laid out with each cell's escape codes), and every
// style (theme.go is the only place that builds lipgloss styles).
// It may import: explain, provenance; lipgloss, termenv, sigs.k8s.io/yaml, protobuf, and the
// go-control-plane packages whose types appear inside Clusters as Any (so protojson can print
// them). It must not import engine, index, source, model or cli; formats that need an engine
// (the CLI's -o ztunnel) are passed in through Options.Extra.
package render
