package kvcache

import (
	"fmt"
	"unsafe"

	"chat/models"
	"chat/models/hugepage"
	"chat/models/kernels"
	"chat/models/quant"
)

// Quantized KV storage. Keys and values are quantized separately (Layout.K,
// Layout.V). A quantized part stores each position's row of each layer as
// codes plus float32 scales, every scale group lying inside one KV head:
//
//	Int8  one int8 per element, a scale per head:
//	        scale = absmax(head slice)/127, q = clamp(roundHalfToEven(x/scale), ±127)
//	        (all 0 with scale 0 when absmax is 0), x' = float32(q)·scale
//	FP8   one OCP E4M3 code per element (quant.EncodeFP8), a scale per head:
//	        scale = absmax/448 (E4M3's largest value), x' = value(code)·scale;
//	        the scale puts every head in E4M3's normal range, so an element
//	        keeps 3 mantissa bits: |x - x'| <= |x|/16 + scale·2^-10
//	Int4  4-bit codes, two per byte, a scale per kernels.Int4KVGroup elements of a
//	        head (quant.EncodeInt4, the int4-gN weights' rule, as llama.cpp's
//	        q4_0 KV keeps a scale per 32): scale = max(amax, 1e-8)/7,
//	        q = clamp(round(x/scale), ±7), x' = q·scale
//	F16   each element an IEEE half (round to nearest even, no scale), as
//	        llama.cpp stores its KV cache by default
//
// Scales are per position rather than per block: rows are appended one
// position at a time, and a per-block scale would have to re-quantize the
// block's earlier rows whenever a later row raised the absmax. Per-position
// scales make every write final and exact to describe. A row of D = H·d
// elements takes (d = 64): Int8 D+4H bytes, 0.27 of float32's 4D; FP8 the
// same; Int4 D/2 + 4H⌈d/32⌉ bytes, 0.16; F16 2D, 0.5.

// Format is how a part (keys or values) of the cache is stored.
type Format uint8

const (
	F32  Format = iota // float32 rows
	Int8               // int8 codes, a float32 scale per position and head
	FP8                // E4M3 codes, a float32 scale per position and head
	Int4               // 4-bit codes, a float32 scale per kernels.Int4KVGroup elements of a head
	F16                // IEEE halves, no scales
)

var formatNames = [...]string{F32: "f32", Int8: "int8", FP8: "fp8", Int4: "int4", F16: "f16"}

