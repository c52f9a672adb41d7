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

// fitColumns returns the width of each column so the table fits in width. Columns keep their
// natural width when everything fits; otherwise the column whose narrowing adds the fewest
// wrapped lines is narrowed first, one cell at a time (ties: the widest column), so one long
// cell (a cluster name in VALUE) does not force every column to wrap.
func fitColumns(headers []string, rows [][]string, width int) []int {
	n := len(headers)
	cols := make([][]string, n)
	natural := make([]int, n)
	floor := make([]int, n)
	for i, h := range headers {
		natural[i] = lipgloss.Width(h)
		floor[i] = lipgloss.Width(h)
	}
	for _, row := range rows {
		for i := 0; i < n && i < len(row); i++ {
			cols[i] = append(cols[i], row[i])
			natural[i] = max(natural[i], lipgloss.Width(row[i]))
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
		for _, cell := range cols[col] {
			c += strings.Count(wrapCell(cell, w), "\n") + 1
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
	if lipgloss.Width(s) <= w {
		return s
	}
	var out []string
	for _, line := range strings.Split(s, "\n") {
		out = append(out, wrapLine(line, w)...)
	}
	return strings.Join(out, "\n")
}

// wrapLine breaks a line into pieces of at most w columns, preferring a space in the second
// half of the line, then a break after a path separator (so `spec.trafficPolicy.` stays
// together), and cutting a word only when neither is in reach.
func wrapLine(line string, w int) []string {
	if w < 1 {
		w = 1
	}
	var out []string
	rs := []rune(line)
	for len(rs) > 0 {
		width, cut, space, punct := 0, len(rs), -1, -1
		for i, r := range rs {
			rw := runeWidth(r)
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
		if cut == len(rs) {
			out = append(out, string(rs))
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
		out = append(out, strings.TrimRight(string(rs[:cut]), " "))
		rs = rs[cut:]
		for len(rs) > 0 && rs[0] == ' ' {
			rs = rs[1:]
		}
	}
	return out
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
