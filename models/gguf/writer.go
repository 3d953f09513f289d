package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"chat/models/quote"
)

// WriteTensor is one tensor for Write. Data holds the values as float32 in
// ggml order (Dims[0] fastest); Write encodes them as Type with Quantize
// (any type CanQuantize accepts). Raw, when set, is written as-is instead and
// must already be Type's encoding of the tensor.
type WriteTensor struct {
	Name string
	Dims []int64
	Type Type
	Data []float32
	Raw  []byte
}

// Write writes a GGUF v3 file: the metadata in order, the tensor infos, and
// the tensor data, each tensor padded to the alignment (general.alignment in
// meta, else 32). Array values in meta use ArrayValue. Every tensor's data is
// checked before anything is written; an error in encoding one (Quantize's)
// comes after the tensors before it were written.
func Write(w io.Writer, meta []KV, tensors []WriteTensor) error {
	infos := make([]TensorInfo, len(tensors))
	for i, t := range tensors {
		infos[i] = TensorInfo{Name: t.Name, Dims: t.Dims, Type: t.Type}
		if err := infos[i].setSize(); err != nil {
			return err
		}
		switch size := infos[i].Size; {
		case t.Raw != nil && int64(len(t.Raw)) != size:
			return fmt.Errorf("gguf: tensor %s: %d bytes of data, want %d", quote.Quote(t.Name), len(t.Raw), size)
		case t.Raw == nil && int64(len(t.Data)) != infos[i].Elements():
			return fmt.Errorf("gguf: tensor %s: %d values for %d elements", quote.Quote(t.Name), len(t.Data), infos[i].Elements())
		}
	}
	tw, err := NewWriter(w, meta, infos)
	if err != nil {
		return err
	}
	for _, t := range tensors {
		b := t.Raw
		if b == nil {
			if b, err = Quantize(t.Type, t.Data); err != nil {
				return fmt.Errorf("gguf: tensor %s: %w", quote.Quote(t.Name), err)
			}
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	return tw.Close()
}

// Writer writes a GGUF v3 file a tensor at a time, so that a file need not
// be held in memory to be written: NewWriter writes the header (the tensor
// infos' sizes and offsets follow from each tensor's type and dims), then
// Write takes the tensors' encoded bytes in order, in pieces of any size,
// and pads each tensor to the alignment; Close checks that every tensor was
// written in full and flushes.
type Writer struct {
	bw      *bufio.Writer
	e       encoder
	align   int64
	tensors []TensorInfo
	next    int   // the tensor being written
	left    int64 // its bytes still to come
}

// NewWriter writes the metadata (as Write does) and the infos of tensors,
// whose Name, Dims and Type it reads (not Offset and Size: they follow).
func NewWriter(w io.Writer, meta []KV, tensors []TensorInfo) (*Writer, error) {
	align := int64(DefaultAlignment)
	seen := map[string]bool{}
	for _, kv := range meta {
		if seen[kv.Key] {
			return nil, fmt.Errorf("gguf: duplicate metadata key %s", quote.Quote(kv.Key))
		}
		seen[kv.Key] = true
		if kv.Key == "general.alignment" {
			a, ok := kv.Value.(uint32)
			if !ok || a == 0 || a&(a-1) != 0 {
				return nil, fmt.Errorf("gguf: general.alignment must be a uint32 power of two")
			}
			align = int64(a)
		}
	}
	infos := make([]TensorInfo, len(tensors))
	var off int64
	names := map[string]bool{}
	for i, t := range tensors {
		if names[t.Name] {
			return nil, fmt.Errorf("gguf: duplicate tensor name %s", quote.Quote(t.Name))
		}
		names[t.Name] = true
		infos[i] = TensorInfo{Name: t.Name, Dims: t.Dims, Type: t.Type, Offset: off}
		if err := infos[i].setSize(); err != nil {
			return nil, err
		}
		off = alignUp(off+infos[i].Size, align)
	}

	bw := bufio.NewWriter(w)
	tw := &Writer{bw: bw, e: encoder{w: bw}, align: align, tensors: infos}
	e := &tw.e
	e.raw([]byte(Magic))
	e.u32(3)
	e.u64(uint64(len(infos)))
	e.u64(uint64(len(meta)))
	for _, kv := range meta {
		e.str(kv.Key)
		e.u32(uint32(kv.Type))
		if err := e.value(kv.Type, kv.Value); err != nil {
			return nil, fmt.Errorf("gguf: metadata %s: %w", quote.Quote(kv.Key), err)
		}
	}
	for _, t := range infos {
		e.str(t.Name)
		e.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			e.u64(uint64(d))
		}
		e.u32(uint32(t.Type))
		e.u64(uint64(t.Offset))
	}
	e.pad(align)
	if len(infos) > 0 {
		tw.left = infos[0].Size
	}
	return tw, e.err
}

// setSize checks t's dims and type and sets its Size.
func (t *TensorInfo) setSize() error {
	if len(t.Dims) > MaxDims {
		return fmt.Errorf("gguf: tensor %s has %d dimensions", quote.Quote(t.Name), len(t.Dims))
	}
	for _, d := range t.Dims {
		if d < 0 {
			return fmt.Errorf("gguf: tensor %s has a negative dimension", quote.Quote(t.Name))
		}
	}
	size, err := t.Type.RowBytes(t.Elements())
	if err != nil {
		return fmt.Errorf("gguf: tensor %s: %w", quote.Quote(t.Name), err)
	}
	if len(t.Dims) > 0 && t.Dims[0]%int64(t.Type.BlockSize()) != 0 {
		return fmt.Errorf("gguf: tensor %s: row length %d is not a multiple of the %s block size", quote.Quote(t.Name), t.Dims[0], t.Type)
	}
	t.Size = size
	return nil
}

// Write writes the next bytes of the tensors' data.
func (w *Writer) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		w.finish()
		if w.next == len(w.tensors) {
			return n, fmt.Errorf("gguf: %d bytes of data beyond the last tensor", len(p))
		}
		k := int(min(int64(len(p)), w.left))
		w.e.raw(p[:k])
		if w.e.err != nil {
			return n, w.e.err
		}
		n += k
		p = p[k:]
		w.left -= int64(k)
	}
	return n, nil
}

