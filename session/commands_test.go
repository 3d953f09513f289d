package session

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"chat/engine/sampler"
	"chat/session/store"

	"github.com/charmbracelet/x/ansi"
)

func run(t *testing.T, s *Session, line string) string {
	t.Helper()
	handled, reply, err := s.Command(line)
	if !handled || err != nil {
		t.Fatalf("%s: handled=%v err=%v", line, handled, err)
	}
	return reply
}

func TestSetKnobs(t *testing.T) {
	s, _ := stored(t, sharedModel(t), 10)
	s.SetSampler(sampler.Defaults())
	for _, c := range []struct {
		line  string
		check func(p sampler.Params) bool
		reply string
	}{
		{"/set temperature 0.7", func(p sampler.Params) bool { return p.Temperature == 0.7 }, "temperature 0.7"},
		{"/set temp 0", func(p sampler.Params) bool { return p.Temperature == 0 }, "temperature 0"},
		{"/set top_p 0.9", func(p sampler.Params) bool { return p.TopP == 0.9 }, "top_p 0.9"},
		{"/set top-p 1", func(p sampler.Params) bool { return p.TopP == 1 }, "top_p off"},
		{"/set top_k 40", func(p sampler.Params) bool { return p.TopK == 40 }, "top_k 40"},
		{"/set TOP-K 0", func(p sampler.Params) bool { return p.TopK == 0 }, "top_k off"},
		{"/set min_p 0.05", func(p sampler.Params) bool { return p.MinP == 0.05 }, "min_p 0.05"},
		{"/set seed 3", func(p sampler.Params) bool { return p.Seed == 3 }, "seed 3"},
		{"/set repeat_penalty 1.1", func(p sampler.Params) bool { return p.RepeatPenalty == 1.1 }, "repeat_penalty 1.1"},
		{"/set frequency_penalty -0.5", func(p sampler.Params) bool { return p.FrequencyPenalty == -0.5 }, "frequency_penalty -0.5"},
		{"/set presence_penalty 0.25", func(p sampler.Params) bool { return p.PresencePenalty == 0.25 }, "presence_penalty 0.25"},
		{"/set greedy on", func(p sampler.Params) bool { return p.Greedy }, "greedy on"},
		{"/set temperature 0.5", func(p sampler.Params) bool { return p.Temperature == 0.5 }, "no effect until /set greedy off"},
		{"/set greedy off", func(p sampler.Params) bool { return !p.Greedy }, "greedy off"},
		// ollama's spelling: "/set parameter KEY VALUE", with its names.
		{"/set parameter temperature 0.6", func(p sampler.Params) bool { return p.Temperature == 0.6 }, "temperature 0.6"},
		{"/set parameter repeat_last_n 32", func(p sampler.Params) bool { return p.PenaltyWindow == 32 }, "penalty_window 32"},
		// ollama's mirostat parameters, refused as "a sampler this app does
		// not have" until mirostat was built.
		{"/set parameter mirostat_tau 4", func(p sampler.Params) bool { return p.MirostatTau == 4 }, "mirostat_tau 4"},
		{"  /set   temperature   0.8  ", func(p sampler.Params) bool { return p.Temperature == 0.8 }, "temperature 0.8"},
	} {
		reply := run(t, s, c.line)
		if !c.check(s.Sampler()) || !strings.Contains(reply, c.reply) {
			t.Errorf("%s: reply %q, sampler %+v", c.line, reply, s.Sampler())
		}
	}
	if run(t, s, "/set parameter num_predict 50"); s.MaxTokens() != 50 {
		t.Errorf("num_predict: max_tokens = %d", s.MaxTokens())
	}
	if run(t, s, "/set max_tokens 200"); s.MaxTokens() != 200 {
		t.Errorf("max_tokens = %d", s.MaxTokens())
	}
	if run(t, s, "/set mode raw"); s.Info().Mode != "raw" {
		t.Errorf("mode = %q", s.Info().Mode)
	}
	before, maxBefore := s.Sampler(), s.MaxTokens()
	for line, want := range map[string]string{
		"/set temperature -1":        "≥ 0",
		"/set temperature hot":       "must be a number",
		"/set temperature NaN":       "must be a number",
		"/set temperature +Inf":      "must be a number",
		"/set top_p 1.5":             "between 0 and 1",
		"/set min_p -0.1":            "between 0 and 1",
		"/set top_k 2.5":             "whole number",
		"/set top_k -3":              "between 0",
		"/set seed -2":               "seed",
		"/set greedy maybe":          "on or off",
		"/set max_tokens 0":          "between 1",
		"/set repeat_penalty -1":     "≥ 0",
		"/set mode poetry":           `mode must be one of chat, raw, got "poetry"`,
		"/set kv_mem 3":              "kv_mem is set when chat starts (--kv-mem)",
		"/set draft_k 17":            "draft_k must be between 1 and 16, got 17",
		"/set quant int3":            "quant must be one of",
		"/set spec draft":            "no draft model",
		"/set temperature":           "usage: /set temperature VALUE (now 0.8)",
		"/set":                       "keys: temperature",
		"/set warmth 3":              `unknown setting "warmth"`,
		"/set parameter num_ctx 512": "ctx_size is set when chat starts (--ctx-size)",
		"/set parameter":             "keys: temperature",
		// ollama's switches say what stands for them here.
		"/set verbose":    "/set verbose is ollama's: the panel shows every reply's timings",
		"/set nowordwrap": "/set nowordwrap is ollama's: replies always wrap",
		"/set think":      "/set think is ollama's: the models this app runs have no thinking mode",
		// ollama's parameters that are no settings here: they said only
		// "unknown setting".
		"/set parameter tfs_z 0.9":    "/set tfs_z is ollama's: a sampler this app does not have",
		"/set parameter num_gpu 99":   "/set num_gpu is ollama's: this app runs on the CPU",
		"/set parameter num_thread 4": "/set num_thread is ollama's: the compute threads are set when chat starts (--threads)",
		// More of ollama's documented parameters: num_keep listed every setting.
		"/set parameter num_keep 5":    "/set num_keep is ollama's: a reply that outgrows the context follows the course's window rule",
		"/set parameter num_batch 512": "/set num_batch is ollama's: a prompt is prefilled here without a batch size",
		"/set parameter use_mmap true": "/set use_mmap is ollama's: GGUF files are always memory-mapped",
		"/set format xml":              "format",
		// The samplers llama.cpp has beyond the course's.
		"/set mirostat_tau NaN":       "mirostat_tau must be a number",
		"/set mirostat_eta -1":        "mirostat_eta must be ≥ 0",
		"/set xtc_probability 1.5":    "xtc_probability must be between 0 and 1",
		"/set dry_allowed_length -1":  "dry_allowed_length must be between 0",
		"/set dry_penalty_last_n 1e9": "dry_penalty_last_n must be a whole number",
		"/set dry_multiplier Inf":     "dry_multiplier must be a number",
		"/set top_n_sigma -Inf":       "top_n_sigma must be a number",
		// ollama's /load takes a model.
		"/load student.pt": "no such session; /load takes a saved conversation: /model FILE switches the model",
		// ... by its name too: the error said only "see /sessions".
		"/load llama3.2": `session "llama3.2": no such session (see /sessions; /model FILE switches the model)`,
	} {
		handled, _, err := s.Command(line)
		if !handled || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: handled=%v err=%v, want %q", line, handled, err, want)
		}
	}
	if s.Sampler() != before || s.MaxTokens() != maxBefore {
		t.Errorf("bad values changed the settings: %+v", s.Sampler())
	}
}

