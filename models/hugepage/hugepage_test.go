package hugepage

import (
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

// TestTail: a large buffer a little over whole huge pages makes only its
// own bytes resident, not a whole 2 MiB page for its last ones (4 KiB pages
// there). With THP off both come to the same and the test passes anyway.
func TestTail(t *testing.T) {
	n := 2*page + page/8
	b := Bytes(n)
	// The huge page holding b's last bytes: addresses past b's own object.
	last := uintptr(unsafe.Pointer(unsafe.SliceData(b))) + 2*page
	in, pages, err := inCore(last, last+page)
	if err != nil {
		t.Skipf("mincore: %v", err)
	}
	if own := page / 8 / 4096; in < own || in >= pages {
		t.Fatalf("%d of the last huge page's %d 4 KiB pages are resident, want b's own %d and not all", in, pages, own)
	}
}
