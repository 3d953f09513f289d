package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"chat/engine"
	"chat/models/testmodels"
)

// One request cannot make the server work or hold memory without bound:
// each of these is refused with the API's error, or answered within the
// context.
func TestHostileRequests(t *testing.T) {
	_, ts, _ := start(t, Options{})
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	j, _ := json.Marshal(testmodels.HostileName(1 << 20))
	long := strings.Trim(string(j), `"`) // a megabyte of escape sequences, as a JSON string's inside
	huge := strings.Repeat("a", 7<<20)
	manyBreakers := strings.TrimSuffix(strings.Repeat(`"ab",`, 1<<20), ",")
	manyIDs := strings.TrimSuffix(strings.Repeat("1,", 3<<20), ",")
	for _, c := range []struct {
		path, body string
		status     int
		want       string // in the error message
	}{
		{"/v1/chat/completions", `{` + msgs + `,"max_tokens":9223372036854775807}`, 400, "maximum context length"},
		{"/v1/completions", `{"prompt":"Once","max_tokens":9223372036854775807}`, 400, "maximum context length"},
		// Strings of the request come back in the error quoted and cut.
		{"/v1/chat/completions", `{"messages":[{"role":"` + long + `","content":"hi"}]}`, 400, "role \"evil"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"` + long + `"}]}]}`, 400, "parts of type \"evil"},
		{"/v1/chat/completions", `{"model":"` + long + `",` + msgs + `}`, 404, "The model \"evil"},
		{"/v1/chat/completions", `{` + msgs + `,"response_format":{"type":"` + long + `"}}`, 400, "response_format type \"evil"},
		{"/v1/chat/completions", `{` + msgs + `,"max_tokens":1` + strings.Repeat("0", 1<<20) + `}`, 400, "not valid JSON"},
		{"/v1/responses", `{"input":[{"type":"` + long + `"}]}`, 400, "items of type \"evil"},
		{"/v1/responses", `{"input":[{"role":"user","content":[{"type":"` + long + `"}]}]}`, 400, "parts of type \"evil"},
		{"/v1/responses", `{"input":"hi","text":{"format":{"type":"` + long + `"}}}`, 400, "text.format type \"evil"},
		{"/v1/responses", `{"input":"hi","max_output_tokens":9223372036854775807}`, 400, "maximum context length"},
		{"/v1/responses", `{"input":"` + huge + `"}`, 400, "the prompt is at least"},
		{"/v1/responses", `{"input":"hi","instructions":"` + huge + `"}`, 400, "the prompt is at least"},
		{"/v1/responses", `{"input":{"role":"user"}}`, 400, "input must be a text or a list of messages"},
		{"/v1/responses", `{"input":"hi","text":"json"}`, 400, "text must be an object, got string"},
		{"/api/chat", `{"model":"` + long + `",` + msgs + `}`, 404, "model \"evil"},
		{"/api/chat", `{` + msgs + `,"format":"` + long + `"}`, 400, "got \"evil"},
		// 7 MB of text is refused before it is tokenised (tooLong).
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"` + huge + `"}]}`, 400, "the prompt is at least"},
		{"/v1/completions", `{"prompt":"` + huge + `"}`, 400, "the prompt is at least"},
		{"/v1/completions", `{"prompt":["` + huge + `"]}`, 400, "the prompt is at least"},
		{"/api/chat", `{"messages":[{"role":"user","content":"` + huge + `"}]}`, 400, "the prompt is at least"},
		{"/api/generate", `{"prompt":"` + huge + `"}`, 400, "the prompt is at least"},
		{"/api/generate", `{"prompt":"` + huge + `","raw":true}`, 400, "the prompt is at least"},
		// /tokenize tokenised the whole 7 MB (and with_pieces sent back a
		// piece for each token), /detokenize decoded millions of ids.
		{"/tokenize", `{"content":"` + huge + `","with_pieces":true}`, 400, "the prompt is at least"},
		{"/detokenize", `{"tokens":[` + manyIDs + `]}`, 400, "maximum context length"},
		// One token id was read as a list of one empty string: the prompt
		// [99999999] was answered from an empty prompt.
		{"/v1/completions", `{"prompt":[99999999]}`, 400, "token 99999999 at index 0 is outside the vocabulary"},
		// A value of the wrong kind is named by its JSON field and kind, not
		// by the Go types it is read into ("Go struct field
		// chatRequest.max_tokens of type int").
		{"/v1/chat/completions", `{` + msgs + `,"max_tokens":"abc"}`, 400, "max_tokens must be a whole number, got string"},
		{"/v1/chat/completions", `{` + msgs + `,"seed":1e300}`, 400, "the request is not valid JSON for this endpoint: seed must be"}, // "knobs.seed": an embedded struct's Go name
		{"/v1/chat/completions", `{"messages":"hi"}`, 400, "messages must be an array, got string"},
		{"/api/chat", `{"messages":[{"role":"user","content":"hi"}],"options":{"temperature":"hot"}}`, 400, "options.temperature must be a number, got string"},
		{"/detokenize", `{"tokens":[1.5]}`, 400, "tokens must be a whole number, got number 1.5"},
		// Each DRY breaker is a pass over the vocabulary (and its ids kept):
		// a body of a million of them held the engine for minutes.
		{"/v1/chat/completions", `{` + msgs + `,"dry_multiplier":1,"dry_sequence_breakers":[` + manyBreakers + `]}`, 400, "dry_sequence_breakers"},
		{"/api/chat", `{` + msgs + `,"options":{"dry_multiplier":1,"dry_sequence_breakers":[` + manyBreakers + `]}}`, 400, "dry_sequence_breakers"},
	} {
		var code int
		var v map[string]any
		testmodels.Bounded(t, fmt.Sprintf("%s %.200s", c.path, c.body), func() error { code, v = post(t, ts.URL+c.path, c.body); return nil })
		msg := fmt.Sprint(v["error"])
		if code != c.status || !strings.Contains(msg, c.want) || len(msg) > 600 || strings.Contains(msg, "Go struct") {
			t.Errorf("%s %.200s: %d %.300s, want %d %q", c.path, c.body, code, msg, c.status, c.want)
		}
		// In the shape of the route's API: ollama's a string, the others an
		// object (writeErr's choice, which ollama's handlers take too).
		if _, ollama := v["error"].(string); ollama != strings.HasPrefix(c.path, "/api/") {
			t.Errorf("%s %.200s: error %.300s in another API's shape", c.path, c.body, msg)
		}
	}
	// And a prompt of one valid id is that id, not an empty text.
	code, v := post(t, ts.URL+"/v1/completions", `{"prompt":[5],"max_tokens":1}`)
	if u, _ := v["usage"].(map[string]any); code != 200 || u["prompt_tokens"] != 1.0 {
		t.Errorf("prompt [5]: %d, usage %v; want 1 prompt token", code, v["usage"])
	}
}

