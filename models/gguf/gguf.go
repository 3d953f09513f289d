// Package gguf reads and writes GGUF model files (versions 2 and 3), the
// format of llama.cpp / ggml: a little-endian header with typed key-value
// metadata and tensor descriptions, then aligned tensor data. Open maps the
// tensor data into memory instead of copying it, and every count and length
// in the header is checked against the file size before anything is
// allocated, so a corrupt file gives an error, never a panic or a huge
// allocation. Layout reference: ggml/src/gguf.cpp and docs/gguf.md in
// ggml-org/llama.cpp.
package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"unsafe"

	"chat/models/quote"
	"chat/models/regular"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// DefaultAlignment is the data alignment when general.alignment is absent.
const DefaultAlignment = 32

// MaxDims is the most dimensions a tensor may have (GGML_MAX_DIMS).
const MaxDims = 4

// maxArrayDepth bounds nested metadata arrays so a crafted file cannot
// recurse deeply.
const maxArrayDepth = 8

// maxPrealloc bounds the room made for metadata entries and tensor infos
// before they are read (real files have tens and up to a few thousand).
const maxPrealloc = 4096

// File is a parsed GGUF file. Tensor data stays in the mapping made by Open
// (or the slice given to Parse); Close releases it, after which no tensor
// slice obtained from the File may be used.
type File struct {
	Version    uint32
	KV         []KV // metadata in file order
	Tensors    []TensorInfo
	Alignment  int
	DataOffset int64 // file offset of the tensor data section
	Size       int64 // file size in bytes

	kvIndex     map[string]int
	tensorIndex map[string]int
	data        []byte // the whole file
	unmap       func() error
	parts       []*File // the other parts of a split model (split.go), in order
}

// TensorInfo describes one tensor. Dims are in ggml order: Dims[0] is the
// length of a row (the fastest-varying index).
type TensorInfo struct {
	Name   string
	Dims   []int64
	Type   Type
	Offset int64 // relative to the data section
	Size   int64 // bytes

	part int // the part of a split model holding the data: 0 the first file, i parts[i-1]
}

