package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want string
	}{
		{name: "equal", a: "x\n", b: "x\n", want: ""},
		{
			name: "one line changed in the middle keeps three lines of context",
			a:    "1\n2\n3\n4\n5\n6\n7\n8\n9\n",
			b:    "1\n2\n3\n4\nfive\n6\n7\n8\n9\n",
			want: "--- a\n+++ b\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n",
		},
		{
			name: "distant changes make two hunks",
			a:    "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n",
			b:    "one\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\ntwelve\n",
			want: "--- a\n+++ b\n@@ -1,4 +1,4 @@\n-1\n+one\n 2\n 3\n 4\n@@ -9,4 +9,4 @@\n 9\n 10\n 11\n-12\n+twelve\n",
		},
		{
			name: "insertion into empty",
			a:    "",
			b:    "x\n",
			want: "--- a\n+++ b\n@@ -0,0 +1 @@\n+x\n",
		},
		{
			name: "missing final newline is marked",
			a:    "x\n",
			b:    "x",
			want: "--- a\n+++ b\n@@ -1 +1 @@\n-x\n+x\n\\ No newline at end of file\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Diff("a", "b", tt.a, tt.b); got != tt.want {
				t.Errorf("Diff() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// recorder captures failures so Compare can be tested without failing this test.
type recorder struct {
	testing.TB
	msgs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.msgs = append(r.msgs, format)
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.msgs = append(r.msgs, format)
}

func TestCompare(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.golden")
	if err := Write(path, []byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	r := &recorder{TB: t}
	Compare(r, []byte("hello\n"), path)
	if len(r.msgs) != 0 {
		t.Fatalf("equal content reported a failure: %v", r.msgs)
	}
	Compare(r, []byte("bye\n"), path)
	if len(r.msgs) != 1 || !strings.Contains(r.msgs[0], "differs") {
		t.Fatalf("different content not reported: %v", r.msgs)
	}
	r.msgs = nil
	Compare(r, []byte("x"), filepath.Join(dir, "missing.golden"))
	if len(r.msgs) != 1 {
		t.Fatalf("missing golden file not reported: %v", r.msgs)
	}
}

func TestUpdateFromEnvironment(t *testing.T) {
	t.Setenv("UPDATE_GOLDEN", "1")
	if !Update() {
		t.Fatal("UPDATE_GOLDEN=1 does not switch on update mode")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "new.golden")
	Assert(t, []byte("content\n"), path)
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "content\n" {
		t.Fatalf("update mode did not write the golden file: %q, %v", got, err)
	}
	t.Setenv("UPDATE_GOLDEN", "0")
	if Update() && !*update {
		t.Fatal("UPDATE_GOLDEN=0 switches on update mode")
	}
}
