package render

import (
	"strings"

	"github.com/charmbracelet/lipgloss"
)

// columnGap is the width between two columns: the cell padding plus the hidden border.
const columnGap = cellPadding + 1

// minColumn is the narrowest a column is squeezed to (unless its content is narrower); a
// column also keeps a fifth of the table width, so no column becomes a sliver.
const minColumn = 12

// cell is one table cell measured once: its width, and for wrapping, its lines as runes with
// the width of each rune.
type cell struct {
	text  string
	width int
	// lines and widths are filled by split, on the first wrap that needs them.
	lines  [][]rune
	widths [][]int
}

func newCell(s string) *cell { return &cell{text: s, width: textWidth(s)} }

// textWidth is lipgloss.Width (the widest line, escape codes not counted), without its ANSI
// parse for text that is printable ASCII and newlines only.
func textWidth(s string) int {
	w, line := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\n':
			w, line = max(w, line), 0
		case c >= 0x20 && c < 0x7f:
			line++
		default:
			return lipgloss.Width(s)
		}
	}
	return max(w, line)
}

func (c *cell) split() {
	if c.lines != nil {
		return
	}
	for _, l := range strings.Split(c.text, "\n") {
		rs := []rune(l)
		ws := make([]int, len(rs))
		for i, r := range rs {
			ws[i] = runeWidth(r)
		}
		c.lines = append(c.lines, rs)
		c.widths = append(c.widths, ws)
	}
}

// lineCount is the number of lines of the cell wrapped to w columns.
func (c *cell) lineCount(w int) int {
	if c.width <= w {
		return strings.Count(c.text, "\n") + 1
	}
	c.split()
	n := 0
	for i, rs := range c.lines {
		n += wrapRunes(rs, c.widths[i], w, nil)
	}
	return max(n, 1)
}

// wrap is the cell wrapped to w columns: every line broken by wrapLine.
func (c *cell) wrap(w int) string {
	if c.width <= w {
		return c.text
	}
	c.split()
	var out []string
	for i, rs := range c.lines {
		wrapRunes(rs, c.widths[i], w, &out)
	}
	return strings.Join(out, "\n")
}

// measureCells measures every cell of rows once.
func measureCells(rows [][]string) [][]*cell {
	out := make([][]*cell, len(rows))
	for i, row := range rows {
		out[i] = make([]*cell, len(row))
		for j, s := range row {
			out[i][j] = newCell(s)
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
	cols := make([][]*cell, n)
	natural := make([]int, n)
	floor := make([]int, n)
	for i, h := range headers {
		natural[i] = textWidth(h)
		floor[i] = natural[i]
	}
	for _, row := range rows {
		for i := 0; i < n && i < len(row); i++ {
			cols[i] = append(cols[i], row[i])
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
	type key struct{ col, width int }
	memo := map[key]int{}
	lines := func(col, w int) int {
		k := key{col, w}
		if v, ok := memo[k]; ok {
			return v
		}
		c := 0
		for _, cl := range cols[col] {
			c += cl.lineCount(w)
		}
		memo[k] = c
		return c
	}
	for total > budget {
		best, bestCost := -1, 0
		for i := range widths {
			if widths[i] <= floor[i] {
				continue
			}
			cost := lines(i, widths[i]-1) - lines(i, widths[i])
			if best < 0 || cost < bestCost || (cost == bestCost && widths[i] > widths[best]) {
				best, bestCost = i, cost
			}
		}
		if best < 0 {
			break
		}
		widths[best]--
		total--
	}
	return widths
}

// wrapCell wraps every line of s to at most w columns.
func wrapCell(s string, w int) string {
	return newCell(s).wrap(w)
}

// wrapRunes breaks a line (its runes and their widths) into pieces of at most w columns,
// preferring a space in the second half of the line, then a break after a path separator (so
// `spec.trafficPolicy.` stays together), and cutting a word only when neither is in reach. It
// returns the number of pieces, and appends them to out unless out is nil.
func wrapRunes(rs []rune, ws []int, w int, out *[]string) int {
	if w < 1 {
		w = 1
	}
	n := 0
	for len(rs) > 0 {
		width, cut, space, punct := 0, len(rs), -1, -1
		for i, r := range rs {
			rw := ws[i]
			if width+rw > w {
				cut = i
				break
			}
			width += rw
			if isBreakAfter(r) {
				punct = i + 1
			} else if r == ' ' {
				space = i
			}
		}
		n++
		if cut == len(rs) {
			if out != nil {
				*out = append(*out, string(rs))
			}
			break
		}
		switch {
		case space > 0 && space*2 >= w:
			cut = space
		case punct > 0 && punct*3 >= w:
			cut = punct
		case space > 0 && space*3 >= w:
			cut = space
		}
		if cut == 0 {
			cut = 1
		}
		if out != nil {
			end := cut
			for end > 0 && rs[end-1] == ' ' {
				end--
			}
			*out = append(*out, string(rs[:end]))
		}
		rs, ws = rs[cut:], ws[cut:]
		for len(rs) > 0 && rs[0] == ' ' {
			rs, ws = rs[1:], ws[1:]
		}
	}
	return n
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
