package kernels

import "unsafe"

// Attention over a KV cache reads a run of cached key rows and then the
// value rows. AttnScores and AttnMixAdd do it for one query head (a head at
// a time): attention itself reads every head of a row at a time (the Rows
// kernels below), and these two are what those are held to, bit for bit
// (TestAttnRows), and compared with (BenchmarkAttnColdKV's f32/heads).
// Head dimensions are small (8 to 128), so a Dot or Axpy call per cached
// position would spend more time entering the call than computing; each
// kernel takes the whole run at once.

// AttnScores sets scores[t] = dot(q, k[t*stride : t*stride+len(q)])·scale
// for t < n: the attention scores of one head over n cached keys whose rows
// are stride floats apart.
func AttnScores(scores, q, k []float32, stride, n int, scale float32) {
	d := len(q)
	if n <= 0 {
		return
	}
	if len(scores) < n || stride < d || len(k) < (n-1)*stride+d {
		panic("kernels: AttnScores: slices too short for n rows")
	}
	if useAsm && d%8 == 0 && d > 0 {
		attnScoresAsm(scores, q, k, stride, n, scale)
		return
	}
	attnScoresGo(scores, q, k, stride, n, scale)
}

// AttnMixAdd adds Σ_t w[t]·v[t*stride+j] to out[j] for j < len(out), t < n:
// the attention-weighted sum of n cached value rows, added so that values
// spread over several blocks of a paged cache sum into one out. Each row is one fused multiply-add per element,
// in row order, as a run of Axpy calls would do.
func AttnMixAdd(out, w, v []float32, stride, n int) {
	d := len(out)
	if n <= 0 {
		return
	}
	if len(w) < n || stride < d || len(v) < (n-1)*stride+d {
		panic("kernels: AttnMixAdd: slices too short for n rows")
	}
	if useAsm && d%8 == 0 && d > 0 {
		attnMixAsm(out, w, v, stride, n)
		return
	}
	attnMixGo(out, w, v, stride, n)
}

func attnScoresGo(scores, q, k []float32, stride, n int, scale float32) {
	d := len(q)
	for t := 0; t < n; t++ {
		scores[t] = dotGo(q, k[t*stride:t*stride+d]) * scale
	}
}

func attnMixGo(out, w, v []float32, stride, n int) {
	d := len(out)
	for t := 0; t < n; t++ {
		axpyGo(w[t], v[t*stride:t*stride+d], out)
	}
}

// Attention over a KV cache reads the stored rows as they are, every head
// of a row at a time (attnrows_gen.py says why), decoding each value as the
// cache decodes it into float32 (f16: exactly; int8: float32(code)·scale,
// as ScaleI8). Each score and output element has the bits AttnScores and
// AttnMixAdd give on the decoded rows, a head at a time. Query head h
// reads KV head kvh[h]: its values in row t start at element
// t*stride+kvh[h]*d, d = the head width.

// AttnScoresRowsF32 sets scores[h*sstride+t] = dot(q[h*d:(h+1)*d], key of
// head h in row t)·scale for h < len(kvh), t < n, d = len(q)/len(kvh), over
// n float32 key rows kstride elements apart.
func AttnScoresRowsF32(scores []float32, sstride int, q, k []float32, kstride int, kvh []int32, n int, scale float32) {
	if d, ok := scoresRows("AttnScoresRowsF32", rowsF32, false, scores, sstride, q, k, kstride, nil, 0, kvh, n, scale); !ok {
		for h, g := range kvh {
			AttnScores(scores[h*sstride:], q[h*d:(h+1)*d], k[int(g)*d:], kstride, n, scale)
		}
	}
}

// AttnMixRowsF32 adds Σ_{t<n} w[h*wstride+t]·(value of head h in row t) to
// out[h*d:(h+1)*d] for h < len(kvh), d = len(out)/len(kvh), over n float32
// value rows vstride elements apart.
func AttnMixRowsF32(out, w []float32, wstride int, v []float32, vstride int, kvh []int32, n int) {
	if d, ok := mixRows("AttnMixRowsF32", rowsF32, false, out, w, wstride, v, vstride, nil, 0, kvh, n); !ok {
		for h, g := range kvh {
			AttnMixAdd(out[h*d:(h+1)*d], w[h*wstride:], v[int(g)*d:], vstride, n)
		}
	}
}

// AttnScoresRowsF16 is AttnScoresRowsF32 over rows of halves.
func AttnScoresRowsF16(scores []float32, sstride int, q []float32, k []uint16, kstride int, kvh []int32, n int, scale float32) {
	scoresCoded("AttnScoresRowsF16", rowsF16, halfRow, scores, sstride, q, k, kstride, nil, 0, kvh, n, scale)
}