// ollama's /show template and /show system show that one thing; they
// showed every setting, as /show info does.
func TestShowTemplateSystem(t *testing.T) {
	s, _ := stored(t, sharedModel(t), 10)
	run(t, s, "/system You are terse.")
	if got, want := run(t, s, "/show template"), run(t, s, "/template"); got != want {
		t.Errorf("/show template: %.200q, want /template's %.200q", got, want)
	}
	if got := run(t, s, "/show SYSTEM"); got != `system prompt: "You are terse."` {
		t.Errorf("/show system: %q", got)
	}
	if got := run(t, s, "/show info"); !strings.Contains(got, "temperature") {
		t.Errorf("/show info: %.200q", got)
	}
}

// /set dry_sequence_breakers adds one breaker at a time, up to the bound
// the flags and the config file have (each is a pass over the vocabulary).
func TestSetBreakersBound(t *testing.T) {
	s, _ := stored(t, sharedModel(t), 10)
	run(t, s, "/set dry_sequence_breakers none")
	for i := range sampler.MaxBreakers {
		run(t, s, fmt.Sprintf("/set dry_sequence_breakers b%d", i))
	}
	before := s.Sampler()
	if _, _, err := s.Command("/set dry_sequence_breakers one-more"); err == nil || !strings.Contains(err.Error(), "takes at most 64 texts, got 65") {
		t.Errorf("the 65th breaker: %v", err)
	}
	if s.Sampler() != before {
		t.Errorf("a refused breaker changed the breakers")
	}
}

