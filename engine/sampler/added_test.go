package sampler

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"chat/models/gguf"
	"chat/models/tokenizer/gpt2bpe"

	"gonum.org/v1/gonum/stat/distuv"
)

// The samplers llama.cpp has beyond the course's: DRY, top-nσ, typical,
// XTC, mirostat.

// dryWork runs DRY alone on logits all 0 and returns them.
func dryWork(p Params, b *Breakers, vocab int, hist []int) []float64 {
	s := New(vocab, p)
	s.SetBreakers(b)
	clear(s.work)
	s.dry(hist)
	return slices.Clone(s.work)
}

func TestDRYHandWorked(t *testing.T) {
	p := Params{DRYMultiplier: 0.5, DRYBase: 2, DRYAllowedLength: 1, DRYPenaltyLastN: -1}
	// 1 2 3 4 1 2 3 5 2 3: the suffix "2 3" also ends at positions 2 and
	// 6 (with "1" before it there, "5" here: a repeat of 2), followed by 4
	// and 5, so sampling 4 or 5 would make a repeat of 3: each loses
	// 0.5 × 2^(2−1) = 1. Nothing else ends like the history.
	hist := []int{1, 2, 3, 4, 1, 2, 3, 5, 2, 3}
	want := []float64{0, 0, 0, 0, -1, -1, 0, 0}
	if got := dryWork(p, nil, 8, hist); !slices.Equal(got, want) {
		t.Fatalf("DRY = %v, want %v", got, want)
	}
	// 7 1 7 1 7: the suffix "7 1 7" ends at position 2, followed by 1:
	// a repeat of 3, 0.5 × 2^(3−1) = 2; "7" at position 0 gives 1 a
	// repeat of 1 only, and the largest counts.
	if got := dryWork(p, nil, 8, []int{7, 1, 7, 1, 7}); got[1] != -2 || got[7] != 0 {
		t.Fatalf("DRY = %v, want id 1 at -2", got)
	}
	// The same with 1 a breaker: no repeat reaches back over the last 1,
	// and 1 itself is never penalised.
	brk := &Breakers{heads: map[int32][][]int32{1: {nil}}}
	if got := dryWork(p, brk, 8, []int{7, 1, 7, 1, 7}); slices.ContainsFunc(got, func(v float64) bool { return v != 0 }) {
		t.Fatalf("DRY with breaker 1 = %v, want no penalty", got)
	}
	// A breaker of two ids (5 6) limits a repeat to the ids after it: in
	// 1 2 5 6 1 2 the repeat "1 2" is 2 long, allowed 2, limit 2: id 5
	// loses 1 × 2^0 = 1; in 1 2 5 6 2 the limit is 1 < 2, nothing.
	two := &Breakers{heads: map[int32][][]int32{5: {{6}}}}
	p2 := Params{DRYMultiplier: 1, DRYBase: 2, DRYAllowedLength: 2, DRYPenaltyLastN: -1}
	if got := dryWork(p2, two, 8, []int{1, 2, 5, 6, 1, 2}); got[5] != -1 || got[6] != 0 {
		t.Fatalf("DRY after breaker 5 6 = %v, want id 5 at -1", got)
	}
	if got := dryWork(p2, two, 8, []int{1, 2, 5, 6, 2}); slices.ContainsFunc(got, func(v float64) bool { return v != 0 }) {
		t.Fatalf("DRY = %v, want none", got)
	}
	// The window: the last 4 ids, 3 5 2 3, repeat only "3", followed by
	// 5: 0.5 × 2^(1−1).
	p.DRYPenaltyLastN = 4
	if got := dryWork(p, nil, 8, hist); !slices.Equal(got, []float64{0, 0, 0, 0, 0, -0.5, 0, 0}) {
		t.Fatalf("DRY over the last 4 = %v, want id 5 at -0.5", got)
	}
	// Off: multiplier 0, base below 1, window 0.
	for _, off := range []Params{{DRYBase: 2, DRYPenaltyLastN: -1}, {DRYMultiplier: 1, DRYBase: 0.5, DRYPenaltyLastN: -1}, {DRYMultiplier: 1, DRYBase: 2}} {
		if New(8, off).dry(hist) {
			t.Fatalf("%+v: DRY on", off)
		}
	}
}

