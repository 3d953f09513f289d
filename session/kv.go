package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"chat/models"
	"chat/models/regular"
)

// The slash commands that reach past the conversation: /model and /draft
// load model files, /kv moves the KV cache to and from a file, /template
// shows the chat format.

func cmdModel(s *Session, arg string) (string, error) {
	if arg == "" {
		return "", fmt.Errorf("usage: /model FILE (now %s)", s.model.Info().Name)
	}
	if err := s.SetModel(arg); err != nil {
		return "", err
	}
	in := s.Info()
	return fmt.Sprintf("model now %s (%s, %s, context %d, %s template); the next turn prefills the conversation", in.Model, in.Arch, in.Quant, in.ContextLength, s.tmpl.Name()), nil
}

func cmdDraft(s *Session, arg string) (string, error) {
	switch {
	case arg == "":
		if d := s.DraftName(); d != "" {
			return fmt.Sprintf("draft model %s (spec %s, k=%d); /draft off drops it", d, s.vals.Spec, s.vals.DraftK), nil
		}
		return "", errors.New("usage: /draft FILE|off (no draft model now)")
	case strings.EqualFold(arg, "off") || strings.EqualFold(arg, "none"):
		if err := s.SetDraft(""); err != nil {
			return "", err
		}
		return "draft model off; plain decoding", nil
	}
	if err := s.SetDraft(arg); err != nil {
		return "", err
	}
	return fmt.Sprintf("speculative decoding with the draft model %s (k=%d) from the next reply", s.DraftName(), s.vals.DraftK), nil
}

func cmdKV(s *Session, arg string) (string, error) {
	verb, file, _ := strings.Cut(arg, " ")
	file = strings.TrimSpace(file)
	if file == "" || (verb != "save" && verb != "load") {
		return "", errors.New("usage: /kv save FILE or /kv load FILE")
	}
	if s.reply != nil {
		return "", ErrBusy
	}
	if verb == "save" {
		size, err := s.SaveKV(file)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("saved the KV cache (%.1f MB) to %s; /kv load %s brings it back, in another session too", float64(size)/1e6, file, file), nil
	}
	n, err := s.LoadKV(file)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("loaded the KV cache of %d tokens from %s: a prompt that starts with them skips their prefill", n, file), nil
}

// SaveKV writes the engine's cached sequence (the last prompt and reply) to
// file, atomically (a temp file renamed over it). It returns the file's size.
func (s *Session) SaveKV(file string) (int64, error) {
	if s.remote != nil {
		return 0, errRemote
	}
	if err := regular.Output(file); err != nil { // the rename would replace a FIFO or device
		return 0, err
	}
	dir := filepath.Dir(file)
	f, err := os.CreateTemp(dir, "."+filepath.Base(file)+".tmp*")
	if err != nil {
		return 0, err
	}
	tmp := f.Name()
	err = s.eng.ExportKV(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	var fi os.FileInfo
	if err == nil {
		fi, err = os.Stat(tmp)
	}
	if err == nil {
		err = os.Rename(tmp, file)
	}
	if err != nil {
		os.Remove(tmp)
		return 0, err
	}
	return fi.Size(), nil
}

// LoadKV reads a KV file written by SaveKV for this model and makes it the
// engine's cached sequence. It returns its token count.
func (s *Session) LoadKV(file string) (int, error) {
	if s.remote != nil {
		return 0, errRemote
	}
	f, _, err := regular.Open(file) // a FIFO would block the open, and the UI with it
	if err != nil {
		return 0, err
	}
	defer f.Close()
	ids, err := s.eng.ImportKV(f)
	return len(ids), err
}

// templateExample is the conversation /template renders.
var templateExample = []Message{{Role: System, Content: "SYSTEM"}, {Role: User, Content: "USER 1"},
	{Role: Assistant, Content: "ASSISTANT 1"}, {Role: User, Content: "USER 2"}}

func cmdTemplate(s *Session, _ string) (string, error) {
	note := ""
	if s.vals.Mode == "raw" {
		note = " (not used now: raw mode)"
	}
	return describeTemplate(s.model.Tokenizer(), s.tmpl, note), nil
}

// DescribeTemplate is /template's answer for m before any session: which
// chat template renders, an example conversation as rendered, and the stops.
func DescribeTemplate(m models.Model) string {
	return describeTemplate(m.Tokenizer(), TemplateFor(m), "")
}

func describeTemplate(tok models.Tokenizer, tmpl Template, note string) string {
	var stops []string
	for _, id := range tmpl.Stops() {
		stops = append(stops, fmt.Sprintf("%q (%d)", WithSpecials(tok, []int{id}), id))
	}
	text := WithSpecials(tok, tmpl.Render(templateExample, true))
	var b strings.Builder
	fmt.Fprintf(&b, "chat template: %s", tmpl.Name())
	if err := tmpl.Err(); err != nil {
		fmt.Fprintf(&b, " (the model's own failed: %v)", err)
	}
	b.WriteString(note)
	fmt.Fprintf(&b, "\na conversation renders as (the reply follows it):\n%s\nthe reply stops at: %s", text, strings.Join(stops, ", "))
	return b.String()
}

// WithSpecials is the text of ids with special tokens spelled out
// (<|start_header_id|>), which Decode leaves out as llama.cpp's
// detokenizer does: a template is its special tokens; llama-server's
// /completion shows a prompt so.
func WithSpecials(tok models.Tokenizer, ids []int) string {
	var b []byte
	for _, id := range ids {
		b = append(b, tok.TokenBytes(id)...)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// RawStops are the ids raw mode stops at: a GGUF model's end-of-generation
// tokens (EOS, EOT and the tokenizer's EOG set, as llama.cpp stops); none
// for a course checkpoint, whose generate runs to its budget.
func RawStops(m models.Model) []int {
	if _, ok := m.(ggufModel); !ok {
		return nil
	}
	tok := m.Tokenizer()
	var out []int
	add := func(id int) {
		if id >= 0 && id < tok.Size() {
			for _, x := range out {
				if x == id {
					return
				}
			}
			out = append(out, id)
		}
	}
	if e, ok := tok.(interface{ EOS() int }); ok {
		add(e.EOS())
	}
	add(tok.EOT())
	if e, ok := tok.(interface{ EOG() []int }); ok {
		for _, id := range e.EOG() {
			add(id)
		}
	}
	return out
}
