// Package safetensors reads and writes the safetensors format (Hugging
// Face's tensor files, e.g. a PEFT adapter's adapter_model.safetensors):
// an 8-byte little-endian header length, a JSON header mapping each tensor
// name to its dtype, shape and [begin, end) byte range in the data that
// follows, and the data. Reading checks every range, shape and size against
// the file before anything is allocated for it, so a hostile file gives an
// error, never a panic or a huge allocation.
package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"

	"chat/models/gguf"
	"chat/models/quote"
	"chat/models/regular"
)

// maxHeader bounds the JSON header (the format's own limit is 100 MB).
const maxHeader = 100 << 20

// maxDims bounds a tensor's dimensions, more than frameworks make (NumPy
// allows 64); a header of a million is refused in one line.
const maxDims = 64

// Tensor is one tensor of a file.
type Tensor struct {
	DType string // "F32", "F16", "BF16", "F64", "I64", ...
	Shape []int
	Data  []byte // little-endian elements, row-major
}

// dtypeSize is the element size of the dtypes this package knows.
var dtypeSize = map[string]int{
	"F64": 8, "F32": 4, "F16": 2, "BF16": 2,
	"I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1,
}

// File is a read file: its tensors and the header's __metadata__.
type File struct {
	Tensors  map[string]Tensor
	Metadata map[string]string

	unmap func() error // set by Open
}

// Close releases the mapping made by Open; the tensors' Data must not be
// used after it.
func (f *File) Close() error {
	if f.unmap == nil {
		return nil
	}
	u := f.unmap
	f.unmap = nil
	f.Tensors = nil
	return u()
}

