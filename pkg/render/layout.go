package render

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/charmbracelet/lipgloss"
)

// columnGap is the width between two columns: the cell padding plus the hidden border.
const columnGap = cellPadding + 1

// minColumn is the narrowest a column is squeezed to (unless its content is narrower); a
// column also keeps a fifth of the table width, so no column becomes a sliver.
const minColumn = 12

// hardMinColumn is the narrowest a column gets when a table has too many columns for minColumn.
const hardMinColumn = 4

// cell is one table cell measured once: its width, its newline count, and for wrapping, its
// lines indexed by split.
type cell struct {
	text     string
	width    int
	newlines int
	// lines is filled by split, on the first wrap that needs it.
	lines []line
	// shared, when set, is what the tables of one output know of text (cellCache).
	shared *cellText
}

// cellCache shares what laying a table out learns of a cell's text between the tables of one
// output, which renderBlocks lays out concurrently: the text as laid out, its line index, its
// line count at each width and its wrapping. Tables repeat rows: those of a waypoint's filters
// repeat, in every build that has it, the rows of each policy attached to the Gateway (at
// 10,000 Services, 19,965 cells of 811 distinct texts before each shared filter was printed
// once), and fitting their columns counts the lines of every cell at every width it tries. A
// nil cellCache shares nothing.
type cellCache struct {
	mu sync.Mutex
	m  map[string]*cellText
	// tables are whole tables laid out, by what they are made of (table).
	tables map[string]*sharedTable
}

// sharedTable is one table laid out once.
type sharedTable struct {
	once sync.Once
	text string
}

// table is lay(), called once per key and output; without a cache, every time.
func (cc *cellCache) table(key string, lay func() string) string {
	if cc == nil {
		return lay()
	}
	cc.mu.Lock()
	t, ok := cc.tables[key]
	if !ok {
		t = &sharedTable{}
		cc.tables[key] = t
	}
	cc.mu.Unlock()
	return t.get(lay)
}

func (t *sharedTable) get(lay func() string) string {
	t.once.Do(func() { t.text = lay() })
	return t.text
}

// cellText is what is known of one cell text.
type cellText struct {
	// text is the cell text as laid out: tabs as spaces, every other control character of a
	// value spelled out (Safe); width and newlines are measured on it.
	text            string
	width, newlines int
	once            sync.Once
	lines           []line
	// counts[w] is the line count at w columns plus one, 0 until counted.
	counts []atomic.Int32
	// wrapped is the text wrapped at each width it was wrapped to.
	mu      sync.Mutex
	wrapped map[int]*cell
}

func newCellCache() *cellCache {
	return &cellCache{m: map[string]*cellText{}, tables: map[string]*sharedTable{}}
}

func newCellText(raw string) *cellText {
	t := &cellText{text: Safe(expandTabs(raw))}
	t.width, t.newlines = measure(t.text)
	return t
}

// get is the entry of the raw text s, made on first use; without a cache, a new one.
func (cc *cellCache) get(s string) *cellText {
	if cc == nil {
		return newCellText(s)
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	t, ok := cc.m[s]
	if !ok {
		t = newCellText(s)
		t.counts = make([]atomic.Int32, t.width+1)
		cc.m[s] = t
	}
	return t
}

func newCell(s string) *cell {
	w, nl := measure(s)
	return &cell{text: s, width: w, newlines: nl}
}

// textWidth is lipgloss.Width (the widest line, escape codes not counted), without its ANSI
// parse for text that is printable ASCII and newlines only.
func textWidth(s string) int {
	w, _ := measure(s)
	return w
}

// measure returns the textWidth of s and its number of newlines.
func measure(s string) (width, newlines int) {
	line := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\n':
			width, line = max(width, line), 0
			newlines++
		case c >= 0x20 && c < 0x7f:
			line++
		default:
			return lipgloss.Width(s), strings.Count(s, "\n")
		}
	}
	return max(width, line), newlines
}

// line is one line of a cell, with what wrapping looks up at a cut: the width of every
// prefix, and the last space and the last break before every index. Indexes count runes.
type line struct {
	text string
	// rs is text as runes; nil when text is ASCII, whose runes are its bytes.
	rs    []rune
	n     int
	width int
	// pw[i] is the width of the first i runes; nil when every rune is one column wide.
	pw []int32
	// space[i] is the index of the last space among the first i runes and brk[i] the index
	// just after the last isBreakAfter rune among them (-1 when there is none).
	space, brk []int32
}