// Elements is the number of elements.
func (t *TensorInfo) Elements() int64 {
	n := int64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// Open maps the file at path and parses its header. A part of a model split
// by llama.cpp's gguf-split (NAME-00001-of-00003.gguf) opens every part
// (split.go).
func Open(path string) (*File, error) {
	mem := int64(maxValueMemory)
	f, err := openOne(path, &mem)
	if err != nil {
		return nil, err
	}
	return openSplit(f, path, &mem)
}

// openOne maps one file and parses its header, its strings and arrays
// taking their memory from *mem (reader.charge).
func openOne(path string, mem *int64) (*File, error) {
	fd, st, err := regular.Open(path) // a FIFO or device would block or never end
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	defer fd.Close()
	if st.Size() < 4 {
		return nil, fmt.Errorf("gguf: %s: file too small (%d bytes)", path, st.Size())
	}
	data, unmap, err := regular.Map(fd, st.Size())
	if err != nil {
		return nil, fmt.Errorf("gguf: %s: %w", path, err)
	}
	f, err := parse(data, mem)
	if err != nil {
		unmap()
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	f.unmap = unmap
	return f, nil
}

// ReleasePages drops the process's resident pages of the file mapping (see
// regular.Release); the data stays readable. A model that copied its
// weights at load calls it, so that its RSS counts them once rather than
// twice (the copy and the mapping's pages). Nothing happens for a File
// from Parse.
func (f *File) ReleasePages() {
	if f.unmap != nil {
		regular.Release(f.data)
	}
	for _, p := range f.parts {
		p.ReleasePages()
	}
}

// ReleaseBytes is ReleasePages for the pages of b, a part of the file's
// data (TensorData): a loader that has copied a tensor releases its pages
// at once, so that a model's copies and the pages they came from do not
// all sit in memory together at the end of a load.
func (f *File) ReleaseBytes(b []byte) {
	if f.unmap != nil && len(b) > 0 {
		regular.Release(b)
	}
}

// Close releases the file mapping (every part's).
func (f *File) Close() error {
	var err error
	for _, p := range f.parts {
		err = errors.Join(err, p.Close())
	}
	if f.unmap == nil {
		return err
	}
	u := f.unmap
	f.unmap = nil
	f.data = nil
	return errors.Join(err, u())
}

// Parse parses a whole GGUF file held in data. The File keeps data for the
// tensor contents; metadata strings are copied.
func Parse(data []byte) (*File, error) {
	mem := int64(maxValueMemory)
	return parse(data, &mem)
}

func parse(data []byte, mem *int64) (*File, error) {
	r := &reader{b: data, mem: mem, rel: 2*int64(len(data)) + relSlack}
	magic := r.bytes(4)
	if r.err != nil || string(magic) != Magic {
		return nil, fmt.Errorf("gguf: bad magic %q, not a GGUF file", magic)
	}
	f := &File{Size: int64(len(data)), data: data, Alignment: DefaultAlignment}
	f.Version = r.u32()
	if r.err != nil {
		return nil, fmt.Errorf("gguf: truncated header: %w", r.err)
	}
	if v := f.Version; v&0xffff == 0 && v>>24 >= 1 && v>>24 <= 3 {
		return nil, fmt.Errorf("gguf: big-endian GGUF (version %d byte-swapped) is not supported", v>>24)
	}
	if f.Version == 1 || f.Version > 3 || f.Version == 0 {
		return nil, fmt.Errorf("gguf: unsupported version %d (want 2 or 3)", f.Version)
	}
	nTensors := r.u64()
	nKV := r.u64()
	if r.err != nil {
		return nil, fmt.Errorf("gguf: truncated header: %w", r.err)
	}
	// A key is at least a length and a type (12 bytes); a tensor info at
	// least a name length, dim count, type and offset (24 bytes).
	if nKV > uint64(r.left())/12 {
		return nil, fmt.Errorf("gguf: %d metadata entries cannot fit in a %d-byte file", nKV, len(data))
	}
	if nTensors > uint64(r.left())/24 {
		return nil, fmt.Errorf("gguf: %d tensors cannot fit in a %d-byte file", nTensors, len(data))
	}

	// An entry and its index cost more memory than its smallest encoding
	// (a uint8 under a 4-byte key is 17 bytes, its KV and index slot about
	// 100): the counts are charged before any entry is read, so a file of
	// millions of tiny entries is refused at once.
	if !r.charge(int(nKV), kvCost) || !r.charge(int(nTensors), tensorCost) {
		return nil, fmt.Errorf("gguf: %d metadata entries and %d tensors: %w", nKV, nTensors, r.err)
	}
	// The counts are only checked against the file's size, and a sparse
	// file can be huge while holding nothing: the slices and maps grow with
	// the entries actually read, from at most maxPrealloc.
	f.KV = make([]KV, 0, min(nKV, maxPrealloc))
	f.kvIndex = make(map[string]int, min(nKV, maxPrealloc))
	for i := uint64(0); i < nKV; i++ {
		key := r.str()
		typ := ValueType(r.u32())
		if r.err != nil {
			return nil, fmt.Errorf("gguf: metadata entry %d: %w", i, r.err)
		}
		val, err := r.value(typ, 0)
		if err != nil {
			return nil, fmt.Errorf("gguf: metadata %s: %w", quote.Quote(key), err)
		}
		if _, dup := f.kvIndex[key]; dup {
			return nil, fmt.Errorf("gguf: duplicate metadata key %s", quote.Quote(key))
		}
		f.kvIndex[key] = len(f.KV)
		f.KV = grow(f.KV, nKV)
		f.KV = append(f.KV, KV{Key: key, Type: typ, Value: val})
	}

	if kv, ok := f.Get("general.alignment"); ok {
		a, isU32 := kv.Value.(uint32)
		if !isU32 {
			return nil, fmt.Errorf("gguf: general.alignment has type %s, want uint32", kv.Type)
		}
		if a == 0 || a&(a-1) != 0 || a > 1<<20 {
			return nil, fmt.Errorf("gguf: general.alignment %d is not a power of two up to 1 MiB", a)
		}
		f.Alignment = int(a)
	}

	f.Tensors = make([]TensorInfo, 0, min(nTensors, maxPrealloc))
	f.tensorIndex = make(map[string]int, min(nTensors, maxPrealloc))
	for i := uint64(0); i < nTensors; i++ {
		ti, err := r.tensorInfo()
		if err != nil {
			return nil, fmt.Errorf("gguf: tensor %d: %w", i, err)
		}
		if _, dup := f.tensorIndex[ti.Name]; dup {
			return nil, fmt.Errorf("gguf: duplicate tensor name %s", quote.Quote(ti.Name))
		}
		f.tensorIndex[ti.Name] = len(f.Tensors)
		f.Tensors = grow(f.Tensors, nTensors)
		f.Tensors = append(f.Tensors, ti)
	}

	f.DataOffset = alignUp(int64(r.off), int64(f.Alignment))
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.Offset%int64(f.Alignment) != 0 {
			return nil, fmt.Errorf("gguf: tensor %s: offset %d is not a multiple of the alignment %d", quote.Quote(t.Name), t.Offset, f.Alignment)
		}
		end, ok := addInt64(f.DataOffset, t.Offset)
		if ok {
			end, ok = addInt64(end, t.Size)
		}
		if !ok || end > f.Size {
			return nil, fmt.Errorf("gguf: tensor %s: data [%d, +%d) runs past the end of the file (%d bytes): the file is truncated; download or copy it again", quote.Quote(t.Name), t.Offset, t.Size, f.Size)
		}
	}
	return f, nil
}

// Tensor returns the description of the named tensor.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.tensorIndex[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// TensorData returns the raw bytes of t, a view of the file (not a copy).
func (f *File) TensorData(t *TensorInfo) ([]byte, error) {
	if t.part > 0 && t.part <= len(f.parts) {
		f = f.parts[t.part-1]
	}
	if f.data == nil {
		return nil, errors.New("gguf: file is closed")
	}
	start := f.DataOffset + t.Offset
	if t.Offset < 0 || t.Size < 0 || start < 0 || start+t.Size > int64(len(f.data)) {
		return nil, fmt.Errorf("gguf: tensor %s lies outside the file", quote.Quote(t.Name))
	}
	return f.data[start : start+t.Size : start+t.Size], nil
}

// TensorFloat32 returns the named tensor as float32s. An F32 tensor is a
// view of the file when the host is little-endian and the data is 4-byte
// aligned (always, with the mapping and an alignment of at least 4); other
// types are dequantised into a new slice.
func (f *File) TensorFloat32(name string) ([]float32, error) {
	t, ok := f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("gguf: no tensor %s", quote.Quote(name))
	}
	b, err := f.TensorData(t)
	if err != nil {
		return nil, err
	}
	n := t.Elements()
	if t.Type == TypeF32 && n > 0 && littleEndianHost && uintptr(unsafe.Pointer(&b[0]))%4 == 0 {
		return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n), nil
	}
	if n > math.MaxInt32*8 {
		return nil, fmt.Errorf("gguf: tensor %s too large", quote.Quote(name))
	}
	// Before making room: an IQ1_S tensor takes 20 times its size as float32.
	if !CanDequantize(t.Type) {
		return nil, fmt.Errorf("gguf: tensor %s: dequantising %s is not supported", quote.Quote(name), t.Type)
	}
	out := make([]float32, n)
	if err := Dequantize(t.Type, b, out); err != nil {
		return nil, fmt.Errorf("gguf: tensor %s: %w", quote.Quote(name), err)
	}
	return out, nil
}