func TestShowSystemHelp(t *testing.T) {
	s, _ := stored(t, sharedModel(t), 10)
	run(t, s, "/set top_k 40")
	if r := run(t, s, "/system You are terse."); !strings.Contains(r, "system prompt set") || s.Info().System != "You are terse." {
		t.Errorf("/system: %q, %q", r, s.Info().System)
	}
	if r := run(t, s, "/system"); !strings.Contains(r, "You are terse.") {
		t.Errorf("/system alone: %q", r)
	}
	show := run(t, s, "/show")
	// The model line said "1235814432 params" where the header says 1.2B.
	for _, want := range []string{"student-chat-1k.pt (modern, f32, 2.6M params, context 1024)", "mode              chat", `"You are terse."`, "top_k             40", "greedy            on", "max_tokens        10", "quant             f32", "draft_k           4", "format            off", "order             mask → penalties", "not saved yet"} {
		if !strings.Contains(show, want) {
			t.Errorf("/show lacks %q:\n%s", want, show)
		}
	}
	run(t, s, "/set system Be kind.") // ollama's spelling
	if s.Info().System != "Be kind." {
		t.Errorf("/set system: %q", s.Info().System)
	}
	if run(t, s, "/system clear"); s.Info().System != "" {
		t.Errorf("/system clear left %q", s.Info().System)
	}
	help := run(t, s, "/help")
	for _, c := range commands {
		if !strings.Contains(help, c.name) {
			t.Errorf("/help lacks %s", c.name)
		}
	}
	if run(t, s, "/?") != help {
		t.Error("/? is not /help")
	}
	for _, q := range []string{"/bye", "/exit"} {
		if _, _, err := s.Command(q); !errors.Is(err, ErrQuit) {
			t.Errorf("%s: %v", q, err)
		}
	}
	if tm := run(t, s, "/template"); !strings.Contains(tm, "<|user|>") || !strings.Contains(tm, "<|assistant|>") || !strings.Contains(tm, "the reply stops at") {
		t.Errorf("/template: %q", tm)
	}
}

func TestUnknownAndNotCommands(t *testing.T) {
	s, _ := stored(t, sharedModel(t), 10)
	handled, _, err := s.Command("/frobnicate now")
	if !handled || err == nil || !strings.Contains(err.Error(), "/frobnicate") || !strings.Contains(err.Error(), "/set /show /system /model /draft /lora /kv /template /save /load /sessions /new /clear /regen /format /help /quit") {
		t.Errorf("unknown command: handled=%v err=%v", handled, err)
	}
	if _, _, err := s.Command("/se"); err == nil || !strings.Contains(err.Error(), "did you mean /set or /sessions?") {
		t.Errorf("/se: %v", err)
	}
	for _, line := range []string{"hello", "", "/", "/ spaced", "//etc/passwd", "/1", "a /set"} {
		if handled, _, _ := s.Command(line); handled {
			t.Errorf("%q was taken for a command", line)
		}
	}
	if _, err := s.Submit("//set is text"); err != nil {
		t.Fatal(err)
	}
	s.Wait()
	if m := s.Messages(); len(m) != 2 || m[0].Content != "/set is text" {
		t.Errorf("Submit //: %+v", m)
	}
	if r, err := s.Submit("/set seed 9"); err != nil || !strings.HasPrefix(r, "seed 9") || s.Sampler().Seed != 9 {
		t.Errorf("Submit /set: %q %v", r, err)
	}
	// Bug: "/new Tell me a joke" started a new conversation and dropped the
	// words; "/quit now" quit. A command without arguments refuses them.
	for _, line := range []string{"/new Tell me a joke", "/clear all", "/quit now", "/regen 2"} {
		name, arg, _ := strings.Cut(line, " ")
		if _, _, err := s.Command(line); err == nil || err.Error() != name+` takes no argument, got "`+arg+`"` {
			t.Errorf("%s: %v", line, err)
		}
	}
	if len(s.Messages()) != 2 {
		t.Errorf("a refused /new cleared the conversation: %d messages", len(s.Messages()))
	}
	if _, r, err := s.Command("/? set"); err != nil || !strings.Contains(r, "/set") {
		t.Errorf("/? set (ollama's): %q, %v", r, err)
	}
	if _, r, err := s.Command("/show parameters"); err != nil || !strings.Contains(r, "temperature") {
		t.Errorf("/show parameters (ollama's): %q, %v", r, err)
	}
}

