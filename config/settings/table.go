package settings

import (
	"math"
	"slices"

	"chat/engine"
	"chat/engine/sampler"
)

// The table: every knob, once. The sampler defaults follow the course:
// chat.py (T 0.8, top-p 0.95) in chat mode, generate_text.py (T 0.8,
// top-k 50) in raw mode.

var inf = math.Inf(1)

func fixed(x any) func(string) any { return func(string) any { return x } }

// offAt is OffWhen for a knob that is off at these values.
func offAt(vals ...float64) func(float64) bool {
	return func(f float64) bool { return slices.Contains(vals, f) }
}

func byMode(chat, raw any) func(string) any {
	return func(mode string) any {
		if mode == "raw" {
			return raw
		}
		return chat
	}
}

// QuantFormats are the weight formats --quant and /set quant take: those of
// models/weights (a test keeps the two lists equal).
var QuantFormats = []string{"f32", "int8", "int8-a8", "int4-g32", "int4-g64", "int4-g128",
	"int4-g32-a8", "int4-g64-a8", "int4-g128-a8", "int4-g32-gptq", "int4-g64-gptq", "int4-g128-gptq",
	"int4-g32-awq", "int4-g64-awq", "int4-g128-awq", "nf4-g32", "nf4-g64", "nf4-g128", "fp8", "fp8-e5m2",
	"q8_0", "q4_0", "q5_0", "iq4_nl", "q4_1", "q5_1", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "iq4_xs", "f16", "bf16"}

// KVFormats are how the KV pool may store keys and values (--kv-quant-k,
// --kv-quant-v, chat plan --kv-quant): those of models/kvcache (a test keeps
// the two lists equal).
var KVFormats = []string{"f32", "int8", "fp8", "int4", "f16"}

// KVChoices are what the KV settings take: "auto" (models/kvcache.Auto, the
// default: f16 for a GGUF model as llama.cpp and ollama store it, f32 for a
// course checkpoint as PyTorch does) or one of KVFormats.
var KVChoices = append([]string{"auto"}, KVFormats...)

// kvNear maps llama.cpp's cache types (-ctk, -ctv; ollama's
// OLLAMA_KV_CACHE_TYPE) to the nearest here: its q8_0 and q4_0 caches keep
// a scale per 32 values, int8 one per position and head.
var kvNear = map[string]string{"q8_0": "int8", "q5_0": "int8", "q5_1": "int8", "q4_0": "int4", "q4_1": "int4", "iq4_nl": "int4", "bf16": "f16"}

// quantNear maps other tools' weight format names to ours.
var quantNear = map[string]string{
	"q4_k_m": "q4_k", "q4_k_s": "q4_k", "q5_k_m": "q5_k", "q5_k_s": "q5_k", "q3_k_m": "q3_k", "q3_k_s": "q3_k", "q3_k_l": "q3_k",
	"int4": "int4-g32", "gptq": "int4-g32-gptq", "awq": "int4-g32-awq", "nf4": "nf4-g64", "fp8-e4m3": "fp8", "e4m3": "fp8", "e5m2": "fp8-e5m2",
	"fp16": "f16", "float16": "f16", "half": "f16", "fp32": "f32", "float32": "f32", "float": "f32", "bfloat16": "bf16",
}

// SpecMethods are the speculative decoding methods, in the order the
// cycle_spec key steps through them.
var SpecMethods = []string{"off", "ngram", "lookup", "draft"}

// Themes are the colour schemes.
var Themes = []string{"auto", "dark", "light"}

// MaxReplyTokens bounds a reply budget typed by hand; raw mode can run past
// the context (the window rule), so the context is not the bound.
const MaxReplyTokens = 1 << 20

