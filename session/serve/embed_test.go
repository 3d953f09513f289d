package serve

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"chat/models"
	"chat/models/llama"
	"chat/models/testmodels"
	"chat/session"
)

// The three embedding routes on stories260K: /api/embeddings gives the
// model's own embedding of the text (BOS and its tokens, mean-pooled),
// /api/embed and /v1/embeddings that scaled to length 1, the same for a
// text alone or in a list, and for the text or its ids; OpenAI's client
// reads them, in floats and in base64.
func TestEmbeddings(t *testing.T) {
	s, ts, client := start(t, Options{})
	const text = "Once upon a time"
	ids := session.RawIDs(s.m.Tokenizer(), text)
	own, err := s.m.(models.Embedder).Embed(ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(own) != s.m.Info().Embed {
		t.Fatalf("an embedding of %d values, want the model's width %d", len(own), s.m.Info().Embed)
	}
	unit := append([]float32(nil), own...)
	unitLength(unit)
	same := func(what string, got []float64, want []float32) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
		}
		for i := range got {
			if float32(got[i]) != want[i] {
				t.Fatalf("%s: value %d is %v, want %v", what, i, got[i], want[i])
			}
		}
	}
	floats := func(v any) []float64 {
		var out []float64
		for _, x := range v.([]any) {
			out = append(out, x.(float64))
		}
		return out
	}

	code, v := post(t, ts.URL+"/api/embeddings", `{"model":"stories260K","prompt":"`+text+`"}`)
	if code != http.StatusOK {
		t.Fatalf("/api/embeddings: %d %v", code, v)
	}
	same("/api/embeddings", floats(v["embedding"]), own)

	code, v = post(t, ts.URL+"/api/embed", `{"model":"stories260K","input":["`+text+`","Lily went home."]}`)
	if code != http.StatusOK || v["prompt_eval_count"] != float64(len(ids)+len(session.RawIDs(s.m.Tokenizer(), "Lily went home."))) {
		t.Fatalf("/api/embed: %d %v", code, v)
	}
	embs := v["embeddings"].([]any)
	same("/api/embed", floats(embs[0]), unit)
	var ss float64
	for _, x := range floats(embs[1]) {
		ss += x * x
	}
	if math.Abs(ss-1) > 1e-5 {
		t.Errorf("/api/embed's second vector has length² %v, want 1", ss)
	}

	res, err := client.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
		Model: "stories260K", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String(text)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Data) != 1 || res.Usage.PromptTokens != int64(len(ids)) || res.Model != s.name {
		t.Fatalf("/v1/embeddings: %+v", res)
	}
	same("/v1/embeddings", res.Data[0].Embedding, unit)
	tokens := make([]int64, len(ids))
	for i, id := range ids {
		tokens[i] = int64(id)
	}
	res, err = client.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: "stories260K",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokenArrays: [][]int64{tokens}}, EncodingFormat: openai.EmbeddingNewParamsEncodingFormatBase64})
	if err != nil {
		t.Fatal(err)
	}
	code, v = post(t, ts.URL+"/v1/embeddings", `{"model":"stories260K","input":"`+text+`","encoding_format":"base64"}`)
	b, err := base64.StdEncoding.DecodeString(v["data"].([]any)[0].(map[string]any)["embedding"].(string))
	if code != http.StatusOK || err != nil || len(b) != 4*len(unit) {
		t.Fatalf("base64: %d %v %v", code, err, v)
	}
	for i := range unit {
		if math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])) != unit[i] {
			t.Fatalf("base64 value %d differs", i)
		}
	}
	if len(res.Data) != 1 {
		t.Fatalf("ids, base64: %+v", res)
	}
}

// Bad embedding requests get one 4xx line each, in their API's shape; an
// input past the context is cut to it on /api/embed unless truncate is
// false, and refused on /v1/embeddings, as ollama and OpenAI do.
func TestEmbeddingRefusals(t *testing.T) {
	s, ts, _ := start(t, Options{})
	win := s.m.Info().ContextLength
	long := strings.Repeat("Once upon a time ", win)
	for _, c := range []struct{ route, body, want string }{
		{"/v1/embeddings", `{"model":"stories260K","input":"` + long + `"}`, "maximum context length"},
		{"/api/embed", `{"model":"stories260K","input":"` + long + `","truncate":false}`, "maximum context length"},
		{"/v1/embeddings", `{"model":"gpt-4","input":"hi"}`, "does not exist"},
		{"/api/embed", `{"model":"llama3","input":"hi"}`, "not found"},
		{"/v1/embeddings", `{"model":"stories260K","input":[]}`, "input is empty"},
		{"/v1/embeddings", `{"model":"stories260K","input":{"text":"hi"}}`, "input must be"},
		{"/v1/embeddings", `{"model":"stories260K","input":[[1,2,99999]]}`, "outside the vocabulary"},
		{"/v1/embeddings", `{"model":"stories260K","input":[[]]}`, "no tokens"},
		{"/v1/embeddings", `{"model":"stories260K","input":"hi","encoding_format":"int8"}`, "float or base64"},
		{"/v1/embeddings", `{"model":"stories260K","input":"hi","dimensions":3}`, "dimensions"},
	} {
		code, v := post(t, ts.URL+c.route, c.body)
		msg, _ := v["error"].(string)
		if e, ok := v["error"].(map[string]any); ok {
			msg, _ = e["message"].(string)
		}
		if code < 400 || code >= 500 || !strings.Contains(msg, c.want) {
			t.Errorf("%s %.80s: %d %v, want a 4xx saying %q", c.route, c.body, code, v, c.want)
		}
	}
	code, v := post(t, ts.URL+"/api/embed", `{"model":"stories260K","input":"`+long+`"}`)
	if code != http.StatusOK || v["prompt_eval_count"] != float64(win) {
		t.Errorf("/api/embed past the context: %d %.200v, want it cut to %d tokens", code, v, win)
	}
	code, v = post(t, ts.URL+"/api/embeddings", `{"model":"stories260K","prompt":""}`)
	if code != http.StatusOK || len(v["embedding"].([]any)) != 0 {
		t.Errorf("/api/embeddings of nothing: %d %v", code, v)
	}
}

