package main

import (
	"encoding/json"
	"fmt"
	"io"

	"chat/config"
	"chat/session"
	"chat/session/termtext"
)

// runBeam is headless --beam N: the best continuation by beam search on
// stdout (or, with --json, every hypothesis with its log-probability and
// score), instead of a sampled reply.
func runBeam(s *session.Session, cfg *config.Config, stdout, stderr io.Writer) int {
	res, err := s.Beam(cfg.Prompt, cfg.Beam, cfg.LengthPenalty)
	if err != nil {
		fmt.Fprintln(stderr, "chat:", err)
		return 1
	}
	st := res.Stats
	if cfg.Verbose {
		fmt.Fprintf(stderr, "chat: beam %d · α %g · %d hypotheses · %d steps · prompt %d tokens (%d reused) · KV blocks at peak %d (%d unshared)\n",
			cfg.Beam, cfg.LengthPenalty, len(res.Hypotheses), st.Steps, st.PromptTokens, st.ReusedTokens, st.PeakBlocks, st.UnsharedBlocks)
	}
	if !cfg.JSON {
		if len(res.Hypotheses) > 0 {
			fmt.Fprintln(stdout, termtext.Clean(res.Texts[0], true)) // the model's text: no raw control sequences
		}
		return 0
	}
	type hyp struct {
		IDs     []int   `json:"ids"`
		Text    string  `json:"text"`
		LogProb float64 `json:"logprob"`
		Score   float64 `json:"score"`
		Reason  string  `json:"reason"`
	}
	out := struct {
		PromptIDs  []int `json:"prompt_ids"`
		Beam       int   `json:"beam"`
		Hypotheses []hyp `json:"hypotheses"`
		Stats      any   `json:"stats"`
	}{PromptIDs: s.LastPrompt(), Beam: cfg.Beam, Hypotheses: []hyp{},
		Stats: map[string]any{"steps": st.Steps, "prompt_tokens": st.PromptTokens, "reused_tokens": st.ReusedTokens,
			"peak_blocks": st.PeakBlocks, "unshared_blocks": st.UnsharedBlocks}}
	for i, h := range res.Hypotheses {
		out.Hypotheses = append(out.Hypotheses, hyp{h.IDs, res.Texts[i], h.LogProb, h.Score, h.Reason})
	}
	b, _ := json.Marshal(out)
	fmt.Fprintln(stdout, termtext.JSON(string(b))) // encoding/json leaves C1 controls and bidi overrides raw
	return 0
}