func (f Format) String() string {
	if int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// Formats are the names ParseFormat takes, F32 first.
func Formats() []string { return formatNames[:] }

// Auto is the KV setting (the default of --kv-quant-k, --kv-quant-v, chat
// bench and chat plan) that stores keys and values as the model's own
// engine does: f16 for a GGUF model, llama.cpp's and ollama's default (half
// of f32's bytes, so a budget holds twice the context and a batch's decode
// reads half as much), and f32 for a course checkpoint, whose PyTorch
// cache the goldens were computed with.
const Auto = "auto"

// FormatFor reads a KV setting for a model: Auto or "" is that model's
// format (above), any other name as ParseFormat reads it.
func FormatFor(s string, info models.Info) (Format, error) {
	if s != Auto && s != "" {
		f, err := ParseFormat(s)
		if err != nil {
			err = fmt.Errorf("kvcache: KV format %q: want auto, %s", s, formatList)
		}
		return f, err
	}
	if info.Format == "gguf" {
		return F16, nil
	}
	return F32, nil
}

// formatList names the formats for an error, as ParseFormat takes them.
const formatList = "f32, f16, int8, fp8 or int4"

// ParseFormat reads a format's name ("" is f32).
func ParseFormat(s string) (Format, error) {
	if s == "" {
		return F32, nil
	}
	for f, n := range formatNames {
		if s == n {
			return Format(f), nil
		}
	}
	return F32, fmt.Errorf("kvcache: KV format %q: want %s", s, formatList)
}

// codeBytes and scales are one row's code bytes and scales: dim elements in
// h heads.
func (f Format) codeBytes(dim, h int) int {
	switch f {
	case Int8, FP8:
		return dim
	case Int4:
		cb, _ := kernels.Int4KVHead(dim / h)
		return h * cb
	case F16:
		return 2 * dim
	}
	return 0
}

func (f Format) scales(dim, h int) int {
	switch f {
	case Int8, FP8:
		return h
	case Int4:
		_, ng := kernels.Int4KVHead(dim / h)
		return h * ng
	}
	return 0
}

func (f Format) rowBytes(dim, heads int) int64 {
	if f == F32 {
		return 4 * int64(dim)
	}
	return int64(f.codeBytes(dim, heads)) + 4*int64(f.scales(dim, heads))
}

// Quantized reports whether any part is not stored as F32.
func (l Layout) Quantized() bool { return l.K != F32 || l.V != F32 }

func (l Layout) checkQuant() error {
	for _, f := range []Format{l.K, l.V} {
		if int(f) >= len(formatNames) {
			return fmt.Errorf("kvcache: unknown KV format %v", f)
		}
	}
	h := l.heads()
	if l.K != F32 && l.KDim%h != 0 || l.V != F32 && l.VDim%h != 0 {
		return fmt.Errorf("kvcache: %d heads do not divide rows of %d key and %d value floats", h, l.KDim, l.VDim)
	}
	return nil
}

// allocRows allocates every layer's storage for the layout's formats.
func (p *Pool) allocRows() {
	l, n, h := p.lay, p.blocks*p.bs, p.lay.heads()
	mk := func(f Format, dim int) (fl [][]float32, q [][]byte, sc [][]float32) {
		for range l.Layers {
			if f == F32 {
				fl = append(fl, hugepage.Floats(n*dim))
			} else {
				q = append(q, hugepage.Bytes(n*f.codeBytes(dim, h)))
				sc = append(sc, make([]float32, n*f.scales(dim, h)))
			}
		}
		return
	}
	p.k, p.kq, p.ks = mk(l.K, l.KDim)
	p.v, p.vq, p.vs = mk(l.V, l.VDim)
}

// KQ is layer l's quantized key rows of block b, [BlockSize] rows of codes
// and of scales (see the formats above); nil when keys are stored as F32.
func (p *Pool) KQ(l int, b int32) ([]byte, []float32) {
	if p.lay.K == F32 {
		return nil, nil
	}
	return p.qrows(p.lay.K, p.kq[l], p.ks[l], b, p.lay.KDim)
}

// VQ: see KQ.
func (p *Pool) VQ(l int, b int32) ([]byte, []float32) {
	if p.lay.V == F32 {
		return nil, nil
	}
	return p.qrows(p.lay.V, p.vq[l], p.vs[l], b, p.lay.VDim)
}

func (p *Pool) qrows(f Format, q []byte, sc []float32, b int32, dim int) ([]byte, []float32) {
	n, m := p.bs*f.codeBytes(dim, p.lay.heads()), p.bs*f.scales(dim, p.lay.heads())
	return q[int(b)*n : (int(b)+1)*n : (int(b)+1)*n], sc[int(b)*m : (int(b)+1)*m : (int(b)+1)*m]
}

// QuantizeRow stores x (dim floats, h equal head slices) in format f (not
// F32) as one row's codes q and scales sc. It allocates nothing.
func QuantizeRow(f Format, q []byte, sc []float32, x []float32, dim, h int) {
	d := dim / h
	x = x[:dim]
	switch f {
	case Int8: // kernels.QuantizeScaledI8 is ScaleI8's inverse
		for i := 0; i < h; i++ {
			sc[i] = kernels.QuantizeScaledI8(codes(q[i*d:(i+1)*d]), x[i*d:(i+1)*d])
		}
	case FP8: // as Int8's, with E4M3 codes
		for i := 0; i < h; i++ {
			xs, qs := x[i*d:(i+1)*d], q[i*d:(i+1)*d]
			s := kernels.RowScale(xs, quant.FP8Max(kernels.E4M3))
			sc[i] = s
			if s == 0 {
				clear(qs)
				continue
			}
			for j := kernels.DivEncodeE4M3(qs, xs, s); j < d; j++ {
				qs[j] = quant.EncodeFP8(xs[j]/s, kernels.E4M3)
			}
		}
	case Int4:
		cb, ng := kernels.Int4KVHead(d)
		for i := 0; i < h; i++ {
			quant.EncodeInt4(q[i*cb:(i+1)*cb], sc[i*ng:(i+1)*ng], x[i*d:(i+1)*d], kernels.Int4KVGroup)
		}
	case F16:
		kernels.NarrowF16(halves(q[:2*dim]), x)
	}
}

// halves is q's bytes as the little-endian halves an F16 part stores.
func halves(q []byte) []uint16 {
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(q))), len(q)/2)
}

// codes is q's bytes as the int8 codes an Int8 part stores.
func codes(q []byte) []int8 {
	return unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(q))), len(q))
}

// DequantizeRows writes rows rows of dim elements (h heads each) stored in
// format f (not F32) as codes q and scales sc into out as float32.
func DequantizeRows(f Format, out []float32, q []byte, sc []float32, rows, dim, h int) {
	d := dim / h
	out = out[:rows*dim]
	switch f {
	case Int8:
		kernels.ScaleI8Rows(out, codes(q[:rows*dim]), sc[:rows*h], d) // one call a block
	case FP8:
		for r := 0; r < rows*h; r++ {
			kernels.DequantizeFP8(out[r*d:(r+1)*d], q[r*d:(r+1)*d], sc[r], kernels.E4M3)
		}
	case F16:
		kernels.WidenF16(out, halves(q[:2*rows*dim])) // one call a block: the rows lie together
	case Int4:
		cb, ng := kernels.Int4KVHead(d)
		for r := 0; r < rows*h; r++ {
			kernels.DequantizeLUT4(out[r*d:(r+1)*d], q[r*cb:(r+1)*cb], sc[r*ng:(r+1)*ng], &kernels.Int4Levels, kernels.Int4KVGroup, d)
		}
	}
}

