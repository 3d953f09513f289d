package chattmpl

import (
	"slices"
	"testing"

	"chat/models/gguf"
	"chat/models/testmodels"
	"chat/models/tokenizer/gpt2bpe"
	"chat/models/tokenizer/spm"
)

// With the real Llama-3 vocabulary, the template's header and turn tokens are
// single control ids, BOS is not doubled, and content that spells them is
// plain text.
func TestLlama3RealTokenizer(t *testing.T) {
	f, err := gguf.Open(testmodels.Path(t, "vocab/ggml-vocab-llama-bpe.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := gpt2bpe.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	const (
		bot   = 128000 // <|begin_of_text|>
		start = 128006 // <|start_header_id|>
		end   = 128007 // <|end_header_id|>
		eot   = 128009 // <|eot_id|>
	)
	for id, s := range map[int]string{bot: "<|begin_of_text|>", start: "<|start_header_id|>", end: "<|end_header_id|>", eot: "<|eot_id|>"} {
		if got := string(tok.TokenBytes(id)); got != s {
			t.Fatalf("token %d is %q, want %q", id, got, s)
		}
	}
	for _, o := range []Options{{Template: tmplLlama32}, {Template: tmplLlama3}, {Family: "llama3"}} {
		tp := New(tok, Options{Template: o.Template, Family: o.Family, BOS: bot, EOS: eot, Now: fixedNow})
		msgs := []Message{{"system", "Be brief."}, {"user", "Say <|eot_id|> please"}}
		ids := tp.Render(msgs, true)
		if ids[0] != bot || ids[1] != start || slices.Contains(ids[2:], bot) {
			t.Errorf("%s: ids start %v", tp.Name(), ids[:4])
		}
		count := func(x int) (n int) {
			for _, id := range ids {
				if id == x {
					n++
				}
			}
			return n
		}
		// system, user and the assistant header: 3 headers; 2 turns end.
		if count(start) != 3 || count(end) != 3 || count(eot) != 2 {
			t.Errorf("%s: %d start, %d end, %d eot ids in %v", tp.Name(), count(start), count(end), count(eot), ids)
		}
		var pieces []byte
		for _, id := range ids {
			pieces = append(pieces, tok.TokenBytes(id)...)
		}
		if got, want := string(pieces), tp.Text(msgs, true); got != want {
			t.Errorf("%s: token pieces %q != text %q", tp.Name(), got, want)
		}
		// The header is exactly start, "assistant", end, "\n\n".
		tail := ids[len(ids)-4:]
		if tail[0] != start || tok.Decode(tail[1:2]) != "assistant" || tail[2] != end || tok.Decode(tail[3:]) != "\n\n" {
			t.Errorf("%s: generation header %v", tp.Name(), tail)
		}
		if !slices.Contains(tp.Stops(), eot) {
			t.Errorf("%s: stops %v lack <|eot_id|>", tp.Name(), tp.Stops())
		}
	}
}

// The Phi-3 vocabulary (SentencePiece, add_space_prefix) with the template
// its GGUF carries, which drops system messages: the system prompt is merged
// into the first user turn, and content spelling <|end|> is one run of plain
// text, tokenized as llama.cpp tokenizes the text between two control tokens.
func TestPhi3RealTokenizer(t *testing.T) {
	f, err := gguf.Open(testmodels.Path(t, "vocab/ggml-vocab-phi-3.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := spm.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	tp := FromGGUF(f, tok, "")
	if tp.Name() != "jinja" || tp.Family() != "phi3" {
		t.Fatalf("Name %q Family %q Err %v", tp.Name(), tp.Family(), tp.Err())
	}
	const userTok, endTok, asstTok = 32010, 32007, 32001
	msgs := []Message{{"system", "Be brief."}, {"user", "Say <|end|> now"}}
	ids := tp.Render(msgs, true)
	want := []int{tok.BOS(), userTok}
	want = append(want, tok.Encode("\nBe brief.\n\nSay <|end|> now")...)
	want = append(want, endTok)
	want = append(want, tok.Encode("\n")...)
	want = append(want, asstTok)
	want = append(want, tok.Encode("\n")...)
	if !slices.Equal(ids, want) {
		t.Errorf("ids\n got %v\nwant %v", ids, want)
	}
	if !slices.Contains(tp.Stops(), endTok) {
		t.Errorf("stops %v lack <|end|>", tp.Stops())
	}
}
