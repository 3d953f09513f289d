// Package chattmpl renders a conversation to prompt token ids the way the
// model's own chat template does: the Jinja2 template a GGUF file carries in
// tokenizer.chat_template (as Hugging Face apply_chat_template and llama.cpp
// --jinja run it), or, when there is none or it cannot be rendered, a built-in
// format for the template's family (ChatML, Llama 3, Llama 2, Phi-3, Gemma,
// Zephyr), chosen like llama.cpp's llm_chat_detect_template in
// src/llama-chat.cpp.
//
// Template text becomes ids with EncodeSpecial, so the control tokens a
// template writes are single ids; message content never produces a control id
// (see protect.go).
//
// The Jinja engine is github.com/nikolalohinski/gonja/v2, configured as
// transformers configures Jinja2 (trim_blocks, lstrip_blocks) with its
// globals (raise_exception, strftime_now) and filters (tojson as
// json.dumps); compat.go adds what real templates need and gonja lacks.
// A template comes from the model file and is treated as hostile: it is
// bounded before parsing and rendered on a budget of steps, bytes and time
// that the renderer enforces itself (limits.go, guard.go); a template that
// outgrows it, or loads other templates, falls back to the built-in format.
// Methods that change a list or dict in place are refused, as in
// transformers' sandbox. jinja2_test.go compares the output with Python's
// jinja2 on real templates. Known limits: gonja has one value for none and
// undefined, told apart only where templates need it (compat.go: a
// variable's defined and none tests, loops over tools and documents, + and
// *), so a missing attribute "is none" and "{% set x = a if false %}" leaves
// x defined; user-defined tokens that the tokenizer's Encode itself matches (llama.cpp
// behaviour) are not protected in content, control tokens are.
package chattmpl

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"chat/models"
	"chat/models/gguf"
)

// Message is one turn: Role is "system", "user" or "assistant".
type Message struct {
	Role    string
	Content string
}

// Options describe the model's template and special tokens.
type Options struct {
	// Template is the Jinja2 source (tokenizer.chat_template), "" for none.
	Template string
	// BOS and EOS are tokenizer.ggml.bos_token_id / eos_token_id, -1 when
	// absent. Their texts are the template's bos_token and eos_token; EOS is
	// also a stop. (The tokenizer's BOS() is -1 when the model takes no BOS,
	// so it cannot tell the template what bos_token is.)
	BOS, EOS int
	// Family forces a built-in format ("chatml", "llama3", "llama2", "phi3",
	// "gemma", "zephyr") and ignores Template; "" means detect.
	Family string
	// Now is the clock behind the template's strftime_now; nil is time.Now.
	Now func() time.Time
}

// Template renders conversations for one model. It is safe for concurrent use.
type Template struct {
	tok     models.Tokenizer
	family  string // built-in format: the fallback, or the format in use
	jinja   *jinjaTemplate
	bosText string
	eosText string
	stops   []int
	now     func() time.Time

	mu      sync.Mutex
	err     error             // why the Jinja template was last not used
	broken  bool              // the Jinja template hung once: never run it again
	cache   map[string]string // content -> protected content
	special map[int]bool      // id -> isSpecial
}

// Families lists the built-in formats.
var Families = []string{"chatml", "llama3", "llama2", "phi3", "gemma", "zephyr"}

// New builds the template. It never fails: a template that does not parse is
// reported by Err and the built-in format of its family is used instead.
func New(tok models.Tokenizer, o Options) *Template {
	t := &Template{tok: tok, now: o.Now, cache: map[string]string{}, special: map[int]bool{}}
	if t.now == nil {
		t.now = time.Now
	}
	t.bosText = tokenText(tok, o.BOS)
	t.eosText = tokenText(tok, o.EOS)
	switch {
	case o.Family != "":
		t.family = o.Family
		if !knownFamily(o.Family) {
			t.err = fmt.Errorf("chattmpl: unknown template family %q (known: %s); using chatml", o.Family, strings.Join(Families, ", "))
			t.family = "chatml"
		}
	case strings.TrimSpace(o.Template) != "":
		t.family = DetectFamily(o.Template)
		if t.family == "" {
			t.family = vocabFamily(tok)
		}
		j, err := compileJinja(o.Template)
		if err != nil {
			t.err = err
		} else {
			t.jinja = j
		}
	default:
		t.family = vocabFamily(tok)
	}
	t.stops = stopIDs(tok, o.EOS, t.family)
	return t
}

// FromGGUF builds the template from a GGUF file's tokenizer.chat_template and
// tokenizer.ggml.bos_token_id / eos_token_id. family forces a built-in format
// ("" detects).
func FromGGUF(f *gguf.File, tok models.Tokenizer, family string) *Template {
	o := Options{BOS: -1, EOS: -1, Family: family}
	o.Template, _ = f.String("tokenizer.chat_template")
	if id, ok := f.Uint("tokenizer.ggml.bos_token_id"); ok && id < uint64(tok.Size()) {
		o.BOS = int(id)
	}
	if id, ok := f.Uint("tokenizer.ggml.eos_token_id"); ok && id < uint64(tok.Size()) {
		o.EOS = int(id)
	}
	return New(tok, o)
}