// A client that sends its headers and then trickles (here: withholds) its
// body gets 408 once bodyTimeout passes, instead of holding the connection.
func TestSlowBody(t *testing.T) {
	_, ts, _ := start(t, Options{})
	defer func(d time.Duration) { bodyTimeout = d }(bodyTimeout)
	bodyTimeout = time.Millisecond
	c, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("a withheld body: %s", resp.Status)
	}
}

// The server's own limits on slow and idle clients and on headers are set.
func TestHTTPServerLimits(t *testing.T) {
	hs := (&Server{}).httpServer(context.Background())
	if hs.ReadHeaderTimeout <= 0 || hs.IdleTimeout <= 0 || hs.MaxHeaderBytes <= 0 || hs.MaxHeaderBytes > 1<<20 || hs.ReadTimeout != 0 {
		t.Fatalf("ReadHeaderTimeout %v, IdleTimeout %v, MaxHeaderBytes %d, ReadTimeout %v (which would end long streams)",
			hs.ReadHeaderTimeout, hs.IdleTimeout, hs.MaxHeaderBytes, hs.ReadTimeout)
	}
}

// While every body slot is taken (clients sending bodies at once), a new
// request waits bodyTimeout for one and then gets 503; once a slot frees,
// requests are read again.
func TestBodySlots(t *testing.T) {
	_, ts, _ := start(t, Options{})
	saved := bodyTimeout
	defer func() { bodyTimeout = saved }()
	bodyTimeout = 20 * time.Millisecond
	for range cap(bodySlots) {
		bodySlots <- struct{}{}
	}
	body := `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}`
	code, v := post(t, ts.URL+"/v1/chat/completions", body)
	for range cap(bodySlots) {
		<-bodySlots
	}
	// The next body has the usual time to arrive: 20 ms also bounds its
	// read, which a loaded host may take longer to finish.
	bodyTimeout = saved
	if code != http.StatusServiceUnavailable || !strings.Contains(fmt.Sprint(v["error"]), "too many requests") {
		t.Fatalf("every slot taken: %d %v", code, v)
	}
	if code, v = post(t, ts.URL+"/v1/chat/completions", body); code != http.StatusOK {
		t.Fatalf("slots free again: %d %v", code, v)
	}
}

// tooLong's bound is a lower bound: no text tokenises to fewer than its
// bytes over longestToken, whatever its characters.
func TestTooLongBound(t *testing.T) {
	tok := storiesModel(t).Tokenizer()
	l := longestToken(tok)
	r := rand.New(rand.NewPCG(1, 2))
	texts := []string{"", "a", strings.Repeat(" ", 300), "Once upon a time, there was a little girl named Lily.", "日本語のテキスト 🙂🙂", "\x00\x01\xff\xfe", strings.Repeat("ab", 500)}
	for range 200 {
		b := make([]byte, r.IntN(200))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		texts = append(texts, string(b), strings.ToValidUTF8(string(b), "é"))
	}
	for _, s := range texts {
		if n := len(tok.Encode(s)); n < len(s)/l {
			t.Errorf("%q: %d tokens, below the bound %d/%d", s, n, len(s), l)
		}
	}
}

// A beam search whose client hangs up (best_of 16 to the end of the
// context) stops: the engine goes idle and every block is free again.
func TestBeamHangUp(t *testing.T) {
	s, ts, _ := start(t, Options{Engine: engine.Options{MaxSeqs: 4, MaxWaiting: 4}}) // warm's four requests at once
	base := warm(t, ts)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	body := `{"prompt":"Once upon a time","use_beam_search":true,"best_of":16,"n":16,"ignore_eos":true,"max_tokens":400}`
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/completions", strings.NewReader(body))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Logf("the search ended before the client hung up (%s)", resp.Status)
	}
	settle(t, s, ts, base)
	freeAfter(t, s)
}