var littleEndianHost = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

func alignUp(n, a int64) int64 { return (n + a - 1) / a * a }

func addInt64(a, b int64) (int64, bool) {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		return 0, false
	}
	return s, true
}

// grow doubles s's capacity, up to want, when it is full: append's
// growth of a quarter for large slices would allocate five times the final
// slice on the way, twice what kvCost and tensorCost charge.
func grow[T any](s []T, want uint64) []T {
	if len(s) < cap(s) {
		return s
	}
	return slices.Grow(s, int(min(want, uint64(2*len(s)+1)))-len(s))
}

// reader is a bounds-checked little-endian cursor; after the first error
// every read returns zero values and err stays set.
type reader struct {
	b   []byte
	off int
	err error
	mem *int64 // bytes the header may still take (maxValueMemory, shared by a split model's parts)
	rel int64  // bytes this file's header may still take (twice its size, and relSlack)
}

// maxValueMemory bounds the memory the header's entries, strings and
// arrays take. Their lengths are checked against the bytes left in the
// file, but a huge sparse file has those bytes without content: 1.2G empty
// strings declared in 10 GB of zeros took 18 GB and over a minute. A real
// header (a vocabulary of 262K tokens, its merges, scores and types) takes
// tens of MB. A split model's parts share it: each part's header could take
// it all. (A variable: tests lower it.)
var maxValueMemory = 1 << 30

