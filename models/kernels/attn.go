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
