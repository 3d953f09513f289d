//go:build !linux

package hugepage

func advise([]byte) {}

// Worth: without Linux's huge pages a copy of a mapped file buys nothing.
func Worth(int) bool { return false }
