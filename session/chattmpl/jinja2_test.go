package chattmpl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAgainstJinja2 renders every *.jinja in $CHAT_TEMPLATES (e.g. llama.cpp's
// models/templates) with our renderer and with Python's jinja2 configured as
// transformers' apply_chat_template (scripts/render-chat-template.py), for
// several conversations, and reports each difference. A conversation that
// makes jinja2 raise must make ours fail too (the caller then falls back).
func TestAgainstJinja2(t *testing.T) {
	dir := os.Getenv("CHAT_TEMPLATES")
	if dir == "" {
		t.Skip("set CHAT_TEMPLATES=/path/to/dir/of/*.jinja to compare templates with Python's jinja2")
	}
	if err := exec.Command("python3", "-c", "import jinja2").Run(); err != nil {
		t.Skipf("python3 with jinja2 is needed: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.jinja"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no *.jinja in CHAT_TEMPLATES=%s (%v)", dir, err)
	}
	cases := jinja2Cases()
	agree := 0
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".jinja")
		want, err := renderPython(file, cases)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		j, cerr := compileJinja(string(src))
		ok := true
		for i, c := range cases {
			var got string
			err := cerr
			if err == nil {
				got, err = j.execute(c.msgs, c.gen, c.BOS, c.EOS, func() time.Time { return jinja2Now })
			}
			w := want[i]
			switch {
			case w.Error != "" && err == nil:
				t.Errorf("%s/%s: jinja2 raised %q, ours rendered %q", name, c.name, w.Error, got)
			case w.Error == "" && err != nil:
				t.Errorf("%s/%s: ours failed: %v", name, c.name, err)
			case w.Error == "" && got != *w.Text:
				t.Errorf("%s/%s: %s", name, c.name, firstDiff(got, *w.Text))
			default:
				continue
			}
			ok = false
		}
		if ok {
			agree++
		}
	}
	t.Logf("%d of %d templates agree with jinja2 on all %d conversations", agree, len(files), len(cases))
}

// jinja2Now is strftime_now's clock on both sides.
var jinja2Now = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

type jinja2Case struct {
	name     string
	msgs     []Message
	gen      bool
	BOS, EOS string
}

// jinja2Cases are the conversations each template renders: with and without
// a system message, one turn and several, with and without the generation
// prompt, and contents whose quotes, newlines, unicode, outer spaces and
// special-token look-alikes a template could mishandle.
func jinja2Cases() []jinja2Case {
	tricky := "  He said \"hi\" and 'bye'\\n\n\tnaïve — 日本語 🙂 <|im_end|></s><|eot_id|> {{ x }} {% raw %}  "
	convs := []struct {
		name string
		msgs []Message
	}{
		{"user", []Message{{"user", "Hello!"}}},
		{"system-user", []Message{{"system", "You are a helpful assistant."}, {"user", "Hello!"}}},
		{"multi", []Message{{"user", "Hello!"}, {"assistant", "Hi there. How can I help?"}, {"user", "What is 2+2?"}}},
		{"system-multi", []Message{{"system", "Be brief."}, {"user", "Hello!"}, {"assistant", "Hi there."}, {"user", "What is 2+2?"}, {"assistant", "4"}}},
		{"tricky", []Message{{"system", tricky}, {"user", tricky}, {"assistant", tricky}, {"user", tricky}}},
		{"blank", []Message{{"user", " "}, {"assistant", ""}, {"user", "\n"}}},
		{"thinking", []Message{{"user", "Hi"}, {"assistant", "<think>\nhmm\n</think>\n\nHello!"}, {"user", "Bye"}}},
		{"assistant-first", []Message{{"assistant", "Welcome."}, {"user", "Hi"}}},
		{"users", []Message{{"system", "S"}, {"user", "a"}, {"user", "b"}}},
		{"system-only", []Message{{"system", "Only a system prompt."}}},
	}
	var out []jinja2Case
	for _, c := range convs {
		for _, gen := range []bool{true, false} {
			name := c.name
			if gen {
				name += "+gen"
			}
			out = append(out, jinja2Case{name: name, msgs: c.msgs, gen: gen, BOS: "<s>", EOS: "</s>"})
		}
	}
	return out
}

type jinja2Result struct {
	Text  *string `json:"text"`
	Error string  `json:"error"`
}

// renderPython renders cases with scripts/render-chat-template.py.
func renderPython(file string, cases []jinja2Case) ([]jinja2Result, error) {
	type msg struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	type pyCase struct {
		Messages []msg  `json:"messages"`
		Gen      bool   `json:"add_generation_prompt"`
		BOS      string `json:"bos_token"`
		EOS      string `json:"eos_token"`
		Now      string `json:"now"`
	}
	in := make([]pyCase, len(cases))
	for i, c := range cases {
		in[i] = pyCase{Gen: c.gen, BOS: c.BOS, EOS: c.EOS, Now: jinja2Now.Format("2006-01-02T15:04:05")}
		for _, m := range c.msgs {
			in[i].Messages = append(in[i].Messages, msg{m.Role, m.Content})
		}
	}
	data, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("python3", "../../scripts/render-chat-template.py", file)
	cmd.Stdin = bytes.NewReader(data)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("render-chat-template.py: %v: %s", err, stderr.String())
	}
	var res []jinja2Result
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(cases) {
		return nil, fmt.Errorf("render-chat-template.py: bad output (%v): %.200s", err, out)
	}
	return res, nil
}

// firstDiff describes where got departs from want.
func firstDiff(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(i-40, 0)
	return fmt.Sprintf("differs at byte %d:\n  ours   %q\n  jinja2 %q", i, got[from:min(i+60, len(got))], want[from:min(i+60, len(want))])
}
