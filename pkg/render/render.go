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
	FormatTable   = "table"
	FormatWide    = "wide"
	FormatJSON    = "json"
	FormatYAML    = "yaml"
	FormatEnvoy   = "envoy"
	FormatZtunnel = "ztunnel"
)

// formats is every -o value, in the order errors list them, with the constructor of its
// printer. A new format is one file with its printer and one line here.
var formats = []struct {
	name    string
	printer func(o Options) Printer
}{
	{FormatTable, func(o Options) Printer { return &tablePrinter{opts: o} }},
	{FormatWide, func(o Options) Printer { return &tablePrinter{opts: o, wide: true} }},
	{FormatJSON, func(Options) Printer { return dataPrinter{yaml: false} }},
	{FormatYAML, func(Options) Printer { return dataPrinter{yaml: true} }},
	{FormatEnvoy, func(Options) Printer { return envoyPrinter{} }},
	{FormatZtunnel, func(Options) Printer { return ztunnelPrinter{} }},
}

// PrintsMessages says whether the -o value format prints the generated protos
// (explain.Object.Message): every format but the tables, which print origins and summaries.
// An engine asked for no protos leaves Message empty (waypointauthz.Query.Protos).
func PrintsMessages(format string) bool {
	return format != FormatTable && format != FormatWide
}

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
	// ShowDefaults lists, in the table, the fields left at Istio's or Envoy's defaults (wide
	// always lists them); otherwise they are counted in one line per object.
	ShowDefaults bool
	// Formats restricts For to these formats (a command's -o values), in the order they are
	// listed in errors; nil allows every format.
	Formats []string
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

// allowed returns the formats For accepts with o, in a stable order.
func (o Options) allowed() []string {
	if o.Formats != nil {
		return o.Formats
	}
	all := make([]string, len(formats))
	for i, f := range formats {
		all[i] = f.name
	}
	return all
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
	allowed := o.allowed()
	if slices.Contains(allowed, format) {
		for _, f := range formats {
			if f.name == format {
				return f.printer(o), nil
			}
		}
	}
	return nil, &UnknownFormatError{Format: format, Allowed: allowed}
}
