//go:build !linux

package hugepages

// advised is empty: only Linux is advised.
var advised struct{ lo, hi uintptr }
