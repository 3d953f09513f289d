package kernels

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
	d, _ := checkRows("AttnScoresRowsF32", len(scores), sstride, len(q), len(k), kstride, kvh, n)
	if useAsm && d%8 == 0 && d > 0 && n > 0 {
		attnRowsScoresF32Asm(scores, q, k, kvh, d, n, sstride, kstride, scale)
		return
	}
	for h, g := range kvh {
		AttnScores(scores[h*sstride:], q[h*d:(h+1)*d], k[int(g)*d:], kstride, n, scale)
	}
}

// AttnMixRowsF32 adds Σ_{t<n} w[h*wstride+t]·(value of head h in row t) to
// out[h*d:(h+1)*d] for h < len(kvh), d = len(out)/len(kvh), over n float32
// value rows vstride elements apart.
func AttnMixRowsF32(out, w []float32, wstride int, v []float32, vstride int, kvh []int32, n int) {
	d, _ := checkRows("AttnMixRowsF32", len(w), wstride, len(out), len(v), vstride, kvh, n)
	if useAsm && d%8 == 0 && d > 0 && n > 0 {
		attnRowsMixF32Asm(out, w, v, kvh, d, n, wstride, vstride)
		return
	}
	for h, g := range kvh {
		AttnMixAdd(out[h*d:(h+1)*d], w[h*wstride:], v[int(g)*d:], vstride, n)
	}
}

// AttnScoresRowsF16 sets scores[h*sstride+t] = dot(q[h*d:(h+1)*d], key of
// head h in row t)·scale for h < len(kvh), t < n, d = len(q)/len(kvh), over
// n key rows of halves kstride elements apart.
func AttnScoresRowsF16(scores []float32, sstride int, q []float32, k []uint16, kstride int, kvh []int32, n int, scale float32) {
	d, _ := checkRows("AttnScoresRowsF16", len(scores), sstride, len(q), len(k), kstride, kvh, n)
	if useAsm && d%8 == 0 && d > 0 && n > 0 {
		attnRowsScoresF16Asm(scores, q, k, nil, kvh, d, n, sstride, kstride, 0, scale)
		return
	}
	tab := f16Table()
	for h, g := range kvh {
		for t := range n {
			scores[h*sstride+t] = dotF16Go(tab, k[t*kstride+int(g)*d:][:d], q[h*d:(h+1)*d]) * scale
		}
	}
}

// AttnMixRowsF16 adds Σ_{t<n} w[h*wstride+t]·(value of head h in row t) to
// out[h*d:(h+1)*d] for h < len(kvh), d = len(out)/len(kvh), over n value
// rows of halves vstride elements apart.
func AttnMixRowsF16(out, w []float32, wstride int, v []uint16, vstride int, kvh []int32, n int) {
	d, _ := checkRows("AttnMixRowsF16", len(w), wstride, len(out), len(v), vstride, kvh, n)
	if useAsm && d%8 == 0 && d > 0 && n > 0 {
		attnRowsMixF16Asm(out, w, v, nil, kvh, d, n, wstride, vstride, 0)
		return
	}
	tab := f16Table()
	for h, g := range kvh {
		o := out[h*d : (h+1)*d]
		for t := range n {
			a, row := w[h*wstride+t], v[t*vstride+int(g)*d:][:d]
			for j, c := range row {
				o[j] += a * tab[c]
			}
		}
	}
}

