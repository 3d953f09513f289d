package main

import (
	"strings"
	"testing"

	"chat/models/gguf/gguftest"
	"chat/models/testmodels"
)

// chat show FILE, ollama show's habit, says what a model file is; it was
// refused as one of ollama's store commands.
func TestShow(t *testing.T) {
	gg := testmodels.Path(t, "stories260K/stories260K.gguf")
	pt := testmodels.Path(t, "course/student.pt")
	parts := gguftest.Split(t, gg, t.TempDir(), 3)
	for _, c := range []struct {
		args []string
		code int
		want []string // in stdout, or stderr when code != 0
	}{
		{[]string{"show", gg}, 0, []string{"architecture   llama (GGUF v3)", "layers         5", "heads          8 query, 4 key/value (head size 8)",
			"vocabulary     512 tokens", "weights        1.04 MB f32 (48 f32 tensors)", "chat template: chatml", "<|im_start|>user"}},
		// The mode it opens in: a pre-training checkpoint showed a chat
		// template and nothing said that it does not chat by default.
		{[]string{"show", pt}, 0, []string{"architecture   modern (course checkpoint)", "context        256",
			"mode           raw: the prompt is continued as text (--chat uses the chat template below)", "chat template: course",
			"<|user|>\nUSER 1<|endoftext|>", `the reply stops at: "<|endoftext|>" (4095)`}},
		{[]string{"show", testmodels.Path(t, "embed/student-chat-1k.pt")}, 0, []string{"stage          sft", "mode           chat: messages go through the chat template below (--raw continues text)"}},
		{[]string{"show", "--metadata", gg}, 0, []string{"general.architecture", `"llama"`, "tokenizer.ggml.tokens", "[512 string: "}},
		{[]string{"show", gg, "--template"}, 0, []string{"(the file carries no chat template: chatml renders)"}},
		{[]string{"show", "--metadata", pt}, 1, []string{"--metadata lists a GGUF file's keys"}},
		{[]string{"show"}, 2, []string{"give a model file"}},
		{[]string{"show", "nope.gguf"}, 1, []string{"chat show: ", "nope.gguf"}},
		// A split model says so, from any part, and its metadata is the first part's.
		{[]string{"show", parts[2]}, 0, []string{"model          stories260K\n", "llama (GGUF v3, split in 3 files)"}},
		{[]string{"show", parts[1], "--metadata"}, 0, []string{"(the first of the 3 files of a split model: every key is in it)", "split.count"}},
	} {
		code, stdout, stderr := runCLI(c.args...)
		out := stdout
		if c.code != 0 {
			out = stderr
		}
		for _, w := range c.want {
			if code != c.code || !strings.Contains(out, w) {
				t.Errorf("chat %s: exit %d, %q; want exit %d and %q", strings.Join(c.args, " "), code, out+stderr, c.code, w)
				break
			}
		}
		if c.code != 0 && strings.Count(strings.TrimSpace(stderr), "\n") > 1 {
			t.Errorf("chat %s: more than a line or two: %q", strings.Join(c.args, " "), stderr)
		}
	}
}
