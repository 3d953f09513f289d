package testmodels

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// LlamaCppRequest is what scripts/llamacpp/check.mjs asks llama.cpp for.
type LlamaCppRequest struct {
	Model   string   `json:"model"`
	Lora    []any    `json:"lora,omitempty"` // [file, scale]
	Prompts [][]int  `json:"prompts,omitempty"`
	NGen    int      `json:"n_gen"`
	Texts   []string `json:"texts,omitempty"`
	// NCtx is the context llama.cpp opens (0: the model's, at most 512).
	NCtx int `json:"n_ctx,omitempty"`
	// Embed asks for llama.cpp's embedding of each id list (check.mjs).
	Embed [][]int `json:"embed,omitempty"`
}

// LlamaCppResult is its answer.
type LlamaCppResult struct {
	Greedy [][]int `json:"greedy"`
	// Top2 is llama.cpp's two most probable (id, log-probability) at
	// each greedy step of each prompt.
	Top2          [][][2][2]float64 `json:"top2"`
	Tokens        [][]int           `json:"tokens"`
	TokensSpecial [][]int           `json:"tokens_special"`
	SystemInfo    string            `json:"system_info"`
	Embeddings    [][]float64       `json:"embeddings"`
}

// NeedLlamaCpp skips t unless CHAT_LLAMACPP=1, node is installed and
// node-llama-cpp is in the cache folder ../shared/bench/llamacpp.sh
// --install fills; it returns node's path and that folder.
func NeedLlamaCpp(t testing.TB) (node, cache string) {
	t.Helper()
	if os.Getenv("CHAT_LLAMACPP") != "1" {
		t.Skip("llama.cpp checks run with CHAT_LLAMACPP=1 (after ../shared/bench/llamacpp.sh --install)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	cache = LlamaCppCache()
	if _, err := os.Stat(filepath.Join(cache, "node_modules", "node-llama-cpp")); err != nil {
		t.Skipf("node-llama-cpp is not installed in %s (run ../shared/bench/llamacpp.sh --install)", cache)
	}
	return node, cache
}

// LlamaCppCache is the folder node-llama-cpp is installed in:
// $CHAT_BENCH_CACHE, else chat-bench/llamacpp in the user's cache folder
// (found from HOME, so a TestMain that moves HOME sets CHAT_BENCH_CACHE to
// this first).
func LlamaCppCache() string {
	if cache := os.Getenv("CHAT_BENCH_CACHE"); cache != "" {
		return cache
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "chat-bench", "llamacpp")
}

// LlamaCpp runs req through llama.cpp with scripts/llamacpp/check.mjs
// (skipping t as NeedLlamaCpp does).
func LlamaCpp(t testing.TB, req LlamaCppRequest) LlamaCppResult {
	t.Helper()
	var res LlamaCppResult
	runScript(t, "scripts/llamacpp/check.mjs", req, &res)
	return res
}

// TokenizeRequest asks llama.cpp to tokenize Texts under the vocabulary of
// Model (scripts/llamacpp/tokenize.mjs).
type TokenizeRequest struct {
	Model string   `json:"model"`
	Texts []string `json:"texts"`
}

// TokenizeResult is llama.cpp's answer for one TokenizeRequest: per text,
// the ids without BOS, with special-token text as plain text (Tokens) and
// parsed (TokensSpecial), and the text llama_detokenize gives for Tokens
// (Detok); or Error when llama.cpp does not load the model.
type TokenizeResult struct {
	Tokens        [][]int  `json:"tokens"`
	TokensSpecial [][]int  `json:"tokens_special"`
	Detok         []string `json:"detok"`
	Error         string   `json:"error"`
}

// LlamaCppTokenize tokenizes under several models in one llama.cpp process
// (skipping t as NeedLlamaCpp does).
func LlamaCppTokenize(t testing.TB, reqs []TokenizeRequest) []TokenizeResult {
	t.Helper()
	var res struct {
		Results []TokenizeResult `json:"results"`
	}
	runScript(t, "scripts/llamacpp/tokenize.mjs", map[string]any{"models": reqs}, &res)
	if len(res.Results) != len(reqs) {
		t.Fatalf("llama.cpp: %d results for %d models", len(res.Results), len(reqs))
	}
	return res.Results
}

// runScript runs a script of scripts/llamacpp on req (as JSON) and decodes
// its stdout into res.
func runScript(t testing.TB, rel string, req, res any) {
	t.Helper()
	node, cache := NeedLlamaCpp(t)
	script, err := moduleFile(rel)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(t.TempDir(), "request.json")
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(node, script, cache, in)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("llama.cpp: %v\n%s", err, stderr.Bytes())
	}
	if err := json.Unmarshal(stdout.Bytes(), res); err != nil {
		t.Fatalf("llama.cpp: %v\n%s\n%s", err, stdout.Bytes(), stderr.Bytes())
	}
}

// moduleFile is rel under the module root (the folder with go.mod).
func moduleFile(rel string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, rel), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
