package speculative

import (
	"slices"
	"strings"
	"testing"

	"chat/engine/sampler"
	"chat/models"
	"chat/models/kvcache"
	"chat/models/modeltest"
)

// hashModel's logits at a position hash every (token, position) pair up to
// it, so a stale or misplaced cache entry changes them.
type hashModel struct {
	*modeltest.Chain
}

func newHash(vocab, ctx int, salt uint64) *hashModel {
	return &hashModel{&modeltest.Chain{Meta: models.Info{Name: "hash", VocabSize: vocab, ContextLength: ctx}, Tok: hashTok(vocab), Start: salt, FailOn: -1}}
}

// calls is the number of forward passes run, all states.
func (m *hashModel) calls() int { return m.Calls }

// hashTok has n tokens; token i is the bytes "t<i>".
type hashTok int

func (t hashTok) Encode(string) []int        { return nil }
func (t hashTok) EncodeSpecial(string) []int { return nil }
func (t hashTok) TokenBytes(id int) []byte {
	if id < 0 || id >= int(t) {
		return nil
	}
	return []byte("t" + string(rune('0'+id%10)) + strings.Repeat("+", id/10))
}
func (t hashTok) Decode(ids []int) string { return "" }
func (t hashTok) Size() int               { return int(t) }
func (t hashTok) EOT() int                { return -1 }
func (t hashTok) BOS() int                { return -1 }

// otherTok is hashTok with one token spelled differently.
type otherTok struct{ hashTok }

func (t otherTok) TokenBytes(id int) []byte {
	if id == 7 {
		return []byte("seven")
	}
	return t.hashTok.TokenBytes(id)
}

type otherModel struct{ *hashModel }

func (m otherModel) Tokenizer() models.Tokenizer { return otherTok{m.Tok.(hashTok)} }