// AttnMixRowsF16 is AttnMixRowsF32 over rows of halves.
func AttnMixRowsF16(out, w []float32, wstride int, v []uint16, vstride int, kvh []int32, n int) {
	mixCoded("AttnMixRowsF16", rowsF16, halfRow, out, w, wstride, v, vstride, nil, 0, kvh, n)
}

// AttnScoresRowsI8 is AttnScoresRowsF32 over int8 codes with a scale per
// position and KV head, at scales[t*hkv+kvh[h]] (a value is ScaleI8's).
func AttnScoresRowsI8(scores []float32, sstride int, q []float32, k []int8, kstride int, scales []float32, hkv int, kvh []int32, n int, scale float32) {
	scoresCoded("AttnScoresRowsI8", rowsI8, int8Row, scores, sstride, q, k, kstride, scales, hkv, kvh, n, scale)
}

// AttnMixRowsI8 is AttnMixRowsF32 over int8 codes and their scales (see
// AttnScoresRowsI8).
func AttnMixRowsI8(out, w []float32, wstride int, v []int8, vstride int, scales []float32, hkv int, kvh []int32, n int) {
	mixCoded("AttnMixRowsI8", rowsI8, int8Row, out, w, wstride, v, vstride, scales, hkv, kvh, n)
}

// AttnScoresRowsFP8 is AttnScoresRowsI8 over E4M3 codes (a value is
// DequantizeFP8's: the code's value times its row and head's scale).
func AttnScoresRowsFP8(scores []float32, sstride int, q []float32, k []uint8, kstride int, scales []float32, hkv int, kvh []int32, n int, scale float32) {
	scoresCoded("AttnScoresRowsFP8", rowsFP8, e4m3Row, scores, sstride, q, k, kstride, scales, hkv, kvh, n, scale)
}

// AttnMixRowsFP8 is AttnMixRowsI8 over E4M3 codes (see AttnScoresRowsFP8).
func AttnMixRowsFP8(out, w []float32, wstride int, v []uint8, vstride int, scales []float32, hkv int, kvh []int32, n int) {
	mixCoded("AttnMixRowsFP8", rowsFP8, e4m3Row, out, w, wstride, v, vstride, scales, hkv, kvh, n)
}

// Int4KVGroup is the values of a head that share one scale in the int4 KV
// cache (models/kvcache's Int4 format; a head narrower than it is one
// group).
const Int4KVGroup = 32

// Int4KVHead is how an int4 KV row holds a head of d values: ⌈d/2⌉ bytes
// of codes and ⌈d/Int4KVGroup⌉ scales.
func Int4KVHead(d int) (codeBytes, scales int) {
	return (d + 1) / 2, (d + Int4KVGroup - 1) / Int4KVGroup
}

// AttnScoresRowsI4 is AttnScoresRowsF32 over the int4 KV cache's rows: a
// head's d values are ⌈d/2⌉ bytes of codes (two a byte, low nibble first)
// and ⌈d/Int4KVGroup⌉ scales, a value Int4Levels[code]·scale as
// DequantizeLUT4 decodes it. Rows are kstride bytes apart, KV head g's
// codes at byte g·⌈d/2⌉ of a row; a row has hkv heads' scales, head g's
// from scales[t·hkv·⌈d/32⌉ + g·⌈d/32⌉]. Bitwise AttnScores on the decoded
// heads, as the other row kernels: the assembly (heads of a multiple of 32
// up to 256 values) decodes a value as float32(code-8)·scale (AVX2) or
// looks it up in the levels times the scale (AVX-512), one rounding of the
// same exact product either way.
func AttnScoresRowsI4(scores []float32, sstride int, q []float32, k []byte, kstride int, scales []float32, hkv int, kvh []int32, n int, scale float32) {
	d, ng := checkRowsI4("AttnScoresRowsI4", len(scores), sstride, len(q), len(k), kstride, len(scales), hkv, kvh, n)
	if kr := rowsI4(); i4Asm(kr.scores != nil, d, n) {
		kr.scores(unsafe.SliceData(scores), unsafe.SliceData(q), unsafe.Pointer(unsafe.SliceData(k)), unsafe.SliceData(scales), unsafe.SliceData(kvh), len(kvh), d, n, 4*sstride, kstride, hkv*ng, scale)
		return
	}
	var buf [256]float32
	row := decodeBuf(buf[:], d)
	for h, g := range kvh {
		for t := range n {
			int4Head(row, k, scales, t*kstride, t*hkv+int(g), int(g))
			AttnScores(scores[h*sstride+t:], q[h*d:(h+1)*d], row, d, 1, scale)
		}
	}
}

