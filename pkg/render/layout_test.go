package render

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
)

// referenceWrapCell is the straightforward wrapping wrapRunes must match: every rune and every
// cell measured with lipgloss on each call.
func referenceWrapCell(s string, w int) string {
	if lipgloss.Width(s) <= w {
		return s
	}
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if w < 1 {
			w = 1
		}
		rs := []rune(line)
		for len(rs) > 0 {
			width, cut, space, punct := 0, len(rs), -1, -1
			for i, r := range rs {
				rw := lipgloss.Width(string(r))
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
	}
	return strings.Join(out, "\n")
}

// cellAlphabet is what random cells are made of: letters, the spaces and separators wrapping
// breaks at, newlines, and runes that are not one column wide (wide, zero-width, combining,
// a tab, an emoji sequence).
var cellAlphabet = []string{"a", "b", "Z", "0", " ", " ", ".", "/", "|", ",", "]", ")", "=", "-", "\n", "↳", "·", "é", "日", "\t",
	"e\u0301", "\u200b", "👍", "👩\u200d👩", "--", "  "}

func randomCellText(r *rand.Rand) string {
	return randomText(r, r.IntN(90))
}

// randomText is n pieces of cellAlphabet.
func randomText(r *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(cellAlphabet[r.IntN(len(cellAlphabet))])
	}
	return b.String()
}

// randomASCIIText is n pieces of words and separators that are one column wide each, as most
// table cells are.
func randomASCIIText(r *rand.Rand, n int) string {
	pieces := []string{"spec", "trafficPolicy", "a", "xy", " ", " ", ".", "/", "|", ",", "]", ")", "=", "-", "\n", "(", ":"}
	var b strings.Builder
	for range n {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

func TestWrapMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		s := randomCellText(r)
		c := newCell(s)
		if c.width != lipgloss.Width(s) {
			t.Fatalf("width of %q: %d, lipgloss %d", s, c.width, lipgloss.Width(s))
		}
		for w := 0; w <= 40; w++ {
			checkWrap(t, c, w)
		}
	}
}

// checkWrap compares the wrapping of c at w columns, and its line count, with the reference.
func checkWrap(t *testing.T, c *cell, w int) {
	t.Helper()
	want := referenceWrapCell(c.text, w)
	if got := c.wrap(w); got != want {
		t.Fatalf("wrap(%q, %d):\n got %q\nwant %q", c.text, w, got, want)
	}
	if got, want := c.lineCount(w), strings.Count(want, "\n")+1; got != want {
		t.Fatalf("lineCount(%q, %d) = %d, want %d", c.text, w, got, want)
	}
}

func TestWrapLongLinesMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 400 {
		s := randomText(r, 50+r.IntN(250))
		if i%2 == 0 {
			s = randomASCIIText(r, 20+r.IntN(120))
		}
		c := newCell(s)
		for _, w := range []int{1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144} {
			checkWrap(t, c, w)
		}
	}
}

func TestTextWidth(t *testing.T) {
	for _, s := range []string{"", "abc", "ab\ncdef\n", "↳ note", "\x1b[1mbold\x1b[0m", "a\tb", "日本"} {
		if got, want := textWidth(s), lipgloss.Width(s); got != want {
			t.Errorf("textWidth(%q) = %d, want %d", s, got, want)
		}
	}
}

