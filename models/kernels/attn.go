package kernels

// Attention over a KV cache reads, for one query head, a run of cached key
// rows and then the value rows. Head dimensions are small (8 to 128), so a
// Dot or Axpy call per cached position spends more time entering the call
// than computing; these two kernels take the whole run at once.

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

// AttnScoresF16 is AttnScores over key rows stored as IEEE halves (an f16
// KV cache): the bits AttnScores gives on the widened rows, without
// widening them into memory first.
func AttnScoresF16(scores, q []float32, k []uint16, stride, n int, scale float32) {
	d := len(q)
	if n <= 0 {
		return
	}
	if len(scores) < n || stride < d || len(k) < (n-1)*stride+d {
		panic("kernels: AttnScoresF16: slices too short for n rows")
	}
	if useAsm && d%8 == 0 && d > 0 {
		attnScoresF16Asm(scores, q, k, stride, n, scale)
		return
	}
	tab := f16Table()
	for t := 0; t < n; t++ {
		scores[t] = dotF16Go(tab, k[t*stride:t*stride+d], q) * scale
	}
}

// AttnMixAddF16 is AttnMixAdd over value rows stored as IEEE halves.
func AttnMixAddF16(out, w []float32, v []uint16, stride, n int) {
	d := len(out)
	if n <= 0 {
		return
	}
	if len(w) < n || stride < d || len(v) < (n-1)*stride+d {
		panic("kernels: AttnMixAddF16: slices too short for n rows")
	}
	if useAsm && d%8 == 0 && d > 0 {
		attnMixF16Asm(out, w, v, stride, n)
		return
	}
	tab := f16Table()
	for t := 0; t < n; t++ {
		a, row := w[t], v[t*stride:t*stride+d]
		for j, h := range row {
			out[j] += a * tab[h]
		}
	}
}

// AttnScoresRowsF16 is AttnScoresF16 for every head at once: for h <
// len(koff) and t < n, scores[h*sstride+t] = dot(q[h*d:(h+1)*d],
// widen(k[t*kstride+koff[h]:][:d]))·scale, d = len(q)/len(koff) (koff[h]:
// where head h's key lies in a row, which is how grouped-query heads share
// one). It reads the rows in the order they lie in memory, where a head at
// a time strides through them (attnrows_amd64.s says why that matters for
// halves). Each score has AttnScoresF16's bits.
func AttnScoresRowsF16(scores []float32, sstride int, q []float32, k []uint16, kstride int, koff []int32, n int, scale float32) {
	d := checkRows("AttnScoresRowsF16", len(scores), sstride, len(q), len(k), kstride, koff, n)
	h := len(koff)
	if useAsm && d%8 == 0 && d > 0 && h%4 == 0 && n > 0 {
		attnRowsScoresF16Asm(scores, q, k, koff, d, n, sstride, kstride, scale)
		return
	}
	for i, o := range koff {
		AttnScoresF16(scores[i*sstride:], q[i*d:(i+1)*d], k[int(o):], kstride, n, scale)
	}
}

// AttnMixRowsF16 is AttnMixAddF16 for every head at once: for h <
// len(voff), out[h*d+j] += Σ_{t<n} w[h*wstride+t]·widen(v[t*vstride+voff[h]+j]),
// d = len(out)/len(voff), the rows read in memory order. Each element has
// AttnMixAddF16's bits.
func AttnMixRowsF16(out, w []float32, wstride int, v []uint16, vstride int, voff []int32, n int) {
	d := checkRows("AttnMixRowsF16", len(w), wstride, len(out), len(v), vstride, voff, n)
	if useAsm && d%8 == 0 && d > 0 && n > 0 {
		attnRowsMixF16Asm(out, w, v, voff, d, n, wstride, vstride)
		return
	}
	for i, o := range voff {
		AttnMixAddF16(out[i*d:(i+1)*d], w[i*wstride:], v[int(o):], vstride, n)
	}
}

