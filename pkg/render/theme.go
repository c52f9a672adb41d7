package render

import (
	"io"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// Theme holds every named style of the table output. It is the only place styles are built.
//
// Colours are the 16 basic ANSI colours, so the escape codes are the same on every colour
// terminal (and the ANSI golden file is stable).
type Theme struct {
	// Title is the first line of a result (the subject) and of each object.
	Title lipgloss.Style
	// Heading is a block title: a section's, DIAGNOSTICS, WARNINGS.
	Heading lipgloss.Style
	// Label is a summary line's name.
	Label lipgloss.Style
	// Header is a table's column header cell.
	Header CellStyle
	// Cell is a plain table cell.
	Cell CellStyle
	// Field is an output path.
	Field CellStyle
	// Value is a value istiod sends.
	Value CellStyle
	// NotSent is a value istiod leaves to Envoy's default.
	NotSent CellStyle
	// Shadowed is what a value overrode or what was dropped.
	Shadowed CellStyle
	// Missing marks an object that is referenced but not generated.
	Missing lipgloss.Style
	// Warning is a warning line.
	Warning lipgloss.Style

	origin   map[provenance.Layer]CellStyle
	severity map[explain.Severity]CellStyle
	// cells, when set, shares the wrapping of cell texts between the tables laid out with
	// this theme (cellCache).
	cells *cellCache
}

// cellPadding is the gap between table columns, on top of the one-space column separator.
const cellPadding = 2

// CellStyle is how the table layout draws a cell: the escape codes a lipgloss style writes
// around each line of text it styles (none with colour off). The layout pads a cell with
// plain spaces, as lipgloss pads a style without a background.
type CellStyle struct {
	open, close string
}

// cellStyleOf takes a style's escape codes from lipgloss: what it writes around one letter.
func cellStyleOf(s lipgloss.Style) CellStyle {
	open, close, _ := strings.Cut(s.Render("x"), "x")
	return CellStyle{open: open, close: close}
}

// NewTheme builds the theme for w. With colour off the renderer is forced to the ASCII
// profile, so no escape code is written whatever w is; with colour on it is forced to the
// 16-colour profile.
func NewTheme(w io.Writer, color bool) Theme {
	r := lipgloss.NewRenderer(w)
	if color {
		r.SetColorProfile(termenv.ANSI)
	} else {
		r.SetColorProfile(termenv.Ascii)
	}
	fg := func(c string) lipgloss.Style { return r.NewStyle().Foreground(lipgloss.Color(c)) }
	bold := func(s lipgloss.Style) lipgloss.Style { return s.Bold(true) }
	faint := r.NewStyle().Faint(true)
	const (
		red     = "1"
		green   = "2"
		yellow  = "3"
		blue    = "4"
		magenta = "5"
		cyan    = "6"
	)
	plain := r.NewStyle()
	c := cellStyleOf
	t := Theme{
		Title:    bold(r.NewStyle()),
		Heading:  bold(r.NewStyle()),
		Label:    faint,
		Header:   c(bold(r.NewStyle())),
		Cell:     c(plain),
		Field:    c(plain),
		Value:    c(bold(r.NewStyle())),
		NotSent:  c(faint),
		Shadowed: c(faint),
		Missing:  bold(fg(red)),
		Warning:  fg(yellow),
	}
	origin := map[provenance.Layer]lipgloss.Style{
		provenance.LayerRegistry:                 fg(cyan),
		provenance.LayerProxy:                    fg(cyan),
		provenance.LayerMeshConfig:               fg(blue),
		provenance.LayerMeshDefaultTrafficPolicy: fg(blue),
		provenance.LayerDestinationRule:          fg(green),
		provenance.LayerPortLevel:                fg(green),
		provenance.LayerSubset:                   fg(green),
		provenance.LayerSubsetPortLevel:          fg(green),
		provenance.LayerPeerAuthentication:       fg(green),
		provenance.LayerAuthorizationPolicy:      fg(green),
		provenance.LayerSidecar:                  fg(yellow),
		provenance.LayerAutoMTLS:                 fg(magenta),
		provenance.LayerStaticPolicy:             fg(magenta),
		provenance.LayerIstioDefault:             plain,
		provenance.LayerIstiodFlag:               plain,
		provenance.LayerEnvoyDefault:             faint,
	}
	severity := map[explain.Severity]lipgloss.Style{
		explain.SeverityError:   bold(fg(red)),
		explain.SeverityWarning: bold(fg(yellow)),
		explain.SeverityInfo:    fg(blue),
	}
	t.origin = make(map[provenance.Layer]CellStyle, len(origin))
	for l, s := range origin {
		t.origin[l] = c(s)
	}
	t.severity = make(map[explain.Severity]CellStyle, len(severity))
	for l, s := range severity {
		t.severity[l] = c(s)
	}
	return t
}

// Origin is the style of an ORIGIN cell for a layer.
func (t Theme) Origin(l provenance.Layer) CellStyle {
	if s, ok := t.origin[l]; ok {
		return s
	}
	return t.Cell
}

// Severity is the style of a diagnostic's severity cell.
func (t Theme) Severity(s explain.Severity) CellStyle {
	if st, ok := t.severity[s]; ok {
		return st
	}
	return t.Cell
}

// renderLines styles each line of text on its own: lipgloss pads a multi-line block to its
// widest line, which would leave trailing spaces on wrapped titles.
func renderLines(s lipgloss.Style, text string) string {
	if !strings.Contains(text, "\n") {
		return s.Render(text)
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = s.Render(l)
	}
	return strings.Join(lines, "\n")
}
