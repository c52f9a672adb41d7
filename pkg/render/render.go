package render

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
)

// Printer writes explanations to w.
type Printer interface {
	// Print writes one Result.
	Print(w io.Writer, r *explain.Result) error
	// PrintList writes the Results of a command that explains several subjects at once
	// (authz -l): one after another for humans, a `kind: List` document for json and yaml.
	PrintList(w io.Writer, rs []*explain.Result) error
}

// WriteFunc writes one Result in a caller-defined format.
type WriteFunc func(w io.Writer, r *explain.Result) error

// ColorMode is the --color setting.
type ColorMode string

// Colour modes.
const (
	// ColorAuto colours a terminal unless NO_COLOR is set.
	ColorAuto ColorMode = "auto"
	// ColorAlways colours even a pipe (and ignores NO_COLOR).
	ColorAlways ColorMode = "always"
	// ColorNever never colours.
	ColorNever ColorMode = "never"
)

// ColorModes lists the accepted --color values.
var ColorModes = []string{string(ColorAuto), string(ColorAlways), string(ColorNever)}

// ParseColorMode parses a --color value.
func ParseColorMode(s string) (ColorMode, error) {
	switch m := ColorMode(s); m {
	case ColorAuto, ColorAlways, ColorNever:
		return m, nil
	case "":
		return ColorAuto, nil
	}
	return "", fmt.Errorf("invalid color mode %q (allowed: %s)", s, strings.Join(ColorModes, ", "))
}

// Built-in formats.
const (
	FormatTable = "table"
	FormatWide  = "wide"
	FormatJSON  = "json"
	FormatYAML  = "yaml"
	FormatEnvoy = "envoy"
)

// DefaultWidth is the table width when the output is not a terminal.
const DefaultWidth = 120

// Options configure a Printer.
type Options struct {
	// Color is the --color mode.
	Color ColorMode
	// TTY is true when the output is a terminal (decides colour in auto mode, never content).
	TTY bool
	// NoColor is true when the NO_COLOR environment variable is set and not empty.
	NoColor bool
	// Width is the widest a table may be; 0 means DefaultWidth.
	Width int
	// Formats restricts For to these formats, in the order they are listed in errors; nil
	// allows every built-in format and every Extra one.
	Formats []string
	// Extra are formats the caller implements (the CLI passes ztunnel's writer for -o ztunnel).
	Extra map[string]WriteFunc
}

// ColorOn reports whether output is coloured: --color=always, or a terminal with
// --color=auto and no NO_COLOR.
func (o Options) ColorOn() bool {
	switch o.Color {
	case ColorAlways:
		return true
	case ColorNever:
		return false
	default:
		return o.TTY && !o.NoColor
	}
}

func (o Options) width() int {
	if o.Width <= 0 {
		return DefaultWidth
	}
	return o.Width
}

// formats returns the formats For accepts with o, in a stable order.
func (o Options) formats() []string {
	if o.Formats != nil {
		return o.Formats
	}
	all := []string{FormatTable, FormatWide, FormatJSON, FormatYAML, FormatEnvoy}
	var extra []string
	for name := range o.Extra {
		extra = append(extra, name)
	}
	slices.Sort(extra)
	return append(all, extra...)
}

// UnknownFormatError is returned by For for a format it does not know.
type UnknownFormatError struct {
	Format  string
	Allowed []string
}

// Error names the format and lists the allowed ones.
func (e *UnknownFormatError) Error() string {
	return fmt.Sprintf("unknown output format %q (allowed formats: %s)", e.Format, strings.Join(e.Allowed, ", "))
}

// For returns the Printer for an -o value.
func For(format string, o Options) (Printer, error) {
	allowed := o.formats()
	if !slices.Contains(allowed, format) {
		return nil, &UnknownFormatError{Format: format, Allowed: allowed}
	}
	if fn, ok := o.Extra[format]; ok {
		return funcPrinter(fn), nil
	}
	switch format {
	case FormatTable:
		return &tablePrinter{opts: o}, nil
	case FormatWide:
		return &tablePrinter{opts: o, wide: true}, nil
	case FormatJSON:
		return dataPrinter{yaml: false}, nil
	case FormatYAML:
		return dataPrinter{yaml: true}, nil
	case FormatEnvoy:
		return envoyPrinter{}, nil
	}
	return nil, &UnknownFormatError{Format: format, Allowed: allowed}
}

// funcPrinter adapts a WriteFunc. Several Results become one YAML stream: their outputs in
// order, `---` between two non-empty ones, nothing for an empty one (the form the conformance
// runner produces from Istio's output for a multi-pod query).
type funcPrinter WriteFunc

func (f funcPrinter) Print(w io.Writer, r *explain.Result) error { return f(w, r) }

func (f funcPrinter) PrintList(w io.Writer, rs []*explain.Result) error {
	var parts []string
	for _, r := range rs {
		var b strings.Builder
		if err := f(&b, r); err != nil {
			return err
		}
		if b.Len() > 0 {
			parts = append(parts, b.String())
		}
	}
	_, err := io.WriteString(w, strings.Join(parts, "---\n"))
	return err
}
