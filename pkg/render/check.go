package render

import (
	"fmt"
	"github.com/charmbracelet/lipgloss"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
)

// FormatSARIF is `-o sarif`: SARIF 2.1.0, for code-scanning tools (check only).
const FormatSARIF = "sarif"

// CheckFormats are the -o values of `check`.
var CheckFormats = []string{FormatTable, FormatWide, FormatJSON, FormatYAML, FormatSARIF}

// CheckPrinter prints a check report.
type CheckPrinter interface {
	PrintCheck(w io.Writer, r *explain.CheckReport) error
}

// ForCheck returns the CheckPrinter for an -o value of `check`.
func ForCheck(format string, o Options) (CheckPrinter, error) {
	if !slices.Contains(CheckFormats, format) {
		return nil, &UnknownFormatError{Format: format, Allowed: CheckFormats}
	}
	switch format {
	case FormatJSON:
		return checkData{yaml: false}, nil
	case FormatYAML:
		return checkData{yaml: true}, nil
	case FormatSARIF:
		return sarifPrinter{}, nil
	}
	return &checkTable{opts: o, wide: format == FormatWide}, nil
}

// checkData prints the report document as JSON or YAML, as dataPrinter prints a Result.
type checkData struct{ yaml bool }

func (p checkData) PrintCheck(w io.Writer, r *explain.CheckReport) error {
	if r.Findings == nil {
		c := *r
		c.Findings = []explain.Finding{}
		r = &c
	}
	return dataPrinter{yaml: p.yaml}.write(w, r, nil, 0)
}

// checkTable prints findings grouped by the resource to change: a title line with the
// resource and its file position, then a SEVERITY | ID | FIELD | FINDING table. Silenced
// findings are counted, and listed with their reason by -o wide; wide also lists every host,
// client and workload a finding affects, where table shows the first few.
type checkTable struct {
	opts Options
	wide bool
}

// listed is how many affected hosts, clients or workloads the table names before `and N more`.
const listed = 3

func (p *checkTable) PrintCheck(w io.Writer, r *explain.CheckReport) error {
	th := NewTheme(w, p.opts.ColorOn())
	// One block per resource, laid out on every core and written as they are done
	// (writeBlocks): a mesh's report is tens of megabytes of tables.
	var blocks []func() string
	if len(r.Incomplete) > 0 {
		blocks = append(blocks, block(incompleteBanner(th, p.opts.width(), r.Incomplete)))
	}
	counts := map[explain.Severity]int{}
	silenced := 0
	type group struct {
		title    string
		findings []explain.Finding
	}
	var groups []*group
	byTitle := map[string]*group{}
	for _, f := range r.Findings {
		if f.Ignored != "" {
			silenced++
			if !p.wide {
				continue
			}
		} else {
			counts[f.Severity]++
		}
		title := "(no resource)"
		if f.Resource != nil {
			title = f.Resource.String()
		}
		g := byTitle[title]
		if g == nil {
			g = &group{title: title}
			byTitle[title] = g
			groups = append(groups, g)
		}
		g.findings = append(g.findings, f)
	}
	slices.SortStableFunc(groups, func(a, b *group) int { return strings.Compare(a.title, b.title) })
	width := p.opts.width()
	blocks = append(blocks, block(renderLines(th.Title, wrapCell(summaryLine(r, counts, silenced, p.wide), width))))
	for _, g := range groups {
		blocks = append(blocks, func() string {
			title := Safe(g.title)
			if pos := Safe(objectPosition(g.findings)); pos != "" {
				// The file on a line of its own when both do not fit.
				if lipgloss.Width(title+"  "+pos) <= width {
					title += "  " + pos
				} else {
					title += "\n" + pos
				}
			}
			return renderLines(th.Title, wrapCell(title, width)) + "\n" + p.findings(th, r.Scope.Diff, g.findings)
		})
	}
	if len(r.Warnings) > 0 {
		lines := []string{th.Heading.Render("WARNINGS")}
		for _, wmsg := range r.Warnings {
			lines = append(lines, renderLines(th.Warning, wrapCell("warning: "+Safe(wmsg), width)))
		}
		blocks = append(blocks, block(strings.Join(lines, "\n")))
	}
	return writeBlocks(w, blocks)
}

