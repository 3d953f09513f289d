package constrain

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"chat/engine/constrain/gbnf"
	"chat/engine/constrain/jsonschema"
	"chat/engine/constrain/testvocab"
	"chat/models"
)

// randomDoc is a JSON document of the kind a model asked for JSON writes:
// objects of words, numbers, booleans, nulls, nested up to depth 3,
// indented or compact.
func randomDoc(rng *rand.Rand) []byte {
	words := []string{"name", "id", "title", "Alice", "Bob", "the quick brown fox", "München", "東京", "value", "items", "tags", "ok", "status", "shipped", "description", "a longer sentence with several words in it."}
	var gen func(depth int) any
	gen = func(depth int) any {
		switch k := rng.IntN(10); {
		case depth < 3 && k < 3:
			o := map[string]any{}
			for range 1 + rng.IntN(4) {
				o[words[rng.IntN(len(words))]] = gen(depth + 1)
			}
			return o
		case depth < 3 && k < 5:
			a := make([]any, rng.IntN(4))
			for i := range a {
				a[i] = gen(depth + 1)
			}
			return a
		case k < 7:
			return words[rng.IntN(len(words))]
		case k < 8:
			return rng.IntN(100000) - 500
		case k < 9:
			return float64(rng.IntN(1000000)) / 1000
		}
		return []any{true, false, nil}[rng.IntN(3)]
	}
	doc := map[string]any{}
	for range 2 + rng.IntN(4) {
		doc[words[rng.IntN(len(words))]] = gen(1)
	}
	var b []byte
	if rng.IntN(2) == 0 {
		b, _ = json.MarshalIndent(doc, "", "  ")
	} else {
		b, _ = json.Marshal(doc)
	}
	return b
}

// tokenize encodes doc with tok the way a model would write it: Encode,
// then, when the tokenizer put a space in front (SentencePiece's space
// prefix), the first token swapped for the one without it.
func tokenize(tok models.Tokenizer, v *Vocab, doc []byte) ([]int, bool) {
	ids := tok.Encode(string(doc))
	var got []byte
	for _, id := range ids {
		got = append(got, v.Bytes(id)...)
	}
	if string(got) == string(doc) {
		return ids, true
	}
	if string(got) != " "+string(doc) || len(ids) == 0 {
		return nil, false
	}
	first := v.Bytes(ids[0])[1:]
	if len(first) == 0 {
		return ids[1:], true
	}
	for id := range v.Size() {
		if v.Ordinary(id) && string(v.Bytes(id)) == string(first) {
			return append([]int{id}, ids[1:]...), true
		}
	}
	return nil, false
}

// maskCost replays documents through a fresh JSON matcher: warm documents
// untimed, then every step of the measured ones timed (Mask, then Next),
// misses of states never seen included. It returns the sorted per-token
// times.
func maskCost(tb testing.TB, tok models.Tokenizer, v *Vocab, warm, measured int, seed uint64) (times, misses []time.Duration) {
	g, err := gbnf.Compile(jsonschema.JSON())
	if err != nil {
		tb.Fatal(err)
	}
	m := New(gbnf.NewMachine(g), v, "json")
	ends := []int{tok.EOT()}
	rng := rand.New(rand.NewPCG(seed, 1))
	skipped := 0
	for d := range warm + measured {
		ids, ok := tokenize(tok, v, randomDoc(rng))
		if !ok {
			if skipped++; skipped > (warm+measured)/10 {
				tb.Fatalf("%d documents do not tokenize back to their text", skipped)
			}
			continue
		}
		s := m.Begin(ends)
		for i := 0; i <= len(ids); i++ {
			had := m.cached
			t0 := time.Now()
			mk, err := m.Mask(s, 0)
			id := tok.EOT()
			if i < len(ids) {
				id = ids[i]
			}
			next, ok := m.Next(s, id)
			dt := time.Since(t0)
			if err != nil || !mk.Allows(id) || !ok {
				tb.Fatalf("document %d token %d (%q): not allowed (%v)", d, i, v.Bytes(id), err)
			}
			s = next
			if d >= warm {
				times = append(times, dt)
			}
			if m.cached != had {
				misses = append(misses, dt)
			}
		}
	}
	slices.Sort(times)
	return times, misses
}

