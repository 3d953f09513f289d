package torchpt

import (
	"archive/zip"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/big"
	"slices"
	"strings"

	"chat/models/quote"
)

// decoded is one storage read from the zip and converted once; tensors that
// view it (tied weights) share its slice.
type decoded struct {
	dtype string
	f32   []float32
	i64   []int64
}

func (d *decoded) len() int64 {
	if d.f32 != nil {
		return int64(len(d.f32))
	}
	return int64(len(d.i64))
}

// storageReadHook, when set (by tests), sees every storage read from a zip.
var storageReadHook func(key string)

type loader struct {
	a      *archive
	cache  map[string]*decoded
	stored int64 // elements decoded from storages
	copied int64 // elements gathered for non-contiguous tensors
}

var elemSize = map[string]int64{
	"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2,
	"int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1,
}

func isFloat(dtype string) bool {
	return dtype == "float32" || dtype == "float64" || dtype == "float16" || dtype == "bfloat16"
}

func (l *loader) storage(s *storageRef) (*decoded, error) {
	if d, ok := l.cache[s.key]; ok {
		if d.dtype != s.dtype {
			return nil, fmt.Errorf("storage %s is used as both %s and %s", quote.Quote(s.key), d.dtype, s.dtype)
		}
		return d, nil
	}
	name := l.a.prefix + "data/" + s.key
	f, ok := l.a.files[name]
	if !ok {
		return nil, fmt.Errorf("storage entry %s is missing from the zip", quote.Quote(name))
	}
	if f.Method != zip.Store {
		// A compressed entry could expand to any size from a small file;
		// torch.save writes storages stored, so each element is a file byte.
		return nil, fmt.Errorf("storage entry %s is compressed (zip method %d); torch.save writes storages uncompressed: save the checkpoint again with torch.save", quote.Quote(name), f.Method)
	}
	es := elemSize[s.dtype]
	n, err := l.a.entrySize(f)
	if err != nil {
		return nil, err
	}
	if n/es < s.numel {
		return nil, fmt.Errorf("storage %s: entry holds %d bytes, too few for %d %s elements of %d bytes (truncated file?)", quote.Quote(name), n, s.numel, s.dtype, es)
	}
	if storageReadHook != nil {
		storageReadHook(s.key)
	}
	d, err := l.a.readStorage(f, s.dtype, s.numel, n)
	if err != nil {
		return nil, fmt.Errorf("storage %s: %w", quote.Quote(name), err)
	}
	l.cache[s.key] = d
	l.stored += d.len()
	return d, nil
}

// readStorage decodes numel elements from the entry in chunks, so a large
// storage never sits in memory twice. When the whole entry is read, its
// CRC-32 is checked too.
func (a *archive) readStorage(f *zip.File, dtype string, numel, entryBytes int64) (*decoded, error) {
	es := elemSize[dtype]
	// Storages are stored entries (see storage), backed by file bytes, so
	// their size is trusted.
	d := &decoded{dtype: dtype}
	if isFloat(dtype) {
		d.f32 = make([]float32, 0, numel)
	} else {
		d.i64 = make([]int64, 0, numel)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var o binary.ByteOrder = binary.LittleEndian
	if a.bigEndian {
		o = binary.BigEndian
	}
	chunk := int64(1<<20) / es
	buf := make([]byte, min(numel, chunk)*es)
	for at := int64(0); at < numel; at += chunk {
		m := min(chunk, numel-at)
		raw := buf[:m*es]
		if _, err := io.ReadFull(rc, raw); err != nil {
			return nil, fmt.Errorf("reading %d bytes: %w (the file may be truncated)", numel*es, err)
		}
		if d.f32 != nil {
			d.f32 = slices.Grow(d.f32, int(m))[:at+m]
		} else {
			d.i64 = slices.Grow(d.i64, int(m))[:at+m]
		}
		decodeInto(d, at, raw, o)
	}
	if numel*es == entryBytes {
		if _, err := rc.Read(make([]byte, 1)); err != nil && err != io.EOF {
			return nil, fmt.Errorf("%w (the file is corrupt)", err)
		}
	}
	return d, nil
}

// decodeInto converts raw elements into d starting at element at.
func decodeInto(d *decoded, at int64, raw []byte, o binary.ByteOrder) {
	switch d.dtype {
	case "float32":
		dst := d.f32[at:]
		for i := range len(raw) / 4 {
			dst[i] = math.Float32frombits(o.Uint32(raw[4*i:]))
		}
	case "float64":
		dst := d.f32[at:]
		for i := range len(raw) / 8 {
			dst[i] = float32(math.Float64frombits(o.Uint64(raw[8*i:])))
		}
	case "float16":
		dst := d.f32[at:]
		for i := range len(raw) / 2 {
			dst[i] = halfToFloat(o.Uint16(raw[2*i:]))
		}
	case "bfloat16":
		dst := d.f32[at:]
		for i := range len(raw) / 2 {
			dst[i] = math.Float32frombits(uint32(o.Uint16(raw[2*i:])) << 16)
		}
	case "int64":
		dst := d.i64[at:]
		for i := range len(raw) / 8 {
			dst[i] = int64(o.Uint64(raw[8*i:]))
		}
	case "int32":
		dst := d.i64[at:]
		for i := range len(raw) / 4 {
			dst[i] = int64(int32(o.Uint32(raw[4*i:])))
		}
	case "int16":
		dst := d.i64[at:]
		for i := range len(raw) / 2 {
			dst[i] = int64(int16(o.Uint16(raw[2*i:])))
		}
	case "int8":
		dst := d.i64[at:]
		for i, b := range raw {
			dst[i] = int64(int8(b))
		}
	case "uint8":
		dst := d.i64[at:]
		for i, b := range raw {
			dst[i] = int64(b)
		}
	case "bool":
		dst := d.i64[at:]
		for i, b := range raw {
			dst[i] = 0
			if b != 0 {
				dst[i] = 1
			}
		}
	}
}

// halfToFloat converts an IEEE 754 binary16 value.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch exp {
	case 0:
		if man == 0 {
			return math.Float32frombits(sign)
		}
		// Subnormal: value = man * 2^-24.
		f := float32(man) * (1.0 / (1 << 24))
		if sign != 0 {
			f = -f
		}
		return f
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
}

