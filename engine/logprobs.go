package engine

import "math"

// Log-probabilities of generated tokens (Request.Logprobs), for the OpenAI
// API's logprobs and top_logprobs. They are the model's own figures: a
// float64 log-softmax of the logits the token was sampled from, before the
// sampler's penalties and filters (what vLLM reports by default), so a
// greedy reply gets them as well as a sampled one.

// MaxTopLogprobs bounds Request.TopLogprobs (the OpenAI API allows 20).
const MaxTopLogprobs = 20

// TokenLogprob is one generated token: its id's log-probability and the
// likeliest ids at its step, most likely first.
type TokenLogprob struct {
	ID      int
	Logprob float64
	Top     []IDLogprob
}

// IDLogprob is one id and its log-probability.
type IDLogprob struct {
	ID      int
	Logprob float64
}

// logprob records id's entry when the request asks for logprobs (a stop id
// is not recorded: it is not one of the reply's ids). Speculation is off for
// such requests (schedule.go), so g.logits is the row id was sampled from.
func (g *gen) logprob(id int) {
	req := &g.r.req
	if !req.Logprobs || isStop(id, req.StopIDs) {
		return
	}
	lp := Logprobs(g.logits, id, min(max(req.TopLogprobs, 0), MaxTopLogprobs))
	g.lps = append(g.lps, lp)
	g.r.mu.Lock()
	g.r.lps = append(g.r.lps, lp)
	g.r.mu.Unlock()
}

// Logprobs is id's entry for one row of logits, with the top likeliest ids.
// NaN logits count as impossible.
func Logprobs(logits []float32, id, top int) TokenLogprob {
	m := math.Inf(-1)
	for _, v := range logits {
		if f := float64(v); f > m {
			m = f
		}
	}
	sum := 0.0
	for _, v := range logits {
		if f := float64(v); f == f {
			sum += math.Exp(f - m)
		}
	}
	lse := m + math.Log(sum)
	at := func(i int) float64 {
		if f := float64(logits[i]); f == f {
			return f - lse
		}
		return math.Inf(-1)
	}
	lp := TokenLogprob{ID: id, Logprob: at(id)}
	top = min(top, len(logits))
	if top <= 0 {
		return lp
	}
	// Insertion into a short sorted list: O(vocab·top), top ≤ 20.
	lp.Top = make([]IDLogprob, 0, top)
	for i := range logits {
		v := at(i)
		if len(lp.Top) == top && v <= lp.Top[top-1].Logprob {
			continue
		}
		if len(lp.Top) < top {
			lp.Top = append(lp.Top, IDLogprob{})
		}
		j := len(lp.Top) - 1
		for j > 0 && lp.Top[j-1].Logprob < v {
			lp.Top[j] = lp.Top[j-1]
			j--
		}
		lp.Top[j] = IDLogprob{ID: i, Logprob: v}
	}
	return lp
}

// JSONFinite is v as JSON can carry it: an impossible token's -Inf is
// -9999 (as vLLM writes it), +Inf 9999 and NaN 0. The server's logprobs and
// the app's --trace lines share it.
func JSONFinite(v float64) float64 {
	switch {
	case math.IsInf(v, -1):
		return -9999
	case math.IsInf(v, 1):
		return 9999
	case math.IsNaN(v):
		return 0
	}
	return v
}
