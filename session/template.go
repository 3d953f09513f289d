package session

import "chat/models"

// Template renders a conversation to the token ids the model was trained on.
type Template interface {
	// Render encodes msgs; with generation set it appends the prompt for the
	// assistant's next turn.
	Render(msgs []Message, generation bool) []int
	// Stops are the ids that end the assistant's turn.
	Stops() []int
}

// CourseTemplate is the course's chat format (course-format §6): each message
// is the ids of its role header, then of its content, encoded separately with
// encode_ordinary, then EOT; the generation prompt is the assistant header.
// As text: "<|system|>\n{sys}<|endoftext|><|user|>\n{q}<|endoftext|><|assistant|>\n".
type CourseTemplate struct {
	Tok models.Tokenizer
}

func courseHeader(r Role) string { return "<|" + string(r) + "|>\n" }

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

// Stops implements Template.
func (t CourseTemplate) Stops() []int {
	if eot := t.Tok.EOT(); eot >= 0 {
		return []int{eot}
	}
	return nil
}