// referenceFitColumns is the greedy narrowing of fitColumns with every line count taken from
// referenceWrapCell on each call.
func referenceFitColumns(headers []string, rows [][]string, width int) []int {
	n := len(headers)
	natural := make([]int, n)
	floor := make([]int, n)
	for i, h := range headers {
		natural[i] = lipgloss.Width(h)
		floor[i] = natural[i]
	}
	for _, row := range rows {
		for i := 0; i < n && i < len(row); i++ {
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
	lines := func(col, w int) int {
		c := 0
		for _, row := range rows {
			if col < len(row) {
				c += strings.Count(referenceWrapCell(row[col], w), "\n") + 1
			}
		}
		return c
	}
	squeezed := false
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
			if squeezed {
				break
			}
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

func TestFitColumnsMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for k := range 120 {
		headers := []string{"FIELD", "VALUE", "ORIGIN", "SHADOWED"}[:1+r.IntN(4)]
		rows := make([][]string, r.IntN(16))
		for i := range rows {
			// Some rows are shorter than the headers.
			rows[i] = make([]string, len(headers)-r.IntN(2)*r.IntN(len(headers)))
			for j := range rows[i] {
				switch r.IntN(8) {
				case 0:
					// An empty cell, as in the rows that separate blocks.
				case 1:
					rows[i][j] = randomText(r, 60+r.IntN(120))
				case 2:
					rows[i][j] = randomASCIIText(r, 10+r.IntN(60))
				default:
					rows[i][j] = randomCellText(r)
				}
			}
		}
		width := 1 + r.IntN(220)
		if k%3 == 0 {
			width = 20 + r.IntN(140)
		}
		got := fitColumns(headers, measureCells(rows), width)
		want := referenceFitColumns(headers, rows, width)
		if !slices.Equal(got, want) {
			t.Fatalf("fitColumns(%q, width %d) = %v, want %v", rows, width, got, want)
		}
	}
}

// TestSharedCellsLayOutTheSame lays out tables whose rows repeat texts of a small pool, as the
// filter tables of a waypoint's services do, each alone and all with one cellCache on several
// goroutines (renderBlocks), in widths that make them wrap, and requires the same tables.
func TestSharedCellsLayOutTheSame(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	pool := make([]string, 40)
	for i := range pool {
		switch i % 3 {
		case 0:
			pool[i] = randomText(r, 20+r.IntN(100))
		case 1:
			pool[i] = randomASCIIText(r, 10+r.IntN(60))
		default:
			pool[i] = randomCellText(r)
		}
	}
	th := NewTheme(&strings.Builder{}, false)
	shared := th
	shared.cells = newCellCache()
	var alone, jobs []func() string
	for range 60 {
		headers := []string{"FIELD", "VALUE", "ORIGIN"}
		rows := make([][]string, 1+r.IntN(20))
		for i := range rows {
			rows[i] = make([]string, len(headers))
			for j := range rows[i] {
				rows[i][j] = pool[r.IntN(len(pool))]
			}
		}
		width := 30 + r.IntN(120)
		style := func(int, int) CellStyle { return th.Cell }
		alone = append(alone, func() string { return th.table(headers, rows, width, style) })
		jobs = append(jobs, func() string { return shared.table(headers, rows, width, style) })
	}
	want := make([]string, len(alone))
	for i, f := range alone {
		want[i] = f()
	}
	got := renderAll(jobs)
	if len(shared.cells.m) >= len(pool)+1 {
		t.Fatalf("the cache holds %d texts of a pool of %d", len(shared.cells.m), len(pool))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("table %d with shared cells:\n%s\nalone:\n%s", i, got[i], want[i])
		}
	}
}

// Objects with the same traces share their laid-out table (cellCache.table), and print as they
// would without any sharing, in both table formats.
func TestObjectsSharingTracesPrintAsCopies(t *testing.T) {
	base := clusterResult(t)
	shared, copied := *base, *base
	shared.Objects, copied.Objects = nil, nil
	for i := range 4 {
		for _, o := range base.Objects {
			o.Name = fmt.Sprintf("%s-%d", o.Name, i)
			shared.Objects = append(shared.Objects, o)
			o.Origins = slices.Clone(o.Origins)
			copied.Objects = append(copied.Objects, o)
			// As many traces, with other values: another table.
			if len(o.Origins) > 0 {
				o.Origins = slices.Clone(o.Origins)
				for k := range o.Origins {
					o.Origins[k].Value += " (changed)"
				}
				shared.Objects = append(shared.Objects, o)
				copied.Objects = append(copied.Objects, o)
			}
		}
	}
	for _, wide := range []bool{false, true} {
		p := &tablePrinter{opts: noColor, wide: wide}
		var b strings.Builder
		if err := p.Print(&b, &shared); err != nil {
			t.Fatal(err)
		}
		// The reference: a theme without a cache shares nothing.
		want := strings.Join(renderAll(p.result(NewTheme(&b, false), &copied)), "\n\n") + "\n"
		if got := b.String(); got != want {
			t.Errorf("wide %v: objects sharing their traces print differently:\n%s\nwithout sharing:\n%s", wide, got, want)
		}
	}
}

// renderAll is renderBlocks' blocks, in order.
func renderAll(jobs []func() string) []string {
	var out []string
	_ = renderBlocks(jobs, func(s string) error {
		out = append(out, s)
		return nil
	})
	return out
}

// TestRenderBlocksInOrder: blocks finished out of order are emitted in the order of the jobs,
// emit's error stops the rendering, and a rendering that panics panics on the caller's
// goroutine (where the command recovers it) instead of ending the process from a worker.
func TestRenderBlocksInOrder(t *testing.T) {
	var jobs []func() string
	for i := range 50 {
		jobs = append(jobs, func() string {
			time.Sleep(time.Duration((50-i)%7) * time.Millisecond)
			return strconv.Itoa(i)
		})
	}
	got := renderAll(jobs)
	for i := range jobs {
		if got[i] != strconv.Itoa(i) {
			t.Fatalf("blocks out of order: %v", got)
		}
	}

	var b strings.Builder
	if err := writeBlocks(&b, jobs[:3]); err != nil || b.String() != "0\n\n1\n\n2\n" {
		t.Errorf("writeBlocks = %q, %v", b.String(), err)
	}

	boom := errors.New("write failed")
	n := 0
	err := renderBlocks(jobs, func(string) error {
		n++
		if n == 3 {
			return boom
		}
		return nil
	})
	if err != boom || n != 3 {
		t.Errorf("renderBlocks after emit failed: %v, %d blocks emitted; want %v after 3", err, n, boom)
	}

	panicking := append(slices.Clone(jobs[:5]), func() string { panic("layout failed") })
	panicking = append(panicking, jobs[5:]...)
	func() {
		defer func() {
			if r := recover(); r != "layout failed" {
				t.Errorf("recovered %v, want the rendering's panic on the caller's goroutine", r)
			}
		}()
		_ = renderAll(panicking)
	}()
}
