package course

import (
	"strings"
	"testing"
	"unicode"
)

// A checkpoint config's strings and values are quoted and cut in errors: a
// hostile config gets one short line without control characters.
func TestHostileConfigInMessages(t *testing.T) {
	long := "evil" + strings.Repeat("\x1b[2J\x1b]0;pwned\x07\r\n\bx", 1<<20/20)
	cases := []struct {
		edit map[string]any
		want string
	}{
		{map[string]any{"arch": long}, "is unknown"},
		{map[string]any{"arch": []any{long}}, "want a string"},
		{map[string]any{"attention": long}, "is unknown"},
		{map[string]any{"attention": []any{long}}, "want \"gqa\""},
		{map[string]any{"n_head": long}, "want an integer"},
		{map[string]any{"rope_theta": long}, "want a number"},
		{map[string]any{"qk_norm": long}, "want a bool"},
	}
	for _, tc := range cases {
		raw := synthConfigs()["modern"]
		for k, v := range tc.edit {
			raw[k] = v
		}
		_, err := newModel("synth.pt", map[string]tensor{}, raw)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("error %.200q, want it to contain %q", err, tc.want)
		}
		msg := err.Error()
		if len(msg) >= 300 {
			t.Errorf("error of %d bytes: %.200q...", len(msg), msg)
		}
		if i := strings.IndexFunc(msg, unicode.IsControl); i >= 0 {
			t.Errorf("error holds control character %q: %.200q", msg[i], msg)
		}
	}
}