// newLine indexes s, taking space and brk from idx; it returns the rest of idx.
func newLine(s string, idx []int32) (line, []int32) {
	l := line{text: s, n: len(s)}
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			l.rs = []rune(s)
			l.n = len(l.rs)
			break
		}
	}
	n := l.n
	l.space, l.brk, idx = idx[:n+1], idx[n+1:2*(n+1)], idx[2*(n+1):]
	l.space[0], l.brk[0] = -1, -1
	for i := range n {
		r := l.at(i)
		l.space[i+1], l.brk[i+1] = l.space[i], l.brk[i]
		if isBreakAfter(r) {
			l.brk[i+1] = int32(i + 1)
		} else if r == ' ' {
			l.space[i+1] = int32(i)
		}
		rw := runeWidth(r)
		if rw == 1 && l.pw == nil {
			continue
		}
		if l.pw == nil {
			l.pw = make([]int32, n+1)
			for j := 1; j <= i; j++ {
				l.pw[j] = int32(j)
			}
		}
		l.pw[i+1] = l.pw[i] + int32(rw)
	}
	l.width = n
	if l.pw != nil {
		l.width = int(l.pw[n])
	}
	return l, idx
}

// at is the rune at index i.
func (l *line) at(i int) rune {
	if l.rs == nil {
		return rune(l.text[i])
	}
	return l.rs[i]
}

// cut returns where the piece of l that starts at s and is at most w (>= 1) columns wide
// ends: l.n when the rest fits; else the index it is cut at, preferring a space in the second
// half of the piece, then a break after a path separator (so `spec.trafficPolicy.` stays
// together), and cutting a word only when neither is in reach.
func (l *line) cut(s, w int) int {
	n := l.n
	var cut int
	if l.pw == nil {
		if s+w >= n {
			return n
		}
		cut = s + w
	} else {
		// The first index whose rune takes the piece past w columns.
		limit := l.pw[s] + int32(w)
		lo, hi := s, n
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if l.pw[m+1] > limit {
				hi = m
			} else {
				lo = m + 1
			}
		}
		if lo == n {
			return n
		}
		cut = lo
	}
	space, punct := -1, -1
	if sp := int(l.space[cut]); sp >= s {
		space = sp - s
	}
	if b := int(l.brk[cut]); b > s {
		punct = b - s
	}
	rel := cut - s
	switch {
	case space > 0 && space*2 >= w:
		rel = space
	case punct > 0 && punct*3 >= w:
		rel = punct
	case space > 0 && space*3 >= w:
		rel = space
	}
	return s + max(rel, 1)
}

// next is the start of the piece after a cut at c: the first rune from c that is not a space.
func (l *line) next(c int) int {
	for c < l.n && l.at(c) == ' ' {
		c++
	}
	return c
}

// pieces is the number of pieces l is wrapped into at w columns; an empty line has none.
func (l *line) pieces(w int) int {
	if l.n == 0 {
		return 0
	}
	if l.width <= w {
		return 1
	}
	w = max(w, 1)
	count := 0
	for s := 0; s < l.n; s = l.next(s) {
		count++
		s = l.cut(s, w)
	}
	return count
}

// wrap writes the pieces of l wrapped at w columns to b, each after a newline but the first
// of the cell (first is true until then); a cut piece loses its trailing spaces, the next
// piece its leading ones.
func (l *line) wrap(w int, b *strings.Builder, first *bool) {
	piece := func(i, j int) {
		if !*first {
			b.WriteByte('\n')
		}
		*first = false
		if l.rs == nil {
			b.WriteString(l.text[i:j])
			return
		}
		for _, r := range l.rs[i:j] {
			b.WriteRune(r)
		}
	}
	if l.n == 0 {
		return
	}
	if l.width <= w {
		piece(0, l.n)
		return
	}
	w = max(w, 1)
	for s := 0; s < l.n; {
		c := l.cut(s, w)
		if c == l.n {
			piece(s, c)
			return
		}
		end := c
		for end > s && l.at(end-1) == ' ' {
			end--
		}
		piece(s, end)
		s = l.next(c)
	}
}

// split indexes the lines of the cell, once (once per text, with a shared entry).
func (c *cell) split() {
	if c.lines != nil {
		return
	}
	if s := c.shared; s != nil {
		s.once.Do(func() { s.lines = splitLines(s.text, s.newlines) })
		c.lines = s.lines
		return
	}
	c.lines = splitLines(c.text, c.newlines)
}

// splitLines indexes the lines of text, which has newlines newlines.
func splitLines(text string, newlines int) []line {
	lines := make([]line, 0, newlines+1)
	// A line of n runes takes 2(n+1) indexes, and the lines have fewer runes than the text
	// has bytes, less its newlines.
	idx := make([]int32, 2*(len(text)+1))
	rest := text
	for {
		s, after, more := strings.Cut(rest, "\n")
		var l line
		l, idx = newLine(s, idx)
		lines = append(lines, l)
		if !more {
			return lines
		}
		rest = after
	}
}

