package kernels

import "unsafe"

// Prefetch asks for the cache lines of n bytes from p (PREFETCHT0 on amd64;
// nothing elsewhere): memory a step will soon read or write, which the
// hardware prefetchers cannot guess (a cache row written after a product,
// the first rows of another sequence's cache). It never faults.
func Prefetch(p unsafe.Pointer, n int) {
	if n > 0 && p != nil {
		prefetchAsm((*byte)(p), n)
	}
}
