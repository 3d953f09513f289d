package chattmpl

import (
	"strings"

	"chat/models"
)

// The built-in formats follow the official templates of each family (and
// llama.cpp's llm_chat_apply_template in src/llama-chat.cpp, which implements
// the same formats without Jinja), so a model whose template fails renders
// the same text as its template would.

// endOfTurn is the token that closes an assistant turn in each family.
var endOfTurn = map[string]string{
	"chatml": "<|im_end|>",
	"llama3": "<|eot_id|>",
	"llama2": "</s>",
	"phi3":   "<|end|>",
	"gemma":  "<end_of_turn>",
	"zephyr": "</s>",
}

// DetectFamily names the built-in format a Jinja template writes, from the
// marker strings in its text, or "" when none matches. The markers are the
// ones llama.cpp's llm_chat_detect_template looks for.
func DetectFamily(tmpl string) string {
	has := func(s string) bool { return strings.Contains(tmpl, s) }
	switch {
	case has("<|im_start|>"):
		return "chatml"
	case has("<|start_header_id|>") && has("<|end_header_id|>"):
		return "llama3"
	case has("<start_of_turn>"):
		return "gemma"
	case has("<|assistant|>") && has("<|end|>"):
		return "phi3"
	case has("<|user|>") && (has("</s>") || has("eos_token")):
		return "zephyr" // TinyLlama, Zephyr: the turn ends with eos_token
	case has("[INST]"):
		return "llama2"
	}
	return ""
}

// vocabFamily picks the format from the vocabulary's special tokens when there
// is no template to read; ChatML is the default, as in llama.cpp.
func vocabFamily(tok models.Tokenizer) string {
	switch {
	case hasSpecial(tok, "<|im_start|>"):
		return "chatml"
	case hasSpecial(tok, "<|start_header_id|>"):
		return "llama3"
	case hasSpecial(tok, "<start_of_turn>"):
		return "gemma"
	case hasSpecial(tok, "<|end|>") && hasSpecial(tok, "<|assistant|>"):
		return "phi3"
	}
	return "chatml"
}

// renderBuiltin writes msgs in a family's format. bos and eos are the texts
// of the model's BOS and EOS tokens.
func renderBuiltin(family string, msgs []Message, generation bool, bos, eos string) string {
	if eos == "" {
		eos = "</s>"
	}
	var b strings.Builder
	switch family {
	case "llama3":
		// Meta-Llama-3-Instruct: BOS, then a header per turn, trimmed content.
		b.WriteString(bos)
		for _, m := range msgs {
			b.WriteString("<|start_header_id|>" + m.Role + "<|end_header_id|>\n\n" + strings.TrimSpace(m.Content) + "<|eot_id|>")
		}
		if generation {
			b.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
		}
	case "llama2":
		// Llama-2-chat: the system prompt goes in <<SYS>> inside the first
		// [INST]; every user turn starts with BOS; content is stripped. There
		// is no assistant header: the prompt always ends with [/INST].
		sys, rest := splitSystem(msgs)
		for i, m := range rest {
			c := m.Content
			if i == 0 && sys != nil {
				c = "<<SYS>>\n" + *sys + "\n<</SYS>>\n\n" + c
			}
			switch m.Role {
			case "user":
				b.WriteString(bos + "[INST] " + strings.TrimSpace(c) + " [/INST]")
			case "assistant":
				b.WriteString(" " + strings.TrimSpace(c) + " " + eos)
			}
		}
		if len(rest) == 0 && sys != nil {
			b.WriteString(bos + "[INST] <<SYS>>\n" + *sys + "\n<</SYS>>\n\n [/INST]")
		}
	case "phi3":
		// Phi-3-mini-4k-instruct: <|role|>\n...<|end|>\n; without a
		// generation prompt the official template closes with EOS.
		for _, m := range msgs {
			b.WriteString("<|" + m.Role + "|>\n" + m.Content + "<|end|>\n")
		}
		if generation {
			b.WriteString("<|assistant|>\n")
		} else {
			b.WriteString(eos)
		}
	case "gemma":
		// Gemma has no system role: the system prompt opens the first user
		// turn; the assistant is "model"; content is trimmed.
		b.WriteString(bos)
		sys := ""
		for _, m := range msgs {
			if m.Role == "system" {
				sys += strings.TrimSpace(m.Content)
				continue
			}
			role, c := m.Role, strings.TrimSpace(m.Content)
			if role == "assistant" {
				role = "model"
			} else if sys != "" {
				c = strings.TrimSpace(sys + "\n\n" + c)
				sys = ""
			}
			b.WriteString("<start_of_turn>" + role + "\n" + c + "<end_of_turn>\n")
		}
		if sys != "" {
			b.WriteString("<start_of_turn>user\n" + sys + "<end_of_turn>\n")
		}
		if generation {
			b.WriteString("<start_of_turn>model\n")
		}
	case "zephyr":
		// Zephyr / TinyLlama-Chat: each turn ends with EOS and a newline.
		for _, m := range msgs {
			b.WriteString("<|" + m.Role + "|>\n" + m.Content + eos + "\n")
		}
		if generation {
			b.WriteString("<|assistant|>\n")
		}
	default: // chatml
		for _, m := range msgs {
			b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
		}
		if generation {
			b.WriteString("<|im_start|>assistant\n")
		}
	}
	return b.String()
}

// splitSystem separates a leading system message.
func splitSystem(msgs []Message) (*string, []Message) {
	if len(msgs) > 0 && msgs[0].Role == "system" {
		s := msgs[0].Content
		return &s, msgs[1:]
	}
	return nil, msgs
}
