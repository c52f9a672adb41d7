package render

import (
	"io"

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
	Header lipgloss.Style
	// Cell is a plain table cell.
	Cell lipgloss.Style
	// Field is an output path.
	Field lipgloss.Style
	// Value is a value istiod sends.
	Value lipgloss.Style
	// NotSent is a value istiod leaves to Envoy's default.
	NotSent lipgloss.Style
	// Shadowed is what a value overrode or what was dropped.
	Shadowed lipgloss.Style
	// Missing marks an object that is referenced but not generated.
	Missing lipgloss.Style
	// Border draws table borders (hidden borders: spacing only).
	Border lipgloss.Style
	// Warning is a warning line.
	Warning lipgloss.Style

	origin   map[provenance.Layer]lipgloss.Style
	severity map[explain.Severity]lipgloss.Style
}

// cellPadding is the gap between table columns, on top of the one-space hidden border.
const cellPadding = 2

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
	if !color {
		// Without colour the attributes write nothing; leaving them out spares lipgloss
		// styling every line of every cell for nothing.
		fg = func(string) lipgloss.Style { return r.NewStyle() }
		bold = func(s lipgloss.Style) lipgloss.Style { return s }
		faint = r.NewStyle()
	}
	const (
		red     = "1"
		green   = "2"
		yellow  = "3"
		blue    = "4"
		magenta = "5"
		cyan    = "6"
	)
	plain := r.NewStyle()
	t := Theme{
		Title:    bold(r.NewStyle()),
		Heading:  bold(r.NewStyle()),
		Label:    faint,
		Header:   bold(r.NewStyle()).PaddingRight(cellPadding),
		Cell:     plain.PaddingRight(cellPadding),
		Field:    plain.PaddingRight(cellPadding),
		Value:    bold(r.NewStyle()).PaddingRight(cellPadding),
		NotSent:  faint.PaddingRight(cellPadding),
		Shadowed: faint.PaddingRight(cellPadding),
		Missing:  bold(fg(red)),
		Border:   plain,
		Warning:  fg(yellow),
		origin: map[provenance.Layer]lipgloss.Style{
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
		},
		severity: map[explain.Severity]lipgloss.Style{
			explain.SeverityError:   bold(fg(red)),
			explain.SeverityWarning: bold(fg(yellow)),
			explain.SeverityInfo:    fg(blue),
		},
	}
	for l, s := range t.origin {
		t.origin[l] = s.PaddingRight(cellPadding)
	}
	for l, s := range t.severity {
		t.severity[l] = s.PaddingRight(cellPadding)
	}
	return t
}

// Origin is the style of an ORIGIN cell for a layer.
func (t Theme) Origin(l provenance.Layer) lipgloss.Style {
	if s, ok := t.origin[l]; ok {
		return s
	}
	return t.Cell
}

// Severity is the style of a diagnostic's severity cell.
func (t Theme) Severity(s explain.Severity) lipgloss.Style {
	if st, ok := t.severity[s]; ok {
		return st
	}
	return t.Cell
}
