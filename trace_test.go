package main

import (
	"bufio"
	"chat/engine"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --json --top-logprobs N: one entry per generated id, its N likeliest
// alternatives most likely first, the chosen id's log-probability among
// them or below the last (greedy: it is the first).
func TestHeadlessTopLogprobs(t *testing.T) {
	code, stdout, stderr := runCLI("--raw", "--prompt", "Once upon a time", "-n", "12", "--greedy", "--json", "--top-logprobs", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		IDs      []int `json:"ids"`
		Logprobs []struct {
			ID      int     `json:"id"`
			Token   string  `json:"token"`
			Logprob float64 `json:"logprob"`
			Top     []struct {
				ID      int     `json:"id"`
				Logprob float64 `json:"logprob"`
			} `json:"top_logprobs"`
		} `json:"logprobs"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Logprobs) != len(out.IDs) || len(out.IDs) == 0 {
		t.Fatalf("%d logprobs for %d ids", len(out.Logprobs), len(out.IDs))
	}
	for i, lp := range out.Logprobs {
		if lp.ID != out.IDs[i] || len(lp.Top) != 3 || lp.Top[0].ID != lp.ID || lp.Logprob != lp.Top[0].Logprob || lp.Logprob > 0 {
			t.Fatalf("entry %d: %+v (ids %v)", i, lp, out.IDs)
		}
		if lp.Top[0].Logprob < lp.Top[1].Logprob || lp.Top[1].Logprob < lp.Top[2].Logprob {
			t.Fatalf("entry %d not sorted: %+v", i, lp.Top)
		}
	}
	// An impossible token's −∞ is −9999 in the JSON, as vLLM writes it.
	if engine.JSONFinite(math.Inf(-1)) != -9999 || engine.JSONFinite(math.NaN()) != 0 || engine.JSONFinite(-1.5) != -1.5 {
		t.Error("finite does not keep the JSON valid")
	}
	// Without the flag, no "logprobs" key.
	_, stdout, _ = runCLI("--raw", "--prompt", "Once", "-n", "2", "--greedy", "--json")
	var plain map[string]any
	json.Unmarshal([]byte(stdout), &plain)
	if _, ok := plain["logprobs"]; ok {
		t.Fatal("logprobs without --top-logprobs")
	}
}

// A trace that cannot be written (a full disk) ends with one line saying
// so, not one per token.
func TestHeadlessTraceWriteError(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	code, _, stderr := runCLI("--raw", "--prompt", "Once upon a time", "-n", "20", "--greedy", "--trace", "/dev/full")
	if code != 1 || strings.Count(stderr, "/dev/full") != 1 || !strings.Contains(stderr, "chat: --trace: write /dev/full") {
		t.Errorf("exit %d, stderr %q: want 1 and the error once", code, stderr)
	}
}

// --trace FILE: one JSON line per token, in order, whose drawn ids are the
// reply's; after the chain the probabilities sum to at most 1 and the
// drawn one is among the candidates; stages in the sampler's order.
func TestHeadlessTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	code, stdout, stderr := runCLI("--raw", "--prompt", "Once upon a time", "-n", "10", "--seed", "4", "--top-k", "40", "--json", "--trace", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		IDs []int `json:"ids"`
	}
	json.Unmarshal([]byte(stdout), &out)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type cand struct {
		ID      int     `json:"id"`
		PBefore float64 `json:"p_before"`
		PAfter  float64 `json:"p_after"`
	}
	type line struct {
		Step      int  `json:"step"`
		Token     int  `json:"token"`
		Drawn     cand `json:"drawn"`
		IDs       []int
		Survivors []struct {
			Stage string `json:"stage"`
			Left  int    `json:"left"`
		} `json:"survivors"`
		Before, After []cand
		Blocks        map[string]int `json:"blocks"`
		Sampler       map[string]any `json:"sampler"`
	}
	var lines []line
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %d: %v", len(lines)+1, err)
		}
		lines = append(lines, l)
	}
	if len(lines) != len(out.IDs) {
		t.Fatalf("%d lines for %d ids", len(lines), len(out.IDs))
	}
	for i, l := range lines {
		if l.Step != i+1 || l.Token != i+1 || l.Drawn.ID != out.IDs[i] || len(l.IDs) != 1 || l.IDs[0] != out.IDs[i] {
			t.Fatalf("line %d: step %d token %d drew %d; reply %v", i, l.Step, l.Token, l.Drawn.ID, out.IDs)
		}
		want := []string{"vocab", "temperature", "top-k", "softmax", "draw"}
		if len(l.Survivors) != len(want) || l.Survivors[2].Left != 40 || l.Survivors[4].Left != 1 {
			t.Fatalf("line %d survivors %+v", i, l.Survivors)
		}
		for j, s := range l.Survivors {
			if s.Stage != want[j] {
				t.Fatalf("line %d stage %d is %s, want %s", i, j, s.Stage, want[j])
			}
		}
		sum, found := 0.0, false
		for _, c := range l.After {
			sum += c.PAfter
			found = found || c.ID == l.Drawn.ID
		}
		if sum > 1+1e-9 || len(l.Before) != 10 || len(l.After) != 10 || l.Drawn.PAfter <= 0 || math.IsNaN(l.Drawn.PBefore) {
			t.Fatalf("line %d: after sums to %v, %d before, %d after, drawn %+v", i, sum, len(l.Before), len(l.After), l.Drawn)
		}
		if !found && l.Drawn.PAfter > l.After[9].PAfter {
			t.Fatalf("line %d: the drawn id is likelier than the listed ones but not listed", i)
		}
		if l.Blocks["seq"] < 1 || l.Blocks["pool"] < l.Blocks["pool_used"] {
			t.Fatalf("line %d blocks %v", i, l.Blocks)
		}
		if l.Sampler["top_k"] != 40.0 || l.Sampler["greedy"] != false || l.Sampler["temperature"] != 0.8 {
			t.Fatalf("line %d sampler %v", i, l.Sampler)
		}
	}
}

// The step that draws the end-of-turn id is a line of the trace too; that
// id is not one of the reply's.
func TestHeadlessTraceEndOfTurn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	code, stdout, stderr := runCLI("--prompt", "Tell me a story about a cat.", "-n", "250", "--greedy", "--json", "--trace", path)
	var out struct {
		IDs    []int  `json:"ids"`
		Reason string `json:"reason"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil || out.Reason != "eot" {
		t.Fatalf("exit %d, reason %q: %s", code, out.Reason, stderr)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var last struct {
		IDs []int `json:"ids"`
	}
	if json.Unmarshal([]byte(lines[len(lines)-1]), &last) != nil || len(lines) != len(out.IDs)+1 || len(last.IDs) != 1 {
		t.Errorf("%d lines for %d ids; the last took %v", len(lines), len(out.IDs), last.IDs)
	}
}
