package main

import (
	"path/filepath"
	"strings"
	"testing"

	"chat/models/gguf"
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
		{[]string{"show", "nope.gguf"}, 1, []string{"chat show: ", "nope.gguf"}},
		// Two models named the first "unexpected", as if it were the stray one.
		{[]string{"show", gg, pt}, 2, []string{"chat show: want one MODEL, got 2 arguments: "}},
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

// chat show without a model shows the embedded one, the model chat alone
// runs (it was refused: "give a model file"); it needs no fixture.
func TestShowEmbedded(t *testing.T) {
	for _, args := range [][]string{{"show"}, {"show", "--template"}} {
		code, stdout, stderr := runCLI(args...)
		if code != 0 {
			t.Fatalf("chat %s: exit %d, %q", strings.Join(args, " "), code, stderr)
		}
		if !strings.Contains(stdout, "chat template: course") && !strings.Contains(stdout, "course renders") {
			t.Errorf("chat %s: no template in %q", strings.Join(args, " "), stdout)
		}
	}
	code, stdout, stderr := runCLI("show")
	for _, w := range []string{"model          student-chat-1k.pt (embedded in the binary", "stage          sft", "mode           chat:"} {
		if code != 0 || !strings.Contains(stdout, w) {
			t.Errorf("chat show: exit %d, %q; want %q", code, stdout+stderr, w)
		}
	}
}

// Hostile metadata shows as short lines without raw escapes: a long
// string, a long key and arrays nested eight deep (whose items, shown
// within each other, made a line of 6^7 of them).
func TestShowHostileMetadata(t *testing.T) {
	gg := testmodels.Path(t, "stories260K/stories260K.gguf")
	path := filepath.Join(t.TempDir(), "hostile.gguf")
	var nest func(depth int) gguf.ArrayValue
	nest = func(depth int) gguf.ArrayValue {
		if depth == 0 {
			return gguf.ArrayValue{Elem: gguf.String, Data: []string{hostileText}}
		}
		sub := make([]gguf.ArrayValue, 6)
		for i := range sub {
			sub[i] = nest(depth - 1)
		}
		return gguf.ArrayValue{Elem: gguf.Array, Data: sub}
	}
	long := strings.Repeat("x"+hostileText, 10000)
	gguftest.WithMeta(t, gg, path, func(kv []gguf.KV) []gguf.KV {
		return append(kv, gguf.KV{Key: "general.finetune", Type: gguf.String, Value: long},
			gguf.KV{Key: "k" + long, Type: gguf.Uint8, Value: uint8(1)},
			gguf.KV{Key: "nested", Type: gguf.Array, Value: nest(7)})
	})
	for _, args := range [][]string{{"show", path}, {"show", "--metadata", path}} {
		code, stdout, stderr := runCLI(args...)
		if code != 0 || !strings.Contains(stdout, "finetune") {
			t.Fatalf("chat %v: exit %d, %.300q", args, code, stdout+stderr)
		}
		if bad := rawEscape(stdout); bad != "" {
			t.Errorf("chat %v: raw %q in the output", args, bad)
		}
		for _, line := range strings.Split(stdout, "\n") {
			if len(line) > 1000 {
				t.Errorf("chat %v: a line of %d bytes: %.120q", args, len(line), line)
			}
		}
	}
}
