package render

import (
	"bufio"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/charmbracelet/lipgloss"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// tablePrinter prints the human form: the subject, the sections, per object a header and a
// FIELD | VALUE | ORIGIN table (wide adds SHADOWED), then diagnostics and warnings.
type tablePrinter struct {
	opts Options
	wide bool
}

func (p *tablePrinter) Print(w io.Writer, r *explain.Result) error {
	return p.PrintList(w, []*explain.Result{r})
}

func (p *tablePrinter) PrintList(w io.Writer, rs []*explain.Result) error {
	th := NewTheme(w, p.opts.ColorOn())
	// The tables of the output share the wrapping of their texts.
	th.cells = newCellCache()
	var jobs []func() string
	for _, r := range rs {
		if r == nil {
			continue
		}
		jobs = append(jobs, p.result(th, r)...)
	}
	if len(jobs) == 0 {
		return nil
	}
	return writeBlocks(w, jobs)
}

// writeBlocks renders the blocks (renderBlocks) and writes them in order, a blank line between
// two, through one buffer: each block is written as soon as it and those before it are done,
// while the later ones are still being laid out.
func writeBlocks(w io.Writer, jobs []func() string) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	first := true
	err := renderBlocks(jobs, func(block string) error {
		if !first {
			if _, err := bw.WriteString("\n\n"); err != nil {
				return err
			}
		}
		first = false
		_, err := bw.WriteString(block)
		return err
	})
	if err == nil {
		err = bw.WriteByte('\n')
	}
	if err == nil {
		err = bw.Flush()
	}
	return err
}

// renderBlocks runs the block renderings, on every core: the tables of a result (one per
// object, section and diagnostics list) are independent, and fitting their columns is most of
// a human-format run's CPU. It hands the blocks to emit in the order of jobs, each as soon as
// it and the blocks before it are done, and stops at emit's first error. A rendering that
// panics panics again on the caller's goroutine, where the command recovers it, rather than
// ending the process from a worker.
func renderBlocks(jobs []func() string, emit func(string) error) error {
	workers := min(runtime.GOMAXPROCS(0), len(jobs))
	if workers <= 1 {
		for _, job := range jobs {
			if err := emit(job()); err != nil {
				return err
			}
		}
		return nil
	}
	blocks := make([]string, len(jobs))
	panics := make([]any, len(jobs))
	done := make([]chan struct{}, len(jobs))
	for i := range done {
		done[i] = make(chan struct{})
	}
	var next atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(jobs); i = int(next.Add(1) - 1) {
				func() {
					defer close(done[i])
					defer func() { panics[i] = recover() }()
					if !stop.Load() {
						blocks[i] = jobs[i]()
					}
				}()
			}
		})
	}
	defer wg.Wait()
	for i := range jobs {
		<-done[i]
		if panics[i] != nil {
			stop.Store(true)
			wg.Wait()
			panic(panics[i])
		}
		if err := emit(blocks[i]); err != nil {
			stop.Store(true)
			return err
		}
		blocks[i] = ""
	}
	return nil
}

// block is the rendering of a block already laid out, for writeBlocks.
func block(s string) func() string { return func() string { return s } }

// result returns the renderings of the blocks of one Result; blocks are separated by one blank
// line. The renderings only read r, so they may run concurrently.
func (p *tablePrinter) result(th Theme, r *explain.Result) []func() string {
	var jobs []func() string
	if len(r.Incomplete) > 0 {
		jobs = append(jobs, block(incompleteBanner(th, p.opts.width(), r.Incomplete)))
	}
	jobs = append(jobs, block(renderLines(th.Title, wrapCell(Safe(subjectLine(r.Subject)), p.opts.width()))))
	if len(r.Assumptions) > 0 {
		lines := []string{th.Heading.Render("ASSUMING")}
		for _, msg := range r.Assumptions {
			lines = append(lines, renderLines(th.Warning, wrapCell("assumption: "+Safe(msg), p.opts.width())))
		}
		jobs = append(jobs, block(strings.Join(lines, "\n")))
	}
	// What is wrong comes first, then how the answer was reached and what was generated.
	if len(r.Diagnostics) > 0 {
		jobs = append(jobs, func() string {
			return th.Heading.Render("DIAGNOSTICS") + "\n" + p.diagnostics(th, r.Diagnostics)
		})
	}
	for _, s := range r.Sections {
		if s.Wide && !p.wide {
			continue
		}
		jobs = append(jobs, func() string { return p.section(th, s) })
	}
	if len(r.Objects) == 0 {
		jobs = append(jobs, block(noObjectsLine(r.Subject)))
	}
	for _, o := range r.Objects {
		jobs = append(jobs, func() string {
			b := p.objectHeader(th, r, o)
			shown, defaults := p.shownFields(o.Origins)
			if len(shown) > 0 {
				b += "\n" + p.fields(th, shown)
			}
			if defaults > 0 {
				b += "\n" + wrapCell(fmt.Sprintf("(%s more at Istio's or Envoy's defaults: -o wide or --show-defaults lists them)",
					plural(defaults, "field")), p.opts.width())
			}
			return b
		})
	}
	if len(r.Warnings) > 0 {
		lines := []string{th.Heading.Render("WARNINGS")}
		for _, msg := range r.Warnings {
			lines = append(lines, renderLines(th.Warning, wrapCell("warning: "+Safe(msg), p.opts.width())))
		}
		jobs = append(jobs, block(strings.Join(lines, "\n")))
	}
	return jobs
}