// tensor materialises a rebuilt tensor, reading its storage if needed.
func (l *loader) tensor(tr *tensorRef) (*Tensor, error) {
	s := tr.storage
	if _, ok := elemSize[s.dtype]; !ok {
		return nil, fmt.Errorf("unsupported dtype %s", s.dtype)
	}
	shape := make([]int, len(tr.size))
	n := int64(1)
	for i, d := range tr.size {
		if d > math.MaxInt32*64 {
			return nil, fmt.Errorf("dimension %d is too large (%d)", i, d)
		}
		shape[i] = int(d)
		if n != 0 && d != 0 && n > math.MaxInt64/d {
			return nil, fmt.Errorf("shape %v overflows", tr.size)
		}
		n *= d
	}
	t := &Tensor{DType: s.dtype, Shape: shape}
	if n == 0 {
		if isFloat(s.dtype) {
			t.F32 = []float32{}
		} else {
			t.I64 = []int64{}
		}
		return t, nil
	}
	// Highest element index the view touches, checked against the storage.
	last := tr.offset
	for i, d := range tr.size {
		st := tr.stride[i]
		if st != 0 && d-1 > (math.MaxInt64-last)/st {
			return nil, fmt.Errorf("strides %v overflow", tr.stride)
		}
		last += (d - 1) * st
	}
	if last >= s.numel {
		return nil, fmt.Errorf("view (offset %d, shape %v, stride %v) reaches element %d of a %d-element storage", tr.offset, tr.size, tr.stride, last, s.numel)
	}
	if n > s.numel {
		return nil, fmt.Errorf("view (shape %v, stride %v) has more elements than its %d-element storage; overlapping views are not supported", tr.size, tr.stride, s.numel)
	}
	d, err := l.storage(s)
	if err != nil {
		return nil, err
	}
	if last >= d.len() {
		return nil, fmt.Errorf("view reaches element %d of a %d-element storage", last, d.len())
	}
	if contiguous(tr.size, tr.stride) {
		lo, hi := tr.offset, tr.offset+n
		if d.f32 != nil {
			t.F32 = d.f32[lo:hi:hi]
		} else {
			t.I64 = d.i64[lo:hi:hi]
		}
		return t, nil
	}
	l.copied += n
	if l.copied > 2*l.stored+1<<20 {
		return nil, fmt.Errorf("too many non-contiguous tensors to copy")
	}
	idx := stridedIndexes(tr.offset, tr.size, tr.stride, n)
	if d.f32 != nil {
		t.F32 = make([]float32, n)
		for i, j := range idx {
			t.F32[i] = d.f32[j]
		}
	} else {
		t.I64 = make([]int64, n)
		for i, j := range idx {
			t.I64[i] = d.i64[j]
		}
	}
	return t, nil
}