// Names lists the tensor names, sorted.
func (f *File) Names() []string {
	names := make([]string, 0, len(f.Tensors))
	for n := range f.Tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Open maps the file at path, a regular file only (a FIFO would block the
// open and a device such as /dev/zero would read without end), and parses
// its header. The file is mapped, not read: the header's ranges are checked
// against its real size, and a sparse file declaring gigabytes takes memory
// only for what its caller then copies out. Close releases the mapping.
func Open(path string) (*File, error) {
	fh, st, err := regular.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	defer fh.Close()
	if st.Size() < 8 {
		return nil, fmt.Errorf("%w (in %s)", tooShort(st.Size()), path)
	}
	b, unmap, err := regular.Map(fh, st.Size())
	if err != nil {
		return nil, fmt.Errorf("safetensors: map %s: %w", path, err)
	}
	f, err := Parse(b)
	if err != nil {
		unmap()
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	f.unmap = unmap
	return f, nil
}

func tooShort(n int64) error {
	return fmt.Errorf("safetensors: %d bytes is too short for a header", n)
}

// Parse reads a file held in b; the tensors' Data slice b.
func Parse(b []byte) (*File, error) {
	if len(b) < 8 {
		return nil, tooShort(int64(len(b)))
	}
	n := binary.LittleEndian.Uint64(b)
	if n > maxHeader || n > uint64(len(b)-8) {
		return nil, fmt.Errorf("safetensors: header of %d bytes in a file of %d", n, len(b))
	}
	dec := json.NewDecoder(bytes.NewReader(b[8 : 8+n]))
	dec.UseNumber()
	var raw map[string]json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("safetensors: bad header: %w", err)
	}
	data := b[8+n:]
	f := &File{Tensors: make(map[string]Tensor, len(raw))}
	for name, v := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(v, &f.Metadata); err != nil {
				return nil, fmt.Errorf("safetensors: __metadata__ is not a map of strings: %w", err)
			}
			continue
		}
		var h struct {
			DType   string   `json:"dtype"`
			Shape   []int64  `json:"shape"`
			Offsets []uint64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(v, &h); err != nil {
			return nil, fmt.Errorf("safetensors: tensor %s: %w", quote.Quote(name), err)
		}
		size, ok := dtypeSize[h.DType]
		if !ok {
			return nil, fmt.Errorf("safetensors: tensor %s has unknown dtype %s", quote.Quote(name), quote.Quote(h.DType))
		}
		if len(h.Offsets) != 2 || h.Offsets[0] > h.Offsets[1] || h.Offsets[1] > uint64(len(data)) {
			return nil, fmt.Errorf("safetensors: tensor %s has data_offsets %s outside the %d data bytes", quote.Quote(name), list(h.Offsets), len(data))
		}
		if len(h.Shape) > maxDims {
			return nil, fmt.Errorf("safetensors: tensor %s has %d dimensions", quote.Quote(name), len(h.Shape))
		}
		elems := uint64(1)
		empty := slices.Contains(h.Shape, 0) // no values, however large the other dimensions
		shape := make([]int, len(h.Shape))
		for i, d := range h.Shape {
			if d < 0 || d > math.MaxInt32 {
				return nil, fmt.Errorf("safetensors: tensor %s has dimension %d", quote.Quote(name), d)
			}
			shape[i] = int(d)
			// Compared by division: elems·d can wrap around 2⁶⁴ to a small
			// number when a sparse file is tens of gigabytes.
			if !empty && elems > uint64(len(data))/uint64(d) {
				return nil, fmt.Errorf("safetensors: tensor %s of shape %s is larger than the file", quote.Quote(name), list(h.Shape))
			}
			elems *= uint64(d)
		}
		if got := h.Offsets[1] - h.Offsets[0]; got != elems*uint64(size) {
			return nil, fmt.Errorf("safetensors: tensor %s: %d bytes for shape %s of %s", quote.Quote(name), got, list(h.Shape), h.DType)
		}
		f.Tensors[name] = Tensor{DType: h.DType, Shape: shape, Data: data[h.Offsets[0]:h.Offsets[1]:h.Offsets[1]]}
	}
	return f, nil
}

// list shows a header's list in a message: a hostile one may hold a
// million numbers.
func list[T any](v []T) string { return quote.Cut(fmt.Sprint(v), quote.Max) }

// Elements is the number of values.
func (t Tensor) Elements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Float32 is the tensor's values as float32 (F32, F16, BF16 and F64).
func (t Tensor) Float32() ([]float32, error) {
	// Checked before the output is made: an I64 tensor of a gigabyte would
	// otherwise allocate a gigabyte of float32 only to be refused.
	switch t.DType {
	case "F32", "F16", "BF16", "F64":
	default:
		return nil, fmt.Errorf("safetensors: dtype %s is not a float type", quote.Quote(t.DType))
	}
	size := dtypeSize[t.DType]
	out := make([]float32, len(t.Data)/size)
	for i := range out {
		p := t.Data[i*size:]
		switch t.DType {
		case "F32":
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(p))
		case "F16":
			out[i] = gguf.F16ToF32(binary.LittleEndian.Uint16(p))
		case "BF16":
			out[i] = gguf.BF16ToF32(binary.LittleEndian.Uint16(p))
		case "F64":
			out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(p)))
		}
	}
	return out, nil
}

// F32 makes a float32 tensor of values in shape.
func F32(shape []int, values []float32) Tensor {
	b := make([]byte, 4*len(values))
	for i, v := range values {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return Tensor{DType: "F32", Shape: append([]int(nil), shape...), Data: b}
}

// Write writes tensors (in name order) and metadata as a safetensors file.
func Write(w io.Writer, tensors map[string]Tensor, metadata map[string]string) error {
	names := make([]string, 0, len(tensors))
	for n := range tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	header := map[string]any{}
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	var off uint64
	for _, n := range names {
		t := tensors[n]
		end := off + uint64(len(t.Data))
		header[n] = map[string]any{"dtype": t.DType, "shape": t.Shape, "data_offsets": []uint64{off, end}}
		off = end
	}
	h, err := json.Marshal(header)
	if err != nil {
		return err
	}
	for len(h)%8 != 0 { // the format pads the header with spaces to 8 bytes
		h = append(h, ' ')
	}
	var lenb [8]byte
	binary.LittleEndian.PutUint64(lenb[:], uint64(len(h)))
	if _, err := w.Write(lenb[:]); err != nil {
		return err
	}
	if _, err := w.Write(h); err != nil {
		return err
	}
	for _, n := range names {
		if _, err := w.Write(tensors[n].Data); err != nil {
			return err
		}
	}
	return nil
}
