//go:build !linux

package heaptune

// advised is empty: only Linux is advised.
var advised struct{ lo, hi uintptr }