// summaryLine is the first line: what was checked and what was found.
func summaryLine(r *explain.CheckReport, counts map[explain.Severity]int, silenced int, wide bool) string {
	s := r.Scope
	// clients: `N client sidecars (K classes)`, or with gateway pods among them `N clients (S
	// sidecars, G gateway pods; K classes)`.
	clients := fmt.Sprintf("%s (%s)", plural(s.Clients, "client sidecar"), plural(s.ClientClasses, "class", "classes"))
	if s.Gateways > 0 {
		clients = fmt.Sprintf("%s (%s, %s; %s)", plural(s.Clients, "client"), plural(s.Clients-s.Gateways, "sidecar"),
			plural(s.Gateways, "gateway pod"), plural(s.ClientClasses, "class", "classes"))
	}
	what := fmt.Sprintf("Checked %s from %s and %s%s: ", plural(s.Hosts, "host"), clients,
		plural(s.Workloads, "workload"), dataPlanes(s.DataPlanes))
	if s.Waypoints > 0 {
		what = fmt.Sprintf("Checked %s from %s, %s%s and %s: ", plural(s.Hosts, "host"), clients,
			plural(s.Workloads, "workload"), dataPlanes(s.DataPlanes), plural(s.Waypoints, "waypoint"))
	}
	if s.Diff {
		what = "Changes against the live state, " + what
	}
	found := fmt.Sprintf("%s, %s, %s", plural(counts[explain.SeverityError], "error"), plural(counts[explain.SeverityWarning], "warning"),
		plural(counts[explain.SeverityInfo], "info", "info"))
	if silenced > 0 {
		found += fmt.Sprintf(" (%d silenced", silenced)
		if !wide {
			found += "; -o wide lists them"
		}
		found += ")"
	}
	return what + found
}

// dataPlanes spells the workloads by data plane: ` (2 ambient, 3 sidecar)`.
func dataPlanes(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	var parts []string
	for _, dp := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d %s", m[dp], dp))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func plural(n int, one string, many ...string) string {
	if n == 1 {
		return "1 " + one
	}
	if len(many) > 0 {
		return fmt.Sprintf("%d %s", n, many[0])
	}
	return fmt.Sprintf("%d %ss", n, one)
}

// objectPosition is the file of the object the group's findings change, `file:line`, when they
// were read from a file: the position of its document, the shortest path to the line.
func objectPosition(fs []explain.Finding) string {
	for _, f := range fs {
		if f.Position != nil && f.Position.File != "" {
			return f.Position.File
		}
	}
	return ""
}

func (p *checkTable) findings(th Theme, diff bool, fs []explain.Finding) string {
	headers := []string{"SEVERITY", "ID", "FIELD", "FINDING"}
	if diff {
		headers = append([]string{"CHANGE"}, headers...)
	}
	rows := make([][]string, 0, len(fs))
	for _, f := range fs {
		field := wrapPath(f.Field, fieldWidth)
		if f.Position != nil && f.Position.Line > 0 {
			if field == "" {
				field = "line " + fmt.Sprint(f.Position.Line)
			} else {
				field += "\nline " + fmt.Sprint(f.Position.Line)
			}
		}
		msg := f.Message
		switch {
		case len(f.Details) > 0 && p.wide:
			for _, d := range f.Details {
				msg += "\nalso: " + d
			}
		case len(f.Details) > 0:
			msg += fmt.Sprintf("\n(and %s for other clusters or clients: -o wide lists them)", plural(len(f.Details), "message"))
		}
		if a := p.affected(f); a != "" {
			msg += "\n" + a
		}
		if f.Fix != "" {
			msg += "\nfix: " + f.Fix
		}
		if f.Ignored != "" {
			msg += "\nsilenced: " + f.Ignored
		}
		row := []string{string(f.Severity), f.ID, field, msg}
		if diff {
			row = append([]string{string(f.Change)}, row...)
		}
		rows = append(rows, row)
	}
	sevCol := 0
	if diff {
		sevCol = 1
	}
	return th.table(headers, rows, p.opts.width(), func(row, col int) CellStyle {
		if col == sevCol {
			if fs[row].Ignored != "" {
				return th.Shadowed
			}
			return th.Severity(fs[row].Severity)
		}
		return th.Cell
	})
}

// fieldWidth is the widest line of a field path in the FIELD column, so that long paths
// (`spec.trafficPolicy.portLevelSettings[port=9080]`) leave the room to the finding.
const fieldWidth = 28

// wrapPath breaks a field path into lines of at most width characters after a `.`, keeping
// each step whole (a longer step gets a line of its own).
func wrapPath(path string, width int) string {
	var lines []string
	line := ""
	for rest := path; rest != ""; {
		step := rest[:stepEnd(rest)]
		rest = rest[len(step):]
		if line != "" && len(line)+len(strings.TrimSuffix(step, ".")) > width {
			lines = append(lines, line)
			line = ""
		}
		line += step
	}
	if line != "" {
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// stepEnd is the length of the first step of a path with its trailing dot; a dot inside
// brackets (`labels[app.kubernetes.io/name]`) does not end a step.
func stepEnd(path string) int {
	depth := 0
	for i, c := range path {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case '.':
			if depth <= 0 {
				return i + 1
			}
		}
	}
	return len(path)
}

// affected spells what a finding affects: `hosts: a, b; clients: Namespace x; workloads: ...`.
func (p *checkTable) affected(f explain.Finding) string {
	var parts []string
	add := func(name string, xs []string) {
		if len(xs) == 0 {
			return
		}
		if !p.wide && len(xs) > listed {
			xs = append(slices.Clip(xs[:listed]), fmt.Sprintf("and %d more", len(xs)-listed))
		}
		parts = append(parts, name+": "+strings.Join(xs, ", "))
	}
	add("hosts", f.Hosts)
	add("clients", f.Clients)
	add("workloads", f.Workloads)
	add("waypoints", f.Waypoints)
	return strings.Join(parts, "\n")
}