// finish pads each tensor written in full and moves on to the first one
// that is not.
func (w *Writer) finish() {
	for w.next < len(w.tensors) && w.left == 0 {
		w.e.pad(w.align)
		w.next++
		if w.next < len(w.tensors) {
			w.left = w.tensors[w.next].Size
		}
	}
}

// Close flushes the file once every tensor has been written. It does not
// close the underlying writer.
func (w *Writer) Close() error {
	w.finish()
	if w.e.err != nil {
		return w.e.err
	}
	if w.next < len(w.tensors) {
		t := &w.tensors[w.next]
		return fmt.Errorf("gguf: tensor %s: %d of %d bytes written", quote.Quote(t.Name), t.Size-w.left, t.Size)
	}
	return w.bw.Flush()
}

type encoder struct {
	w   *bufio.Writer
	n   int64
	err error
}

func (e *encoder) raw(b []byte) {
	if e.err != nil {
		return
	}
	n, err := e.w.Write(b)
	e.n += int64(n)
	e.err = err
}

func (e *encoder) u8(v uint8) { e.raw([]byte{v}) }

func (e *encoder) u16(v uint16) {
	var b [2]byte
	binary.LittleEndian.PutUint16(b[:], v)
	e.raw(b[:])
}

func (e *encoder) u32(v uint32) {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	e.raw(b[:])
}

func (e *encoder) u64(v uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	e.raw(b[:])
}

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	e.raw([]byte(s))
}

func (e *encoder) pad(align int64) {
	if r := e.n % align; r != 0 {
		e.raw(make([]byte, align-r))
	}
}

func (e *encoder) value(t ValueType, v any) error {
	ok := true
	switch t {
	case Uint8:
		var x uint8
		x, ok = v.(uint8)
		e.u8(x)
	case Int8:
		var x int8
		x, ok = v.(int8)
		e.u8(uint8(x))
	case Uint16:
		var x uint16
		x, ok = v.(uint16)
		e.u16(x)
	case Int16:
		var x int16
		x, ok = v.(int16)
		e.u16(uint16(x))
	case Uint32:
		var x uint32
		x, ok = v.(uint32)
		e.u32(x)
	case Int32:
		var x int32
		x, ok = v.(int32)
		e.u32(uint32(x))
	case Float32:
		var x float32
		x, ok = v.(float32)
		e.u32(math.Float32bits(x))
	case Uint64:
		var x uint64
		x, ok = v.(uint64)
		e.u64(x)
	case Int64:
		var x int64
		x, ok = v.(int64)
		e.u64(uint64(x))
	case Float64:
		var x float64
		x, ok = v.(float64)
		e.u64(math.Float64bits(x))
	case Bool:
		var x bool
		x, ok = v.(bool)
		if x {
			e.u8(1)
		} else {
			e.u8(0)
		}
	case String:
		var x string
		x, ok = v.(string)
		e.str(x)
	case Array:
		a, isArr := v.(ArrayValue)
		if !isArr {
			return fmt.Errorf("value of type %T for an array", v)
		}
		return e.array(a)
	default:
		return fmt.Errorf("unknown value type %d", uint32(t))
	}
	if !ok {
		return fmt.Errorf("value of type %T for %s", v, t)
	}
	return e.err
}

func (e *encoder) array(a ArrayValue) error {
	if _, nested := a.Data.([]ArrayValue); a.Data != nil && !nested && !isKnownSlice(a.Data) {
		return fmt.Errorf("array data of type %T", a.Data)
	}
	n := a.Len()
	e.u32(uint32(a.Elem))
	e.u64(uint64(n))
	for i := 0; i < n; i++ {
		if err := e.value(a.Elem, index(a.Data, i)); err != nil {
			return fmt.Errorf("element %d: %w", i, err)
		}
	}
	return e.err
}

func isKnownSlice(d any) bool {
	switch d.(type) {
	case []uint8, []int8, []uint16, []int16, []uint32, []int32, []float32, []bool, []string, []uint64, []int64, []float64:
		return true
	}
	return false
}
