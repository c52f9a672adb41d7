//go:build unix

package source

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const svcA = "apiVersion: v1\nkind: Service\nmetadata: {name: a}\n"

// loadWithin fails the test when the load takes longer than a few seconds: before the bounds,
// a FIFO waited for a writer forever and /dev/zero was read until memory ran out.
func loadWithin(t *testing.T, s Spec) (snapKeys []string, iss []issue, err error) {
	t.Helper()
	type out struct {
		keys []string
		iss  []issue
		err  error
	}
	done := make(chan out, 1)
	go func() {
		snap, err := load(t.Context(), s, nil)
		if err != nil {
			done <- out{err: err}
			return
		}
		done <- out{keys: keys(snap), iss: issues(snap)}
	}()
	select {
	case o := <-done:
		return o.keys, o.iss, o.err
	case <-time.After(10 * time.Second):
		t.Fatalf("load of %v did not return within 10s", s.Files)
		return nil, nil, nil
	}
}

func TestFIFOAndSocketInADirectoryAreRefusedAndTheRestIsRead(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), svcA)
	fifo := filepath.Join(dir, "b.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "c.yaml")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got, iss, err := loadWithin(t, Spec{Files: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Service default/a"}, got); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	want := []issue{
		{Severity: "error", Position: fifo, Message: "not a regular file (a named pipe); it is skipped (pass its content with -f - to read it)"},
		{Severity: "error", Position: sock, Message: "not a regular file (a socket); it is skipped (pass its content with -f - to read it)"},
	}
	if diff := cmp.Diff(want, iss); diff != "" {
		t.Errorf("issues (-want +got):\n%s", diff)
	}
}

func TestDeviceNamedWithFIsRefused(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), svcA)
	got, iss, err := loadWithin(t, Spec{Files: []string{"/dev/zero", dir}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Service default/a"}, got); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	want := []issue{{Severity: "error", Position: "/dev/zero", Message: "not a regular file (a device); it is skipped (pass its content with -f - to read it)"}}
	if diff := cmp.Diff(want, iss); diff != "" {
		t.Errorf("issues (-want +got):\n%s", diff)
	}
}

func TestStdinOverTheInputLimitFailsFast(t *testing.T) {
	zero, err := os.Open("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	defer zero.Close()
	start := time.Now()
	_, _, err = loadWithin(t, Spec{Files: []string{"-"}, Stdin: zero, MaxInputBytes: 1 << 20})
	want := "standard input is larger than the input limit of 1048576 bytes (--max-input-bytes)"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %s, want under 2s", d)
	}
}

func TestFileOverTheInputLimitFailsBeforeReading(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	content := svcA + strings.Repeat("# padding\n", 200)
	write(t, big, content)
	_, _, err := loadWithin(t, Spec{Files: []string{dir}, MaxInputBytes: 1000})
	want := fmt.Sprintf("reading %s: the file has %d bytes, more than the input limit of 1000 bytes (--max-input-bytes)", big, len(content))
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
	// Under the limit, it loads.
	got, _, err := loadWithin(t, Spec{Files: []string{dir}, MaxInputBytes: int64(len(content))})
	if err != nil || len(got) != 1 {
		t.Errorf("at the limit: %v, %v", got, err)
	}
}

func TestDefaultInputLimit(t *testing.T) {
	if got := (Spec{}).maxInputBytes(); got != 256<<20 {
		t.Errorf("default limit = %d, want 256 MiB", got)
	}
	// One byte over a limit given as 0 (the default) fails as the default does.
	_, err := ReadStdin(io.LimitReader(zeroReader{}, DefaultMaxInputBytes+1), 0)
	if err == nil || !strings.Contains(err.Error(), "larger than the input limit of 268435456 bytes") {
		t.Errorf("error = %v, want the default limit", err)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestDanglingSymlinkAndSymlinkLoopUnderRAreWarnings(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "sub", "a.yaml"), svcA)
	dangling := filepath.Join(dir, "sub", "gone.yaml")
	if err := os.Symlink(filepath.Join(dir, "nowhere.yaml"), dangling); err != nil {
		t.Fatal(err)
	}
	loop1, loop2 := filepath.Join(dir, "loop1.yaml"), filepath.Join(dir, "loop2.yaml")
	if err := os.Symlink(loop2, loop1); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(loop1, loop2); err != nil {
		t.Fatal(err)
	}
	// A directory symlink to its parent is not followed (as before): the walk ends.
	if err := os.Symlink(dir, filepath.Join(dir, "sub", "up")); err != nil {
		t.Fatal(err)
	}
	got, iss, err := loadWithin(t, Spec{Files: []string{dir}, Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Service default/a"}, got); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	want := []issue{
		{Severity: "error", Position: loop1, Message: "cannot read this file (a symbolic link loop); it is skipped"},
		{Severity: "error", Position: loop2, Message: "cannot read this file (a symbolic link loop); it is skipped"},
		{Severity: "error", Position: dangling, Message: "cannot read this file (a symbolic link to a path that does not exist); it is skipped"},
	}
	if diff := cmp.Diff(want, iss); diff != "" {
		t.Errorf("issues (-want +got):\n%s", diff)
	}
}

func TestPanicWhilePreparingAFileIsAnIssueNamingIt(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), svcA)
	write(t, filepath.Join(dir, "b.yaml"), "apiVersion: v1\nkind: Service\nmetadata: {name: b}\n")
	bad := filepath.Join(dir, "b.yaml")
	testHookPrepare = func(name string) {
		if name == bad {
			panic("boom")
		}
	}
	defer func() { testHookPrepare = nil }()
	got, iss, err := loadWithin(t, Spec{Files: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Service default/a"}, got); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	want := []issue{{Severity: "error", Position: bad, Message: "cannot read this file: internal error: boom; it is skipped"}}
	if diff := cmp.Diff(want, iss); diff != "" {
		t.Errorf("issues (-want +got):\n%s", diff)
	}
}
