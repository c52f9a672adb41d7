// Package heaptune is the process tuning of the command's start, kept apart from the code that
// states Istio's rules: the start of the Go heap backed with transparent huge pages (this
// package's init) and the starting heap size before the collector runs at its usual pace
// (AdjustStartingHeap).
//
// Huge pages: on Linux the kernel gives them only to memory that asks (transparent_hugepage set
// to madvise, the default of many distributions).
//
// A command's heap is fresh memory: every 4 KiB page of it is first touched through a page
// fault, and on a virtual machine a fault can cost 10 µs or more, so a command that allocates
// 13 MiB spends tens of milliseconds faulting. A 2 MiB huge page is one fault. The Go runtime
// no longer asks for huge pages itself, and its heap grows by mapping new memory, so advice
// given to memory it has not mapped yet is lost. The package's init therefore allocates one
// block (the runtime maps it and does not touch it), advises the kernel to back it with huge
// pages (madvise MADV_HUGEPAGE), and frees it with a collection: the allocations that follow
// reuse its pages, lowest address first.
//
// Import it from a main package (the command calls AdjustStartingHeap; the benchmark's
// bare-reads client imports it for its init alone): its init runs before those of the large
// packages (the Go runtime initializes, of the packages whose imports are initialized, the one
// with the smallest import path first, and this one imports only the standard library), so most
// allocations of initialization land in the advised block too. Setting the environment variable
// MESH_EXPLAIN_HUGEPAGES=0, or GODEBUG=disablethp=1, turns it off. On other systems, or when the
// kernel gives huge pages always or never, it does nothing.
//
// It owns: the start of the heap. It may import: the standard library only.
package heaptune