// relSlack is what a header may take beyond twice its file's size (the
// reader's rel): a real header takes less than twice its bytes (a token is
// a 16-byte string header and its bytes in memory, its length and bytes in
// the file), but a file of millions of tiny entries took up to 20 times
// its size (a 4-byte key and a uint8 in 17 bytes, a KV and an index slot
// of about 100 in memory; a 0-dimension tensor in 28 bytes, 180 in memory).
const relSlack = 1 << 20

// What an entry costs in memory beyond its strings and arrays: its struct
// twice (the slice's doubling, grow) and its index slot twice (the map's
// doubling); a metadata value boxed in an interface takes up to 8 bytes
// more, a tensor's dimensions up to 32.
const (
	indexSlot  = 48
	kvCost     = int(2*unsafe.Sizeof(KV{})) + 2*indexSlot + 8
	tensorCost = int(2*unsafe.Sizeof(TensorInfo{})) + 2*indexSlot + 8*MaxDims
)

// charge counts n values of size bytes each before they are made, and
// fails once the header would take more than twice the file's size (and
// relSlack), or a split model's headers more than maxValueMemory.
func (r *reader) charge(n, size int) bool {
	if r.err != nil {
		return false
	}
	cost := int64(n) * int64(size)
	*r.mem -= cost
	r.rel -= cost
	switch {
	case *r.mem < 0:
		r.err = fmt.Errorf("the header would take more than %d MB in memory", maxValueMemory>>20)
	case r.rel < 0:
		r.err = fmt.Errorf("the header would take more than twice the file's %d bytes in memory", len(r.b))
	}
	return r.err == nil
}

var errTruncated = errors.New("unexpected end of file")

func (r *reader) left() int { return len(r.b) - r.off }

func (r *reader) bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > r.left() {
		r.err = errTruncated
		return nil
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p
}

func (r *reader) u8() uint8 {
	p := r.bytes(1)
	if p == nil {
		return 0
	}
	return p[0]
}

func (r *reader) u16() uint16 {
	p := r.bytes(2)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint16(p)
}

func (r *reader) u32() uint32 {
	p := r.bytes(4)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(p)
}

func (r *reader) u64() uint64 {
	p := r.bytes(8)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(p)
}

// length reads a uint64 count and checks that count*min bytes remain.
func (r *reader) length(min int) int {
	n := r.u64()
	if r.err != nil {
		return 0
	}
	if n > uint64(r.left()) || (min > 0 && n > uint64(r.left()/min)) {
		r.err = fmt.Errorf("length %d exceeds the %d bytes left in the file", n, r.left())
		return 0
	}
	return int(n)
}