// refDRY is DRY by its definition, quadratic: for every earlier position,
// the longest common end of the history up to it and the whole history,
// stopped by the limit.
func refDRY(p Params, hist []int, limit, vocab int) []float64 {
	w := make([]float64, vocab)
	best := make([]int, vocab)
	for i := range best {
		best[i] = -1
	}
	last := len(hist) - 1
	for j := 0; j < last; j++ {
		n := 0
		for n <= j && hist[j-n] == hist[last-n] && n < limit {
			n++
		}
		if t := hist[j+1]; n >= p.DRYAllowedLength && n > best[t] {
			best[t] = n
		}
	}
	for t, n := range best {
		if n >= 0 {
			w[t] = -p.DRYMultiplier * math.Pow(p.DRYBase, float64(n-p.DRYAllowedLength))
		}
	}
	return w
}

func TestDRYMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for trial := range 300 {
		vocab := 2 + r.IntN(4)
		hist := make([]int, 1+r.IntN(60))
		for i := range hist {
			hist[i] = r.IntN(vocab)
		}
		p := Params{DRYMultiplier: 0.8, DRYBase: 1.75, DRYAllowedLength: r.IntN(4), DRYPenaltyLastN: -1}
		got := dryWork(p, nil, vocab, hist)
		want := refDRY(p, hist, len(hist), vocab)
		if len(hist) <= p.DRYAllowedLength {
			want = make([]float64, vocab)
		}
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-9 {
				t.Fatalf("trial %d %v allowed %d: DRY %v, want %v", trial, hist, p.DRYAllowedLength, got, want)
			}
		}
	}
}

func TestNewBreakers(t *testing.T) {
	pieces := []string{"a", "b\n", "\n", "x:", "*", "b", "cab", "q"}
	piece := func(id int) []byte { return []byte(pieces[id]) }
	encode := func(s string) []int {
		var ids []int
		for _, c := range s {
			ids = append(ids, slices.Index(pieces, string(c)))
		}
		return ids
	}
	b := NewBreakers(JoinBreakers([]string{"\n", ":", "ab"}), len(pieces), piece, encode)
	for id, want := range map[int32][][]int32{1: {nil}, 2: {nil}, 3: {nil}, 0: {{5}}, 6: {nil}} {
		if got := b.heads[id]; !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("heads[%d] = %v, want %v", id, got, want)
		}
	}
	if len(b.heads) != 5 || !b.alone(2) || b.alone(0) || b.alone(7) {
		t.Errorf("heads = %v", b.heads)
	}
	if b.Key() != "\n\x00:\x00ab\x00" || (*Breakers)(nil).Key() != "" {
		t.Errorf("key %q", b.Key())
	}
	// "bz": "b" and "cab" end with its "b", but no id encodes "z" (encode
	// gives nothing), so neither is a head, nor a breaker by itself.
	encodeKnown := func(s string) []int {
		return slices.DeleteFunc(encode(s), func(id int) bool { return id < 0 })
	}
	if b := NewBreakers(JoinBreakers([]string{"bz"}), len(pieces), piece, encodeKnown); len(b.heads) != 0 {
		t.Errorf("an unencodable tail made heads %v", b.heads)
	}
}

func TestJoinBreakers(t *testing.T) {
	list := []string{"\n", "", "a\x00b", "::"}
	if j := JoinBreakers(list); j != "\n\x00::\x00" || !slices.Equal(SplitBreakers(j), []string{"\n", "::"}) {
		t.Fatalf("JoinBreakers = %q, split %q", j, SplitBreakers(j))
	}
	if SplitBreakers("") != nil || JoinBreakers(nil) != "" {
		t.Fatal("empty list")
	}
}

func FuzzBreakers(f *testing.F) {
	f.Add("\n\x00:\x00\"\x00*\x00", "ab\n:cd")
	f.Add("", "")
	f.Add("\x00\x00x", "xxxxx")
	f.Fuzz(func(t *testing.T, joined, text string) {
		// A list read back is the list written, empty texts left out.
		list := strings.Split(joined, "\x00")
		want := slices.DeleteFunc(slices.Clone(list), func(s string) bool { return s == "" })
		if got := SplitBreakers(JoinBreakers(list)); !slices.Equal(got, want) && len(want) > 0 {
			t.Fatalf("%q: read back %q, want %q", list, got, want)
		}
		// Breakers over a vocabulary of the text's bytes, and DRY over the
		// text as a history, never panic.
		vocab := 256
		piece := func(id int) []byte { return []byte{byte(id)} }
		encode := func(s string) []int {
			ids := make([]int, len(s))
			for i := range len(s) {
				ids[i] = int(s[i])
			}
			return ids
		}
		b := NewBreakers(joined, vocab, piece, encode)
		s := New(vocab, Params{Temperature: 1, DRYMultiplier: 1, DRYBase: 1.75, DRYAllowedLength: 1, DRYPenaltyLastN: -1})
		s.SetBreakers(b)
		logits := make([]float32, vocab)
		if _, err := s.Sample(logits, encode(text)); err != nil {
			t.Fatal(err)
		}
	})
}

