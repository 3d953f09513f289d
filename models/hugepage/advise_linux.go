package hugepage

import "syscall"

// advise asks for huge pages; an old kernel or THP=never just says no.
func advise(b []byte) { _ = syscall.Madvise(b, 14 /* MADV_HUGEPAGE */) }
