// Package golden compares test output with golden files and rewrites them on request.
//
// Run `go test ./pkg/render/... -update` (or set UPDATE_GOLDEN=1, which also works for
// `go test ./...`) to rewrite every golden file a test asserts; then review the diff like code.
//
// It owns: Assert, Update, the -update flag and the unified diff shown on mismatch.
// It may import: the standard library only. Only tests import it.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files with the actual output")

// Update reports whether golden files are being rewritten (-update or UPDATE_GOLDEN=1).
func Update() bool {
	if *update {
		return true
	}
	v := os.Getenv("UPDATE_GOLDEN")
	return v != "" && v != "0" && v != "false"
}

// Assert fails t when got differs from the content of the golden file at path, showing a
// unified diff. In update mode it writes got to path instead (creating directories).
func Assert(t testing.TB, got []byte, path string) {
	t.Helper()
	if Update() {
		if err := Write(path, got); err != nil {
			t.Fatal(err)
		}
		return
	}
	Compare(t, got, path)
}

// Compare is Assert without update mode: it never writes.
func Compare(t testing.TB, got []byte, path string) {
	t.Helper()
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file: %v (run the test with -update to create it)", err)
		return
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run the test with -update to accept it):\n%s",
			path, Diff("want "+filepath.ToSlash(path), "got", string(want), string(got)))
	}
}

// Write writes data to path, creating its directory.
func Write(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating golden directory: %w", err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("writing golden file: %w", err)
	}
	return nil
}

// context is the number of unchanged lines shown around each change.
const context = 3

// maxCells bounds the LCS table; beyond it the diff falls back to one replace hunk.
const maxCells = 25_000_000

// Diff returns a unified diff from a to b, or "" when they are equal. Lines missing a final
// newline are marked the way diff(1) does.
func Diff(nameA, nameB, a, b string) string {
	if a == b {
		return ""
	}
	al, bl := splitLines(a), splitLines(b)
	ops := diffLines(al, bl)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", nameA, nameB)
	for _, h := range hunks(ops) {
		writeHunk(&out, h, al, bl)
	}
	return out.String()
}

// splitLines splits s after each newline, keeping the newline; a last line without one gets
// the diff(1) marker so a missing final newline is visible.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	} else {
		lines[len(lines)-1] += "\n\\ No newline at end of file\n"
	}
	return lines
}

type opKind byte

const (
	opEqual  opKind = ' '
	opDelete opKind = '-'
	opInsert opKind = '+'
)

type op struct {
	kind opKind
	a, b int // line indexes in a and b (the one that does not apply is the next line's index)
}

// diffLines returns an edit script from a to b: common prefix and suffix, and a longest common
// subsequence of the middle.
func diffLines(a, b []string) []op {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []op
	for i := 0; i < pre; i++ {
		ops = append(ops, op{opEqual, i, i})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	ops = append(ops, lcsScript(ma, mb, pre)...)
	for i := 0; i < suf; i++ {
		ops = append(ops, op{opEqual, len(a) - suf + i, len(b) - suf + i})
	}
	return ops
}

func lcsScript(a, b []string, off int) []op {
	n, m := len(a), len(b)
	var ops []op
	if n*m > maxCells {
		for i := range a {
			ops = append(ops, op{opDelete, off + i, off})
		}
		for j := range b {
			ops = append(ops, op{opInsert, off + n, off + j})
		}
		return ops
	}
	// l[i][j] is the LCS length of a[i:] and b[j:].
	l := make([][]int32, n+1)
	for i := range l {
		l[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, op{opEqual, off + i, off + j})
			i++
			j++
		case i < n && (j == m || l[i+1][j] >= l[i][j+1]):
			ops = append(ops, op{opDelete, off + i, off + j})
			i++
		default:
			ops = append(ops, op{opInsert, off + i, off + j})
			j++
		}
	}
	return ops
}

// hunks groups the script into runs of changes with up to `context` equal lines around them.
func hunks(ops []op) [][]op {
	var out [][]op
	i := 0
	for i < len(ops) {
		for i < len(ops) && ops[i].kind == opEqual {
			i++
		}
		if i == len(ops) {
			break
		}
		start := max(0, i-context)
		end := i
		for end < len(ops) {
			if ops[end].kind != opEqual {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == opEqual {
				run++
			}
			if run == len(ops) || run-end > 2*context {
				end = min(run, end+context)
				break
			}
			end = run
		}
		out = append(out, ops[start:end])
		i = end
	}
	return out
}

func writeHunk(out *strings.Builder, h []op, a, b []string) {
	aStart, bStart := h[0].a, h[0].b
	var aLen, bLen int
	for _, o := range h {
		switch o.kind {
		case opEqual:
			aLen++
			bLen++
		case opDelete:
			aLen++
		case opInsert:
			bLen++
		}
	}
	fmt.Fprintf(out, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
	for _, o := range h {
		line := ""
		switch o.kind {
		case opEqual, opDelete:
			line = a[o.a]
		case opInsert:
			line = b[o.b]
		}
		out.WriteByte(byte(o.kind))
		out.WriteString(line)
	}
}

// hunkRange spells a hunk range as diff(1) does: 1-based start, length omitted when 1, and
// the line before the hunk when the range is empty.
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	default:
		return fmt.Sprintf("%d,%d", start+1, n)
	}
}
