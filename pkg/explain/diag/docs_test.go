package diag

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
)

// docsPath is docs/diagnostics.md, from this package's folder.
var docsPath = filepath.Join("..", "..", "..", "docs", "diagnostics.md")

var (
	headingRe      = regexp.MustCompile(`^## ([A-Z][0-9]+) — (.+)$`)
	severityRe     = regexp.MustCompile(`^Severity: (\w+)(?: \(some cases: (\w+)\))?\. Constant: ` + "`diag\\.(\\w+)`" + `\.$`)
	looseHeadingRe = regexp.MustCompile(`^## [A-Z][0-9]+\b`)
	linkRe         = regexp.MustCompile(`\]\(\.\./(testdata/[^)]+)\)`)
)

type docEntry struct {
	title, constant string
	severities      []explain.Severity
	links           []string
}

// readDocs returns the entries of docs/diagnostics.md by ID, and the IDs in their order.
func readDocs(t *testing.T) (map[string]*docEntry, []string) {
	t.Helper()
	f, err := os.Open(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]*docEntry{}
	var order []string
	var cur *docEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if m := headingRe.FindStringSubmatch(line); m != nil {
			if out[m[1]] != nil {
				t.Errorf("docs/diagnostics.md: %s has two sections", m[1])
			}
			cur = &docEntry{title: m[2]}
			out[m[1]] = cur
			order = append(order, m[1])
			continue
		}
		if strings.HasPrefix(line, "## ") {
			if looseHeadingRe.MatchString(line) {
				t.Errorf("docs/diagnostics.md: heading %q is not `## ID — title`", line)
			}
			cur = nil
		}
		if cur == nil {
			continue
		}
		if m := severityRe.FindStringSubmatch(line); m != nil {
			cur.severities = append(cur.severities, explain.Severity(m[1]))
			if m[2] != "" {
				cur.severities = append(cur.severities, explain.Severity(m[2]))
			}
			cur.constant = m[3]
		}
		for _, m := range linkRe.FindAllStringSubmatch(line, -1) {
			cur.links = append(cur.links, m[1])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out, order
}

// TestDocsListEveryID fails when an ID is in the catalogue but not in docs/diagnostics.md, or
// the other way round, or when the title, severities or constant name differ.
func TestDocsListEveryID(t *testing.T) {
	docs, order := readDocs(t)
	names := constantNames(t)
	var want []string
	for _, e := range Catalogue {
		id := string(e.ID)
		want = append(want, id)
		d := docs[id]
		if d == nil {
			t.Errorf("%s (%s) is in the catalogue but has no section `## %s — %s` in docs/diagnostics.md", id, e.Title, id, e.Title)
			continue
		}
		if d.title != e.Title {
			t.Errorf("%s: docs/diagnostics.md says %q, the catalogue %q", id, d.title, e.Title)
		}
		if !slices.Equal(d.severities, e.Severities()) {
			t.Errorf("%s: docs/diagnostics.md gives severities %v, the catalogue %v", id, d.severities, e.Severities())
		}
		if d.constant != names[e.ID] {
			t.Errorf("%s: docs/diagnostics.md names constant %q, the catalogue %q", id, d.constant, names[e.ID])
		}
		for _, l := range d.links {
			if _, err := os.Stat(filepath.Join("..", "..", "..", l)); err != nil {
				t.Errorf("%s: docs/diagnostics.md links %s, which does not exist", id, l)
			}
		}
	}
	for id := range docs {
		if _, ok := ID(id).Entry(); !ok {
			t.Errorf("docs/diagnostics.md has a section for %s, which is not in the catalogue", id)
		}
	}
	if !slices.Equal(order, want) {
		t.Errorf("docs/diagnostics.md lists the IDs in the order %v, the catalogue in %v", order, want)
	}
}

// constantNames reads the Go names of the ID constants from catalogue.go.
func constantNames(t *testing.T) map[ID]string {
	t.Helper()
	src, err := os.ReadFile("catalogue.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[ID]string{}
	for _, m := range regexp.MustCompile(`(?m)^\t(\w+)\s+ID = "(\w+)"$`).FindAllStringSubmatch(string(src), -1) {
		out[ID(m[2])] = m[1]
	}
	return out
}

// TestCatalogue checks the catalogue itself: one entry per constant, the IDs of each letter in
// number order (D first, then A), each with a known severity, a title and a fix.
func TestCatalogue(t *testing.T) {
	names := constantNames(t)
	if len(names) != len(Catalogue) {
		t.Errorf("catalogue.go declares %d ID constants and %d entries", len(names), len(Catalogue))
	}
	seen := map[ID]bool{}
	for i, e := range Catalogue {
		if seen[e.ID] {
			t.Errorf("%s has two entries", e.ID)
		}
		seen[e.ID] = true
		if names[e.ID] == "" {
			t.Errorf("%s has an entry but no constant", e.ID)
		}
		if !regexp.MustCompile(`^[DASW][0-9]+$`).MatchString(string(e.ID)) {
			t.Errorf("%s is not a letter (D, A, S or W) and a number", e.ID)
		}
		for _, s := range e.Severities() {
			if s != explain.SeverityError && s != explain.SeverityWarning && s != explain.SeverityInfo {
				t.Errorf("%s: unknown severity %q", e.ID, s)
			}
		}
		if e.Title == "" || e.Fix == "" {
			t.Errorf("%s: title and fix are required", e.ID)
		}
		if prev := Catalogue[max(i-1, 0)].ID; i > 0 && prev[0] == e.ID[0] && CompareIDs(string(prev), string(e.ID)) >= 0 {
			t.Errorf("%s comes after %s: each letter's IDs are in number order", e.ID, prev)
		}
	}
}

func TestNewTakesTheCatalogueSeverity(t *testing.T) {
	for _, e := range Catalogue {
		if d := e.ID.New("m", "f"); d.ID != string(e.ID) || d.Severity != e.Severity || d.Message != "m" || d.Fix != "f" {
			t.Errorf("%s.New = %+v", e.ID, d)
		}
	}
}

func TestSort(t *testing.T) {
	d := func(id string, sev explain.Severity, msg, fix string) explain.Diagnostic {
		return explain.Diagnostic{ID: id, Severity: sev, Message: msg, Fix: fix}
	}
	in := []explain.Diagnostic{
		d("D10", explain.SeverityError, "b", "x"),
		d("D2", explain.SeverityError, "b", "x"),
		d("A05", explain.SeverityError, "a", "x"),
		d("D9", explain.SeverityInfo, "a", "x"),
		d("D2", explain.SeverityError, "b", "y"),
		d("D2", explain.SeverityError, "a", "x"),
		d("D2", explain.SeverityWarning, "a", "x"),
		d("D10", explain.SeverityError, "b", "x"),
	}
	ids := func(ds []explain.Diagnostic) []string {
		var out []string
		for _, x := range ds {
			out = append(out, x.ID+"/"+string(x.Severity)[:1]+"/"+x.Message+"/"+x.Fix)
		}
		return out
	}
	for _, tc := range []struct {
		dup  Duplicates
		want []string
	}{
		{KeepAll, []string{"A05/e/a/x", "D2/e/a/x", "D2/e/b/x", "D2/e/b/y", "D10/e/b/x", "D10/e/b/x", "D2/w/a/x", "D9/i/a/x"}},
		{SameMessage, []string{"A05/e/a/x", "D2/e/a/x", "D2/e/b/x", "D10/e/b/x", "D2/w/a/x", "D9/i/a/x"}},
		{Identical, []string{"A05/e/a/x", "D2/e/a/x", "D2/e/b/x", "D2/e/b/y", "D10/e/b/x", "D2/w/a/x", "D9/i/a/x"}},
	} {
		got := ids(Sort(slices.Clone(in), tc.dup))
		if !slices.Equal(got, tc.want) {
			t.Errorf("Sort(%d):\n got %v\nwant %v", tc.dup, got, tc.want)
		}
	}
}