func TestSessionCommands(t *testing.T) {
	s, _ := stored(t, sharedModel(t), 12)
	if _, _, err := s.Command("/save early"); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("/save of nothing: %v", err)
	}
	if r := run(t, s, "/sessions"); !strings.Contains(r, "no saved conversations yet") {
		t.Errorf("/sessions on an empty store: %q", r)
	}
	turn(t, s, "Tell me a story about a dog.")
	reply := s.Messages()[1].Content
	if r := run(t, s, "/save dogs"); !strings.Contains(r, "saved as dogs") {
		t.Errorf("/save: %q", r)
	}
	if _, _, err := s.Command("/save bad/name"); err == nil {
		t.Error("/save with a slash in the name succeeded")
	}
	if r := run(t, s, "/new"); r != "new conversation" || len(s.Messages()) != 0 {
		t.Errorf("/new: %q, %d messages", r, len(s.Messages()))
	}
	turn(t, s, "Hi.")
	if _, _, err := s.Command("/save dogs"); err == nil || !strings.Contains(err.Error(), "taken") {
		t.Errorf("/save with another session's name: %v", err)
	}
	list := run(t, s, "/sessions")
	lines := strings.Split(list, "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "*  1") || !strings.Contains(lines[1], "[dogs] Tell me a story about a dog.") {
		t.Errorf("/sessions:\n%s", list)
	}
	if r := run(t, s, "/load dogs"); !strings.Contains(r, "2 messages") || s.Messages()[1].Content != reply {
		t.Errorf("/load: %q %+v", r, s.Messages())
	}
	if r := run(t, s, "/regen"); r != "" || !s.Busy() {
		t.Errorf("/regen: %q busy=%v", r, s.Busy())
	}
	if _, _, err := s.Command("/load dogs"); !errors.Is(err, ErrBusy) {
		t.Errorf("/load while busy: %v", err)
	}
	if res := s.Wait(); res.Text != reply {
		t.Errorf("/regen gave %q, want %q", res.Text, reply)
	}
	if _, _, err := s.Command("/load"); err == nil || !strings.Contains(err.Error(), "usage") {
		t.Errorf("/load alone: %v", err)
	}
	if _, _, err := s.Command("/load nope"); err == nil || !strings.Contains(err.Error(), "no such session") {
		t.Errorf("/load nope: %v", err)
	}
	if run(t, s, "/clear"); len(s.Messages()) != 0 {
		t.Error("/clear left messages")
	}
	if _, _, err := s.Command("/regen"); err == nil {
		t.Error("/regen of nothing succeeded")
	}
	if c := s.Complete("/load d"); !slices.Equal(c, []string{"/load dogs"}) {
		t.Errorf("Complete(/load d) = %q", c)
	}
}

func TestComplete(t *testing.T) {
	s := greedy(t, sharedModel(t), "chat", 10)
	for prefix, want := range map[string][]string{
		"/":          commandNames(),
		"/s":         {"/set", "/show", "/system", "/save", "/sessions"},
		"/SE":        {"/set", "/sessions"},
		"/set t":     {"/set temperature", "/set top_p", "/set top_k", "/set token_view", "/set top_n_sigma", "/set typical_p"},
		"/set m":     {"/set min_p", "/set max_tokens", "/set mode", "/set mirostat", "/set mirostat_tau", "/set mirostat_eta"},
		"/set seed ": {"/set seed random", "/set seed 0"},
		"/set quant i": {"/set quant int8", "/set quant int8-a8", "/set quant int4-g32", "/set quant int4-g64", "/set quant int4-g128",
			"/set quant int4-g32-a8", "/set quant int4-g64-a8", "/set quant int4-g128-a8", "/set quant int4-g32-gptq", "/set quant int4-g64-gptq",
			"/set quant int4-g128-gptq", "/set quant int4-g32-awq", "/set quant int4-g64-awq", "/set quant int4-g128-awq",
			"/set quant iq4_nl", "/set quant iq4_xs"},
		"/draft ":         {"/draft off"},
		"/set greedy o":   {"/set greedy on", "/set greedy off"},
		"/set mode ":      {"/set mode chat", "/set mode raw"},
		"/set top_k ":     {"/set top_k 0"},
		"/set max_tokens": {"/set max_tokens"},
		"/set sy":         {"/set system"},
		"/set nope ":      nil,
		"/load ":          nil, // no store
		"/help ":          nil,
		"hello":           nil,
		"//x":             nil,
		"/zzz":            nil,
	} {
		if got := s.Complete(prefix); !slices.Equal(got, want) {
			t.Errorf("Complete(%q) = %q, want %q", prefix, got, want)
		}
	}
}