func pct(times []time.Duration, p float64) time.Duration {
	return times[min(len(times)-1, int(p*float64(len(times))))]
}

// BenchmarkJSONMask is the mask cost per token of the JSON grammar (--format
// json) after a warm-up, at 32k (llama-spm) and 128k (llama-bpe) tokens:
// 200 documents warm the caches, then each step of 200 new ones is timed
// (state misses included). It reports the percentiles and the mean of the
// measured steps, and the number and mean cost of the misses (trie walks)
// over the whole run, warm-up included. Applying a mask to a logits row is
// the sampler's BenchmarkApplyMask.
//
//	go test -run '^$' -bench JSONMask -benchtime 1x ./engine/constrain/
func BenchmarkJSONMask(b *testing.B) {
	for _, name := range []string{"llama-spm", "llama-bpe"} {
		b.Run(name, func(b *testing.B) {
			tok := testvocab.Load(b, name)
			v := NewVocab(tok, tok.Size())
			var all, misses []time.Duration
			for i := range b.N {
				t, m := maskCost(b, tok, v, 200, 200, uint64(i))
				all, misses = append(all, t...), append(misses, m...)
			}
			var missSum time.Duration
			for _, t := range misses {
				missSum += t
			}
			slices.Sort(all)
			var sum time.Duration
			for _, t := range all {
				sum += t
			}
			b.ReportMetric(float64(pct(all, 0.5).Nanoseconds())/1000, "p50-µs/token")
			b.ReportMetric(float64(pct(all, 0.9).Nanoseconds())/1000, "p90-µs/token")
			b.ReportMetric(float64(pct(all, 0.99).Nanoseconds())/1000, "p99-µs/token")
			b.ReportMetric(float64(sum.Nanoseconds())/1000/float64(len(all)), "mean-µs/token")
			b.ReportMetric(float64(len(all))/float64(b.N), "tokens")
			b.ReportMetric(float64(missSum.Nanoseconds())/1000/float64(len(misses)), "miss-µs")
			b.ReportMetric(float64(len(misses))/float64(b.N), "misses")

		})
	}
}

// BenchmarkCompileSchema is the compile time of a typical schema (an order
// with nested objects, $refs, patterns, enums and bounded arrays) to a
// ready automaton, and binding it to a 128k vocabulary.
//
//	go test -run '^$' -bench CompileSchema ./engine/constrain/
func BenchmarkCompileSchema(b *testing.B) {
	src, err := os.ReadFile("jsonschema/testdata/typical.json")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("schema", func(b *testing.B) {
		for range b.N {
			if _, err := Compile(Spec{Kind: KindSchema, Arg: string(src)}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("schema+bind-128k", func(b *testing.B) {
		tok := testvocab.Load(b, "llama-bpe")
		v := NewVocab(tok, tok.Size())
		b.ResetTimer()
		for range b.N {
			m, err := Build(Spec{Kind: KindSchema, Arg: string(src)}, v)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := m.Mask(m.Begin(nil), 0); err != nil { // the first mask too
				b.Fatal(err)
			}
		}
	})
	b.Run("vocab-128k", func(b *testing.B) {
		tok := testvocab.Load(b, "llama-bpe")
		b.ResetTimer()
		for range b.N {
			NewVocab(tok, tok.Size())
		}
	})
}

// The replayed documents are what the JSON grammar accepts, token by token,
// for every tokenizer (a smaller run of the benchmark).
func TestJSONDocumentsReplay(t *testing.T) {
	for _, name := range testvocab.Names {
		tok := testvocab.Load(t, name)
		v := NewVocab(tok, tok.Size())
		n := 20
		if tok.Size() > 100_000 {
			n = 5
		}
		times, _ := maskCost(t, tok, v, n, n, 7)
		if len(times) == 0 {
			t.Fatalf("%s: no token replayed", name)
		}
	}
}