func TestTopNSigma(t *testing.T) {
	// [0 1 2 3]: mean 1.5, σ √1.25 ≈ 1.118. n 1: keep ≥ 1.882; n 2: ≥ 0.764.
	logits := []float32{0, 1, 2, 3}
	for _, c := range []struct {
		n    float64
		want []int
	}{{1, []int{2, 3}}, {2, []int{1, 2, 3}}, {3, []int{0, 1, 2, 3}}, {0, []int{0, 1, 2, 3}}} {
		if got := kept(t, Params{Temperature: 1, TopNSigma: c.n}, logits, nil); !slices.Equal(got, c.want) {
			t.Errorf("top-nσ %v kept %v, want %v", c.n, got, c.want)
		}
		// The temperature scales max and σ alike.
		if got := kept(t, Params{Temperature: 0.3, TopNSigma: c.n}, logits, nil); c.n != 3 && !slices.Equal(got, c.want) {
			t.Errorf("top-nσ %v at T 0.3 kept %v, want %v", c.n, got, c.want)
		}
	}
	// Masked ids are not counted: with id 0 out, [1 2 3] has σ 0.816,
	// so n 1 keeps ≥ 2.18.
	s := New(4, Params{Temperature: 1, TopNSigma: 1})
	s.SetMask(bitsOf(4, 1, 2, 3))
	s.Sample(logits, nil)
	if got := s.Probs(); got[3] != 1 {
		t.Fatalf("masked top-nσ probs %v, want id 3 alone", got)
	}
}

func TestTypical(t *testing.T) {
	// probs 0.5 0.25 0.125 0.125: entropy 1.75 bits, surprises 1 2 3 3,
	// distances 0.75 0.25 1.25 1.25 bits: id 1, then 0, then 2 and 3.
	ln := func(x float64) float32 { return float32(math.Log(x)) }
	logits := []float32{ln(4), ln(2), 0, 0}
	for _, c := range []struct {
		p    float64
		want []int
	}{{0.2, []int{1}}, {0.5, []int{0, 1}}, {0.8, []int{0, 1, 2}}, {1, []int{0, 1, 2, 3}}, {0, []int{0, 1, 2, 3}}} {
		if got := kept(t, Params{Temperature: 1, TypicalP: c.p}, logits, nil); !slices.Equal(got, c.want) {
			t.Errorf("typical %v kept %v, want %v", c.p, got, c.want)
		}
	}
	// Typical may drop the likeliest id; min-p after it measures against
	// the likeliest left (id 1 at 0.25): id 2 at 0.125 is half of it.
	if got := kept(t, Params{Temperature: 1, TypicalP: 0.8, MinP: 0.6}, []float32{ln(4), ln(2), 0, 0}, nil); !slices.Equal(got, []int{0}) {
		t.Errorf("typical then min-p kept %v", got)
	}
	if got := kept(t, Params{Temperature: 1, TypicalP: 0.2, MinP: 0.6}, logits, nil); !slices.Equal(got, []int{1}) {
		t.Errorf("typical without the max, then min-p, kept %v", got)
	}
}

func TestXTC(t *testing.T) {
	// probs 0.4 0.3 0.2 0.1: threshold 0.25 has ids 0 and 1 above it;
	// all but the least likely (1) go.
	ln := func(x float64) float32 { return float32(math.Log(x)) }
	logits := []float32{ln(0.4), ln(0.3), ln(0.2), ln(0.1)}
	for _, c := range []struct {
		th   float64
		want []int
	}{{0.25, []int{1, 2, 3}}, {0.15, []int{2, 3}}, {0.35, []int{0, 1, 2, 3}}, {0.6, []int{0, 1, 2, 3}}, {0, []int{3}}} {
		if got := kept(t, Params{Temperature: 1, XTCProbability: 1, XTCThreshold: c.th}, logits, nil); !slices.Equal(got, c.want) {
			t.Errorf("xtc threshold %v kept %v, want %v", c.th, got, c.want)
		}
	}
}