// AttnMixRowsI4 is AttnMixRowsF32 over the int4 KV cache's rows (see
// AttnScoresRowsI4).
func AttnMixRowsI4(out, w []float32, wstride int, v []byte, vstride int, scales []float32, hkv int, kvh []int32, n int) {
	d, ng := checkRowsI4("AttnMixRowsI4", len(w), wstride, len(out), len(v), vstride, len(scales), hkv, kvh, n)
	if kr := rowsI4(); i4Asm(kr.mix != nil, d, n) {
		kr.mix(unsafe.SliceData(out), unsafe.SliceData(w), unsafe.Pointer(unsafe.SliceData(v)), unsafe.SliceData(scales), unsafe.SliceData(kvh), len(kvh), d, n, 4*wstride, vstride, hkv*ng)
		return
	}
	var buf [256]float32
	row := decodeBuf(buf[:], d)
	for h, g := range kvh {
		for t := range n {
			int4Head(row, v, scales, t*vstride, t*hkv+int(g), int(g))
			AttnMixAdd(out[h*d:(h+1)*d], w[h*wstride+t:], row, d, 1)
		}
	}
}

// int4Head decodes KV head g of the int4 row at byte at of codes, whose
// scales are head hs's (row·hkv + g) of scales, into dst (the head's d
// values): the reference the int4 row kernels are held to.
func int4Head(dst []float32, codes []byte, scales []float32, at, hs, g int) {
	d := len(dst)
	cb, ng := Int4KVHead(d)
	DequantizeLUT4(dst, codes[at+g*cb:], scales[hs*ng:], &Int4Levels, Int4KVGroup, d)
}

// i4Asm reports whether the int4 row kernels take heads of d values over
// n rows: whole groups, and at most 8 of them, the scales of eight rows
// the assembly copies to its frame.
func i4Asm(have bool, d, n int) bool {
	return useAsm && have && d%Int4KVGroup == 0 && d > 0 && d <= 8*Int4KVGroup && n > 0
}

// checkRowsI4 is checkRows and checkScales for int4 rows (kv and kvstride
// in bytes); it returns the head width and its scale groups.
func checkRowsI4(fn string, sc, sstride, x, kv, kvstride, scales, hkv int, kvh []int32, n int) (d, ng int) {
	d, nkv := checkRows(fn, sc, sstride, x, kv, kvstride, kvh, n, true)
	_, ng = Int4KVHead(d)
	checkScales(fn, scales, hkv*ng, nkv*ng, n)
	return d, ng
}

// rowKernels is one stored type's row kernels (attnrows_gen.py), the zero
// value where there are none (attn_other.go).
type rowKernels struct {
	scores func(scores, q *float32, k unsafe.Pointer, sc *float32, kvh *int32, heads, d, n, sstride, kstride, hkv int, scale float32)
	mix    func(out, w *float32, v unsafe.Pointer, sc *float32, kvh *int32, heads, d, n, wstride, vstride, hkv int)
}

// codedRow is a stored type the row kernels decode: f16 halves, or int8 or
// E4M3 codes with a scale per row and KV head.
type codedRow uint8

const (
	halfRow codedRow = iota
	int8Row
	e4m3Row
)

// decodeHead decodes one head of a row (d values at p) as the cache decodes
// it, for the reference path. Direct calls, so that dst stays on the
// caller's stack.
func decodeHead(c codedRow, dst []float32, p unsafe.Pointer, s float32) {
	switch d := len(dst); c {
	case halfRow:
		WidenF16(dst, unsafe.Slice((*uint16)(p), d))
	case int8Row:
		ScaleI8(dst, unsafe.Slice((*int8)(p), d), s)
	default:
		DequantizeFP8(dst, unsafe.Slice((*uint8)(p), d), s, E4M3)
	}
}

// scoresRows checks a scores call and runs its row kernel when there is
// one for these rows (ok); it returns the head width.
func scoresRows[T any](fn string, kr rowKernels, scaled bool, scores []float32, sstride int, q []float32, k []T, kstride int, scales []float32, hkv int, kvh []int32, n int, scale float32) (d int, ok bool) {
	d, nkv := checkRows(fn, len(scores), sstride, len(q), len(k), kstride, kvh, n, false)
	if scaled {
		checkScales(fn, len(scales), hkv, nkv, n)
	}
	if !useAsm || kr.scores == nil || d%8 != 0 || d == 0 || n == 0 {
		return d, false
	}
	kr.scores(unsafe.SliceData(scores), unsafe.SliceData(q), unsafe.Pointer(unsafe.SliceData(k)), unsafe.SliceData(scales), unsafe.SliceData(kvh), len(kvh), d, n, 4*sstride, kstride, hkv, scale)
	return d, true
}

