package convert

import (
	"bytes"
	"crypto/sha256"
	"hash"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"chat/models/gguf"
	"chat/models/kernels"
)

// allocWatch is a writer that hashes what it is given and records the most
// bytes the process allocated between two of its writes.
type allocWatch struct {
	h          hash.Hash
	last, most uint64
}

func newAllocWatch() *allocWatch {
	w := &allocWatch{h: sha256.New()}
	w.last = totalAlloc()
	return w
}

func totalAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

func (w *allocWatch) Write(p []byte) (int, error) {
	now := totalAlloc()
	w.most = max(w.most, now-w.last)
	w.h.Write(p)
	w.last = totalAlloc()
	return len(p), nil
}

// TestWriteStreams: Write encodes and writes a chunk of rows at a time, so
// less than one tensor's float32 values is allocated between two writes
// (buffering the file, or even one tensor, allocates more), and the bytes
// are gguf.Write's from the whole tensors.
func TestWriteStreams(t *testing.T) {
	const rows, cols = 512, 4096 // two chunks a tensor
	r := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, rows*cols)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	raw, err := gguf.Quantize(gguf.TypeF32, x)
	if err != nil {
		t.Fatal(err)
	}
	f := &File{Arch: "llama"}
	var ref []gguf.WriteTensor
	add := func(name string, typ gguf.Type, tn Tensor) {
		tn.Name, tn.Shape, tn.Type = name, []int{rows, cols}, typ
		f.Tensors = append(f.Tensors, tn)
		ref = append(ref, gguf.WriteTensor{Name: name, Dims: []int64{cols, rows}, Type: typ, Data: x})
	}
	for i, typ := range []gguf.Type{gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeF16, gguf.TypeQ6_K} {
		add(string(rune('a'+i))+".weight", typ, Tensor{Raw: raw, Src: gguf.TypeF32})
	}
	add("e.weight", gguf.TypeQ8_0, Tensor{Data: x})
	add("f.weight", gguf.TypeF32, Tensor{Raw: raw, Src: gguf.TypeF32})
	mix := Mix{Name: "q8_0", Default: gguf.TypeQ8_0, FileType: 7}

	var want bytes.Buffer
	if err := gguf.Write(&want, header(f, mix), ref); err != nil {
		t.Fatal(err)
	}
	// Rows are split across the compute threads: one thread and all of
	// them write the same bytes, with the same bound.
	defer kernels.SetThreads(kernels.Threads())
	for _, threads := range []int{1, runtime.NumCPU()} {
		kernels.SetThreads(threads)
		w := newAllocWatch()
		if err := Write(w, f, mix, nil); err != nil {
			t.Fatal(err)
		}
		if got, want := w.h.Sum(nil), sha256.Sum256(want.Bytes()); !bytes.Equal(got, want[:]) {
			t.Errorf("%d threads: the bytes differ from gguf.Write's", threads)
		}
		if limit := uint64(4 * rows * cols); w.most >= limit {
			t.Errorf("%d threads: %.1f MB allocated between two writes, want under %.1f MB (one tensor's float32 values)", threads, float64(w.most)/1e6, float64(limit)/1e6)
		}
		t.Logf("%d threads: at most %.1f MB allocated between two writes", threads, float64(w.most)/1e6)
	}
}

// A value a type cannot hold is refused with the tensor and the row it is
// in; a tensor whose data does not fit its shape, with both.
func TestWriteErrors(t *testing.T) {
	x := make([]float32, 4*32)
	x[70] = float32(math.NaN())
	x[100] = float32(math.Inf(1)) // a later row: the first one is named, however the rows are split
	for _, c := range []struct {
		tn   Tensor
		want string
	}{
		{Tensor{Name: "x.weight", Shape: []int{4, 32}, Data: x, Type: gguf.TypeQ8_0}, "convert: x.weight: row 2: gguf: cannot quantise NaN (element 6) to q8_0"},
		{Tensor{Name: "x.weight", Shape: []int{4, 32}, Data: x[:64], Type: gguf.TypeQ8_0}, "convert: x.weight: 64 values for shape [4 32]"},
		{Tensor{Name: "x.weight", Shape: []int{4, 32}, Raw: make([]byte, 100), Src: gguf.TypeF32, Type: gguf.TypeF32}, "convert: x.weight: 100 bytes of f32 for shape [4 32]"},
	} {
		f := &File{Arch: "llama", Tensors: []Tensor{c.tn}}
		if err := Write(io.Discard, f, StoredMix(f), nil); err == nil || err.Error() != c.want {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
}
