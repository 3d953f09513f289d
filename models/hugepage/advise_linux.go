package hugepage

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// advise asks for huge pages (an old kernel or THP=never just says no), or
// with huge false for 4 KiB pages only.
func advise(b []byte, huge bool) {
	advice := 15 // MADV_NOHUGEPAGE
	if huge {
		advice = 14 // MADV_HUGEPAGE
	}
	if len(b) > 0 {
		_ = syscall.Madvise(b, advice)
	}
}

// populate faults b's pages in with one madvise(MADV_POPULATE_WRITE)
// (Linux 5.14), or by writing a zero to each 4 KiB page where the kernel
// is older.
func populate(b []byte) {
	if len(b) == 0 || syscall.Madvise(b, 23 /* MADV_POPULATE_WRITE */) == nil {
		return
	}
	for i := 0; i < len(b); i += 4096 {
		b[i] = 0
	}
}

// InCore reports how many of the 4 KiB pages b spans are resident
// (mincore), for tests and diagnostics.
func InCore(b []byte) (resident, pages int, err error) {
	if len(b) == 0 {
		return 0, 0, nil
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return inCore(p, p+uintptr(len(b)))
}

// inCore is InCore of the addresses [p, end), which need not be one Go
// object (a slice across objects is invalid: checkptr stops it).
func inCore(p, end uintptr) (resident, pages int, err error) {
	start := p &^ 4095
	vec := make([]byte, (end-start+4095)/4096)
	if _, _, e := syscall.Syscall(syscall.SYS_MINCORE, start, end-start, uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		return 0, len(vec), e
	}
	for _, v := range vec {
		resident += int(v & 1)
	}
	return resident, len(vec), nil
}

// Worth reports whether copying n bytes of a mapped file into huge-page
// memory is worth it and safe: a quarter of the machine's memory stays
// available after it (so a model larger than memory keeps being read from
// its mapping, as before), and THP is not off.
func Worth(n int) bool {
	if n < small {
		return false // not a stream a TLB notices
	}
	if b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || strings.Contains(string(b), "[never]") {
		return false
	}
	total, avail := meminfo()
	return total > 0 && avail-int64(n) > total/4
}

// Available is the memory the kernel can give without swapping
// (MemAvailable); false when unknown.
func Available() (int64, bool) {
	_, avail := meminfo()
	return avail, avail > 0
}

// Total is the machine's memory (MemTotal); false when unknown.
func Total() (int64, bool) {
	total, _ := meminfo()
	return total, total > 0
}

// meminfo returns MemTotal and MemAvailable in bytes (0 when unknown).
func meminfo() (total, avail int64) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "MemTotal":
			total = kb << 10
		case "MemAvailable":
			avail = kb << 10
		}
	}
	return total, avail
}