// incompleteBanner is the first line of an answer that lacks something it needed: `INCOMPLETE:
// DestinationRules, Services could not be read; the answer may be wrong (see WARNINGS)`.
func incompleteBanner(th Theme, width int, what []string) string {
	return renderLines(th.Warning, wrapCell("INCOMPLETE: "+Safe(strings.Join(what, ", "))+
		" could not be read; what follows may differ from what istiod pushes (see WARNINGS)", width))
}

// subjectLine is the first line of a result: what was explained.
func subjectLine(s explain.Subject) string {
	var b strings.Builder
	switch s.Kind {
	case "Host":
		b.WriteString("Host " + s.Host)
		if s.Port != 0 {
			b.WriteString(", port " + strconv.FormatUint(uint64(s.Port), 10))
		}
		if s.Subset != "" {
			b.WriteString(", subset " + s.Subset)
		}
	case "Workload":
		b.WriteString("Workload " + s.Workload)
		if s.Namespace != "" {
			b.WriteString(" in namespace " + s.Namespace)
		}
	default:
		b.WriteString(strings.TrimSpace(s.Kind + " " + firstNonEmpty(s.Host, s.Workload)))
	}
	if s.Resource != nil {
		b.WriteString(" (" + s.Resource.String() + ")")
	}
	return b.String()
}

