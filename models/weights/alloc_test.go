package weights

import (
	"runtime"
	"testing"

	"chat/models/gguf"
)

// TestFromGGUFAllocates bounds the memory FromGGUF allocates for matrices
// of Llama 3.2 1B's shapes, large enough to get huge pages of their own
// (hugepage.Bytes): the file's bytes of the matrix, plus the page hugepage
// allocates to align them, plus 16 KiB for the matrix's own small objects
// and the heap's rounding. Storage over the file's bytes is resident waste:
// kernels.HalfILLen's rounding put 28 KB over 8 MiB on each 2048-column f16
// matrix, which then took one more whole 2 MiB page (190 MiB of the F16
// stand-in's RSS until a5769e5).
func TestFromGGUFAllocates(t *testing.T) {
	const page = 2 << 20
	for _, typ := range []gguf.Type{gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ4_K, gguf.TypeQ6_K} {
		for _, s := range []struct{ rows, cols int }{{2048, 2048}, {8192, 2048}, {2048, 8192}} {
			rowBytes, err := typ.RowBytes(int64(s.cols))
			if err != nil {
				t.Fatal(err)
			}
			file := int(rowBytes) * s.rows
			if file < page {
				continue // carved from a shared chunk (hugepage.Bytes)
			}
			raw := make([]byte, file) // zero blocks: valid in every format
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			m, err := FromGGUF(typ, raw, s.rows, s.cols)
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			got := after.TotalAlloc - before.TotalAlloc
			if limit := uint64(file + page + 16<<10); got > limit {
				t.Errorf("%s %dx%d: FromGGUF allocated %d bytes for a file's %d (Bytes %d), want at most %d",
					typ, s.rows, s.cols, got, file, m.Bytes(), limit)
			}
			runtime.KeepAlive(m)
		}
	}
}
