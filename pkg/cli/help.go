package cli

import (
	"strings"
)

// longDesc normalises a long description written as an indented raw string: the common
// indentation and surrounding blank lines are removed (kubectl's templates.LongDesc).
func longDesc(s string) string {
	return strings.Join(dedent(s), "\n")
}

// examples normalises an examples block written as an indented raw string: the common
// indentation is removed and every line indented by two spaces (kubectl's templates.Examples).
func examples(s string) string {
	lines := dedent(s)
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "\n")
}

// dedent splits s into lines, drops leading and trailing blank lines, and removes the
// indentation every non-blank line shares. Tabs count as one column.
func dedent(s string) []string {
	lines := strings.Split(s, "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if common < 0 || n < common {
			common = n
		}
	}
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			lines[i] = ""
			continue
		}
		lines[i] = strings.TrimRight(l[max(common, 0):], " \t")
	}
	return lines
}
