// Package convert writes GGUF files llama.cpp runs: a course checkpoint as
// the llama.cpp architecture that computes what it computes (course.go),
// with the course tokenizer as a byte-level BPE vocabulary (vocab.go), and
// any GGUF file re-quantised (requant.go). Both choose each tensor's type
// the way llama-quantize does for the requested mix (types.go), so a course
// model converted with --type q4_k holds what convert_hf_to_gguf.py
// followed by llama-quantize Q4_K_M would write.
package convert

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"chat/models/gguf"
	"chat/models/kernels"
)

// File is a GGUF file being written: metadata, then tensors.
type File struct {
	Arch    string // general.architecture
	Meta    []gguf.KV
	Tensors []Tensor

	// Release, when set, is told each part of a tensor's Raw bytes once it
	// has been written (FromGGUF: gguf.File.ReleaseBytes), so that the pages
	// of the file read so far do not stay in memory.
	Release func([]byte)
}

// Tensor is one tensor of a File.
type Tensor struct {
	Name  string
	Shape []int // row-major: [rows, cols] for a matrix, [n] for a vector

	// The values: Data as float32 (row-major), or Raw bytes in type Src
	// (copied as they are when the type rules keep Src).
	Data []float32
	Raw  []byte
	Src  gguf.Type

	Type gguf.Type // what is written; set by SetTypes
}

func (t *Tensor) elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= int64(d)
	}
	return n
}

// dims is the shape in ggml's order (fastest first).
func (t *Tensor) dims() []int64 {
	d := make([]int64, len(t.Shape))
	for i, s := range t.Shape {
		d[len(t.Shape)-1-i] = int64(s)
	}
	return d
}

// Progress is told how many of the file's elements have been encoded.
type Progress func(done, total int64)

// chunk is about how many values Write converts at a time: a tensor is
// decoded, encoded, written and its input pages released a few rows at a
// time, so that memory holds about one chunk's float32 values, encoding and
// input, however large the tensor (an 8B model's token_embd is 2 GB as
// float32).
const chunk = 1 << 20

// Write encodes every tensor in its Type and writes the file as it goes.
// Metadata general.architecture, general.file_type and
// general.quantization_version come first when f.Meta lacks them.
func Write(w io.Writer, f *File, mix Mix, progress Progress) error {
	infos := make([]gguf.TensorInfo, len(f.Tensors))
	var total, done int64
	for i := range f.Tensors {
		t := &f.Tensors[i]
		infos[i] = gguf.TensorInfo{Name: t.Name, Dims: t.dims(), Type: t.Type}
		total += t.elements()
	}
	tw, err := gguf.NewWriter(w, header(f, mix), infos)
	if err != nil {
		return err
	}
	var buf buffers
	for i := range f.Tensors {
		t := &f.Tensors[i]
		err := writeTensor(tw, t, &buf, f.Release, func(n int64) {
			done += n
			if progress != nil {
				progress(done, total)
			}
		})
		if err != nil {
			return fmt.Errorf("convert: %s: %w", t.Name, err)
		}
	}
	return tw.Close()
}

// buffers are the float32 values and the encoding of one chunk, reused from
// chunk to chunk.
type buffers struct {
	x   []float32
	out []byte
}

// writeTensor writes t's encoding in its Type to w a chunk of rows at a
// time, telling release (when not nil) each chunk of Raw it has written and
// step how many values the chunk held.
func writeTensor(w io.Writer, t *Tensor, buf *buffers, release func([]byte), step func(int64)) error {
	n := t.elements()
	if n == 0 {
		return nil
	}
	cols := int64(1)
	if len(t.Shape) > 0 {
		cols = int64(t.Shape[len(t.Shape)-1])
	}
	var srcRow int64 // bytes of a row of Raw
	if t.Raw != nil {
		var err error
		if srcRow, err = t.Src.RowBytes(cols); err != nil || int64(len(t.Raw)) != n/cols*srcRow {
			return fmt.Errorf("%d bytes of %s for shape %v", len(t.Raw), t.Src, t.Shape)
		}
	} else if int64(len(t.Data)) != n {
		return fmt.Errorf("%d values for shape %v", len(t.Data), t.Shape)
	}
	rows := max(1, chunk/cols)
	for r := int64(0); r < n/cols; r += rows {
		r1 := min(r+rows, n/cols)
		var src []byte
		if t.Raw != nil {
			src = t.Raw[r*srcRow : r1*srcRow]
		}
		out := src // copied as it is when the type is kept
		if t.Raw == nil || t.Type != t.Src {
			var err error
			if out, err = encodeRows(t, r, r1, cols, srcRow, buf); err != nil {
				return err
			}
		}
		if _, err := w.Write(out); err != nil {
			return err
		}
		if release != nil && src != nil {
			release(src)
		}
		step((r1 - r) * cols)
	}
	return nil
}

