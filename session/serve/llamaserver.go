package serve

import (
	"chat/models/gguf"
	"fmt"
	"net/http"
	"unicode/utf8"
)

// llama-server's own endpoints that clients written for it call besides
// the OpenAI ones: /tokenize and /detokenize (scripts count and inspect
// tokens with the model's tokenizer; nothing runs) and /props (its web UI
// and others read the context size, slots and chat template there).

type tokenizeRequest struct {
	Content      string `json:"content"`
	AddSpecial   bool   `json:"add_special"`   // the BOS the model's prompts start with
	ParseSpecial *bool  `json:"parse_special"` // special-token text becomes its id (default true, as llama-server's)
	WithPieces   bool   `json:"with_pieces"`   // each id with its text
}

// tokenPiece is a token with its text: a string when its bytes are UTF-8, else
// the bytes as numbers (llama-server's shape).
type tokenPiece struct {
	ID    int `json:"id"`
	Piece any `json:"piece"`
}

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req tokenizeRequest
	if e := decode(w, r, &req); e != nil {
		writeErr(w, e)
		return
	}
	tok := s.m.Tokenizer()
	var ids []int
	switch {
	case req.ParseSpecial == nil || *req.ParseSpecial:
		ids = tok.EncodeSpecial(req.Content)
	default:
		ids = tok.Encode(req.Content)
	}
	if req.AddSpecial {
		if bos := tok.BOS(); bos >= 0 {
			ids = append([]int{bos}, ids...)
		}
	}
	if !req.WithPieces {
		writeJSON(w, http.StatusOK, map[string]any{"tokens": ids})
		return
	}
	out := make([]tokenPiece, len(ids))
	for i, id := range ids {
		b := tok.TokenBytes(id)
		out[i] = tokenPiece{ID: id, Piece: string(b)}
		if !utf8.Valid(b) {
			n := make([]int, len(b))
			for j, c := range b {
				n[j] = int(c)
			}
			out[i].Piece = n
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": out})
}

func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Tokens []int `json:"tokens"`
	}
	if e := decode(w, r, &req); e != nil {
		writeErr(w, e)
		return
	}
	n := s.m.Tokenizer().Size()
	for i, id := range req.Tokens {
		if id < 0 || id >= n {
			writeErr(w, badRequest(fmt.Sprintf("tokens[%d]", i), fmt.Sprintf("token id %d is not in the vocabulary (0 to %d)", id, n-1)))
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"content": s.m.Tokenizer().Decode(req.Tokens)})
}

// props is llama-server's GET /props, with the fields its clients read.
func (s *Server) props(w http.ResponseWriter, _ *http.Request) {
	tmpl := ""
	if g, ok := s.m.(interface{ GGUF() *gguf.File }); ok {
		tmpl, _ = g.GGUF().String("tokenizer.chat_template")
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"default_generation_settings": map[string]any{"n_ctx": s.e.Window()},
		"total_slots":                 s.e.MaxSeqs(),
		"model_path":                  s.name,
		"chat_template":               tmpl,
		"modalities":                  map[string]bool{"vision": false, "audio": false},
		"build_info":                  "chat serve",
	})
}