// lineCount is the number of lines of the cell wrapped to w columns.
func (c *cell) lineCount(w int) int {
	if c.width <= w {
		return c.newlines + 1
	}
	if s := c.shared; s != nil && w < len(s.counts) {
		if v := s.counts[w].Load(); v > 0 {
			return int(v - 1)
		}
	}
	c.split()
	n := 0
	for i := range c.lines {
		n += c.lines[i].pieces(w)
	}
	n = max(n, 1)
	if s := c.shared; s != nil && w < len(s.counts) {
		s.counts[w].Store(int32(n + 1))
	}
	return n
}

// wrapTo wraps the cell to w columns in place, measured again; with a shared entry, each
// text is wrapped once per width.
func (c *cell) wrapTo(w int) {
	s := c.shared
	var wc *cell
	if s != nil {
		s.mu.Lock()
		wc = s.wrapped[w]
		s.mu.Unlock()
	}
	if wc == nil {
		wc = newCell(c.wrap(w))
		if s != nil {
			s.mu.Lock()
			if s.wrapped == nil {
				s.wrapped = map[int]*cell{}
			}
			s.wrapped[w] = wc
			s.mu.Unlock()
		}
	}
	// What was known of the text is not of the wrapped one.
	c.text, c.width, c.newlines, c.lines, c.shared = wc.text, wc.width, wc.newlines, nil, nil
}

// wrap is the cell wrapped to w columns: its lines broken into pieces by line.cut, one piece
// a line.
func (c *cell) wrap(w int) string {
	if c.width <= w {
		return c.text
	}
	c.split()
	var b strings.Builder
	b.Grow(len(c.text) + len(c.text)/max(w, 1) + 1)
	first := true
	for i := range c.lines {
		c.lines[i].wrap(w, &b, &first)
	}
	return b.String()
}

// measureCells measures every cell of rows once.
func measureCells(rows [][]string) [][]*cell {
	out := make([][]*cell, len(rows))
	for i, row := range rows {
		cells := make([]cell, len(row))
		out[i] = make([]*cell, len(row))
		for j, s := range row {
			cells[j].text = s
			cells[j].width, cells[j].newlines = measure(s)
			out[i][j] = &cells[j]
		}
	}
	return out
}

// fitColumns returns the width of each column so the table fits in width. Columns keep their
// natural width when everything fits; otherwise the column whose narrowing adds the fewest
// wrapped lines is narrowed first, one cell at a time (ties: the widest column), so one long
// cell (a cluster name in VALUE) does not force every column to wrap.
func fitColumns(headers []string, rows [][]*cell, width int) []int {
	n := len(headers)
	cols := make([]column, n)
	natural := make([]int, n)
	floor := make([]int, n)
	for i, h := range headers {
		natural[i] = textWidth(h)
		floor[i] = natural[i]
	}
	for _, row := range rows {
		for i := 0; i < n && i < len(row); i++ {
			cols[i].cells = append(cols[i].cells, row[i])
			natural[i] = max(natural[i], row[i].width)
		}
	}
	widths := append([]int(nil), natural...)
	for i := range floor {
		floor[i] = min(natural[i], max(floor[i], minColumn, width/5))
	}
	budget := width - (n-1)*columnGap
	total := 0
	for _, w := range widths {
		total += w
	}
	if total <= budget {
		return widths
	}
	for i := range cols {
		cols[i].index(natural[i])
	}
	squeezed := false
	for total > budget {
		best, bestCost := -1, 0
		for i := range widths {
			if widths[i] <= floor[i] {
				continue
			}
			cost := cols[i].lines(widths[i]-1) - cols[i].lines(widths[i])
			if best < 0 || cost < bestCost || (cost == bestCost && widths[i] > widths[best]) {
				best, bestCost = i, cost
			}
		}
		if best < 0 {
			if squeezed {
				break
			}
			// Too many columns for the usual floors (or headers too wide): let every column,
			// header included, wrap down to hardMinColumn.
			squeezed = true
			for i := range floor {
				floor[i] = min(natural[i], hardMinColumn)
			}
			continue
		}
		widths[best]--
		total--
	}
	return widths
}

// column is one column's cells for fitColumns, with its line counts remembered per width.
type column struct {
	// cells are the column's cells, widest first once indexed; rest[k] is the line count of
	// cells[k:] unwrapped.
	cells []*cell
	rest  []int
	// memo[w] is lines(w) + 1, 0 until computed.
	memo []int
}

func (c *column) index(natural int) {
	slices.SortFunc(c.cells, func(a, b *cell) int { return cmp.Compare(b.width, a.width) })
	c.rest = make([]int, len(c.cells)+1)
	for k := len(c.cells) - 1; k >= 0; k-- {
		c.rest[k] = c.rest[k+1] + c.cells[k].newlines + 1
	}
	c.memo = make([]int, natural+1)
}

