package ui

import (
	"strings"

	"chat/session"
)

// The fake backend's side of the views: canned records so that the views'
// frames are deterministic. A chunk of reply text is cut into "tokens" at
// spaces; the next-token record of a poll depends only on the chunk.

func (f *fakeBackend) stepping() bool { return f.vals.Step }

// Step implements Stepper.
func (f *fakeBackend) Step() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stepCalls++
	f.steps++
}

// fakeTokens cuts text into tokens before each space, with probabilities
// that cycle through the heat map's buckets; every third is a drafted one.
func fakeTokens(text string, at int) []session.Token {
	var out []session.Token
	probs := []float64{0.97, 0.62, 0.31, 0.08, 0.01}
	for i, w := range strings.SplitAfter(strings.ReplaceAll(text, " ", "\x00 "), "\x00") {
		w = strings.ReplaceAll(w, "\x00", "")
		if w == "" {
			continue
		}
		n := at + i
		out = append(out, session.Token{Text: w, Prob: probs[n%len(probs)], Drafted: n%3 == 2})
	}
	return out
}

func fakeStep(token int, preview bool) *session.StepView {
	c := func(id int, text string, before, after float64) session.Candidate {
		return session.Candidate{ID: id, Text: text, Before: before, After: after}
	}
	v := &session.StepView{Token: token, Preview: preview, Vocab: 4096,
		EntropyBefore: 2.31, EntropyAfter: 1.2,
		Before: []session.Candidate{c(7, " robot", 0.41, 0.58), c(9, " cat", 0.22, 0.31), c(3, " dog", 0.09, 0.11),
			c(12, "\n", 0.05, 0), c(15, " 日本", 0.03, 0), c(2, "\x1b[2J", 0.01, 0)},
		Stages:    []session.Stage{{Name: "temperature", Left: 4096}, {Name: "top-p", Left: 3}, {Name: "softmax", Left: 3}, {Name: "draw", Left: 1}},
		SeqBlocks: 3, SharedBlocks: 2, NewBlocks: 1, PoolUsed: 9, PoolBlocks: 64}
	v.After = v.Before[:3]
	v.Drawn = session.Candidate{ID: -1}
	if !preview {
		v.Drawn = v.Before[1]
	}
	return v
}

// fakeBlocks is a pool of 64 blocks: 3 of this conversation (2 shared), 4
// cached, 1 evicted, the rest free.
func fakeBlocks() []session.BlockState {
	b := make([]session.BlockState, 64)
	b[0], b[1], b[2] = session.BlockShared, session.BlockShared, session.BlockOwn
	b[3], b[4], b[5], b[6] = session.BlockCached, session.BlockCached, session.BlockCached, session.BlockCached
	b[9] = session.BlockEvicted
	return b
}

// viewsPoll adds to a poll what the views that are on would get.
func (f *fakeBackend) viewsPoll(u *session.Update, chunk string) {
	v := f.vals
	if v.ViewTokens && chunk != "" {
		t := fakeTokens(chunk, len(f.toks))
		f.toks = append(f.toks, t...)
		u.Tokens = t
	}
	if v.ViewNext || v.Step {
		u.Step = fakeStep(max(1, len(f.toks)), false)
		if v.Step {
			u.Preview = fakeStep(len(f.toks)+1, true)
		}
	}
	if v.ViewKV {
		u.Blocks = fakeBlocks()
	}
}

// viewsFinish gives the finished reply its tokens, and the user message
// its turn of the prompt (the first two tokens from the prefix cache).
func (f *fakeBackend) viewsFinish() {
	if !f.vals.ViewTokens || len(f.toks) == 0 {
		f.toks = nil
		return
	}
	n := len(f.msgs)
	f.msgs[n-1].Tokens = f.toks
	f.toks = nil
	if n >= 2 && f.msgs[n-2].Role == session.User {
		var p []session.Token
		for i, t := range fakeTokens("<|user|>\n"+f.msgs[n-2].Content+"<|endoftext|><|assistant|>\n", 0) {
			p = append(p, session.Token{Text: t.Text, Prompt: true, Cached: i < 2})
		}
		f.msgs[n-2].Tokens = p
	}
}