// mixRows is scoresRows for a mix.
func mixRows[T any](fn string, kr rowKernels, scaled bool, out, w []float32, wstride int, v []T, vstride int, scales []float32, hkv int, kvh []int32, n int) (d int, ok bool) {
	d, nkv := checkRows(fn, len(w), wstride, len(out), len(v), vstride, kvh, n, false)
	if scaled {
		checkScales(fn, len(scales), hkv, nkv, n)
	}
	if !useAsm || kr.mix == nil || d%8 != 0 || d == 0 || n == 0 {
		return d, false
	}
	kr.mix(unsafe.SliceData(out), unsafe.SliceData(w), unsafe.Pointer(unsafe.SliceData(v)), unsafe.SliceData(scales), unsafe.SliceData(kvh), len(kvh), d, n, 4*wstride, vstride, hkv)
	return d, true
}

// scoresCoded is a coded type's scores: its row kernel, or each head of
// each row decoded and scored by AttnScores, the bits the kernel is held
// to.
func scoresCoded[T any](fn string, kr rowKernels, c codedRow, scores []float32, sstride int, q []float32, k []T, kstride int, scales []float32, hkv int, kvh []int32, n int, scale float32) {
	d, ok := scoresRows(fn, kr, c != halfRow, scores, sstride, q, k, kstride, scales, hkv, kvh, n, scale)
	if ok {
		return
	}
	var buf [256]float32
	row := decodeBuf(buf[:], d)
	for h, g := range kvh {
		for t := range n {
			decodeHead(c, row, unsafe.Pointer(unsafe.SliceData(k[t*kstride+int(g)*d:])), scaleOf(scales, t*hkv+int(g)))
			AttnScores(scores[h*sstride+t:], q[h*d:(h+1)*d], row, d, 1, scale)
		}
	}
}

// mixCoded is scoresCoded for a mix (AttnMixAdd on each decoded head).
func mixCoded[T any](fn string, kr rowKernels, c codedRow, out, w []float32, wstride int, v []T, vstride int, scales []float32, hkv int, kvh []int32, n int) {
	d, ok := mixRows(fn, kr, c != halfRow, out, w, wstride, v, vstride, scales, hkv, kvh, n)
	if ok {
		return
	}
	var buf [256]float32
	row := decodeBuf(buf[:], d)
	for h, g := range kvh {
		for t := range n {
			decodeHead(c, row, unsafe.Pointer(unsafe.SliceData(v[t*vstride+int(g)*d:])), scaleOf(scales, t*hkv+int(g)))
			AttnMixAdd(out[h*d:(h+1)*d], w[h*wstride+t:], row, d, 1)
		}
	}
}

// scaleOf is scales[i], or 0 for a type without scales (f16).
func scaleOf(scales []float32, i int) float32 {
	if scales == nil {
		return 0
	}
	return scales[i]
}

// decodeBuf is buf[:d], or a new slice when d does not fit.
func decodeBuf(buf []float32, d int) []float32 {
	if d <= len(buf) {
		return buf[:d]
	}
	return make([]float32, d)
}

// checkRows checks a row kernel's slices, panicking as the other kernels'
// checks do, and returns the head width d = x/len(kvh) and the KV heads
// the rows must hold (the largest kvh + 1): sc holds n values of each
// query head, sstride apart; the heads of x are d wide; kv holds n rows,
// kvstride apart, each head d elements, or Int4KVHead's code bytes when
// int4.
func checkRows(fn string, sc, sstride, x, kv, kvstride int, kvh []int32, n int, int4 bool) (d, nkv int) {
	h := len(kvh)
	if h == 0 || x%h != 0 {
		panic("kernels: " + fn + ": the heads do not divide the query or output")
	}
	d = x / h
	hw := d // a KV head's width in kv's elements
	if int4 {
		hw, _ = Int4KVHead(d)
	}
	for _, g := range kvh {
		if g < 0 {
			panic("kernels: " + fn + ": a negative KV head")
		}
		nkv = max(nkv, int(g)+1)
	}
	if n > 0 && (sstride < n || sc < (h-1)*sstride+n || kvstride < nkv*hw || kv < (n-1)*kvstride+nkv*hw) {
		panic("kernels: " + fn + ": slices too short for n rows")
	}
	return d, nkv
}

// checkScales checks a coded row kernel's scales: hkv a row, for the nkv KV
// heads its queries read, n rows.
func checkScales(fn string, scales, hkv, nkv, n int) {
	if n > 0 && (hkv < nkv || scales < n*hkv) {
		panic("kernels: " + fn + ": scales too short for n rows")
	}
}
