package speculative

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"chat/engine/sampler"
	"gonum.org/v1/gonum/stat/distuv"
)

// gridSource answers Float64 with a fixed u and records what Draw is asked
// to draw from (returning drawn so that the caller sees it came from Draw).
const drawn = 1 << 20

type gridSource struct {
	u    float64
	drew []float64
}

func (s *gridSource) Float64() float64 { return s.u }
func (s *gridSource) Draw(d []float64) int {
	s.drew = slices.Clone(d)
	return drawn
}

func normalized(d []float64) []float64 {
	z := 0.0
	for _, v := range d {
		z += max(0, v)
	}
	out := make([]float64, len(d))
	for i, v := range d {
		out[i] = max(0, v) / z
	}
	return out
}

// TestVerifyOnePositionIsExact integrates Verify's output over every guess
// g ~ q and a fine grid of uniforms: P(first token = t) must be p(t), and
// after an accepted guess the bonus must come from the last row.
func TestVerifyOnePositionIsExact(t *testing.T) {
	cases := map[string]struct{ p, q []float64 }{
		"different":       {p: []float64{0.5, 0.2, 0.2, 0.1, 0}, q: []float64{0.1, 0.4, 0.1, 0.1, 0.3}},
		"equal":           {p: []float64{0.25, 0.25, 0.5}, q: []float64{0.25, 0.25, 0.5}},
		"disjoint":        {p: []float64{0.7, 0.3, 0, 0}, q: []float64{0, 0, 0.6, 0.4}},
		"one-hot draft":   {p: []float64{0.3, 0.6, 0.1}, q: nil},
		"draft too sure":  {p: []float64{0.34, 0.33, 0.33}, q: []float64{0.98, 0.01, 0.01}},
		"greedy agree":    {p: []float64{0, 1, 0}, q: []float64{0, 1, 0}},
		"greedy disagree": {p: []float64{0, 0, 1}, q: []float64{1, 0, 0}},
	}
	const M = 1 << 12
	bonus := []float64{0.1, 0.9}
	for name, c := range cases {
		V := len(c.p)
		got := make([]float64, V)
		for g := range V {
			qg := 1.0 // one-hot drafter: the guess is always g = the chosen id
			if c.q != nil {
				qg = c.q[g]
			}
			if qg == 0 {
				continue
			}
			for j := range M {
				src := &gridSource{u: (float64(j) + 0.5) / M}
				var qrows [][]float64
				if c.q != nil {
					qrows = [][]float64{c.q}
				}
				p := [][]float64{slices.Clone(c.p), slices.Clone(bonus)}
				a, next, err := Verify([]int{g}, qrows, p, src)
				if err != nil {
					t.Fatal(err)
				}
				if next != drawn {
					t.Fatalf("%s: next %d did not come from Draw", name, next)
				}
				w := qg / M
				if a == 1 {
					got[g] += w
					if !slices.Equal(src.drew, bonus) {
						t.Fatalf("%s: bonus drawn from %v", name, src.drew)
					}
					continue
				}
				for i, v := range normalized(src.drew) {
					got[i] += w * v
				}
			}
			if c.q == nil {
				// A one-hot drafter proposes one fixed id; check each as
				// the fixed guess, then stop.
				for i := range V {
					if math.Abs(got[i]-c.p[i]) > 2.0/M {
						t.Fatalf("%s (guess %d): P(out) = %v, want %v", name, g, got, c.p)
					}
				}
				clear(got)
			}
		}
		if c.q != nil {
			for i := range V {
				if math.Abs(got[i]-c.p[i]) > 2.0/M {
					t.Fatalf("%s: P(out) = %v, want %v", name, got, c.p)
				}
			}
		}
	}
}