// ollama's "/set format json" and "/set noformat" said unknown setting
// "format"; they are /format json and /format off.
func TestSetFormatAsOllama(t *testing.T) {
	s, _ := stored(t, sharedModel(t), 10)
	run(t, s, "/set format json")
	if got := s.Constraint(); !strings.Contains(got, "json") {
		t.Errorf("after /set format json the constraint is %q", got)
	}
	run(t, s, "/set noformat")
	if got := s.Constraint(); got != "" {
		t.Errorf("after /set noformat the constraint is %q", got)
	}
}

// The header and the headless line name the context a model was trained
// for when the window is shorter, so a 131,072-token model's 4,096 window
// is not taken for its limit.
func TestContextText(t *testing.T) {
	for _, c := range []struct {
		in   Info
		want string
	}{
		{Info{ContextLength: 512}, "ctx 512"},
		{Info{ContextLength: 4096, TrainContext: 131072}, "ctx 4096 of 131072"},
	} {
		if got := ContextText(c.in); got != c.want {
			t.Errorf("%+v: %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParamCount(t *testing.T) {
	for n, want := range map[int64]string{0: "", 812: "812", 369024: "369K", 2557888: "2.6M", 15e6: "15M", 110_618_112: "111M", 1_235_814_432: "1.2B", 7e9: "7B"} {
		if got := ParamCount(n); got != want {
			t.Errorf("ParamCount(%d) = %q, want %q", n, got, want)
		}
	}
}

// Bug: chat --sessions padded titles by runes, so a CJK or emoji title
// pushed its model column right and a long one overran it. Titles take 40
// cells, cut with an ellipsis.
func TestFormatListColumns(t *testing.T) {
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.Local)
	list := []store.Summary{
		{ID: "a", Title: "Once upon a time", Model: "m", Updated: at, Messages: 2},
		{ID: "b", Title: "日本語のテキスト 🎉 e\u0301 and more", Model: "m", Updated: at, Messages: 2},
		{ID: "c", Title: "Hello there, tell me about the sea and its many creatures", Model: "m", Updated: at, Messages: 6},
	}
	lines := strings.Split(FormatList(list, ""), "\n")
	col := -1
	for _, l := range lines {
		i := strings.Index(l, "  m, ")
		if i < 0 {
			t.Fatalf("no model column: %q", l)
		}
		if w := ansi.StringWidth(l[:i]); col < 0 {
			col = w
		} else if w != col {
			t.Errorf("the model column starts at cell %d, not %d: %q", w, col, l)
		}
	}
	if !strings.Contains(lines[2], "the sea and …  m,") {
		t.Errorf("a long title is not cut: %q", lines[2])
	}
}

// /show's model line names only what is known: on --remote the weight
// format and parameter count are not, and the line read
// "student (remote, ,  params, context 256)".
func TestShowModelSummary(t *testing.T) {
	for _, c := range []struct {
		in   Info
		want string
	}{
		{Info{Model: "student", Arch: "remote", ContextLength: 256}, "student (remote, context 256)"},
		{Info{Model: "student.pt", Arch: "modern", Quant: "f32", Params: 2_600_000, ContextLength: 256}, "student.pt (modern, f32, 2.6M params, context 256)"},
		{Info{Model: "x"}, "x"},
	} {
		if got := modelSummary(c.in); got != c.want {
			t.Errorf("modelSummary(%+v) = %q; want %q", c.in, got, c.want)
		}
	}
}

// /help is a column layout, a command's usage in 22 cells and its text after
// two spaces, and the UI wraps the text under its column. /format's usage
// took 50 cells, so its text started where the usage ended and wrapped
// under the line's second cell, out of the column. Every usage fits.
func TestHelpUsageFitsItsColumn(t *testing.T) {
	help, err := cmdHelp(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(help, "\n") {
		if len(line) < 25 || line[22:24] != "  " || line[24] == ' ' {
			t.Errorf("/help line out of its column: %q", line)
		}
	}
}
