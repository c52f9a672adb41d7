//go:build linux

package heaptune

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"
)

// TestInitAdvisesTheHeap checks what init did in this test binary: where the kernel gives huge
// pages on request, the advised range is in a mapping the kernel flags as advised ("hg"), and
// the heap's next allocations reuse it; elsewhere nothing is advised.
func TestInitAdvisesTheHeap(t *testing.T) {
	if !onRequest(enabledFile) || os.Getenv("MESH_EXPLAIN_HUGEPAGES") == "0" || thpDisabled(os.Getenv("GODEBUG")) {
		if advised.lo != 0 || advised.hi != 0 {
			t.Fatalf("advised %#x-%#x, but huge pages are not given on request here", advised.lo, advised.hi)
		}
		return
	}
	if advised.hi-advised.lo < blockSize-hugePageSize {
		t.Fatalf("advised %#x-%#x: less than the block", advised.lo, advised.hi)
	}
	if flags := vmFlags(t, advised.lo); !strings.Contains(" "+flags+" ", " hg ") {
		t.Fatalf("the mapping of %#x has flags %q, without hg (MADV_HUGEPAGE)", advised.lo, flags)
	}
	// The freed block is reused: among a few MiB allocated now, some land in it.
	var in int
	keep := make([][]byte, 0, 64)
	for range 64 {
		b := make([]byte, 64<<10)
		keep = append(keep, b)
		if p := uintptr(unsafe.Pointer(&b[0])); p >= advised.lo && p < advised.hi {
			in++
		}
	}
	if in == 0 {
		t.Fatalf("none of %d allocations is in the advised range %#x-%#x", len(keep), advised.lo, advised.hi)
	}
}

// vmFlags returns the VmFlags of the mapping that holds addr, from /proc/self/smaps.
func vmFlags(t *testing.T, addr uintptr) string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	inside := false
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 {
			inside = addr >= lo && addr < hi
			continue
		}
		if inside && strings.HasPrefix(line, "VmFlags:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmFlags:"))
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return ""
}

func TestOnRequest(t *testing.T) {
	dir := t.TempDir()
	for mode, want := range map[string]bool{
		"always [madvise] never\n": true,
		"[always] madvise never\n": false,
		"always madvise [never]\n": false,
		"":                         false,
	} {
		file := filepath.Join(dir, "enabled")
		if err := os.WriteFile(file, []byte(mode), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := onRequest(file); got != want {
			t.Errorf("onRequest(%q) = %v, want %v", mode, got, want)
		}
	}
	if onRequest(filepath.Join(dir, "missing")) {
		t.Error("onRequest of a missing file = true")
	}
}

func TestTHPDisabled(t *testing.T) {
	for godebug, want := range map[string]bool{
		"":                          false,
		"disablethp=1":              true,
		"gctrace=1,disablethp=1":    true,
		"disablethp=0":              false,
		"disablethp=2":              true,
		"disablethp=1,disablethp=0": false,
		"madvdontneed=1":            false,
		"xdisablethp=1":             false,
	} {
		if got := thpDisabled(godebug); got != want {
			t.Errorf("thpDisabled(%q) = %v, want %v", godebug, got, want)
		}
	}
}