// WriteRow stores layer l's key row k [KDim] and value row v [VDim] of
// position pos (< Len), quantizing the parts not stored as F32. It
// allocates nothing.
func (s *Seq) WriteRow(l, pos int, k, v []float32) {
	p := s.p
	b := s.table[pos/p.bs]
	r := pos % p.bs
	kd, vd, h := p.lay.KDim, p.lay.VDim, p.lay.heads()
	if f := p.lay.K; f != F32 {
		q, sc := p.KQ(l, b)
		cb, ns := f.codeBytes(kd, h), f.scales(kd, h)
		QuantizeRow(f, q[r*cb:(r+1)*cb], sc[r*ns:(r+1)*ns], k, kd, h)
	} else {
		copy(p.K(l, b)[r*kd:(r+1)*kd], k[:kd])
	}
	if f := p.lay.V; f != F32 {
		q, sc := p.VQ(l, b)
		cb, ns := f.codeBytes(vd, h), f.scales(vd, h)
		QuantizeRow(f, q[r*cb:(r+1)*cb], sc[r*ns:(r+1)*ns], v, vd, h)
	} else {
		copy(p.V(l, b)[r*vd:(r+1)*vd], v[:vd])
	}
}

// Keys is layer l's key rows of blocks i.. of the table as float32: the
// pool's own rows of the longest run of blocks i..i+n-1 (n >= 1, i+n <= j)
// that lie next to each other in the pool when keys are F32, so attention
// reads a freshly allocated sequence in one run; else block i's positions
// below Len decoded into scratch (len >= BlockSize·KDim), n = 1. It
// allocates nothing.
func (s *Seq) Keys(l, i, j int, scratch []float32) ([]float32, int) {
	p := s.p
	if p.lay.K == F32 {
		n := s.run(i, j)
		return p.rows(p.k[l], s.table[i], n, p.lay.KDim), n
	}
	q, sc := p.KQ(l, s.table[i])
	DequantizeRows(p.lay.K, scratch, q, sc, s.rowsIn(i), p.lay.KDim, p.lay.heads())
	return scratch[:p.bs*p.lay.KDim], 1
}

// Values: see Keys.
func (s *Seq) Values(l, i, j int, scratch []float32) ([]float32, int) {
	p := s.p
	if p.lay.V == F32 {
		n := s.run(i, j)
		return p.rows(p.v[l], s.table[i], n, p.lay.VDim), n
	}
	q, sc := p.VQ(l, s.table[i])
	DequantizeRows(p.lay.V, scratch, q, sc, s.rowsIn(i), p.lay.VDim, p.lay.heads())
	return scratch[:p.bs*p.lay.VDim], 1
}

// KeysStored is layer l's key rows of the longest run of blocks i..i+n-1
// (n >= 1, i+n <= j) adjacent in the pool, as a quantized part stores them,
// and n (models.KV says how attention reads them); a zero StoredRows when
// keys are F32. It allocates nothing.
func (s *Seq) KeysStored(l, i, j int) (models.StoredRows, int) {
	p := s.p
	return s.stored(p.lay.K, p.kq, p.ks, l, i, j, p.lay.KDim)
}

// ValuesStored: see KeysStored.
func (s *Seq) ValuesStored(l, i, j int) (models.StoredRows, int) {
	p := s.p
	return s.stored(p.lay.V, p.vq, p.vs, l, i, j, p.lay.VDim)
}

func (s *Seq) stored(f Format, q [][]byte, sc [][]float32, l, i, j, dim int) (models.StoredRows, int) {
	if f == F32 {
		return models.StoredRows{}, 0
	}
	p, h := s.p, s.p.lay.heads()
	n := s.run(i, j)
	b := int(s.table[i])
	w := p.bs * f.codeBytes(dim, h)
	rows := q[l][b*w : (b+n)*w]
	if f == F16 {
		return models.StoredRows{F16: halves(rows)}, n
	}
	m := p.bs * f.scales(dim, h)
	scales := sc[l][b*m : (b+n)*m]
	switch f {
	case FP8:
		return models.StoredRows{FP8: rows, Scales: scales}, n
	case Int4:
		return models.StoredRows{I4: rows, Scales: scales}, n
	}
	return models.StoredRows{I8: codes(rows), Scales: scales}, n
}

// run is how many blocks from the i-th of the table (before the j-th) have
// consecutive ids, so their rows are adjacent in the pool.
func (s *Seq) run(i, j int) int {
	j = min(j, len(s.table))
	n := 1
	for i+n < j && s.table[i+n] == s.table[i]+int32(n) {
		n++
	}
	return n
}

// rowsIn is the number of positions below Len in the i-th block.
func (s *Seq) rowsIn(i int) int { return min(s.p.bs, s.n-i*s.p.bs) }
