package hugepage

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// advise asks for huge pages; an old kernel or THP=never just says no.
func advise(b []byte) { _ = syscall.Madvise(b, 14 /* MADV_HUGEPAGE */) }

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