func (r *reader) str() string {
	n := r.length(1)
	if !r.charge(n, 1) {
		return ""
	}
	return string(r.bytes(n))
}

func (r *reader) value(t ValueType, depth int) (any, error) {
	var v any
	switch t {
	case Uint8:
		v = r.u8()
	case Int8:
		v = int8(r.u8())
	case Uint16:
		v = r.u16()
	case Int16:
		v = int16(r.u16())
	case Uint32:
		v = r.u32()
	case Int32:
		v = int32(r.u32())
	case Float32:
		v = math.Float32frombits(r.u32())
	case Uint64:
		v = r.u64()
	case Int64:
		v = int64(r.u64())
	case Float64:
		v = math.Float64frombits(r.u64())
	case Bool:
		b := r.u8()
		if r.err == nil && b > 1 {
			return nil, fmt.Errorf("bool value %d is neither 0 nor 1", b)
		}
		v = b == 1
	case String:
		v = r.str()
	case Array:
		if depth >= maxArrayDepth {
			return nil, fmt.Errorf("arrays nested deeper than %d", maxArrayDepth)
		}
		a, err := r.array(depth + 1)
		if err != nil {
			return nil, err
		}
		v = a
	default:
		return nil, fmt.Errorf("unknown value type %d", uint32(t))
	}
	if r.err != nil {
		return nil, r.err
	}
	return v, nil
}

func (r *reader) array(depth int) (ArrayValue, error) {
	elem := ValueType(r.u32())
	if r.err != nil {
		return ArrayValue{}, r.err
	}
	min := elem.size()
	switch elem {
	case String:
		min = 8
	case Array:
		min = 12
	}
	if min == 0 {
		return ArrayValue{}, fmt.Errorf("unknown array element type %d", uint32(elem))
	}
	n := r.length(min)
	// In memory a string is a 16-byte header (its bytes are charged by
	// str), a nested array an ArrayValue and its slice's header.
	per := elem.size()
	switch elem {
	case String:
		per = 16
	case Array:
		per = 48
	}
	if !r.charge(n, per) {
		return ArrayValue{}, r.err
	}
	a := ArrayValue{Elem: elem, Data: emptyData[elem]}
	if n == 0 {
		return a, nil
	}
	if sz := elem.size(); sz > 0 {
		p := r.bytes(n * sz)
		if r.err != nil {
			return ArrayValue{}, r.err
		}
		a.Data = decodeFixed(elem, p, n)
		if elem == Bool {
			for _, c := range p {
				if c > 1 {
					return ArrayValue{}, fmt.Errorf("bool value %d is neither 0 nor 1", c)
				}
			}
		}
		return a, nil
	}
	if elem == String {
		a.Data = r.strs(n)
		return a, r.err
	}
	sub := make([]ArrayValue, n)
	for i := range sub {
		v, err := r.value(Array, depth)
		if err != nil {
			return ArrayValue{}, err
		}
		sub[i] = v.(ArrayValue)
	}
	a.Data = sub
	return a, nil
}

// emptyData holds an empty array's Data of each element type, boxed once:
// boxing a new empty slice allocates its 24-byte header, more than the
// 12 bytes an empty array takes in the file.
var emptyData = [...]any{Uint8: []uint8{}, Int8: []int8{}, Uint16: []uint16{}, Int16: []int16{},
	Uint32: []uint32{}, Int32: []int32{}, Float32: []float32{}, Bool: []bool{}, String: []string{},
	Array: []ArrayValue{}, Uint64: []uint64{}, Int64: []int64{}, Float64: []float64{}}

