package hugepage

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestBytes: every size comes back zeroed, of its length and capacity,
// 64-byte aligned, and buffers never overlap.
func TestBytes(t *testing.T) {
	var bufs [][]byte
	for _, n := range []int{0, 1, 100, small - 1, small, small + 1, 1 << 20, 3 << 20, chunk/2 + 1, 20 << 20} {
		b := Bytes(n)
		if len(b) != n || cap(b) != n {
			t.Fatalf("Bytes(%d): len %d cap %d", n, len(b), cap(b))
		}
		for i, v := range b {
			if v != 0 {
				t.Fatalf("Bytes(%d)[%d] = %d", n, i, v)
			}
		}
		if n >= small && uintptr(unsafe.Pointer(&b[0]))%64 != 0 {
			t.Fatalf("Bytes(%d) at %p: not 64-byte aligned", n, &b[0])
		}
		for i := range b {
			b[i] = 0xff
		}
		bufs = append(bufs, b)
	}
	for _, b := range bufs {
		for i, v := range b {
			if v != 0xff {
				t.Fatalf("a later buffer overwrote byte %d of one of %d bytes", i, len(b))
			}
		}
	}
	if f := Floats(3 << 20); len(f) != 3<<20 {
		t.Fatalf("Floats: len %d", len(f))
	}
}

// TestWorth: a small buffer is never worth a copy, nor one larger than
// memory could hold.
func TestWorth(t *testing.T) {
	if Worth(small - 1) {
		t.Error("Worth(small-1) = true")
	}
	if Worth(1 << 62) {
		t.Error("Worth(4 EiB) = true")
	}
}

// TestResident: a huge-page buffer is resident when Bytes returns it (what
// keeps page faults out of a decode step, see alloc), and zero.
func TestResident(t *testing.T) {
	b := Bytes(16 << 20)
	in, pages, err := InCore(b)
	if err != nil {
		t.Skipf("mincore: %v", err)
	}
	if in != pages {
		t.Fatalf("%d of %d pages are resident", in, pages)
	}
	for i, v := range b {
		if v != 0 {
			t.Fatalf("byte %d is %d", i, v)
		}
	}
}

// TestTail: a large buffer a little over whole huge pages is advised for
// huge pages over its whole ones only: its last bytes get 4 KiB pages, not
// a whole 2 MiB page for a few KiB (the kernel's VmFlags: hg, nh). Read
// from the mappings, not from residency: the heap may hand the memory
// past b to another object, resident or not.
func TestTail(t *testing.T) {
	n := 2*page + page/8
	b := Bytes(n)
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	head, err := vmFlags(start)
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	tail, err := vmFlags(start + uintptr(n) - 1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(head, "hg") || !slices.Contains(tail, "nh") {
		t.Fatalf("VmFlags of b's first byte %v, of its last %v; want hg, then nh", head, tail)
	}
}

// vmFlags reads the VmFlags of the mapping holding address a.
func vmFlags(a uintptr) ([]string, error) {
	f, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return nil, err
	}
	in := false
	for line := range strings.Lines(string(f)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(fields[0], "-"); ok && !strings.HasSuffix(fields[0], ":") {
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				in = uint64(a) >= l && uint64(a) < h
				continue
			}
		}
		if in && fields[0] == "VmFlags:" {
			return fields[1:], nil
		}
	}
	return nil, fmt.Errorf("no mapping holds %#x", a)
}