func contiguous(size, stride []int64) bool {
	want := int64(1)
	for i := len(size) - 1; i >= 0; i-- {
		if size[i] != 1 && stride[i] != want {
			return false
		}
		want *= size[i]
	}
	return true
}

// stridedIndexes lists the storage index of each element in row-major order.
func stridedIndexes(offset int64, size, stride []int64, n int64) []int64 {
	out := make([]int64, 0, n)
	pos := make([]int64, len(size))
	cur := offset
	for int64(len(out)) < n {
		out = append(out, cur)
		for k := len(size) - 1; k >= 0; k-- {
			pos[k]++
			cur += stride[k]
			if pos[k] < size[k] {
				break
			}
			cur -= pos[k] * stride[k]
			pos[k] = 0
		}
	}
	return out
}

func isScalar(tr *tensorRef) bool {
	for _, d := range tr.size {
		if d != 1 {
			return false
		}
	}
	return true
}

// converter turns unpickled values into plain Go values. Results are
// memoised per object so shared sub-structures cost nothing extra, and a
// structure that contains itself is an error.
type converter struct {
	ld   *loader
	done map[any]any
	busy map[any]bool
}

func newConverter(ld *loader) *converter {
	return &converter{ld: ld, done: map[any]any{}, busy: map[any]bool{}}
}

func (c *converter) plain(v any, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("value nested more than %d levels deep", maxDepth)
	}
	switch x := v.(type) {
	case nil, bool, int64, float64, string:
		return x, nil
	case *big.Int:
		if r, ok := c.done[x]; ok {
			return r, nil
		}
		f, _ := new(big.Float).SetInt(x).Float64()
		c.done[x] = f
		return f, nil
	case pyBytes:
		return string(x), nil
	case *global:
		return x.String(), nil
	case *npDtype:
		return x.code, nil
	case *storageRef:
		return nil, nil
	case *tensorRef:
		if !isScalar(x) {
			return nil, nil
		}
		if r, ok := c.done[x]; ok {
			return r, nil
		}
		t, err := c.ld.tensor(x)
		if err != nil {
			return nil, fmt.Errorf("scalar tensor: %w", err)
		}
		var r any
		switch {
		case len(t.F32) == 1:
			r = float64(t.F32[0])
		case len(t.I64) == 1 && t.DType == "bool":
			r = t.I64[0] != 0
		case len(t.I64) == 1:
			r = t.I64[0]
		}
		c.done[x] = r
		return r, nil
	case *pyList, *pyTuple, *pySet:
		if r, ok := c.done[x]; ok {
			return r, nil
		}
		if c.busy[x] {
			return nil, fmt.Errorf("a %s contains itself", typeName(x))
		}
		c.busy[x] = true
		items := seqItems(x)
		out := make([]any, len(items))
		for i, it := range items {
			p, err := c.plain(it, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = p
		}
		delete(c.busy, x)
		c.done[x] = out
		return out, nil
	case *pyDict:
		if r, ok := c.done[x]; ok {
			return r, nil
		}
		if c.busy[x] {
			return nil, fmt.Errorf("a dict contains itself")
		}
		c.busy[x] = true
		out := make(map[string]any, len(x.keys))
		for i, k := range x.keys {
			ks, ok := k.(string)
			if !ok {
				pk := plainKey(k)
				if pk == nil {
					ks = "None"
				} else {
					ks = fmt.Sprint(pk)
				}
			}
			p, err := c.plain(x.vals[i], depth+1)
			if err != nil {
				return nil, err
			}
			out[ks] = p
		}
		delete(c.busy, x)
		c.done[x] = out
		return out, nil
	}
	return nil, fmt.Errorf("cannot convert %s", typeName(v))
}

// plainKey renders a non-string dict key for use as a map key.
func plainKey(k any) any {
	n := 0
	return plainKeyN(k, &n)
}

func plainKeyN(k any, n *int) any {
	*n++
	if *n > 64 {
		return "..."
	}
	switch x := k.(type) {
	case *pyTuple:
		parts := make([]string, 0, len(x.items))
		for _, it := range x.items {
			if *n > 64 {
				parts = append(parts, "...")
				break
			}
			parts = append(parts, fmt.Sprint(plainKeyN(it, n)))
		}
		return "(" + strings.Join(parts, ", ") + ")"
	case pyBytes:
		return string(x)
	case *big.Int:
		if x.BitLen() > 256 {
			return fmt.Sprintf("<int of %d bits>", x.BitLen())
		}
		return x.String()
	case *global:
		return x.String()
	case *tensorRef, *storageRef:
		return typeName(x)
	case bool:
		if x {
			return "True"
		}
		return "False"
	case nil:
		return "None"
	}
	return k
}