func noObjectsLine(s explain.Subject) string {
	switch s.Kind {
	case "Host":
		return "No cluster is generated for this host."
	case "Workload":
		return "No Authorization applies to this workload."
	}
	return "Nothing is generated."
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// objectHeader is `<Kind> <name>` and the summary lines, aligned.
func (p *tablePrinter) objectHeader(th Theme, r *explain.Result, o explain.Object) string {
	title := renderLines(th.Title, wrapCell(Safe(shortKind(o.Kind)+" "+o.Name), p.opts.width()))
	if o.Missing {
		const missing = "(missing: istiod does not generate it)"
		if lipgloss.Width(Safe(shortKind(o.Kind)+" "+o.Name)+" "+missing) > p.opts.width() {
			title += "\n"
		} else {
			title += " "
		}
		title += th.Missing.Render(missing)
	}
	summary := append([]explain.Summary(nil), o.Summary...)
	if r.Proxy != nil && r.Proxy.Description != "" && !hasSummary(summary, "client proxy") {
		summary = append(summary, explain.Summary{Name: "client proxy", Value: r.Proxy.Description})
	}
	width := 0
	for _, s := range summary {
		width = max(width, lipgloss.Width(Safe(s.Name))+1)
	}
	lines := []string{title}
	for _, s := range summary {
		label := Safe(s.Name) + ":"
		pad := strings.Repeat(" ", width-lipgloss.Width(label)+1)
		indent := 2 + lipgloss.Width(label) + len(pad)
		lines = append(lines, "  "+th.Label.Render(label)+pad+hangingIndent(Safe(s.Value), indent, p.opts.width()))
	}
	return strings.Join(lines, "\n")
}

func hasSummary(ss []explain.Summary, name string) bool {
	for _, s := range ss {
		if strings.EqualFold(s.Name, name) {
			return true
		}
	}
	return false
}

// shortKind turns a proto type name into its message name: envoy.config.cluster.v3.Cluster → Cluster.
func shortKind(kind string) string {
	if i := strings.LastIndexByte(kind, '.'); i >= 0 {
		return kind[i+1:]
	}
	return kind
}

// rowInfo says how a row of the field table is styled.
type rowInfo struct {
	blank bool
	trace provenance.FieldTrace
}

// fields is the FIELD | VALUE | ORIGIN [| SHADOWED] table of one object. Rows are grouped by
// block: first the top-level scalars, then one group per first path segment in order of first
// appearance, groups separated by an empty row.
// shownFields are the traces the table lists, and how many it leaves out: fields left at
// Istio's or Envoy's defaults (or an istiod flag's) are counted, not listed, unless the table
// is wide or --show-defaults is given.
func (p *tablePrinter) shownFields(traces []provenance.FieldTrace) ([]provenance.FieldTrace, int) {
	if p.wide || p.opts.ShowDefaults {
		return traces, 0
	}
	shown := make([]provenance.FieldTrace, 0, len(traces))
	for _, t := range traces {
		switch t.Origin.Layer {
		case provenance.LayerIstioDefault, provenance.LayerEnvoyDefault, provenance.LayerIstiodFlag:
		default:
			shown = append(shown, t)
		}
	}
	return shown, len(traces) - len(shown)
}

func (p *tablePrinter) fields(th Theme, traces []provenance.FieldTrace) string {
	headers := []string{"FIELD", "VALUE", "ORIGIN"}
	if p.wide {
		headers = append(headers, "SHADOWED")
	}
	var infos []rowInfo
	var rows [][]string
	for gi, group := range groupByBlock(traces) {
		if gi > 0 {
			infos = append(infos, rowInfo{blank: true})
			rows = append(rows, make([]string, len(headers)))
		}
		for _, t := range group {
			row := []string{t.Path, valueText(t), originText(t.Origin)}
			if p.wide {
				row = append(row, shadowText(t.Shadowed))
			}
			infos = append(infos, rowInfo{trace: t})
			rows = append(rows, row)
		}
	}
	// The filters of a waypoint's services repeat whole tables (at 10,000 Services, 102
	// filter objects hold 63 distinct lists of fields): each is laid out once per output.
	return th.cells.table(fieldTableKey(rows, infos), func() string { return p.fieldTable(th, headers, rows, infos) })
}

// fieldTableKey is what a field table is made of: its cells, and what styles each row.
func fieldTableKey(rows [][]string, infos []rowInfo) string {
	var b []byte
	for i, row := range rows {
		info := infos[i]
		b = append(b, byte(info.trace.Origin.Layer))
		b = strconv.AppendBool(b, info.blank)
		b = strconv.AppendBool(b, info.trace.NotSent)
		for _, c := range row {
			b = strconv.AppendInt(b, int64(len(c)), 10)
			b = append(b, ':')
			b = append(b, c...)
		}
		b = append(b, '\n')
	}
	return string(b)
}

// fieldTable lays out a field table's rows.
func (p *tablePrinter) fieldTable(th Theme, headers []string, rows [][]string, infos []rowInfo) string {
	return th.table(headers, rows, p.opts.width(), func(row, col int) CellStyle {
		info := infos[row]
		if info.blank {
			return th.Cell
		}
		switch col {
		case 0:
			return th.Field
		case 1:
			if info.trace.NotSent {
				return th.NotSent
			}
			return th.Value
		case 2:
			return th.Origin(info.trace.Origin.Layer)
		default:
			return th.Shadowed
		}
	})
}

// groupByBlock splits traces into the top-level scalars and one group per block.
func groupByBlock(traces []provenance.FieldTrace) [][]provenance.FieldTrace {
	var scalars []provenance.FieldTrace
	var order []string
	blocks := map[string][]provenance.FieldTrace{}
	for _, t := range traces {
		b := blockOf(t.Path)
		if b == "" {
			scalars = append(scalars, t)
			continue
		}
		if _, ok := blocks[b]; !ok {
			order = append(order, b)
		}
		blocks[b] = append(blocks[b], t)
	}
	var out [][]provenance.FieldTrace
	if len(scalars) > 0 {
		out = append(out, scalars)
	}
	for _, b := range order {
		out = append(out, blocks[b])
	}
	return out
}

// blockOf returns the first segment of a path that has more than one, or "".
func blockOf(path string) string {
	if i := strings.IndexAny(path, ".["); i > 0 {
		return path[:i]
	}
	return ""
}

// valueText is a VALUE cell: the value, `""` for an empty one, `-` for a path that only
// carries shadowed candidates, and a "(not sent)" mark for Envoy defaults.
func valueText(t provenance.FieldTrace) string {
	v := t.Value
	switch {
	case v == "" && isZeroOrigin(t.Origin):
		return "-"
	case v == "":
		v = `""`
	}
	if t.NotSent {
		v += " (not sent)"
	}
	return v
}

func isZeroOrigin(o provenance.Origin) bool {
	return o.Layer == provenance.LayerNone && o.Resource == nil && o.Field == "" && o.Position == nil
}

// originText is an ORIGIN cell: Origin.String(), and its note on a second line.
func originText(o provenance.Origin) string {
	if isZeroOrigin(o) {
		return "-"
	}
	s := o.String()
	if o.Note != "" {
		s += "\n↳ " + o.Note
	}
	return s
}

// shadowText is a SHADOWED cell: one line per candidate that lost, most recent first.
func shadowText(ss []provenance.Shadow) string {
	lines := make([]string, 0, len(ss))
	for _, s := range ss {
		lines = append(lines, shadowLine(s))
	}
	return strings.Join(lines, "\n")
}

// shadowLine spells one shadow: `10s from MeshConfig · connectTimeout (overridden)`.
func shadowLine(s provenance.Shadow) string {
	var b strings.Builder
	if s.Value != "" {
		b.WriteString(s.Value + " from ")
	}
	b.WriteString(s.Origin.String())
	if s.Reason != "" {
		b.WriteString(" (" + s.Reason + ")")
	}
	return b.String()
}

// section is a Section's title and table.
func (p *tablePrinter) section(th Theme, s explain.Section) string {
	headers := make([]string, len(s.Columns))
	for i, c := range s.Columns {
		headers[i] = strings.ToUpper(c)
	}
	title := th.Heading.Render(Safe(strings.ToUpper(s.Title)))
	if len(s.Rows) == 0 {
		return title + "\n(none)"
	}
	return title + "\n" + th.table(headers, s.Rows, p.opts.width(), func(int, int) CellStyle { return th.Cell })
}

// diagnostics is the SEVERITY | ID | MESSAGE table; resources and the fix follow the message.
func (p *tablePrinter) diagnostics(th Theme, ds []explain.Diagnostic) string {
	rows := make([][]string, 0, len(ds))
	for _, d := range ds {
		msg := d.Message
		if len(d.Resources) > 0 {
			refs := make([]string, len(d.Resources))
			for i, r := range d.Resources {
				refs[i] = r.String()
			}
			msg += "\nresources: " + strings.Join(refs, ", ")
		}
		if d.Fix != "" {
			msg += "\nfix: " + d.Fix
		}
		rows = append(rows, []string{string(d.Severity), d.ID, msg})
	}
	return th.table([]string{"SEVERITY", "ID", "MESSAGE"}, rows, p.opts.width(), func(row, col int) CellStyle {
		if col == 0 {
			return th.Severity(ds[row].Severity)
		}
		return th.Cell
	})
}

// table renders a borderless table no wider than width: cells are wrapped to the widths
// fitColumns picks and laid out by layoutTable.
func (th Theme) table(headers []string, rows [][]string, width int, style func(row, col int) CellStyle) string {
	cells := th.tableCells(rows)
	widths := fitColumns(headers, cells, width)
	if hs := measureCells([][]string{headers}); len(hs) == 1 {
		headers = slices.Clone(headers)
		for j, h := range hs[0] {
			if j < len(widths) && h.width > widths[j] {
				headers[j] = h.wrap(widths[j])
			}
		}
	}
	for _, row := range cells {
		for j, c := range row {
			if j < len(widths) && c.width > widths[j] {
				c.wrapTo(widths[j])
			}
		}
	}
	return layoutTable(th.Header, headers, cells, style)
}

// tableCells are the cells of rows measured as they are laid out (cellText); with th.cells,
// each distinct text is prepared once for all the tables of the output.
func (th Theme) tableCells(rows [][]string) [][]*cell {
	out := make([][]*cell, len(rows))
	for i, row := range rows {
		cells := make([]cell, len(row))
		out[i] = make([]*cell, len(row))
		for j, s := range row {
			t := th.cells.get(s)
			cells[j] = cell{text: t.text, width: t.width, newlines: t.newlines, shared: t}
			out[i][j] = &cells[j]
		}
	}
	return out
}