// TestVerifyGreedy: with one-hot p and q a guess is kept iff it is p's
// argmax, and the next token is the argmax of its row.
func TestVerifyGreedy(t *testing.T) {
	oneHot := func(i int) []float64 { d := make([]float64, 5); d[i] = 1; return d }
	s := sampler.New(5, sampler.Params{Seed: 1})
	targets := []int{3, 1, 4, 0}
	for trial := range 200 {
		guesses := []int{trial % 5, (trial / 5) % 5, (trial / 25) % 5}
		p := [][]float64{oneHot(3), oneHot(1), oneHot(4), oneHot(0)}
		q := [][]float64{oneHot(guesses[0]), oneHot(guesses[1]), oneHot(guesses[2])}
		a, next, err := Verify(guesses, q, p, s)
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for want < 3 && guesses[want] == targets[want] {
			want++
		}
		if a != want || next != targets[want] {
			t.Fatalf("guesses %v: kept %d then %d, want %d then %d", guesses, a, next, want, targets[want])
		}
	}
}

// TestVerifyTwoPositions: a chi-square test of the joint law of the first
// two output tokens when the draft's and target's second rows depend on
// the first token: it must be p1(t1)·p2(t2|t1).
func TestVerifyTwoPositions(t *testing.T) {
	const V = 3
	p1 := []float64{0.5, 0.3, 0.2}
	q1 := []float64{0.2, 0.2, 0.6}
	p2 := [V][]float64{{0.6, 0.4, 0}, {0.1, 0.1, 0.8}, {0.3, 0.3, 0.4}}
	q2 := [V][]float64{{0.2, 0.2, 0.6}, {0.5, 0.5, 0}, {0.3, 0.3, 0.4}}
	p3 := []float64{1, 0, 0} // the bonus row; not part of the test
	s := sampler.New(V, sampler.Params{Seed: 11})
	rng := rand.New(rand.NewPCG(3, 4))
	pick := func(d []float64) int {
		u, c := rng.Float64(), 0.0
		for i, v := range d {
			if c += v; u < c {
				return i
			}
		}
		return len(d) - 1
	}
	const N = 60000
	var counts [V * V]float64
	for range N {
		g1 := pick(q1)
		g2 := pick(q2[g1])
		p := [][]float64{slices.Clone(p1), slices.Clone(p2[g1]), slices.Clone(p3)}
		a, next, err := Verify([]int{g1, g2}, [][]float64{q1, q2[g1]}, p, s)
		if err != nil {
			t.Fatal(err)
		}
		var t1, t2 int
		switch a {
		case 0: // the next round would sample t2 from the target
			t1, t2 = next, s.Draw(p2[next])
		case 1:
			t1, t2 = g1, next
		default:
			t1, t2 = g1, g2
		}
		counts[t1*V+t2]++
	}
	chi, df := 0.0, -1
	for t1 := range V {
		for t2 := range V {
			pr := p1[t1] * p2[t1][t2]
			c := counts[t1*V+t2]
			if pr == 0 {
				if c != 0 {
					t.Fatalf("(%d,%d) has probability 0 but came %v times", t1, t2, c)
				}
				continue
			}
			chi += (c - pr*N) * (c - pr*N) / (pr * N)
			df++
		}
	}
	pv := 1 - distuv.ChiSquared{K: float64(df)}.CDF(chi)
	t.Logf("chi2 %.2f df %d p-value %.3f", chi, df, pv)
	if pv < 0.001 {
		t.Fatalf("joint law differs from the target's: chi2 %.2f df %d p %.2g, counts %v", chi, df, pv, counts)
	}
}

func TestVerifyBadInput(t *testing.T) {
	s := sampler.New(3, sampler.Params{Seed: 1})
	row := func() []float64 { return []float64{0.5, 0.5, 0} }
	for name, c := range map[string]struct {
		g    []int
		q, p [][]float64
	}{
		"too few rows":   {g: []int{1}, p: [][]float64{row()}},
		"too many q":     {g: []int{1}, q: [][]float64{row(), row()}, p: [][]float64{row(), row()}},
		"guess too big":  {g: []int{3}, p: [][]float64{row(), row()}},
		"negative guess": {g: []int{-1}, p: [][]float64{row(), row()}},
		"short q row":    {g: []int{1}, q: [][]float64{{1}}, p: [][]float64{row(), row()}},
		"no mass":        {g: nil, p: [][]float64{{0, 0, 0}}},
	} {
		if _, _, err := Verify(c.g, c.q, c.p, s); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
