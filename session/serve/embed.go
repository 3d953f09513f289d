package serve

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"chat/models"
	"chat/session"
)

// Embeddings: POST /v1/embeddings (OpenAI's), /api/embed and the older
// /api/embeddings (ollama's). An input's embedding is made of the model's
// final hidden states over its tokens (models.Embedder): their mean, as
// ollama and llama-server's mean pooling make one from a generative model,
// or the first or last position's when a GGUF file's pooling_type says so;
// /v1/embeddings and /api/embed scale it to length 1, as they do, and
// /api/embeddings leaves it as it is, as ollama's does. A text is
// tokenized as a raw prompt is (session.RawIDs: BOS first), and ends with
// EOS when the file's tokenizer.ggml.add_eos_token asks. Requests run
// one at a time, beside the engine's replies, each on a cache of its own
// input's length.

// maxEmbedInputs and maxEmbedTokens bound one request's inputs and their
// tokens in all (OpenAI's limits).
const (
	maxEmbedInputs = 2048
	maxEmbedTokens = 300_000
)

// embedInput is a request's input in any of its shapes: a text, a list of
// texts, a list of ids or a list of id lists (OpenAI's four; ollama takes
// the first two).
type embedInput struct {
	texts []string
	ids   [][]int
}

func (in *embedInput) UnmarshalJSON(b []byte) error {
	// Each shape into a variable of its own: a failed Unmarshal may have
	// filled part of its target.
	var text string
	var texts []string
	var ids []int
	var lists [][]int
	switch {
	case json.Unmarshal(b, &text) == nil:
		in.texts = []string{text}
	case json.Unmarshal(b, &texts) == nil:
		in.texts = texts
	case json.Unmarshal(b, &ids) == nil:
		in.ids = [][]int{ids}
	case json.Unmarshal(b, &lists) == nil:
		in.ids = lists
	default:
		return fmt.Errorf("input must be a string, a list of strings, a list of token ids or a list of such lists")
	}
	return nil
}

// embedTokens is each input's ids: the texts tokenized, the id lists checked
// against the vocabulary. An input longer than the context is cut to it
// when truncate, else refused.
func (s *Server) embedTokens(in embedInput, truncate bool) ([][]int, *errBody) {
	n := len(in.texts) + len(in.ids)
	if n == 0 {
		return nil, badRequest("input", "input is empty: give a text or a list of them")
	}
	if n > maxEmbedInputs {
		return nil, badRequest("input", fmt.Sprintf("%d inputs; at most %d a request", n, maxEmbedInputs))
	}
	if e := s.tooLongEach("input", in.texts, truncate); e != nil {
		return nil, e
	}
	tok, vocab, win := s.m.Tokenizer(), s.m.Info().VocabSize, s.e.Window()
	all := make([][]int, 0, n)
	eos := -1 // llama.cpp tokenizes an embedding's text with its special tokens: EOS too when the file asks
	if a, ok := tok.(models.AppendsEOS); ok {
		eos = a.AppendedEOS()
	}
	for _, t := range in.texts {
		ids := session.RawIDs(tok, t)
		if eos >= 0 {
			ids = append(ids, eos)
		}
		all = append(all, ids)
	}
	for _, ids := range in.ids {
		for _, id := range ids {
			if id < 0 || id >= vocab {
				return nil, badRequest("input", fmt.Sprintf("token id %d is outside the vocabulary of %d", id, vocab))
			}
		}
		all = append(all, ids)
	}
	total := 0
	for i, ids := range all {
		switch {
		case len(ids) == 0:
			return nil, badRequest("input", fmt.Sprintf("input %d has no tokens", i))
		case len(ids) > win && truncate:
			all[i] = ids[:win]
		case len(ids) > win:
			return nil, pastContext("input", win, fmt.Sprintf("input %d is %d tokens", i, len(ids)))
		}
		if total += len(all[i]); total > maxEmbedTokens {
			return nil, badRequest("input", fmt.Sprintf("over %d tokens in all; at most %d a request", total, maxEmbedTokens))
		}
	}
	return all, nil
}

// tooLongEach refuses, before tokenizing, a text that must be longer than
// the context (tooLong's bound), unless it is to be cut to the context.
func (s *Server) tooLongEach(param string, texts []string, truncate bool) *errBody {
	if truncate {
		return nil
	}
	for _, t := range texts {
		if e := s.tooLong(param, t); e != nil {
			return e
		}
	}
	return nil
}