// chiSquare draws n ids with s from logits and tests them against want.
func chiSquare(t *testing.T, s *Sampler, logits []float32, want []float64, n int) {
	t.Helper()
	counts := make([]float64, len(want))
	for range n {
		id, err := s.Sample(logits, nil)
		if err != nil {
			t.Fatal(err)
		}
		counts[id]++
	}
	chi, df := 0.0, -1
	for i, pr := range want {
		if pr == 0 {
			if counts[i] != 0 {
				t.Fatalf("id %d has probability 0 but was drawn %v times", i, counts[i])
			}
			continue
		}
		exp := pr * float64(n)
		chi += (counts[i] - exp) * (counts[i] - exp) / exp
		df++
	}
	pv := 1 - distuv.ChiSquared{K: float64(df)}.CDF(chi)
	t.Logf("chi2 %.2f df %d p-value %.3f", chi, df, pv)
	if pv < 0.001 {
		t.Fatalf("draws do not follow the distribution: chi2 %.2f df %d p %.2g\ncounts %v\nwant %v", chi, df, pv, counts, want)
	}
}

// XTC acting with probability 0.3 draws from 0.7 × the distribution plus
// 0.3 × the one without its top choices.
func TestXTCDrawsFollowMixture(t *testing.T) {
	ln := func(x float64) float32 { return float32(math.Log(x)) }
	logits := []float32{ln(0.4), ln(0.3), ln(0.2), ln(0.1)}
	orig, cut := []float64{0.4, 0.3, 0.2, 0.1}, []float64{0, 0.5, 1.0 / 3, 1.0 / 6}
	want := make([]float64, 4)
	for i := range want {
		want[i] = 0.7*orig[i] + 0.3*cut[i]
	}
	chiSquare(t, New(4, Params{Temperature: 1, XTCProbability: 0.3, XTCThreshold: 0.25, Seed: 11}), logits, want, 20000)
}

// Dist sees the XTC draw Sample then uses, and XTC leaves the main draws'
// sequence alone: with XTC never reaching two ids, the ids are those
// without it.
func TestXTCDistIsSample(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	logits := make([]float32, 64)
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 2)
	}
	p := Params{Temperature: 1, XTCProbability: 0.5, XTCThreshold: 0.05, Seed: 4}
	a, b := New(64, p), New(64, p)
	for range 200 {
		d, _ := a.Dist(logits, nil)
		d = slices.Clone(d)
		a.Dist(logits, nil)
		b.Sample(logits, nil)
		if !slices.Equal(d, b.Probs()) {
			t.Fatal("Dist and Sample disagree with XTC on")
		}
		a.Sample(logits, nil)
	}
	off := Params{Temperature: 1, Seed: 4}
	on := off
	on.XTCProbability, on.XTCThreshold = 1, 0.5 // no id reaches 0.5
	x, y := New(64, off), New(64, on)
	for range 200 {
		i, _ := x.Sample(logits, nil)
		j, _ := y.Sample(logits, nil)
		if i != j {
			t.Fatal("XTC changed the main draws")
		}
	}
}

func TestMirostatV2(t *testing.T) {
	// probs 0.5 0.25 0.125 0.125 (surprise 1 2 3 3 bits); tau 1.1: mu 2.2
	// keeps ids 0 and 1.
	ln := func(x float64) float32 { return float32(math.Log(x)) }
	logits := []float32{ln(4), ln(2), 0, 0}
	s := New(4, Params{Temperature: 1, Mirostat: 2, MirostatTau: 1.1, MirostatEta: 0.1, TopK: 1, Seed: 3})
	id, _ := s.Sample(logits, nil)
	if got := s.Probs(); !near(got[0], 2.0/3) || !near(got[1], 1.0/3) || got[2] != 0 {
		t.Fatalf("mirostat 2 probs %v, want 2/3 1/3 0 0 (and top-k ignored)", got)
	}
	// mu moves by eta × (tau − the drawn id's surprise).
	if want := 2.2 - 0.1*(-math.Log2(s.Probs()[id])-1.1); !near(s.mu, want) {
		t.Fatalf("mu %v after drawing %d, want %v", s.mu, id, want)
	}
	// Renew starts the next reply at 2·tau again.
	s.Renew(s.Params())
	s.Dist(logits, nil)
	if s.mu != 2.2 {
		t.Fatalf("mu %v after Renew, want 2.2", s.mu)
	}
	// mu below every surprise keeps the likeliest.
	s.Renew(Params{Temperature: 1, Mirostat: 2, MirostatTau: 0.1})
	if d, _ := s.Dist(logits, nil); d[0] != 1 {
		t.Fatalf("mirostat 2 with mu 0.2: %v", d)
	}
	// With eta 0 mu stays: the draws follow the truncated distribution.
	chiSquare(t, New(4, Params{Temperature: 1, Mirostat: 2, MirostatTau: 1.1, Seed: 5}), logits, []float64{2.0 / 3, 1.0 / 3, 0, 0}, 20000)
}