func TestNewChecksTheDraft(t *testing.T) {
	target := newHash(20, 32, 1)
	for name, c := range map[string]Config{
		"no draft":         {Method: Draft},
		"other vocab size": {Method: Draft, Draft: newHash(21, 32, 2)},
		"other bytes":      {Method: Draft, Draft: otherModel{newHash(20, 32, 2)}},
		"k too big":        {Method: NGram, K: MaxK + 1},
		"k negative":       {Method: Lookup, K: -1},
		"n negative":       {Method: NGram, N: -2},
		"unknown method":   {Method: 9},
	} {
		if d, err := New(c, target); err == nil {
			t.Errorf("%s: no error (drafter %T)", name, d)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	if d, err := New(Config{}, target); d != nil || err != nil {
		t.Fatalf("off: %v %v", d, err)
	}
	if _, err := New(Config{Method: Draft, Draft: newHash(20, 8, 2), K: 6}, target); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"off", "draft", "ngram", "lookup"} {
		if m, err := ParseMethod(s); err != nil || m.String() != s {
			t.Fatalf("%s: %v %v", s, m, err)
		}
	}
	if _, err := ParseMethod("medusa"); err == nil {
		t.Fatal("medusa parsed")
	}
}

func TestNGram(t *testing.T) {
	d := NewNGram(3)
	for _, c := range []struct {
		ctx  []int
		k    int
		want []int
	}{
		{[]int{1, 2, 3, 4, 9, 2, 3}, 3, []int{4, 9, 2}},             // 2-gram "2 3" → 4 9 2
		{[]int{1, 2, 3, 8, 2, 3, 9, 1, 2, 3}, 2, []int{8, 2}},       // the 3-gram "1 2 3" beats the later 2-gram "2 3"
		{[]int{5, 6, 7}, 4, nil},                                    // nothing repeats
		{[]int{5, 6, 5}, 4, []int{6, 5, 6, 5}},                      // 1-gram "5", continued with its own guesses
		{[]int{1, 2, 1, 2, 1, 2}, 5, []int{1, 2, 1, 2, 1}},          // a loop of period 2
		{[]int{4}, 3, nil},                                          // one id
		{nil, 3, nil},                                               // nothing
		{[]int{7, 7, 7, 7}, 2, []int{7, 7}},                         // a run
		{[]int{1, 2, 3, 9, 9, 1, 2, 3, 5, 1, 2, 3}, 2, []int{5, 1}}, // the MOST RECENT occurrence
	} {
		got, q, err := d.Propose(c.ctx, c.k, sampler.Params{})
		if err != nil || q != nil {
			t.Fatalf("%v: %v %v", c.ctx, q, err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%v k=%d: %v, want %v", c.ctx, c.k, got, c.want)
		}
	}
}

func TestPromptLookup(t *testing.T) {
	d := NewPromptLookup(2)
	prompt := []int{10, 11, 12, 13, 14, 10, 11, 15}
	d.Reset(prompt, 0)
	for _, c := range []struct {
		gen  []int
		k    int
		want []int
	}{
		{nil, 3, nil},                             // the prompt's end "11 15" does not occur earlier
		{[]int{10, 11}, 3, []int{15}},             // the latest "10 11" is at 5: only 15 follows inside the prompt
		{[]int{12}, 3, []int{13, 14, 10}},         // 1-gram
		{[]int{13, 14}, 9, []int{10, 11, 15}},     // runs to the end of the prompt, never into the reply
		{[]int{99}, 3, nil},                       // unknown id
		{[]int{12, 13, 14, 10, 11}, 2, []int{15}}, // the reply's own text is not searched
	} {
		ctx := append(slices.Clone(prompt), c.gen...)
		got, q, err := d.Propose(ctx, c.k, sampler.Params{})
		if err != nil || q != nil || !slices.Equal(got, c.want) {
			t.Errorf("gen %v k=%d: %v (q %v, %v), want %v", c.gen, c.k, got, q, err, c.want)
		}
	}
}

// TestModelDrafterRollback: over rounds where only some guesses survive,
// the draft cache holds exactly ids of the text (plus unverified guesses)
// and its keys/values equal a fresh prefill of them: the next logits match.
func TestModelDrafterRollback(t *testing.T) {
	const V, ctxLen = 16, 40
	m := newHash(V, ctxLen, 5)
	d, err := NewModelDrafter(m)
	if err != nil {
		t.Fatal(err)
	}
	p := sampler.Params{Temperature: 1, Seed: 3}
	text := []int{1, 2, 3}
	d.Reset(text, 3)
	fed := 0
	for round := range 30 {
		before := m.calls()
		guesses, q, err := d.Propose(text, 4, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(guesses) != 4 || len(q) != 4 {
			t.Fatalf("round %d: %d guesses, %d q rows", round, len(guesses), len(q))
		}
		for i, g := range guesses {
			if q[i][g] <= 0 {
				t.Fatalf("guess %d has draft probability %v", g, q[i][g])
			}
		}
		c := d.Cached()
		// The cache is a suffix window of text followed by guesses[:3].
		if !slices.Equal(c[len(c)-3:], guesses[:3]) || d.off+len(c)-3 != len(text) ||
			!slices.Equal(c[:len(c)-3], text[d.off:]) {
			t.Fatalf("round %d: cache %v (off %d), text %v, guesses %v", round, c, d.off, text, guesses)
		}
		fed += m.calls() - before
		// Compare the cached K/V with a fresh prefill: re-feeding the last
		// cached id must give the fresh prefill's last logits.
		want, err := kvcache.NewState(m).Forward(c, 1)
		if err != nil {
			t.Fatal(err)
		}
		want = slices.Clone(want)
		d.State().Truncate(len(c) - 1)
		got, err := d.State().Forward(c[len(c)-1:], 1)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: cached logits differ from a fresh prefill", round)
		}
		// Keep round%5 guesses, then a different id (a rejection).
		keep := round % 5
		text = append(text, guesses[:min(keep, 4)]...)
		if keep < 4 {
			text = append(text, (guesses[keep]+1)%V)
		}
	}
	// Never the whole window again: about k forwards per round, plus a
	// restart when the window fills.
	if fed > 30*6 {
		t.Fatalf("%d draft forwards for 30 rounds", fed)
	}
}

// TestModelDrafterGreedyIsArgmax: greedy drafting proposes the draft's
// own greedy continuation with one-hot q.
func TestModelDrafterGreedyIsArgmax(t *testing.T) {
	m := newHash(12, 20, 9)
	d, _ := NewModelDrafter(m)
	ctx := []int{3, 1, 4}
	guesses, q, err := d.Propose(ctx, 3, sampler.Params{Greedy: true})
	if err != nil {
		t.Fatal(err)
	}
	st := kvcache.NewState(m)
	in := slices.Clone(ctx)
	for i, g := range guesses {
		l, _ := st.Forward(in, 1)
		best := 0
		for j, v := range l {
			if v > l[best] {
				best = j
			}
		}
		if g != best || q[i][g] != 1 {
			t.Fatalf("guess %d: %d (q %v), argmax %d", i, g, q[i][g], best)
		}
		st.Truncate(0)
		in = append(in, g)
	}
}