// lines is the number of lines of the column's cells wrapped to w columns (0 <= w <= the
// column's natural width). Only cells wider than w wrap; the others keep their lines.
func (c *column) lines(w int) int {
	if v := c.memo[w]; v > 0 {
		return v - 1
	}
	n, k := 0, 0
	for ; k < len(c.cells) && c.cells[k].width > w; k++ {
		n += c.cells[k].lineCount(w)
	}
	n += c.rest[k]
	c.memo[w] = n + 1
	return n
}

// wrapCell wraps every line of s to at most w columns.
func wrapCell(s string, w int) string {
	return newCell(s).wrap(w)
}

// hangingIndent wraps s to fit width after an indent of indent columns, and indents every line
// after the first by that much (the first follows a label the caller wrote).
func hangingIndent(s string, indent, width int) string {
	w := max(width-indent, hardMinColumn)
	return strings.ReplaceAll(wrapCell(s, w), "\n", "\n"+strings.Repeat(" ", indent))
}

func isBreakAfter(r rune) bool {
	switch r {
	case '.', '/', '|', ',', ']', ')', '=':
		return true
	}
	return false
}

// runeWidth is the terminal width of one rune. Printable ASCII, nearly every rune of a table,
// is one cell; only other runes pay for lipgloss's grapheme-aware measurement.
func runeWidth(r rune) int {
	if r >= 0x20 && r < 0x7f {
		return 1
	}
	return lipgloss.Width(string(r))
}

// expandTabs spells each tab as four spaces, and a CRLF line end as a newline, as lipgloss
// does before it styles text, so a cell is measured and wrapped as it is printed.
func expandTabs(s string) string {
	if !strings.ContainsAny(s, "\t\r") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\t", "    ")
}

// layoutTable lays out a borderless table of measured cells under one header row: each column
// as wide as its widest cell plus cellPadding, columns one space apart, each row as tall as its
// tallest cell, a cell at the top left of its space, and no trailing blanks on any line. A row
// shorter than the longest row has empty cells after its own; columns that only the headers
// have hold no cells. It writes what lipgloss's table writes for the same cells with hidden
// borders, the column separator only, and every style padded right by cellPadding
// (TestLayoutMatchesLipglossTable), without styling, wrapping and measuring every cell again.
func layoutTable(header CellStyle, headers []string, rows [][]*cell, style func(row, col int) CellStyle) string {
	// cols is the number of cells a row is laid out with, n the number of columns.
	cols := 0
	for _, row := range rows {
		cols = max(cols, len(row))
	}
	n := max(len(headers), cols)
	widths := make([]int, n)
	size := 0
	headerLines := 1
	for j, h := range headers {
		w, nl := measure(h)
		widths[j] = w
		headerLines = max(headerLines, nl+1)
	}
	for _, row := range rows {
		for j, c := range row {
			widths[j] = max(widths[j], c.width)
			size += len(c.text)
		}
	}
	lineWidth := n - 1
	for _, w := range widths {
		lineWidth += w + cellPadding
	}
	buf := make([]byte, 0, size+(len(rows)+1)*(lineWidth+1))
	// pad pads a cell line to its column's width, with the separator after it unless the column
	// is the last of its line: the header line has n columns, the rows cols.
	last := n - 1
	pad := func(j, written int) {
		k := widths[j] + cellPadding - written
		if j < last {
			k++
		}
		for range k {
			buf = append(buf, ' ')
		}
	}
	paint := func(s CellStyle, text string) {
		buf = append(buf, s.open...)
		buf = append(buf, text...)
		buf = append(buf, s.close...)
	}
	endLine := func() {
		for len(buf) > 0 && buf[len(buf)-1] == ' ' {
			buf = buf[:len(buf)-1]
		}
		buf = append(buf, '\n')
	}
	hrest := slices.Clone(headers)
	for range headerLines {
		for j := range n {
			h := ""
			if j < len(hrest) {
				h, hrest[j], _ = strings.Cut(hrest[j], "\n")
			}
			paint(header, h)
			pad(j, textWidth(h))
		}
		endLine()
	}
	last = cols - 1
	rest := make([]string, cols)
	for i, row := range rows {
		height := 1
		for j := range cols {
			rest[j] = ""
			if j < len(row) {
				rest[j] = row[j].text
				height = max(height, row[j].newlines+1)
			}
		}
		for k := range height {
			for j := range cols {
				if k > 0 && (j >= len(row) || k > row[j].newlines) {
					pad(j, 0)
					continue
				}
				line, after, _ := strings.Cut(rest[j], "\n")
				rest[j] = after
				paint(style(i, j), line)
				pad(j, textWidth(line))
			}
			endLine()
		}
	}
	return string(buf[:max(len(buf)-1, 0)])
}
