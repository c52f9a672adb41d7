package heaptune

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// blockSize is the part of the heap that is advised: the heap a command grows to before the
// collector runs at its usual pace (cmd/kubectl-mesh_explain startHeap). Memory the advice
// covers but the heap never reaches costs nothing: it is never touched.
const blockSize = 64 << 20

// hugePageSize is the size of a transparent huge page on amd64 and arm64 with 4 KiB pages.
const hugePageSize = 2 << 20

// enabledFile holds the kernel's transparent huge page mode, the chosen one in brackets.
const enabledFile = "/sys/kernel/mm/transparent_hugepage/enabled"

// advised is the range of the heap advised to use huge pages; empty when nothing was advised.
var advised struct{ lo, hi uintptr }

func init() {
	if os.Getenv("MESH_EXPLAIN_HUGEPAGES") == "0" || thpDisabled(os.Getenv("GODEBUG")) || !onRequest(enabledFile) {
		return
	}
	advised.lo, advised.hi = advise(blockSize)
}

// thpDisabled reports whether GODEBUG asks the runtime to keep its heap off huge pages
// (disablethp set to a number other than 0), read as the runtime reads it: comma-separated
// settings, the last one winning.
func thpDisabled(godebug string) bool {
	off := false
	for _, kv := range strings.Split(godebug, ",") {
		if v, ok := strings.CutPrefix(kv, "disablethp="); ok {
			n, err := strconv.Atoi(v)
			off = err == nil && n != 0
		}
	}
	return off
}

// onRequest reports whether the kernel backs memory with transparent huge pages only where
// it is advised to.
func onRequest(file string) bool {
	mode, err := os.ReadFile(file)
	return err == nil && bytes.Contains(mode, []byte("[madvise]"))
}

// advise allocates n bytes, advises the huge-page-aligned part of them to use huge pages, and
// frees them; it returns the advised range, empty when the kernel refused the advice.
func advise(n int) (lo, hi uintptr) {
	block := make([]byte, n)
	start := uintptr(unsafe.Pointer(unsafe.SliceData(block)))
	lo = (start + hugePageSize - 1) &^ (hugePageSize - 1)
	hi = (start + uintptr(n)) &^ (hugePageSize - 1)
	if hi <= lo {
		return 0, 0
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, syscall.MADV_HUGEPAGE); errno != 0 {
		lo, hi = 0, 0
	}
	// Past its last use the block is garbage: a collection frees its pages for the allocations
	// that follow.
	runtime.KeepAlive(block)
	runtime.GC()
	return lo, hi
}