// TestSurpriseBand: version 2's bound keeps exactly the ids whose
// surprise −log2(v/z) is at most mu, at the bound's own roundings and
// where it leaves the normal floats.
func TestSurpriseBand(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	mus := []float64{0, 1e-300, 0.5, 5, 10, 13.7, 100, 1000, 1021.9, 1022, 1060, 1074, 1100, -3, math.Inf(1), math.Inf(-1), math.NaN()}
	for range 200 {
		mus = append(mus, r.Float64()*30)
	}
	for _, mu := range mus {
		for _, z := range []float64{1, 1.5, 3.75, 4096, 1e5 * r.Float64()} {
			lo, hi := surpriseBand(z, mu)
			th := z * math.Exp2(-mu)
			vs := []float64{0, math.SmallestNonzeroFloat64, 0x1p-1030, 1, z, th, math.Nextafter(th, 0), math.Nextafter(th, 2*th+1), th * (1 + 1e-12), th * (1 - 1e-12)}
			for range 50 {
				vs = append(vs, th*math.Exp(r.NormFloat64()*1e-8), r.Float64())
			}
			for _, v := range vs {
				if v > z || !(v >= 0) {
					continue
				}
				dropped := v <= hi && (v < lo || surprise(v, z) > mu)
				if want := -math.Log2(v/z) > mu; dropped != want {
					t.Fatalf("mu %v z %v v %v: dropped %v, surprise %v", mu, z, v, dropped, -math.Log2(v/z))
				}
			}
		}
	}
}

func TestMirostatV1(t *testing.T) {
	// p_i ∝ 1/(i+1)² over 8 ids: the fitted exponent is exactly 2, so
	// k = (ε 2^mu / (1 − 8^−ε))^(1/s) with ε = 1, mu = 2·tau = 3:
	// √(8 × 8/7) = 3.02, k = 3.
	logits := make([]float32, 8)
	for i := range logits {
		logits[i] = float32(-2 * math.Log(float64(i+1)))
	}
	p := Params{Temperature: 1, Mirostat: 1, MirostatTau: 1.5, Seed: 8}
	z := 1 + 0.25 + 1.0/9
	want := []float64{1 / z, 0.25 / z, 1.0 / 9 / z, 0, 0, 0, 0, 0}
	if got := kept(t, p, logits, nil); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("mirostat 1 kept %v, want 0 1 2", got)
	}
	chiSquare(t, New(8, p), logits, want, 20000)
	// tau 0.5, mu 1: √(2 × 8/7) = 1.5, k = 1.
	p.MirostatTau = 0.5
	if got := kept(t, p, logits, nil); !slices.Equal(got, []int{0}) {
		t.Fatalf("mirostat 1 tau 0.5 kept %v, want 0", got)
	}
}

// The added stages allocate nothing per token either.
func TestAddedSamplersDoNotAllocate(t *testing.T) {
	const vocab = 4096
	logits := make([]float32, vocab)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 3)
	}
	hist := make([]int, 600)
	for i := range hist {
		hist[i] = r.IntN(50)
	}
	brk := &Breakers{heads: map[int32][][]int32{7: {nil}, 8: {{9}}}}
	for _, p := range []Params{
		{Temperature: 0.8, DRYMultiplier: 0.8, DRYBase: 1.75, DRYAllowedLength: 2, DRYPenaltyLastN: -1, TopNSigma: 1,
			TypicalP: 0.9, TopP: 0.95, MinP: 0.05, XTCProbability: 0.5, XTCThreshold: 0.1, Seed: 1},
		{Temperature: 1, Mirostat: 1, MirostatTau: 5, MirostatEta: 0.1},
		{Temperature: 1, Mirostat: 2, MirostatTau: 5, MirostatEta: 0.1, DRYMultiplier: 1, DRYBase: 2, DRYPenaltyLastN: 64},
		{Greedy: true, DRYMultiplier: 1, DRYBase: 2, DRYPenaltyLastN: -1},
	} {
		s := New(vocab, p)
		s.SetBreakers(brk)
		s.Sample(logits, hist)
		if a := testing.AllocsPerRun(50, func() { s.Sample(logits, hist) }); a != 0 {
			t.Errorf("%+v: %v allocs per Sample", p, a)
		}
	}
}

