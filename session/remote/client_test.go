package remote

import "testing"

// A server's error message is shown in the terminal: its escape sequences
// and control characters must not reach it.
func TestErrorMessageCleaned(t *testing.T) {
	for body, want := range map[string]string{
		`{"error":{"message":"no \u001b[2Jroom\nleft"}}`: "no room left",
		`{"error":"bad\u0007 model"}`:                    "bad model",
		`{"message":"\u009b31mred"}`:                     "red",
		"plain \x1b]0;title\x07text":                     "plain text",
	} {
		if got := errorMessage([]byte(body)); got != want {
			t.Errorf("errorMessage(%q) = %q, want %q", body, got, want)
		}
	}
}
