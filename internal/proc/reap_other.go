//go:build !linux

package proc

// BecomeSubreaper is a no-op where the kernel has no child subreaper:
// there the run marks in the environment are what finds escapees.
func BecomeSubreaper() error { return nil }
