//go:build amd64 && !purego

package kernels

import "unsafe"

//go:noescape
func prefetchLines(p unsafe.Pointer, n int)

func prefetch(p unsafe.Pointer, n int) { prefetchLines(p, n) }
