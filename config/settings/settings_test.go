package settings

import (
	"fmt"
	"slices"

	"chat/engine"
	"chat/engine/sampler"
	"chat/models/kvcache"
	"chat/models/weights"
	"math"
	"strings"
	"testing"
)

func TestNormalizeKey(t *testing.T) {
	for in, want := range map[string]string{
		"F3": "f3", "Shift+Ctrl+Up": "ctrl+shift+up", "escape": "esc", "ctrl++": "ctrl++", "?": "?", "A": "A",
		"alt+A": "alt+a", "PageDown": "pgdown", "control+j": "ctrl+j", "super+space": "super+space", "é": "é",
	} {
		if got, err := NormalizeKey(in); err != nil || got != want {
			t.Errorf("NormalizeKey(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "ctrl+", "f0", "f07", "banana", "win+a", "\t"} {
		if _, err := NormalizeKey(bad); err == nil {
			t.Errorf("NormalizeKey(%q) accepted", bad)
		}
	}
}

// Every setting is declared whole: a default of its kind that its own rule
// accepts back, a help text, and no name or key action twice.
func TestTableIsWhole(t *testing.T) {
	names := map[string]bool{}
	for _, s := range All() {
		if names[s.Name] || s.Help == "" || s.Default == nil || s.get == nil || s.set == nil {
			t.Errorf("%s: declared twice or incompletely", s.Name)
		}
		names[s.Name] = true
		for _, a := range s.Aliases {
			if names[a] {
				t.Errorf("alias %s of %s is taken", a, s.Name)
			}
			names[a] = true
		}
		for _, p := range s.PeerFlags {
			if Lookup(p) != s {
				t.Errorf("peer flag %s of %s: Lookup finds %v", p, s.Name, Lookup(p))
			}
		}
		for _, mode := range []string{"chat", "raw", ""} {
			v := Defaults(mode)
			text := s.Format(&v)
			var back Values
			if s.Kind != Text && s.Kind != List && !(s.Kind == Choice && text == "") {
				if err := s.SetText(&back, text); err != nil {
					t.Errorf("%s: default %q (%s) does not read back: %v", s.Name, text, mode, err)
				}
			}
		}
		if Lookup(s.Name) != s || Lookup(s.FlagName()) != s || Lookup(strings.ToUpper(s.Name)) != s {
			t.Errorf("%s: Lookup does not find it by name or flag", s.Name)
		}
		if s.Under != "" && (Lookup(s.Under) == nil || Lookup(s.Under).Name != s.Under) {
			t.Errorf("%s: Under names no setting: %q", s.Name, s.Under)
		}
		if (s.Table == "sampler") != slices.Contains(sampler.Order(), s.Stage) {
			t.Errorf("%s: stage %q; a sampler knob names its stage, others none", s.Name, s.Stage)
		}
		if s.Where&Request != 0 && s.Table != "sampler" {
			t.Errorf("%s: a request field that is no sampler knob", s.Name)
		}
	}
	acts := map[string]bool{}
	for _, a := range Actions() {
		if acts[a.Name] || len(a.Keys) == 0 || a.Help == "" {
			t.Errorf("action %s twice or without keys/help", a.Name)
		}
		acts[a.Name] = true
	}
}

// The defaults of the README's flag table: the course's chat.py (T 0.8,
// top-p 0.95, 256 tokens) in chat mode and generate_text.py (T 0.8,
// top-k 50, 100 tokens) in raw mode, and the mode-free ones.
func TestDefaultsFollowTheCourse(t *testing.T) {
	c, r := Defaults("chat"), Defaults("raw")
	if s := c.Sampler; s.Temperature != 0.8 || s.TopP != 0.95 || s.TopK != 0 || s.MinP != 0 || c.MaxTokens != 256 {
		t.Errorf("chat defaults: %+v, max_tokens %d", s, c.MaxTokens)
	}
	if s := r.Sampler; s.Temperature != 0.8 || s.TopP != 1 || s.TopK != 50 || s.MinP != 0 || r.MaxTokens != 100 {
		t.Errorf("raw defaults: %+v, max_tokens %d", s, r.MaxTokens)
	}
	if !c.RandomSeed || c.Sampler.PenaltyWindow != 64 || c.DraftK != 4 || !c.SpecAdapt || c.Spec != "off" ||
		c.LengthPenalty != 1 || c.Theme != "auto" || c.KVQuantK != "auto" || c.KVQuantV != "auto" {
		t.Errorf("defaults: %+v", c)
	}
}

// The hot keys step as the old UI keys did: temperature by 0.1 up to 2,
// top-p by 0.05 with "off" counted as 1, min-p and top-k along ladders
// (top-k's ends in off).
func TestHotKeySteps(t *testing.T) {
	v := Defaults("chat")
	step := func(action string, n int) {
		for range n {
			if StepKey(&v, action) == nil {
				t.Fatalf("no setting has action %s", action)
			}
		}
	}
	step("temperature_up", 20)
	if v.Sampler.Temperature != 2 {
		t.Errorf("temperature after 20 ups from 0.8: %v", v.Sampler.Temperature)
	}
	step("temperature_down", 3)
	if v.Sampler.Temperature != 1.7 {
		t.Errorf("temperature: %v", v.Sampler.Temperature)
	}
	v.Sampler.TopP = 1
	step("top_p_down", 1)
	if v.Sampler.TopP != 0.95 {
		t.Errorf("top-p down from off: %v", v.Sampler.TopP)
	}
	step("top_p_up", 1)
	if Lookup("top_p").Show(&v) != "off" {
		t.Errorf("top-p up to 1 is off: %v", v.Sampler.TopP)
	}
	v.Sampler.TopP = 0.1
	step("top_p_down", 3)
	if v.Sampler.TopP != 0.05 {
		t.Errorf("top-p down stops a step above 0 (off): %v", v.Sampler.TopP)
	}
	v.Sampler.TopK = 0
	step("top_k_down", 1)
	if v.Sampler.TopK != 500 {
		t.Errorf("top-k down from off: %d", v.Sampler.TopK)
	}
	v.Sampler.TopK = 7
	step("top_k_up", 1)
	if v.Sampler.TopK != 10 {
		t.Errorf("top-k up from 7: %d", v.Sampler.TopK)
	}
	step("min_p_up", 2)
	if v.Sampler.MinP != 0.02 {
		t.Errorf("min-p: %v", v.Sampler.MinP)
	}
	step("greedy", 1)
	if !v.Sampler.Greedy {
		t.Error("greedy did not toggle")
	}
	v.Spec = "off"
	step("cycle_spec", 1)
	if v.Spec != "ngram" {
		t.Errorf("cycle_spec from off: %s", v.Spec)
	}
}

func TestParse(t *testing.T) {
	var v Values
	for _, c := range []struct{ name, text, want string }{
		{"seed", "random", "random"}, {"seed", "42", "42"}, {"seed", "-1", "random"},
		{"greedy", "yes", "on"}, {"top_k", "0", "off"}, {"stop", `"\n\n"`, `"\n\n"`},
		{"repeat_penalty", "1", "off"}, {"frequency_penalty", "-0.5", "-0.5"},
		{"max_tokens", "-1", "no limit"}, // llama-cli's and ollama's "no limit"
		{"top_k", "-1", "off"},           // vLLM's and llama.cpp's off
	} {
		s := Lookup(c.name)
		if err := s.SetText(&v, c.text); err != nil {
			t.Errorf("%s %s: %v", c.name, c.text, err)
			continue
		}
		if got := s.Show(&v); got != c.want {
			t.Errorf("%s %s shows %q, want %q", c.name, c.text, got, c.want)
		}
	}
	for _, c := range []struct{ name, text string }{
		{"temperature", "NaN"}, {"temperature", "inf"}, {"top_k", "1.5"}, {"top_k", "-2"}, {"seed", "x"}, {"mode", "poem"}, {"greedy", "maybe"},
	} {
		if err := Lookup(c.name).SetText(&v, c.text); err == nil {
			t.Errorf("%s %q accepted", c.name, c.text)
		}
	}
	// Other tools' names get the nearest choice in the error, and every
	// nearest is a choice.
	if err := Lookup("kv_quant_k").SetText(&v, "q8_0"); err == nil || !strings.HasSuffix(err.Error(), `got "q8_0" (int8 is the nearest)`) {
		t.Errorf("kv_quant_k q8_0: %v", err)
	}
	for _, s := range All() {
		for k, n := range s.Near {
			if !slices.Contains(s.Choices, n) || slices.Contains(s.Choices, k) {
				t.Errorf("%s: Near %s → %s", s.Name, k, n)
			}
		}
	}
	if Suggest("temprature", Set) != "temperature" || Suggest("zzzzzz", Set) != "" {
		t.Error("Suggest")
	}
	_ = math.Inf
}

// Any text for any setting is a value its own rule accepts (and reads back
// the same) or an Error naming the setting; never a panic.
func FuzzSetText(f *testing.F) {
	for _, seed := range []string{"0.5", "-1", "random", "on", `"\n\n"`, "int8", "1e309", "NaN", "", "none"} {
		f.Add(uint8(0), seed)
	}
	f.Fuzz(func(t *testing.T, which uint8, text string) {
		s := All()[int(which)%len(All())]
		v := Defaults("chat")
		err := s.SetText(&v, text)
		if err != nil {
			if e, ok := err.(*Error); !ok || e.Setting != s.Name {
				t.Fatalf("%s %q: error %v does not name the setting", s.Name, text, err)
			}
			return
		}
		var back Values
		if s.Kind != List && s.Kind != Text && s.SetFormatted(&back, s.Format(&v)) != nil {
			t.Fatalf("%s %q: %q does not read back", s.Name, text, s.Format(&v))
		}
	})
}

// TestQuantFormatsAreTheWeightFormats: --quant takes exactly the formats
// models/weights can make.
func TestQuantFormatsAreTheWeightFormats(t *testing.T) {
	got, want := slices.Sorted(slices.Values(QuantFormats)), weights.Formats()
	if !slices.Equal(got, want) {
		t.Fatalf("QuantFormats %v, weights.Formats %v", got, want)
	}
}

// TestKVFormatsAreTheCacheFormats: --kv-quant-k/-v take exactly the formats
// models/kvcache stores.
func TestKVFormatsAreTheCacheFormats(t *testing.T) {
	if !slices.Equal(KVFormats, kvcache.Formats()) {
		t.Fatalf("KVFormats %v, kvcache.Formats %v", KVFormats, kvcache.Formats())
	}
}

// Each knob shows "off" exactly where the sampler skips its stage
// (OffByStage) or its row's OffWhen says: the p-knobs on inside (0, 1)
// only, top-nσ above 0, DRY's base from 1, XTC's threshold up to 0.5; a
// temperature of 1, which the chain skips, is still shown as 1.
func TestOffWhen(t *testing.T) {
	for _, c := range []struct {
		name string
		on   []string
		off  []string
	}{
		{"top_p", []string{"0.01", "0.99"}, []string{"0", "1"}},
		{"min_p", []string{"0.05"}, []string{"0", "1"}},
		{"typical_p", []string{"0.5"}, []string{"0", "1"}},
		{"top_n_sigma", []string{"0.01", "3"}, []string{"0", "-1"}},
		{"dry_base", []string{"1", "1.75"}, []string{"0.99", "0"}},
		{"xtc_threshold", []string{"0", "0.5"}, []string{"0.51", "1"}},
		{"top_k", []string{"1"}, []string{"0"}},
		{"repeat_penalty", []string{"0.9", "1.1"}, []string{"0", "1"}},
		{"mirostat", []string{"1", "2"}, []string{"0"}},
		{"frequency_penalty", []string{"-0.5", "0.5"}, []string{"0"}},
		{"presence_penalty", []string{"-0.5", "0.5"}, []string{"0"}},
		{"dry_multiplier", []string{"0.1"}, []string{"0"}},
		{"dry_penalty_last_n", []string{"-1", "1"}, []string{"0"}},
		{"dry_allowed_length", []string{"0", "5"}, nil},
		{"xtc_probability", []string{"0.01", "1"}, []string{"0"}},
		{"threads", []string{"1"}, []string{"0"}},
		{"temperature", []string{"0", "1"}, nil},
	} {
		s := Lookup(c.name)
		v := Defaults("chat")
		for _, text := range append(c.on, c.off...) {
			if err := s.SetText(&v, text); err != nil {
				t.Fatal(err)
			}
			if got, want := s.Show(&v) == "off", slices.Contains(c.off, text); got != want {
				t.Errorf("%s %s shows %q", c.name, text, s.Show(&v))
			}
		}
	}
}

// TestStopBounds: --stop, /set stop and a config file hold a reply to the
// engine's bounds on stop strings, as the servers do (90,000 of them from a
// config file made decoding 15× slower).
func TestStopBounds(t *testing.T) {
	st := Lookup("stop")
	var v Values
	many := make([]string, engine.MaxStops+1)
	for i := range many {
		many[i] = fmt.Sprint(i)
	}
	if err := st.SetList(&v, many); err == nil || !strings.Contains(err.Error(), "at most 16 texts") {
		t.Errorf("%d stop strings: %v", len(many), err)
	}
	if err := st.SetList(&v, []string{strings.Repeat("x", engine.MaxStopBytes+1)}); err == nil || !strings.Contains(err.Error(), "at most 256 bytes") {
		t.Errorf("a long stop string: %v", err)
	}
	if err := st.SetList(&v, many[:engine.MaxStops]); err != nil || len(v.Stop) != engine.MaxStops {
		t.Errorf("%d stop strings: %v, kept %d", engine.MaxStops, err, len(v.Stop))
	}
}

// Lookup takes every name, flag, alias and peer flag as the table's scan
// did (case, '-' for '_' and leading dashes aside, the first setting in
// table order for a shared name), without scanning: a server looks up
// every field of a request, and a body of 300,000 unknown fields held it
// for seconds (a scan of the table per field, each flag's name built
// again, a dozen allocations).
func TestLookupIndex(t *testing.T) {
	scan := func(name string) *Setting {
		n := strings.TrimLeft(strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "-", "_"), "_")
		for _, s := range All() {
			if s.Name == n || strings.ReplaceAll(s.FlagName(), "-", "_") == n || slices.Contains(s.Aliases, n) {
				return s
			}
			for _, p := range s.PeerFlags {
				if strings.ReplaceAll(strings.TrimLeft(p, "-"), "-", "_") == n {
					return s
				}
			}
		}
		return nil
	}
	names := []string{"", "-", "unknown", "k12345", " TOP-P ", "--Temperature"}
	for _, s := range All() {
		names = append(names, s.Name, s.FlagName(), s.Dashed(), strings.ToUpper(s.Name), " "+s.Name+" ")
		names = append(names, s.Aliases...)
		names = append(names, s.PeerFlags...)
	}
	for _, n := range names {
		if got, want := Lookup(n), scan(n); got != want {
			t.Errorf("Lookup(%q) = %v, want %v", n, got, want)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() { Lookup("k12345") }); allocs != 0 {
		t.Errorf("looking up an unknown field allocated %v times", allocs)
	}
}
