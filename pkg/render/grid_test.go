package render

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/lipgloss/table"
	"github.com/muesli/termenv"
)

// lipglossTable is how the table output was laid out before layoutTable: lipgloss's table with
// hidden borders and the column separator only, every style padded right by cellPadding, and
// the trailing blanks of every line trimmed.
func lipglossTable(header lipgloss.Style, headers []string, rows [][]string, style func(row, col int) lipgloss.Style) string {
	out := table.New().
		Border(lipgloss.HiddenBorder()).
		BorderTop(false).BorderBottom(false).BorderLeft(false).BorderRight(false).
		BorderHeader(false).BorderColumn(true).BorderRow(false).
		Headers(headers...).
		Rows(rows...).
		StyleFunc(func(row, col int) lipgloss.Style {
			if row == table.HeaderRow {
				return header.PaddingRight(cellPadding)
			}
			return style(row, col).PaddingRight(cellPadding)
		}).
		String()
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// TestLayoutMatchesLipglossTable lays out random tables of wrapped cells, with and without
// colour, both ways: the rows of each table vary in length and height, cells hold wide,
// zero-width and combining runes, empty lines and runs of spaces, and every cell has one of
// the theme's kinds of style.
func TestLayoutMatchesLipglossTable(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, profile := range []termenv.Profile{termenv.Ascii, termenv.ANSI} {
		lr := lipgloss.NewRenderer(nil)
		lr.SetColorProfile(profile)
		styles := []lipgloss.Style{
			lr.NewStyle(),
			lr.NewStyle().Bold(true),
			lr.NewStyle().Faint(true),
			lr.NewStyle().Foreground(lipgloss.Color("2")),
			lr.NewStyle().Bold(true).Foreground(lipgloss.Color("1")),
		}
		for k := range 400 {
			headers := []string{"FIELD", "VALUE", "ORIGIN", "SHADOWED"}[:1+r.IntN(4)]
			rows := make([][]string, r.IntN(12))
			kinds := make([][]int, len(rows))
			for i := range rows {
				rows[i] = make([]string, max(1, len(headers)+r.IntN(3)-1))
				kinds[i] = make([]int, len(headers)+2)
				for j := range kinds[i] {
					kinds[i][j] = r.IntN(len(styles))
				}
				for j := range rows[i] {
					switch r.IntN(6) {
					case 0:
					case 1:
						rows[i][j] = randomASCIIText(r, r.IntN(40))
					default:
						rows[i][j] = expandTabs(randomCellText(r))
					}
				}
			}
			header := styles[k%len(styles)]
			want := lipglossTable(header, headers, rows, func(row, col int) lipgloss.Style { return styles[kinds[row][col]] })
			got := layoutTable(cellStyleOf(header), headers, measureCells(rows), func(row, col int) CellStyle {
				return cellStyleOf(styles[kinds[row][col]])
			})
			if got != want {
				t.Fatalf("profile %v, headers %q, rows %q:\n got %q\nwant %q", profile, headers, rows, got, want)
			}
		}
	}
}