// refTypical is typical sampling written plainly: a full stable sort by
// the distance of each surprise from the entropy.
func refTypical(logits []float64, p float64) []bool {
	max := slices.Max(logits)
	z := 0.0
	for _, v := range logits {
		z += math.Exp(v - max)
	}
	h, nl := 0.0, make([]float64, len(logits))
	for i, v := range logits {
		q := math.Exp(v-max) / z
		nl[i] = -math.Log(q)
		h += q * nl[i]
	}
	idx := make([]int, len(logits))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		da, db := math.Abs(nl[a]-h), math.Abs(nl[b]-h)
		switch {
		case da < db:
			return -1
		case da > db:
			return 1
		}
		return 0
	})
	keep := make([]bool, len(logits))
	cum := 0.0
	for _, i := range idx {
		keep[i] = true
		cum += math.Exp(logits[i]-max) / z
		if cum > p {
			break
		}
	}
	return keep
}

// With mirostat on, the chain is llama.cpp's mirostat chain: temperature,
// mirostat in place of top-nσ ... XTC (every knob of those on here), the
// softmax and the draw. MirostatReplaces, which the chain runs by and the
// panel dims their knobs by, names exactly the stages that then do not run:
// with every knob on, the trace without mirostat applies them and the trace
// with it does not.
func TestMirostatReplaces(t *testing.T) {
	logits := make([]float32, 500)
	for i := range logits {
		logits[i] = float32(i%37) / 5
	}
	all := Params{Temperature: 0.8, TopNSigma: 3, TopK: 400, TypicalP: 0.99, TopP: 0.99, MinP: 0.001,
		XTCProbability: 1, XTCThreshold: 0.001, MirostatTau: 5, MirostatEta: 0.1, Seed: 1}
	var off, on Trace
	for _, c := range []struct {
		mirostat int
		tr       *Trace
	}{{0, &off}, {2, &on}} {
		p := all
		p.Mirostat = c.mirostat
		s := New(len(logits), p)
		s.SetTrace(c.tr)
		if _, err := s.Sample(logits, nil); err != nil {
			t.Fatal(err)
		}
	}
	var ran []string
	for i, name := range Order() {
		if on.Applied[i] {
			ran = append(ran, name)
		}
	}
	if got := strings.Join(ran, " "); got != "temperature mirostat softmax draw" {
		t.Errorf("mirostat's chain: %s", got)
	}
	for i, name := range Order() {
		if skipped := off.Applied[i] && !on.Applied[i]; skipped != MirostatReplaces(i) {
			t.Errorf("%s: applied %v without mirostat, %v with it; MirostatReplaces %v", name, off.Applied[i], on.Applied[i], MirostatReplaces(i))
		}
	}
}

// BenchmarkNewBreakers makes 64 breakers of a's (1 to 40 of them: many
// tails, met by many ids) over the vocabulary of the GGUF file
// $CHAT_BREAKERS_MODEL (Llama 3's 128k ids: llama3.2-1b-random-*.gguf).
func BenchmarkNewBreakers(b *testing.B) {
	path := os.Getenv("CHAT_BREAKERS_MODEL")
	if path == "" {
		b.Skip("CHAT_BREAKERS_MODEL is not set")
	}
	f, err := gguf.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	tok, err := gpt2bpe.FromGGUF(f)
	if err != nil {
		b.Fatal(err)
	}
	var list []string
	for i := range MaxBreakers {
		list = append(list, strings.Repeat("a", i%40+1))
	}
	joined := JoinBreakers(list)
	for b.Loop() {
		NewBreakers(joined, tok.Size(), tok.TokenBytes, tok.Encode)
	}
}