// AttnScoresRowsI8 is AttnScoresRowsF16 over int8 codes with a scale per
// position and KV head, at scales[t*hkv+kvh[h]].
func AttnScoresRowsI8(scores []float32, sstride int, q []float32, k []int8, kstride int, scales []float32, hkv int, kvh []int32, n int, scale float32) {
	d, nkv := checkRows("AttnScoresRowsI8", len(scores), sstride, len(q), len(k), kstride, kvh, n)
	checkScales("AttnScoresRowsI8", len(scales), hkv, nkv, n)
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

// AttnMixRowsI8 is AttnMixRowsF16 over int8 codes and their scales (see
// AttnScoresRowsI8).
func AttnMixRowsI8(out, w []float32, wstride int, v []int8, vstride int, scales []float32, hkv int, kvh []int32, n int) {
	d, nkv := checkRows("AttnMixRowsI8", len(w), wstride, len(out), len(v), vstride, kvh, n)
	checkScales("AttnMixRowsI8", len(scales), hkv, nkv, n)
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

// AttnScoresRowsFP8 is AttnScoresRowsI8 over E4M3 codes (a value is
// DequantizeFP8's: the code's value times its row and head's scale).
func AttnScoresRowsFP8(scores []float32, sstride int, q []float32, k []uint8, kstride int, scales []float32, hkv int, kvh []int32, n int, scale float32) {
	d, nkv := checkRows("AttnScoresRowsFP8", len(scores), sstride, len(q), len(k), kstride, kvh, n)
	checkScales("AttnScoresRowsFP8", len(scales), hkv, nkv, n)
	if useAsm && d%8 == 0 && d > 0 && n > 0 {
		attnRowsScoresFP8Asm(scores, q, k, scales, kvh, d, n, sstride, kstride, hkv, scale)
		return
	}
	var buf [256]float32
	row := decodeBuf(buf[:], d)
	for h, g := range kvh {
		for t := range n {
			DequantizeFP8(row, k[t*kstride+int(g)*d:][:d], scales[t*hkv+int(g)], E4M3)
			AttnScores(scores[h*sstride+t:], q[h*d:(h+1)*d], row, d, 1, scale)
		}
	}
}

// AttnMixRowsFP8 is AttnMixRowsI8 over E4M3 codes (see AttnScoresRowsFP8).
func AttnMixRowsFP8(out, w []float32, wstride int, v []uint8, vstride int, scales []float32, hkv int, kvh []int32, n int) {
	d, nkv := checkRows("AttnMixRowsFP8", len(w), wstride, len(out), len(v), vstride, kvh, n)
	checkScales("AttnMixRowsFP8", len(scales), hkv, nkv, n)
	if useAsm && d%8 == 0 && d > 0 && n > 0 {
		attnRowsMixFP8Asm(out, w, v, scales, kvh, d, n, wstride, vstride, hkv)
		return
	}
	var buf [256]float32
	row := decodeBuf(buf[:], d)
	for h, g := range kvh {
		for t := range n {
			DequantizeFP8(row, v[t*vstride+int(g)*d:][:d], scales[t*hkv+int(g)], E4M3)
			AttnMixAdd(out[h*d:(h+1)*d], w[h*wstride+t:], row, d, 1)
		}
	}
}

// decodeBuf is buf[:d], or a new slice when d does not fit.
func decodeBuf(buf []float32, d int) []float32 {
	if d <= len(buf) {
		return buf[:d]
	}
	return make([]float32, d)
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

// checkRows checks a row kernel's slices, panicking as the other kernels'
// checks do, and returns the head width d = x/len(kvh) and the KV heads
// the rows must hold (the largest kvh + 1): sc holds n values of each
// query head, sstride apart; the heads of x are d wide; kv holds n rows,
// kvstride apart.
func checkRows(fn string, sc, sstride, x, kv, kvstride int, kvh []int32, n int) (d, nkv int) {
	h := len(kvh)
	if h == 0 || x%h != 0 {
		panic("kernels: " + fn + ": the heads do not divide the query or output")
	}
	d = x / h
	for _, g := range kvh {
		if g < 0 {
			panic("kernels: " + fn + ": a negative KV head")
		}
		nkv = max(nkv, int(g)+1)
	}
	if n > 0 && (sstride < n || sc < (h-1)*sstride+n || kvstride < nkv*d || kv < (n-1)*kvstride+nkv*d) {
		panic("kernels: " + fn + ": slices too short for n rows")
	}
	return d, nkv
}

// checkScales checks an int8 row kernel's scales: hkv a row, for the nkv KV
// heads its queries read, n rows.
func checkScales(fn string, scales, hkv, nkv, n int) {
	if n > 0 && (hkv < nkv || scales < n*hkv) {
		panic("kernels: " + fn + ": scales too short for n rows")
	}
}