// strs reads n strings into one allocation of their bytes: a string of
// its own for each token cost an allocation (and an object for the
// collector to trace) per string, rounded up to its size class.
func (r *reader) strs(n int) []string {
	start, total := r.off, 0
	for range n {
		total += len(r.bytes(r.length(1)))
	}
	if !r.charge(total, 1) {
		return nil
	}
	var blob strings.Builder
	blob.Grow(total)
	r.off = start
	for range n {
		blob.Write(r.bytes(r.length(1)))
	}
	all := blob.String()
	r.off = start
	s := make([]string, n)
	at := 0
	for i := range s {
		l := len(r.bytes(r.length(1)))
		s[i] = all[at : at+l]
		at += l
	}
	return s
}

func decodeFixed(t ValueType, p []byte, n int) any {
	le := binary.LittleEndian
	switch t {
	case Uint8:
		d := make([]uint8, n)
		copy(d, p)
		return d
	case Int8:
		d := make([]int8, n)
		for i := range d {
			d[i] = int8(p[i])
		}
		return d
	case Bool:
		d := make([]bool, n)
		for i := range d {
			d[i] = p[i] == 1
		}
		return d
	case Uint16:
		d := make([]uint16, n)
		for i := range d {
			d[i] = le.Uint16(p[2*i:])
		}
		return d
	case Int16:
		d := make([]int16, n)
		for i := range d {
			d[i] = int16(le.Uint16(p[2*i:]))
		}
		return d
	case Uint32:
		d := make([]uint32, n)
		for i := range d {
			d[i] = le.Uint32(p[4*i:])
		}
		return d
	case Int32:
		d := make([]int32, n)
		for i := range d {
			d[i] = int32(le.Uint32(p[4*i:]))
		}
		return d
	case Float32:
		d := make([]float32, n)
		for i := range d {
			d[i] = math.Float32frombits(le.Uint32(p[4*i:]))
		}
		return d
	case Uint64:
		d := make([]uint64, n)
		for i := range d {
			d[i] = le.Uint64(p[8*i:])
		}
		return d
	case Int64:
		d := make([]int64, n)
		for i := range d {
			d[i] = int64(le.Uint64(p[8*i:]))
		}
		return d
	case Float64:
		d := make([]float64, n)
		for i := range d {
			d[i] = math.Float64frombits(le.Uint64(p[8*i:]))
		}
		return d
	}
	return nil
}

func (r *reader) tensorInfo() (TensorInfo, error) {
	var t TensorInfo
	t.Name = r.str()
	nd := r.u32()
	if r.err != nil {
		return t, r.err
	}
	if nd > MaxDims {
		return t, fmt.Errorf("%s has %d dimensions, at most %d allowed", quote.Quote(t.Name), nd, MaxDims)
	}
	t.Dims = make([]int64, nd)
	n := uint64(1)
	for i := range t.Dims {
		d := r.u64()
		if r.err != nil {
			return t, r.err
		}
		if d > math.MaxInt64 {
			return t, fmt.Errorf("%s: dimension %d is %d", quote.Quote(t.Name), i, d)
		}
		hi, lo := bits.Mul64(n, d)
		if hi != 0 || lo > math.MaxInt64 {
			return t, fmt.Errorf("%s: element count overflows", quote.Quote(t.Name))
		}
		n = lo
		t.Dims[i] = int64(d)
	}
	t.Type = Type(r.u32())
	off := r.u64()
	if r.err != nil {
		return t, r.err
	}
	if !t.Type.Known() {
		return t, fmt.Errorf("%s has unknown tensor type %d", quote.Quote(t.Name), uint32(t.Type))
	}
	if nd > 0 && t.Dims[0]%int64(t.Type.BlockSize()) != 0 {
		return t, fmt.Errorf("%s: row length %d is not a multiple of the %s block size %d", quote.Quote(t.Name), t.Dims[0], t.Type, t.Type.BlockSize())
	}
	size, err := t.Type.RowBytes(int64(n))
	if err != nil {
		return t, fmt.Errorf("%s: %w", quote.Quote(t.Name), err)
	}
	if off > math.MaxInt64 {
		return t, fmt.Errorf("%s: offset %d overflows", quote.Quote(t.Name), off)
	}
	t.Offset = int64(off)
	t.Size = size
	return t, nil
}