// checkRows checks the slices of a row kernel, panicking as the kernels'
// other checks do, and returns the head width d = x/len(offs): sc holds
// a row of n values for each head, sstride apart; the heads of x are d
// wide; kv holds n rows, kvstride apart, each head's d values at offs[h].
func checkRows(fn string, sc, sstride, x, kv, kvstride int, offs []int32, n int) int {
	h := len(offs)
	if h == 0 || x%h != 0 {
		panic("kernels: " + fn + ": the heads do not divide the query or output")
	}
	d := x / h
	if n <= 0 {
		return d
	}
	hi := int32(0)
	for _, o := range offs {
		if o < 0 {
			panic("kernels: " + fn + ": a negative head offset")
		}
		hi = max(hi, o)
	}
	if sstride < n || sc < (h-1)*sstride+n || kvstride < d || kv < (n-1)*kvstride+int(hi)+d {
		panic("kernels: " + fn + ": slices too short for n rows")
	}
	return d
}

// AttnScoresRowsI8 is AttnScoresRowsF16 over the rows of an int8 cache:
// key codes k, head h's at k[t*kstride+kvh[h]*d:] (kvh[h]: its KV head), a
// scale per position and KV head at scales[t*hkv+kvh[h]]. Each value is
// decoded as ScaleI8 decodes it, in registers, so each score has the bits
// AttnScores gives on the decoded rows.
func AttnScoresRowsI8(scores []float32, sstride int, q []float32, k []int8, kstride int, scales []float32, hkv int, kvh []int32, n int, scale float32) {
	d := checkRowsI8("AttnScoresRowsI8", len(scores), sstride, len(q), len(k), kstride, len(scales), hkv, kvh, n)
	if useAsm && d%8 == 0 && d > 0 && n > 0 {
		attnRowsScoresI8Asm(scores, q, k, scales, kvh, d, n, sstride, kstride, hkv, scale)
		return
	}
	for h, g := range kvh {
		for t := range n {
			row := k[t*kstride+int(g)*d:][:d]
			scores[h*sstride+t] = dotScaledI8Go(q[h*d:(h+1)*d], row, scales[t*hkv+int(g)]) * scale
		}
	}
}

// AttnMixRowsI8 is AttnMixRowsF16 over the value rows of an int8 cache
// (codes and scales as in AttnScoresRowsI8). Each element has the bits
// AttnMixAdd gives on the decoded rows.
func AttnMixRowsI8(out, w []float32, wstride int, v []int8, vstride int, scales []float32, hkv int, kvh []int32, n int) {
	d := checkRowsI8("AttnMixRowsI8", len(w), wstride, len(out), len(v), vstride, len(scales), hkv, kvh, n)
	if useAsm && d%8 == 0 && d > 0 && n > 0 {
		attnRowsMixI8Asm(out, w, v, scales, kvh, d, n, wstride, vstride, hkv)
		return
	}
	for h, g := range kvh {
		o := out[h*d : (h+1)*d]
		for t := range n {
			a, s, row := w[h*wstride+t], scales[t*hkv+int(g)], v[t*vstride+int(g)*d:][:d]
			for j, c := range row {
				o[j] += a * (float32(c) * s)
			}
		}
	}
}

// dotScaledI8Go is dotGo(a, b) with b the codes decoded (float32(code)·s), in
// dotGo's order.
func dotScaledI8Go(a []float32, b []int8, s float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		b0, b1, b2, b3 := float32(b[i])*s, float32(b[i+1])*s, float32(b[i+2])*s, float32(b[i+3])*s
		s0 += a[i] * b0
		s1 += a[i+1] * b1
		s2 += a[i+2] * b2
		s3 += a[i+3] * b3
	}
	for ; i < len(a); i++ {
		s0 += a[i] * (float32(b[i]) * s)
	}
	return (s0 + s1) + (s2 + s3)
}

// checkRowsI8 is checkRows for an int8 row kernel: kv holds n rows of
// codes, kvstride apart, head h's d codes at kvh[h]·d, and sc a scale per
// row and KV head (hkv of them a row).
func checkRowsI8(fn string, sc, sstride, x, kv, kvstride, scales, hkv int, kvh []int32, n int) int {
	h := len(kvh)
	if h == 0 || x%h != 0 {
		panic("kernels: " + fn + ": the heads do not divide the query or output")
	}
	d := x / h
	if n <= 0 {
		return d
	}
	for _, g := range kvh {
		if g < 0 || int(g) >= hkv {
			panic("kernels: " + fn + ": a KV head out of range")
		}
	}
	if sstride < n || sc < (h-1)*sstride+n || kvstride < hkv*d || kv < (n-1)*kvstride+hkv*d || scales < n*hkv {
		panic("kernels: " + fn + ": slices too short for n rows")
	}
	return d
}
