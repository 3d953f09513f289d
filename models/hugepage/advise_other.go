//go:build !linux

package hugepage

import "errors"

func advise([]byte, bool) {}

func populate(b []byte) {
	for i := 0; i < len(b); i += 4096 {
		b[i] = 0
	}
}

// Worth: without Linux's huge pages a copy of a mapped file buys nothing.
func Worth(int) bool { return false }

// InCore: unknown without Linux's mincore.
func InCore(b []byte) (resident, pages int, err error) { return inCore(0, 0) }

func inCore(p, end uintptr) (resident, pages int, err error) {
	return 0, 0, errors.New("hugepage: InCore needs Linux")
}

// Available and Total: unknown here.
func Available() (int64, bool) { return 0, false }
func Total() (int64, bool)     { return 0, false }