// TestEmbeddingLlamaCpp (CHAT_LLAMACPP=1): the state Embed averages is the
// one llama.cpp calls a position's embedding (its final hidden state, the
// output matrix's input). llama.cpp gives a model without a pooling type
// the last position's: here the difference n·E(ids) − (n−1)·E(ids[:n−1])
// of two means. Its embedding context keeps an f16 cache (node-llama-cpp's
// settings), so the two agree to f16 rounding, not bitwise.
func TestEmbeddingLlamaCpp(t *testing.T) {
	testmodels.NeedLlamaCpp(t)
	m := storiesModel(t)
	ids := session.RawIDs(m.Tokenizer(), "Once upon a time, there was a little girl")
	var req testmodels.LlamaCppRequest
	req.Model = testmodels.Path(t, "stories260K/stories260K.gguf")
	for n := 1; n <= len(ids); n++ {
		req.Embed = append(req.Embed, ids[:n])
	}
	res := testmodels.LlamaCpp(t, req)
	if len(res.Embeddings) != len(req.Embed) {
		t.Fatalf("llama.cpp gave %d embeddings for %d inputs", len(res.Embeddings), len(req.Embed))
	}
	var prev []float32
	var most float64
	defer func() { t.Logf("largest difference from llama.cpp's embedding: %.2g of the largest value", most) }()
	for n := 1; n <= len(ids); n++ {
		e, err := m.(models.Embedder).Embed(ids[:n])
		if err != nil {
			t.Fatal(err)
		}
		want := res.Embeddings[n-1]
		var worst, scale float64
		for j := range e {
			last := float64(n) * float64(e[j])
			if prev != nil {
				last -= float64(n-1) * float64(prev[j])
			}
			worst, scale = max(worst, math.Abs(last-want[j])), max(scale, math.Abs(want[j]))
		}
		most = max(most, worst/scale)
		if worst > 3e-3*scale {
			t.Errorf("%d tokens: the last position's state differs from llama.cpp's embedding by %.3g (largest value %.3g)", n, worst, scale)
		}
		prev = e
	}
}

// eosTokenizer is a tokenizer whose file asks for EOS after a text.
type eosTokenizer struct {
	models.Tokenizer
	eos int
}

func (t eosTokenizer) AppendedEOS() int { return t.eos }

// A tokenizer that appends EOS (add_eos_token, Qwen3-Embedding's files)
// ends each text to embed with it, as llama.cpp tokenizes one: the
// embedding is then that of the ids with EOS, one token more.
func TestEmbeddingAppendsEOS(t *testing.T) {
	plain := storiesModel(t).(*llama.Model)
	tok := eosTokenizer{plain.Tokenizer(), 2}
	c := *plain // shares the file; the test's server does not close the model
	c.Model = plain.Model.With(plain.Info(), tok)
	m := &c
	_, ts, _ := startModel(t, m, Options{})
	ids := append(session.RawIDs(tok, "Once upon a time"), 2)
	want, err := m.Embed(ids)
	if err != nil {
		t.Fatal(err)
	}
	code, v := post(t, ts.URL+"/api/embeddings", `{"model":"stories260K","prompt":"Once upon a time"}`)
	if code != http.StatusOK {
		t.Fatalf("%d %v", code, v)
	}
	got := v["embedding"].([]any)
	for i := range want {
		if float32(got[i].(float64)) != want[i] {
			t.Fatalf("value %d: %v, the embedding of the ids with EOS %v", i, got[i], want[i])
		}
	}
	code, v = post(t, ts.URL+"/api/embed", `{"model":"stories260K","input":"Once upon a time"}`)
	if code != http.StatusOK || v["prompt_eval_count"] != float64(len(ids)) {
		t.Errorf("/api/embed: %d, %v tokens, want %d", code, v["prompt_eval_count"], len(ids))
	}
}

// /metrics counts the embedding routes' requests and input tokens (it
// counted only the generation's): scraped after three requests, one of
// two texts, the counters hold three requests and every input's tokens.
func TestEmbeddingMetrics(t *testing.T) {
	s, ts, _ := start(t, Options{})
	tokens := 0
	for _, text := range []string{"Once upon a time", "a cat", "the dog ran"} {
		tokens += len(session.RawIDs(s.m.Tokenizer(), text))
	}
	for _, c := range []struct{ path, body string }{
		{"/v1/embeddings", `{"input":["Once upon a time","a cat"]}`},
		{"/api/embed", `{"model":"stories260K","input":"the dog ran"}`},
		{"/api/embeddings", `{"model":"stories260K","prompt":""}`},
	} {
		if code, v := post(t, ts.URL+c.path, c.body); code != http.StatusOK {
			t.Fatalf("%s: %d %v", c.path, code, v)
		}
	}
	b := scrape(t, ts.URL)
	for _, want := range []string{
		fmt.Sprintf("chat:embedding_requests_total{model_name=%q} 3\n", s.Name()),
		fmt.Sprintf("chat:embedding_input_tokens_total{model_name=%q} %d\n", s.Name(), tokens),
		"# HELP chat:embedding_requests_total ", "# TYPE chat:embedding_input_tokens_total counter\n",
	} {
		if !strings.Contains(b, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, b)
		}
	}
}
