package kernels

import "unsafe"

// Prefetch asks the CPU to bring s into its caches, a 64-byte line at a
// time, without waiting for it. Attention calls it on the next block of
// cached rows while it works on this one: it reads each row a head slice at
// a time, a stride the hardware prefetchers do not follow, so without it
// every head waits on memory.
func Prefetch[T any](s []T) {
	if len(s) == 0 {
		return
	}
	var z T
	prefetch(unsafe.Pointer(unsafe.SliceData(s)), len(s)*int(unsafe.Sizeof(z)))
}