// Name is "jinja" while the model's own template is in use, else the built-in
// format ("chatml", "llama3", ...).
func (t *Template) Name() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.jinja != nil && !t.broken {
		return "jinja"
	}
	return t.family
}

// Family is the built-in format: the one in use, or the fallback of the Jinja
// template (detected from its text, else from the vocabulary).
func (t *Template) Family() string { return t.family }

// Err is why the model's template was last not used (it did not parse, raised
// an exception or ran away), or nil.
func (t *Template) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// Stops are the ids that end the assistant's turn: EOS, the tokenizer's EOT,
// the family's end-of-turn token when the vocabulary has it, and the
// tokenizer's end-of-generation ids when it lists them (an EOG() []int
// method).
func (t *Template) Stops() []int { return append([]int(nil), t.stops...) }

// Render returns the prompt ids of msgs; with generation set it ends with the
// assistant's header. A BOS the tokenizer wants is prepended unless the
// template already wrote it.
func (t *Template) Render(msgs []Message, generation bool) []int {
	ids := t.encode(t.render(msgs, generation))
	if b := t.tok.BOS(); b >= 0 && (len(ids) == 0 || ids[0] != b) {
		ids = append([]int{b}, ids...)
	}
	return ids
}

// Text is the prompt Render tokenizes, as text (no added BOS).
func (t *Template) Text(msgs []Message, generation bool) string {
	return unprotect(t.render(msgs, generation))
}

// render produces the prompt with protected content (see protect.go).
func (t *Template) render(msgs []Message, generation bool) string {
	pm := make([]Message, len(msgs))
	for i, m := range msgs {
		pm[i] = Message{Role: m.Role, Content: t.protect(m.Content)}
	}
	t.mu.Lock()
	j := t.jinja
	if t.broken {
		j = nil
	}
	t.mu.Unlock()
	if j == nil {
		return renderBuiltin(t.family, pm, generation, t.bosText, t.eosText)
	}
	out, err := t.renderJinja(j, pm, generation)
	if err == nil {
		return out
	}
	t.mu.Lock()
	t.err = err
	if errors.Is(err, errTimeout) {
		t.broken = true
	}
	t.mu.Unlock()
	return renderBuiltin(t.family, pm, generation, t.bosText, t.eosText)
}

// renderJinja runs the model's template. Templates that reject a system
// message (Gemma raises, old Phi-3 drops it) get it merged into the first
// user turn, as llama.cpp and ollama do.
func (t *Template) renderJinja(j *jinjaTemplate, msgs []Message, generation bool) (string, error) {
	out, err := j.execute(msgs, generation, t.bosText, t.eosText, t.now)
	if errors.Is(err, errTimeout) || len(msgs) == 0 || msgs[0].Role != "system" {
		return out, err
	}
	sys := strings.TrimSpace(msgs[0].Content)
	if err == nil && (sys == "" || strings.Contains(out, sys)) {
		return out, nil
	}
	merged, err2 := j.execute(mergeSystem(msgs), generation, t.bosText, t.eosText, t.now)
	switch {
	case err == nil && (err2 != nil || !strings.Contains(merged, sys)):
		return out, nil // merging does not bring the system prompt back: keep the template's own rendering
	case err2 != nil:
		return "", err
	}
	return merged, nil
}

// mergeSystem folds a leading system message into the first user message.
func mergeSystem(msgs []Message) []Message {
	sys := strings.TrimSpace(msgs[0].Content)
	rest := append([]Message(nil), msgs[1:]...)
	if len(rest) > 0 && rest[0].Role == "user" {
		if sys != "" {
			rest[0].Content = sys + "\n\n" + rest[0].Content
		}
		return rest
	}
	return append([]Message{{Role: "user", Content: sys}}, rest...)
}

func knownFamily(f string) bool {
	for _, k := range Families {
		if k == f {
			return true
		}
	}
	return false
}

// tokenText is the text of token id, "" when absent.
func tokenText(tok models.Tokenizer, id int) string {
	if id < 0 {
		return ""
	}
	return string(tok.TokenBytes(id))
}

// hasSpecial reports whether the vocabulary has s as one special token.
func hasSpecial(tok models.Tokenizer, s string) bool {
	ids := tok.EncodeSpecial(s)
	return len(ids) == 1 && string(tok.TokenBytes(ids[0])) == s
}

// stopIDs are EOS, EOT and the family's end-of-turn token, without repeats.
func stopIDs(tok models.Tokenizer, eos int, family string) []int {
	var out []int
	add := func(id int) {
		if id < 0 || id >= tok.Size() {
			return
		}
		for _, x := range out {
			if x == id {
				return
			}
		}
		out = append(out, id)
	}
	add(eos)
	add(tok.EOT())
	if s := endOfTurn[family]; s != "" && hasSpecial(tok, s) {
		add(tok.EncodeSpecial(s)[0])
	}
	// A tokenizer that knows llama.cpp's end-of-generation set (e.g. both
	// <|end_of_text|> and <|eot_id|> for Llama 3) stops on all of it.
	if e, ok := tok.(interface{ EOG() []int }); ok {
		for _, id := range e.EOG() {
			add(id)
		}
	}
	return out
}
