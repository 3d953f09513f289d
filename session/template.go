package session

import (
	"chat/models"
	"chat/models/gguf"
	"chat/session/chattmpl"
)

// Template renders a conversation to the token ids the model was trained on.
type Template interface {
	// Render encodes msgs; with generation set it appends the prompt for the
	// assistant's next turn.
	Render(msgs []Message, generation bool) []int
	// Stops are the ids that end the assistant's turn.
	Stops() []int
	// Name says which format renders ("course", "jinja", "chatml", ...).
	Name() string
	// Err is why the model's own template is not used, or nil.
	Err() error
}

// ggufModel is implemented by models read from GGUF files, which carry their
// chat template and special tokens.
type ggufModel interface{ GGUF() *gguf.File }

// TemplateFor picks the model's chat format: the GGUF file's own template
// (Jinja, with built-in fallbacks), or the course's.
func TemplateFor(m models.Model) Template {
	if g, ok := m.(ggufModel); ok {
		return ggufTemplate{chattmpl.FromGGUF(g.GGUF(), m.Tokenizer(), "")}
	}
	return CourseTemplate{Tok: m.Tokenizer()}
}

// ggufTemplate adapts chattmpl, which knows nothing of session's types.
type ggufTemplate struct{ t *chattmpl.Template }

func (g ggufTemplate) Render(msgs []Message, generation bool) []int {
	cm := make([]chattmpl.Message, len(msgs))
	for i, m := range msgs {
		cm[i] = chattmpl.Message{Role: string(m.Role), Content: m.Content}
	}
	return g.t.Render(cm, generation)
}
func (g ggufTemplate) Stops() []int { return g.t.Stops() }
func (g ggufTemplate) Name() string { return g.t.Name() }
func (g ggufTemplate) Err() error   { return g.t.Err() }

// CourseTemplate is the course's chat format (course-format §6): each message
// is the ids of its role header, then of its content, encoded separately with
// encode_ordinary, then EOT; the generation prompt is the assistant header.
// As text: "<|system|>\n{sys}<|endoftext|><|user|>\n{q}<|endoftext|><|assistant|>\n".
type CourseTemplate struct {
	Tok models.Tokenizer
}

func courseHeader(r Role) string { return "<|" + string(r) + "|>\n" }

// CourseJinja is the course's format as a Jinja chat template, for a
// server to report (llama-server's /props chat_template) of a model that
// has no template of its own in its file.
const CourseJinja = "{% for message in messages %}<|{{ message.role }}|>\n{{ message.content }}<|endoftext|>{% endfor %}" +
	"{% if add_generation_prompt %}<|assistant|>\n{% endif %}"

// Render implements Template.
func (t CourseTemplate) Render(msgs []Message, generation bool) []int {
	var ids []int
	eot := t.Tok.EOT()
	for _, m := range msgs {
		ids = append(ids, t.Tok.Encode(courseHeader(m.Role))...)
		ids = append(ids, t.Tok.Encode(m.Content)...)
		if eot >= 0 {
			ids = append(ids, eot)
		}
	}
	if generation {
		ids = append(ids, t.Tok.Encode(courseHeader(Assistant))...)
	}
	return ids
}

// Name implements Template.
func (t CourseTemplate) Name() string { return "course" }

// Err implements Template.
func (t CourseTemplate) Err() error { return nil }

// Stops implements Template.
func (t CourseTemplate) Stops() []int {
	if eot := t.Tok.EOT(); eot >= 0 {
		return []int{eot}
	}
	return nil
}