// embed tokenizes the input (embedTokens) and runs it through the model,
// one request at a time, each embedding scaled to length 1 when normalize;
// it returns them and the tokens they took, which /metrics counts. It
// stops at the client's hanging up.
func (s *Server) embed(ctx context.Context, in embedInput, truncate, normalize bool) ([][]float32, int, *errBody) {
	inputs, e := s.embedTokens(in, truncate)
	if e != nil {
		return nil, 0, e
	}
	noEmbeddings := newErr(http.StatusNotImplemented, "invalid_request_error", "", "", fmt.Sprintf("%s gives no embeddings (a reranker's pooling, or a model without them)", s.name))
	m, ok := s.m.(models.Embedder)
	if !ok {
		return nil, 0, noEmbeddings
	}
	s.embedMu.Lock()
	defer s.embedMu.Unlock()
	out := make([][]float32, len(inputs))
	tokens := 0
	for i, ids := range inputs {
		if ctx.Err() != nil {
			return nil, 0, newErr(http.StatusRequestTimeout, "invalid_request_error", "", "request_timeout", "the client went away")
		}
		v, err := m.Embed(ids)
		if errors.Is(err, models.ErrNoEmbeddings) {
			return nil, 0, noEmbeddings
		}
		if err != nil {
			return nil, 0, newErr(http.StatusInternalServerError, "server_error", "", "", err.Error())
		}
		if normalize {
			unitLength(v)
		}
		out[i], tokens = v, tokens+len(ids)
	}
	s.met.embedded(tokens)
	return out, tokens, nil
}

// unitLength scales v to Euclidean length 1 (a zero vector stays zero).
func unitLength(v []float32) {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss == 0 {
		return
	}
	k := 1 / math.Sqrt(ss)
	for i, x := range v {
		v[i] = float32(float64(x) * k)
	}
}

// openaiEmbeddings is POST /v1/embeddings.
func (s *Server) openaiEmbeddings(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model          string     `json:"model"`
		Input          embedInput `json:"input"`
		EncodingFormat string     `json:"encoding_format"`
		Dimensions     *int       `json:"dimensions"`
	}
	if e := decode(w, r, &req); e != nil {
		writeErr(w, r, e)
		return
	}
	if e := s.model(req.Model); e != nil {
		writeErr(w, r, e)
		return
	}
	if f := req.EncodingFormat; f != "" && f != "float" && f != "base64" {
		writeErr(w, r, badRequest("encoding_format", fmt.Sprintf("encoding_format %q: float or base64", f)))
		return
	}
	if d := s.m.Info().Embed; req.Dimensions != nil && *req.Dimensions != d {
		writeErr(w, r, badRequest("dimensions", fmt.Sprintf("this model's embeddings have %d dimensions, not %d", d, *req.Dimensions)))
		return
	}
	vs, n, e := s.embed(r.Context(), req.Input, false, true)
	if e != nil {
		writeErr(w, r, e)
		return
	}
	data := make([]map[string]any, len(vs))
	for i, v := range vs {
		var emb any = v
		if req.EncodingFormat == "base64" { // little-endian float32s, as OpenAI's
			b := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(x))
			}
			emb = base64.StdEncoding.EncodeToString(b)
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": emb}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "model": s.name,
		"usage": map[string]int{"prompt_tokens": n, "total_tokens": n}})
}

// ollamaEmbed is POST /api/embed: unit-length embeddings of a text or a
// list of them, an input past the context cut to it unless truncate is
// false.
func (s *Server) ollamaEmbed(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string     `json:"model"`
		Input    embedInput `json:"input"`
		Truncate *bool      `json:"truncate"`
	}
	if !s.ollamaRead(w, r, &req, &req.Model) {
		return
	}
	t0 := time.Now()
	vs, n, e := s.embed(r.Context(), req.Input, req.Truncate == nil || *req.Truncate, true)
	if e != nil {
		writeErr(w, r, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"model": cmp.Or(req.Model, s.name), "embeddings": vs,
		"total_duration": time.Since(t0).Nanoseconds(), "load_duration": 0, "prompt_eval_count": n})
}

// ollamaEmbeddings is POST /api/embeddings, ollama's older route: one
// prompt's embedding, not scaled; an empty prompt gives an empty one.
func (s *Server) ollamaEmbeddings(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  string `json:"model"`
		Prompt string `json:"prompt"`
	}
	if !s.ollamaRead(w, r, &req, &req.Model) {
		return
	}
	if req.Prompt == "" {
		s.met.embedded(0)
		writeJSON(w, http.StatusOK, map[string]any{"embedding": []float32{}})
		return
	}
	vs, _, e := s.embed(r.Context(), embedInput{texts: []string{req.Prompt}}, true, false)
	if e != nil {
		writeErr(w, r, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"embedding": vs[0]})
}
