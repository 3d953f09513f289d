package serve

import (
	"fmt"
	"strings"
	"testing"

	"chat/models/testmodels"
)

// One request cannot make the server work or hold memory without bound:
// each of these is refused with the API's error, or answered within the
// context.
func TestHostileRequests(t *testing.T) {
	_, ts, _ := start(t, Options{})
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	for _, c := range []struct {
		path, body string
		status     int
		want       string // in the error message
	}{
		{"/v1/chat/completions", `{` + msgs + `,"max_tokens":9223372036854775807}`, 400, "maximum context length"},
		{"/v1/completions", `{"prompt":"Once","max_tokens":9223372036854775807}`, 400, "maximum context length"},
	} {
		var code int
		var v map[string]any
		testmodels.Bounded(t, c.body, func() error { code, v = post(t, ts.URL+c.path, c.body); return nil })
		msg := fmt.Sprint(v["error"])
		if code != c.status || !strings.Contains(msg, c.want) {
			t.Errorf("%s %.200s: %d %.300s, want %d %q", c.path, c.body, code, msg, c.status, c.want)
		}
	}
}