var table = []*Setting{
	// Sampler: live, saved with a session, in the [sampler] table.
	{Name: "temperature", PeerFlags: []string{"--temp"}, Table: "sampler", Stage: "temperature", Where: Flag | File | Set, Kind: Float,
		Min: 0, Max: inf, Step: 0.1, HotMax: 2, Label: "temperature", Always: true, Persist: true, Live: true,
		Help:    "logits ÷ max(T, 1e-6); 0 is not greedy (as in the course; use greedy)",
		Default: fixed(0.8),
		Keys: []Key{{Action: "temperature_down", Keys: []string{"f2", "alt+2"}, Letter: 't', Dir: -1, Help: "temperature −0.1"},
			{Action: "temperature_up", Keys: []string{"f3", "alt+3"}, Letter: 't', Upper: true, Dir: +1, Help: "temperature +0.1"}},
		get: func(v *Values) any { return v.Sampler.Temperature }, set: func(v *Values, x any) { v.Sampler.Temperature = x.(float64) }},
	{Name: "top_p", Aliases: []string{"topp"}, PeerFlags: []string{"--top_p"}, Table: "sampler", Stage: "top-p", Where: Flag | File | Set, Kind: Float,
		Min: 0, Max: 1, OffByStage: true, Off: "0 or 1 = off", Step: 0.05, Label: "top-p", Always: true, Persist: true, Live: true,
		Help:    "nucleus: a token is kept while the mass before it is ≤ p",
		Default: byMode(0.95, 1.0), ModeDefault: true,
		Keys: []Key{{Action: "top_p_down", Keys: []string{"f4", "alt+4"}, Letter: 'p', Dir: -1, Help: "top-p −0.05"},
			{Action: "top_p_up", Keys: []string{"f5", "alt+5"}, Letter: 'p', Upper: true, Dir: +1, Help: "top-p +0.05"}},
		get: func(v *Values) any { return v.Sampler.TopP }, set: func(v *Values, x any) { v.Sampler.TopP = x.(float64) }},
	{Name: "min_p", Aliases: []string{"minp"}, Table: "sampler", Stage: "min-p", Where: Flag | File | Set, Kind: Float,
		Min: 0, Max: 1, OffByStage: true, Off: "0 or 1 = off", Ladder: []float64{0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5}, Label: "min-p", Always: true, Persist: true, Live: true,
		Help:    "drop tokens with prob < m × the top prob",
		Default: fixed(0.0),
		Keys: []Key{{Action: "min_p_down", Keys: []string{"f6", "alt+6"}, Letter: 'm', Dir: -1, Help: "min-p down"},
			{Action: "min_p_up", Keys: []string{"f7", "alt+7"}, Letter: 'm', Upper: true, Dir: +1, Help: "min-p up"}},
		get: func(v *Values) any { return v.Sampler.MinP }, set: func(v *Values, x any) { v.Sampler.MinP = x.(float64) }},
	{Name: "top_k", Aliases: []string{"topk"}, PeerFlags: []string{"--top_k"}, Table: "sampler", Stage: "top-k", Where: Flag | File | Set, Kind: Int,
		Min: 0, Max: math.MaxInt32, MinusOneIsMin: true, OffByStage: true, Off: "0 or -1 = off", Ladder: []float64{1, 2, 3, 5, 10, 20, 40, 50, 100, 200, 500, 0},
		Label: "top-k", Always: true, Persist: true, Live: true,
		Help:    "keep logits ≥ the k-th largest (ties kept)",
		Default: byMode(0, 50), ModeDefault: true,
		Keys: []Key{{Action: "top_k_down", Keys: []string{"f8", "alt+8"}, Letter: 'k', Dir: -1, Help: "top-k down"},
			{Action: "top_k_up", Keys: []string{"f9", "alt+9"}, Letter: 'k', Upper: true, Dir: +1, Help: "top-k up"}},
		get: func(v *Values) any { return v.Sampler.TopK }, set: func(v *Values, x any) { v.Sampler.TopK = x.(int) }},
	{Name: "greedy", Table: "sampler", Stage: "greedy", Where: Flag | File | Set, Kind: Bool, Label: "greedy", Always: true, Persist: true, Live: true,
		Help:    "argmax; temperature, top-k/p, min-p and the seed are ignored",
		Default: fixed(false),
		Keys:    []Key{{Action: "greedy", Keys: []string{"f10", "alt+0"}, Letter: 'g', Help: "greedy on/off"}},
		get:     func(v *Values) any { return v.Sampler.Greedy }, set: func(v *Values, x any) { v.Sampler.Greedy = x.(bool) }},
	{Name: "repeat_penalty", Table: "sampler", Stage: "penalties", Where: Flag | File | Set, Kind: Float,
		Min: 0, Max: inf, OffByStage: true, Off: "0 or 1 = off", Label: "repeat pen", Persist: true, Live: true,
		Help:    "divide positive / multiply negative logits of ids seen in the penalty window",
		Default: fixed(0.0),
		get:     func(v *Values) any { return v.Sampler.RepeatPenalty }, set: func(v *Values, x any) { v.Sampler.RepeatPenalty = x.(float64) }},
	{Name: "frequency_penalty", Table: "sampler", Stage: "penalties", Where: Flag | File | Set, Kind: Float,
		Min: math.Inf(-1), Max: inf, OffByStage: true, Off: "0 = off", Label: "freq pen", Persist: true, Live: true,
		Help:    "subtract f × count(id) over the penalty window",
		Default: fixed(0.0),
		get:     func(v *Values) any { return v.Sampler.FrequencyPenalty }, set: func(v *Values, x any) { v.Sampler.FrequencyPenalty = x.(float64) }},
	{Name: "presence_penalty", Table: "sampler", Stage: "penalties", Where: Flag | File | Set, Kind: Float,
		Min: math.Inf(-1), Max: inf, OffByStage: true, Off: "0 = off", Label: "pres pen", Persist: true, Live: true,
		Help:    "subtract p from ids seen in the penalty window",
		Default: fixed(0.0),
		get:     func(v *Values) any { return v.Sampler.PresencePenalty }, set: func(v *Values, x any) { v.Sampler.PresencePenalty = x.(float64) }},
	{Name: "penalty_window", Aliases: []string{"repeat_last_n"}, PeerFlags: []string{"--repeat-last-n"}, Table: "sampler", Stage: "penalties", Where: Flag | File | Set, Kind: Int,
		Min: 1, Max: 1 << 20, Label: "pen window", Persist: true, Live: true,
		Help:    "the last N ids the penalties look at",
		Default: fixed(64),
		get:     func(v *Values) any { return penaltyWindow(v.Sampler.PenaltyWindow) }, set: func(v *Values, x any) { v.Sampler.PenaltyWindow = x.(int) }},
	{Name: "seed", PeerFlags: []string{"-s"}, Table: "sampler", Stage: "draw", Where: Flag | File | Set, Kind: Seed, Label: "seed", Always: true, Persist: true, Live: true,
		Help:    "random: a new seed every reply (regenerate gives a new reply); a number pins it, so the same seed, model and prompts give the same text",
		Default: fixed(seedValue{random: true}),
		get:     func(v *Values) any { return seedValue{random: v.RandomSeed, seed: v.Sampler.Seed} },
		set: func(v *Values, x any) {
			s := x.(seedValue)
			v.RandomSeed = s.random
			if !s.random {
				v.Sampler.Seed = s.seed
			}
		}},

	// The conversation: from the next reply on, saved with a session.
	{Name: "max_tokens", Flag: "n", Aliases: []string{"n", "max_new_tokens", "num_predict"}, PeerFlags: []string{"--n-predict", "--predict", "--max_new_tokens"}, Where: Flag | File | Set, Kind: Int,
		Min: 1, Max: MaxReplyTokens, MinusOneIsMax: true, Label: "max tokens", Always: true, Persist: true,
		Help:    "reply budget in tokens; -1 = no budget (1048576; chat mode caps it at the context left)",
		Default: byMode(256, 100), ModeDefault: true,
		get: func(v *Values) any { return v.MaxTokens }, set: func(v *Values, x any) { v.MaxTokens = x.(int) }},
	{Name: "mode", Where: Flag | File | Set, Kind: Choice, Choices: []string{"chat", "raw"}, Persist: true,
		Help:    "chat: the chat template, stop at end of turn; raw: continue the text (default: chat for chat-tuned models)",
		Default: fixed(""),
		get:     func(v *Values) any { return v.Mode }, set: func(v *Values, x any) { v.Mode = x.(string) }},
	{Name: "system", PeerFlags: []string{"-sys", "--system-prompt"}, Where: Flag | File | Set, Kind: Text, Persist: true,
		Help:    "system prompt (chat mode); /system changes it",
		Default: fixed(""),
		get:     func(v *Values) any { return v.System }, set: func(v *Values, x any) { v.System = x.(string) }},
	{Name: "stop", PeerFlags: []string{"-r", "--reverse-prompt"}, Where: Flag | File | Set, Kind: List, Persist: true,
		MaxItems: engine.MaxStops, MaxItemBytes: engine.MaxStopBytes,
		Help:    "stop the reply where this text appears (repeat the flag for several; /set stop none clears)",
		Default: fixed([]string(nil)),
		get:     func(v *Values) any { return slices.Clone(v.Stop) }, set: func(v *Values, x any) { v.Stop = slices.Clone(x.([]string)) }},
	{Name: "ignore_eos", Where: Flag | File | Set, Kind: Bool, Persist: true,
		Help:    "keep generating past the model's end-of-text tokens (in chat mode its end of turn too, as vLLM's ignore_eos)",
		Default: fixed(false),
		get:     func(v *Values) any { return v.IgnoreEOS }, set: func(v *Values, x any) { v.IgnoreEOS = x.(bool) }},

	// The model and decoding: switched between replies, saved with a session.
	{Name: "quant", Aliases: []string{"weights"}, Local: true, Where: Flag | File | Set, Kind: Choice, Choices: QuantFormats, Near: quantNear, Persist: true,
		Help:    "weight format, made from float weights (a course checkpoint, a GGUF f32/f16/bf16 file): f32, int8 (the course's quantize_int8), int8-a8 (int8 activations too), int4-g32/g64/g128 (-a8: int8 activations; -gptq, -awq: calibrated on --calib), nf4-g32/g64/g128, fp8 (E4M3), fp8-e5m2, q8_0, q4_0, q5_0, iq4_nl, q4_1, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_xs, f16, bf16",
		Default: fixed(""),
		Keys:    []Key{{Action: "toggle_int8", Keys: []string{"f11", "alt+i"}, Help: "weights float32 ↔ int8 (the chat stays; the next turn re-prefills)"}},
		get:     func(v *Values) any { return v.Quant }, set: func(v *Values, x any) { v.Quant = x.(string) }},
	{Name: "calib", Local: true, Where: Flag | File, Kind: Text,
		Help:    "calibration text file of the GPTQ and AWQ formats (--quant int4-g32-gptq ...); default ../shared/models/text/TinyStories-valid-head.txt when present",
		Default: fixed(""),
		get:     func(v *Values) any { return v.Calib }, set: func(v *Values, x any) { v.Calib = x.(string) }},
	{Name: "spec", Aliases: []string{"speculation", "speculative"}, Local: true, Where: Flag | File | Set, Kind: Choice, Choices: SpecMethods, Persist: true,
		Help:    "speculative decoding: off, draft (a draft model), ngram (continue a repeat of the reply), lookup (copy from the prompt)",
		Default: fixed("off"),
		Keys:    []Key{{Action: "cycle_spec", Keys: []string{"alt+s"}, Help: "speculative decoding: off → n-gram → prompt lookup → draft model → off"}},
		get:     func(v *Values) any { return v.Spec }, set: func(v *Values, x any) { v.Spec = x.(string) }},
	{Name: "draft_k", Aliases: []string{"k"}, Local: true, Where: Flag | File | Set, Kind: Int, Min: 1, Max: 16, Persist: true,
		Help:    "guesses per speculative round",
		Default: fixed(4),
		get:     func(v *Values) any { return v.DraftK }, set: func(v *Values, x any) { v.DraftK = x.(int) }},
	{Name: "spec_adapt", Local: true, Where: Flag | File | Set, Kind: Bool, Persist: true,
		Help:    "speculation picks each round's guesses (up to draft_k) from the measured acceptance and cost, and steps aside when it loses time",
		Default: fixed(true),
		get:     func(v *Values) any { return v.SpecAdapt }, set: func(v *Values, x any) { v.SpecAdapt = x.(bool) }},

	// The engine: given at start.
	{Name: "ctx_size", Aliases: []string{"context", "num_ctx"}, PeerFlags: []string{"-c"}, Local: true, Where: Flag | File, Kind: Int, Min: 0, Max: 1 << 24, OffWhen: offAt(0),
		Help:    "the context window in tokens (0 = the model's, at most 4096; up to the context it was trained for); turns that no longer fit are not sent",
		Default: fixed(0),
		get:     func(v *Values) any { return v.Context }, set: func(v *Values, x any) { v.Context = x.(int) }},
	{Name: "threads", PeerFlags: []string{"-t"}, Local: true, Where: Flag | File, Kind: Int, Min: 0, Max: 4096, OffWhen: offAt(0),
		Help:    "compute threads (0 = all cores)",
		Default: fixed(0),
		get:     func(v *Values) any { return v.Threads }, set: func(v *Values, x any) { v.Threads = x.(int) }},
	{Name: "kv_mem", Local: true, Where: Flag | File, Kind: Int, Min: 0, Max: 1 << 20, OffWhen: offAt(0),
		Help:    "KV block pool budget in MB (0 = 256 MB or 16 context windows, whichever is smaller)",
		Default: fixed(0),
		get:     func(v *Values) any { return v.KVMem }, set: func(v *Values, x any) { v.KVMem = x.(int) }},
	{Name: "kv_quant_k", Local: true, Where: Flag | File | Set, Kind: Choice, Choices: KVChoices, Near: kvNear,
		Help:    "KV cache key storage: auto (f16 for a GGUF model, as llama.cpp and ollama; f32 for a course checkpoint); f32; f16, half the bytes; int8 or fp8 (E4M3), a scale per position and head; int4, a scale per 32 values of a head (more context per MB)",
		Default: fixed("auto"),
		get:     func(v *Values) any { return v.KVQuantK }, set: func(v *Values, x any) { v.KVQuantK = x.(string) }},
	{Name: "kv_quant_v", Local: true, Where: Flag | File | Set, Kind: Choice, Choices: KVChoices, Near: kvNear,
		Help:    "KV cache value storage: auto, f32, f16, int8, fp8 or int4",
		Default: fixed("auto"),
		get:     func(v *Values) any { return v.KVQuantV }, set: func(v *Values, x any) { v.KVQuantV = x.(string) }},
	{Name: "no_prefix_cache", Local: true, Where: Flag | File, Kind: Bool,
		Help:    "turn the radix prefix cache off: a reply reuses only what it shares with the last reply (for comparisons)",
		Default: fixed(false),
		get:     func(v *Values) any { return v.NoPrefixCache }, set: func(v *Values, x any) { v.NoPrefixCache = x.(bool) }},

	{Name: "lora", Arg: "FILE[:SCALE]", Local: true, Where: Flag | File, Kind: List,
		Help:    "apply a LoRA adapter at load without merging (PEFT folder or llama.cpp GGUF adapter); repeat for several; /lora toggles them",
		Default: fixed([]string(nil)),
		get:     func(v *Values) any { return slices.Clone(v.Lora) }, set: func(v *Values, x any) { v.Lora = slices.Clone(x.([]string)) }},
	{Name: "beam", Where: Flag, Kind: Int, Min: 0, Max: 64, OffWhen: offAt(0),
		Help:    "headless: beam search with N beams (1 is greedy; the sampler is not used); --json lists every hypothesis",
		Default: fixed(0),
		get:     func(v *Values) any { return v.Beam }, set: func(v *Values, x any) { v.Beam = x.(int) }},
	{Name: "length_penalty", Where: Flag, Kind: Float, Min: math.Inf(-1), Max: inf,
		Help:    "beam search: a finished hypothesis scores logp / length^A (0: joint probability; above 0 favours longer)",
		Default: fixed(1.0),
		get:     func(v *Values) any { return v.LengthPenalty }, set: func(v *Values, x any) { v.LengthPenalty = x.(float64) }},

	// Headless extras.
	{Name: "top_logprobs", Where: Flag, Kind: Int, Min: 0, Max: 20, OffWhen: offAt(0),
		Help:    "headless --json: each generated token's log-probability and its N likeliest alternatives (the model's, before the sampler chain); such a reply does not speculate",
		Default: fixed(0),
		get:     func(v *Values) any { return v.TopLogprobs }, set: func(v *Values, x any) { v.TopLogprobs = x.(int) }},
	{Name: "trace", Where: Flag, Kind: Text, Arg: "FILE",
		Help:    "headless: write one JSON line per step to this file: candidates before and after the sampler chain, the ids each stage leaves, the drawn id, drafts accepted and rejected, KV blocks",
		Default: fixed(""),
		get:     func(v *Values) any { return v.Trace }, set: func(v *Values, x any) { v.Trace = x.(string) }},

	// The views of the TUI: a key, /view NAME and /set toggle each; they
	// act at once, also in the middle of a reply.
	{Name: "next_token", View: "next", Where: Flag | File | Set, Kind: Bool, Live: true,
		Help:    "the next-token view: the 10 likeliest tokens as bars of probability before and after the sampler chain, the drawn one marked, the entropy, and how many ids each stage leaves",
		Default: fixed(false),
		Keys:    []Key{{Action: "view_next", Keys: []string{"alt+n"}, Help: "next-token view on/off (also /view next)"}},
		get:     func(v *Values) any { return v.ViewNext }, set: func(v *Values, x any) { v.ViewNext = x.(bool) }},
	{Name: "step", View: "step", Where: Flag | Set, Kind: Bool, Live: true,
		Help:    "step mode: generation waits before each token (or speculative round); the key makes one, Esc leaves step mode",
		Default: fixed(false),
		Keys:    []Key{{Action: "step", Keys: []string{"alt+."}, Help: "step mode: pause the reply, then one token (or speculative round) per press; Esc leaves (also /view step)"}},
		get:     func(v *Values) any { return v.Step }, set: func(v *Values, x any) { v.Step = x.(bool) }},
	{Name: "token_view", View: "tokens", Where: Flag | File | Set, Kind: Bool, Live: true,
		Help:    "replies as their tokens, coloured by the probability each was drawn with; accepted draft guesses in another colour; prompt tokens served from the prefix cache underlined",
		Default: fixed(false),
		Keys:    []Key{{Action: "view_tokens", Keys: []string{"alt+h"}, Help: "token view (heat map) on/off (also /view tokens)"}},
		get:     func(v *Values) any { return v.ViewTokens }, set: func(v *Values, x any) { v.ViewTokens = x.(bool) }},
	{Name: "kv_map", View: "kv", Where: Flag | File | Set, Kind: Bool, Live: true,
		Help:    "the KV block map: the paged pool as a grid of blocks, free, this conversation's, shared (ref count > 1), cached for reuse, just evicted",
		Default: fixed(false),
		Keys:    []Key{{Action: "view_kv", Keys: []string{"alt+v"}, Help: "KV block map on/off (also /view kv)"}},
		get:     func(v *Values) any { return v.ViewKV }, set: func(v *Values, x any) { v.ViewKV = x.(bool) }},
	{Name: "sparklines", View: "spark", Where: Flag | File | Set, Kind: Bool, Live: true,
		Help:    "sparklines over the reply and the session: decode tok/s, speculative acceptance, KV fill, time to first token per turn",
		Default: fixed(false),
		Keys:    []Key{{Action: "view_spark", Keys: []string{"alt+w"}, Help: "sparklines on/off (also /view spark)"}},
		get:     func(v *Values) any { return v.ViewSpark }, set: func(v *Values, x any) { v.ViewSpark = x.(bool) }},

	// The terminal.
	{Name: "theme", Where: Flag | File, Kind: Choice, Choices: Themes,
		Help:    "colours: auto (from the terminal's background), dark or light; /theme changes it",
		Default: fixed("auto"),
		get:     func(v *Values) any { return v.Theme }, set: func(v *Values, x any) { v.Theme = x.(string) }},
	// llama.cpp's and ollama's further samplers (engine/sampler): off by
	// default, with llama.cpp's defaults for their other knobs; last, so
	// that the palette and /show keep the course's knobs first.
	{Name: "dry_multiplier", Table: "sampler", Stage: "dry", Where: Flag | File | Set | Request, Kind: Float,
		Min: 0, Max: inf, OffByStage: true, Off: "0 = off", Label: "dry mult", Persist: true, Live: true,
		Help:    "DRY: a token that would extend a repeat of ≥ dry_allowed_length tokens loses multiplier × base^(length − allowed) from its logit",
		Default: fixed(0.0),
		get:     func(v *Values) any { return v.Sampler.DRYMultiplier }, set: func(v *Values, x any) { v.Sampler.DRYMultiplier = x.(float64) }},
	{Name: "dry_base", Table: "sampler", Stage: "dry", Where: Flag | File | Set | Request, Kind: Float, Under: "dry_multiplier",
		Min: 0, Max: inf, OffByStage: true, Off: "below 1 = off", Label: "dry base", Persist: true, Live: true,
		Help:    "DRY: how fast the penalty grows with the repeat's length",
		Default: fixed(1.75),
		get:     func(v *Values) any { return v.Sampler.DRYBase }, set: func(v *Values, x any) { v.Sampler.DRYBase = x.(float64) }},
	{Name: "dry_allowed_length", Under: "dry_multiplier", Table: "sampler", Stage: "dry", Where: Flag | File | Set | Request, Kind: Int,
		Min: 0, Max: 1 << 20, Label: "dry allowed", Persist: true, Live: true,
		Help:    "DRY: repeats up to this many tokens go unpenalised",
		Default: fixed(2),
		get:     func(v *Values) any { return v.Sampler.DRYAllowedLength }, set: func(v *Values, x any) { v.Sampler.DRYAllowedLength = x.(int) }},
	{Name: "dry_penalty_last_n", Under: "dry_multiplier", Table: "sampler", Stage: "dry", Where: Flag | File | Set | Request, Kind: Int,
		Min: -1, Max: 1 << 24, OffByStage: true, Off: "0 = off", Label: "dry window", Persist: true, Live: true,
		Help:    "DRY: the last N tokens it looks at (-1 = all of the prompt and reply)",
		Default: fixed(-1),
		get:     func(v *Values) any { return v.Sampler.DRYPenaltyLastN }, set: func(v *Values, x any) { v.Sampler.DRYPenaltyLastN = x.(int) }},
	{Name: "dry_sequence_breakers", Flag: "dry-sequence-breaker", Under: "dry_multiplier", Table: "sampler", Stage: "dry", Where: Flag | File | Set | Request, Kind: List, Escapes: true,
		MaxItems: sampler.MaxBreakers, Label: "dry breakers", Persist: true, Live: true,
		Help:    "DRY: a repeat never reaches back over this text (\\n and other escapes read as in llama.cpp; repeat the flag for several; none clears)",
		Default: fixed(sampler.DefaultBreakers),
		get:     func(v *Values) any { return sampler.SplitBreakers(v.Sampler.DRYBreakers) },
		set:     func(v *Values, x any) { v.Sampler.DRYBreakers = sampler.JoinBreakers(x.([]string)) }},
	{Name: "top_n_sigma", Flag: "top-nsigma", PeerFlags: []string{"--top-n-sigma"}, Table: "sampler", Stage: "top-n-sigma", Where: Flag | File | Set | Request, Kind: Float,
		Min: math.Inf(-1), Max: inf, OffByStage: true, Off: "≤ 0 = off", Label: "top-nσ", Persist: true, Live: true,
		Help:    "keep logits ≥ the largest − n × their standard deviation",
		Default: fixed(-1.0),
		get:     func(v *Values) any { return v.Sampler.TopNSigma }, set: func(v *Values, x any) { v.Sampler.TopNSigma = x.(float64) }},
	{Name: "typical_p", Flag: "typical", Aliases: []string{"typ_p"}, PeerFlags: []string{"--typical-p"}, Table: "sampler", Stage: "typical", Where: Flag | File | Set | Request, Kind: Float,
		Min: 0, Max: 1, OffByStage: true, Off: "0 or 1 = off", Label: "typical-p", Persist: true, Live: true,
		Help:    "locally typical sampling: keep the tokens whose surprise is nearest the entropy, up to mass p",
		Default: fixed(1.0),
		get:     func(v *Values) any { return v.Sampler.TypicalP }, set: func(v *Values, x any) { v.Sampler.TypicalP = x.(float64) }},
	{Name: "xtc_probability", Table: "sampler", Stage: "xtc", Where: Flag | File | Set | Request, Kind: Float,
		Min: 0, Max: 1, OffByStage: true, Off: "0 = off", Label: "xtc prob", Persist: true, Live: true,
		Help:    "XTC: the chance per token (drawn from the seed) that the likeliest tokens above xtc_threshold are removed, all but the least likely of them",
		Default: fixed(0.0),
		get:     func(v *Values) any { return v.Sampler.XTCProbability }, set: func(v *Values, x any) { v.Sampler.XTCProbability = x.(float64) }},
	{Name: "xtc_threshold", Under: "xtc_probability", Table: "sampler", Stage: "xtc", Where: Flag | File | Set | Request, Kind: Float,
		Min: 0, Max: 1, OffByStage: true, Off: "above 0.5 = off", Label: "xtc threshold", Persist: true, Live: true,
		Help:    "XTC: the probability a token needs to count as a top choice",
		Default: fixed(0.1),
		get:     func(v *Values) any { return v.Sampler.XTCThreshold }, set: func(v *Values, x any) { v.Sampler.XTCThreshold = x.(float64) }},
	{Name: "mirostat", Table: "sampler", Stage: "mirostat", Where: Flag | File | Set | Request, Kind: Int,
		Min: 0, Max: 2, OffByStage: true, Off: "0 = off", Label: "mirostat", Persist: true, Live: true,
		Help:    "mirostat 1 or 2: keep the surprise near mirostat_tau instead of top-nσ, top-k, typical, top-p, min-p and XTC",
		Default: fixed(0),
		get:     func(v *Values) any { return v.Sampler.Mirostat }, set: func(v *Values, x any) { v.Sampler.Mirostat = x.(int) }},
	{Name: "mirostat_tau", Under: "mirostat", Flag: "mirostat-ent", PeerFlags: []string{"--mirostat-tau"}, Table: "sampler", Stage: "mirostat", Where: Flag | File | Set | Request, Kind: Float,
		Min: 0, Max: inf, Label: "mirostat tau", Persist: true, Live: true,
		Help:    "mirostat: the target surprise in bits (llama.cpp's --mirostat-ent)",
		Default: fixed(5.0),
		get:     func(v *Values) any { return v.Sampler.MirostatTau }, set: func(v *Values, x any) { v.Sampler.MirostatTau = x.(float64) }},
	{Name: "mirostat_eta", Under: "mirostat", Flag: "mirostat-lr", PeerFlags: []string{"--mirostat-eta"}, Table: "sampler", Stage: "mirostat", Where: Flag | File | Set | Request, Kind: Float,
		Min: 0, Max: inf, Label: "mirostat eta", Persist: true, Live: true,
		Help:    "mirostat: its learning rate (llama.cpp's --mirostat-lr)",
		Default: fixed(0.1),
		get:     func(v *Values) any { return v.Sampler.MirostatEta }, set: func(v *Values, x any) { v.Sampler.MirostatEta = x.(float64) }},
}

func penaltyWindow(n int) int {
	if n <= 0 {
		return 64 // the sampler's default
	}
	return n
}