// encodeRows encodes rows r to r1-1 of t in its Type into buf.out (decoding
// Raw into buf.x first) on kernels.Threads() goroutines (chat convert
// --threads), which take the rows a few at a time: each row is encoded on
// its own, so the bytes do not depend on the thread count. A failure names
// the first row that failed. (Not kernels.Parallel: its caller spins while
// it waits for a late worker, which on a busy host takes the core that
// worker needs; a chunk is tens of milliseconds of work, so blocking costs
// nothing.)
func encodeRows(t *Tensor, r, r1, cols, srcRow int64, buf *buffers) ([]byte, error) {
	dstRow, err := t.Type.RowBytes(cols)
	if err != nil {
		return nil, err
	}
	n := r1 - r
	out := grow(&buf.out, n*dstRow)
	var x []float32
	if t.Raw != nil {
		x = grow(&buf.x, n*cols)
	} else {
		x = t.Data[r*cols : r1*cols]
	}
	threads := min(int64(kernels.Threads()), n)
	step := max(1, n/(8*threads)) // rows a goroutine takes at a time: a late one still balances
	var (
		next   atomic.Int64
		wg     sync.WaitGroup
		mu     sync.Mutex
		bad    = n // the first row that failed, from r
		badErr error
	)
	for range threads {
		wg.Go(func() {
			for {
				i0 := next.Add(step) - step
				if i0 >= n {
					return
				}
				for i := i0; i < min(i0+step, n); i++ {
					xi := x[i*cols : (i+1)*cols]
					var err error
					if t.Raw != nil {
						err = gguf.Dequantize(t.Src, t.Raw[(r+i)*srcRow:(r+i+1)*srcRow], xi)
					}
					if err == nil {
						err = gguf.QuantizeInto(t.Type, xi, out[i*dstRow:(i+1)*dstRow])
					}
					if err != nil {
						mu.Lock()
						if i < bad {
							bad, badErr = i, err
						}
						mu.Unlock()
						return // the rows left come after this one
					}
				}
			}
		})
	}
	wg.Wait()
	if badErr != nil {
		return nil, fmt.Errorf("row %d: %w", r+bad, badErr)
	}
	return out, nil
}

// grow returns (*b)[:n], reallocating *b when it is shorter.
func grow[E any](b *[]E, n int64) []E {
	if int64(cap(*b)) < n {
		*b = make([]E, n)
	}
	return (*b)[:n]
}

// header is f.Meta with the architecture first and the file type of the mix.
func header(f *File, mix Mix) []gguf.KV {
	meta := []gguf.KV{{Key: "general.architecture", Type: gguf.String, Value: f.Arch}}
	for _, kv := range f.Meta {
		switch kv.Key {
		case "general.architecture", "general.file_type", "general.quantization_version":
			continue
		}
		meta = append(meta, kv)
	}
	meta = append(meta, gguf.KV{Key: "general.file_type", Type: gguf.Uint32, Value: mix.FileType})
	if mix.Default != gguf.TypeF32 && mix.Default != gguf.TypeF16 && mix.Default != gguf.TypeBF16 {
		meta = append(meta, gguf.KV{Key: "general.quantization_version", Type: gguf.Uint32, Value: uint32(2)})
	}
	return meta
}
