package cli

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
)

// TestTablesFitTheWidth renders the table and wide output of every scenario folder, and check
// over every folder, at 80, 100, 120 and 200 columns (COLUMNS, as when piped) and fails on any
// line wider than that.
func TestTablesFitTheWidth(t *testing.T) {
	t.Chdir(repoRoot(t))
	type run struct {
		name string
		args []string
	}
	var runs []run
	for _, kind := range []string{"cluster", "authz", "sidecar"} {
		for _, dir := range scenarioDirs(t, kind) {
			args := scenarioArgs(t, dir)
			if kind == "authz" && len(args) > 0 && strings.Contains(dir, "sidecar-pod") {
				continue // a sidecar pod's ztunnel scenario: `authz` answers it as a sidecar elsewhere
			}
			runs = append(runs, run{kind + "/" + filepath.Base(dir), append(args, "-f", dir)})
			runs = append(runs, run{"check/" + kind + "/" + filepath.Base(dir), []string{"check", "-A", "-f", dir, "--fail-on", "never"}})
		}
	}
	for _, width := range []int{80, 100, 120, 200} {
		t.Setenv("COLUMNS", strconv.Itoa(width))
		for _, r := range runs {
			for _, format := range []string{"table", "wide"} {
				args := append(append([]string{}, r.args...), "-o", format, "--color", "never")
				res := runMain(t, "", args...)
				if res.stdout == "" {
					continue // an error case (its message is checked elsewhere)
				}
				for i, line := range strings.Split(res.stdout, "\n") {
					if w := lipgloss.Width(line); w > width {
						t.Errorf("%s -o %s at %d columns: line %d is %d wide:\n%s", r.name, format, width, i+1, w, line)
					}
				}
			}
		}
	}
}
