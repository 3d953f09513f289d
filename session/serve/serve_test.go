package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"chat/config/settings"
	"chat/engine"
	"chat/engine/sampler"
	"chat/models"
	"chat/models/gguf"
	"chat/models/load"
	"chat/models/testmodels"
	"chat/session"
	"chat/session/remote"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

var (
	storiesOnce sync.Once
	stories     models.Model
	storiesErr  error
)

// storiesModel is stories260K.gguf, loaded once for every test.
func storiesModel(t testing.TB) models.Model {
	path := testmodels.Path(t, "stories260K/stories260K.gguf")
	storiesOnce.Do(func() { stories, storiesErr = load.Open(path) })
	if storiesErr != nil {
		t.Fatal(storiesErr)
	}
	return stories
}

// start serves stories260K on a test server and returns it with an OpenAI
// client pointed at it.
func start(t testing.TB, o Options) (*Server, *httptest.Server, openai.Client) {
	t.Helper()
	return startModel(t, storiesModel(t), o)
}

// startModel serves m on a test server, with an OpenAI client.
func startModel(t testing.TB, m models.Model, o Options) (*Server, *httptest.Server, openai.Client) {
	t.Helper()
	s, err := New(m, o)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	key := o.APIKey
	if key == "" {
		key = "none"
	}
	c := openai.NewClient(option.WithBaseURL(ts.URL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	return s, ts, c
}

var questions = []string{"Once upon a time", "Lily went to the park.", "Tom had a red ball", "The cat sat", "A big dog ran",
	"Sue found a box", "The sun was hot", "Ben and Mia played", "One day, a bird", "The little boat",
	"Max was sad", "Anna liked cake", "There was a tree", "The king said", "Sam saw a frog", "It was raining"}

// headless is what `chat MODEL --chat --greedy -n N --prompt Q` prints for
// one message: the session, as main's headless run drives it.
func headless(t *testing.T, q string, n int) string {
	v := settings.Defaults("chat")
	v.Mode, v.MaxTokens = "chat", n
	v.Sampler.Greedy = true
	s, err := session.New(storiesModel(t), session.Options{Settings: v})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Send(q); err != nil {
		t.Fatal(err)
	}
	return s.Wait().Text
}

func greedyChat(q string, n int64) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: "stories260K", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(q)},
		Temperature: openai.Float(0), MaxTokens: openai.Int(n)}
}

// TestGreedyMatchesHeadless: greedy replies through the server equal the
// headless session's for the same message, one request at a time and 16
// at once (the engine batching them).
func TestGreedyMatchesHeadless(t *testing.T) {
	_, _, c := start(t, Options{Engine: engine.Options{MaxSeqs: 16, MaxWaiting: 16, MaxBatchTokens: 32}})
	want := make([]string, len(questions))
	for i, q := range questions {
		want[i] = headless(t, q, 48)
	}
	for i, q := range questions[:4] {
		r, err := c.Chat.Completions.New(context.Background(), greedyChat(q, 48))
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Choices[0].Message.Content; got != want[i] {
			t.Fatalf("%q alone: %q, headless %q", q, got, want[i])
		}
	}
	got := make([]string, len(questions))
	var wg sync.WaitGroup
	for i, q := range questions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.Chat.Completions.New(context.Background(), greedyChat(q, 48))
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = r.Choices[0].Message.Content
		}()
	}
	wg.Wait()
	for i := range questions {
		if got[i] != want[i] {
			t.Errorf("%q among 16: %q, headless %q", questions[i], got[i], want[i])
		}
	}
}

// TestStreamUsageStopSeed: a stream with include_usage gives the text of
// the same request without streaming, then the usage; a stop string cuts
// the text; the same seed gives the same sampled text.
func TestStreamUsageStopSeed(t *testing.T) {
	_, _, c := start(t, Options{Engine: engine.Options{MaxSeqs: 4, MaxWaiting: 4}})
	ctx := context.Background()
	p := greedyChat("Once upon a time", 40)
	whole, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	st := c.Chat.Completions.NewStreaming(ctx, p)
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for st.Next() {
		acc.AddChunk(st.Current())
		chunks++
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; got != whole.Choices[0].Message.Content || chunks < 3 {
		t.Errorf("streamed %q in %d chunks, whole %q", got, chunks, whole.Choices[0].Message.Content)
	}
	if acc.Usage.CompletionTokens == 0 || acc.Usage.PromptTokens != whole.Usage.PromptTokens ||
		acc.Usage.TotalTokens != acc.Usage.PromptTokens+acc.Usage.CompletionTokens || acc.Usage.CompletionTokens != whole.Usage.CompletionTokens {
		t.Errorf("stream usage %+v, whole %+v", acc.Usage, whole.Usage)
	}
	if fr := acc.Choices[0].FinishReason; fr != whole.Choices[0].FinishReason || fr == "" {
		t.Errorf("finish reasons %q and %q", fr, whole.Choices[0].FinishReason)
	}

	text := whole.Choices[0].Message.Content
	stop := text[len(text)/2 : len(text)/2+3]
	p = greedyChat("Once upon a time", 40)
	p.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"zzz", stop}}
	cut, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if want := text[:strings.Index(text, stop)]; cut.Choices[0].Message.Content != want || cut.Choices[0].FinishReason != "stop" {
		t.Errorf("stop %q: %q (%s), want %q", stop, cut.Choices[0].Message.Content, cut.Choices[0].FinishReason, want)
	}

	sampled := func(seed int64) string {
		p := greedyChat("Tom had a red ball", 30)
		p.Temperature, p.Seed, p.TopP = openai.Float(1), openai.Int(seed), openai.Float(0.95)
		r, err := c.Chat.Completions.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return r.Choices[0].Message.Content
	}
	a, b, d := sampled(7), sampled(7), sampled(8)
	if a != b {
		t.Errorf("seed 7 gave %q then %q", a, b)
	}
	if a == d {
		t.Errorf("seeds 7 and 8 both gave %q", a)
	}
}

// TestLogprobsAndCompletions: chat logprobs name each token with its top
// alternatives (greedy: the token is the top one); /v1/completions
// continues a text.
func TestLogprobsAndCompletions(t *testing.T) {
	_, _, c := start(t, Options{})
	ctx := context.Background()
	p := greedyChat("Lily went to the park.", 12)
	p.Logprobs, p.TopLogprobs = openai.Bool(true), openai.Int(3)
	r, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	lps := r.Choices[0].Logprobs.Content
	var text strings.Builder
	for _, lp := range lps {
		if len(lp.TopLogprobs) != 3 || lp.TopLogprobs[0].Token != lp.Token || lp.Logprob > 0 || lp.TopLogprobs[1].Logprob > lp.TopLogprobs[0].Logprob {
			t.Fatalf("logprob %+v", lp)
		}
		text.WriteString(lp.Token)
	}
	if len(lps) == 0 || text.String() != r.Choices[0].Message.Content {
		t.Errorf("%d logprob tokens spell %q; the reply is %q", len(lps), text.String(), r.Choices[0].Message.Content)
	}
	cr, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: "stories260K",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")}, MaxTokens: openai.Int(20), Temperature: openai.Float(0)})
	if err != nil {
		t.Fatal(err)
	}
	if cr.Choices[0].Text == "" || cr.Usage.CompletionTokens != 20 || cr.Choices[0].FinishReason != "length" {
		t.Errorf("completion %q, usage %+v, %s", cr.Choices[0].Text, cr.Usage, cr.Choices[0].FinishReason)
	}
	ms, err := c.Models.List(ctx)
	if err != nil || len(ms.Data) != 1 || ms.Data[0].ID != "stories260K" {
		t.Errorf("models: %v %+v", err, ms)
	}
	if m, err := c.Models.Get(ctx, "stories260K"); err != nil || m.ID != "stories260K" {
		t.Errorf("model: %v %+v", err, m)
	}
	var ae *openai.Error
	if _, err := c.Models.Get(ctx, "gpt-4o"); !errors.As(err, &ae) || ae.StatusCode != http.StatusNotFound || ae.Code != "model_not_found" {
		t.Errorf("another model: %v", err)
	}
}

// TestErrors: each error case has the OpenAI shape and its status.
func TestErrors(t *testing.T) {
	ctx := context.Background()
	status := func(err error) (int, string) {
		var ae *openai.Error
		if !errors.As(err, &ae) {
			t.Fatalf("not an API error: %v", err)
		}
		return ae.StatusCode, ae.Code
	}
	held := newHeld(storiesModel(t))
	_, ts, c := startModel(t, held, Options{Engine: engine.Options{MaxSeqs: 1}})
	t.Cleanup(held.free) // before the server closes, should the test stop early
	p := greedyChat("hi", 5)
	p.Temperature = openai.Float(3)
	if _, err := c.Chat.Completions.New(ctx, p); err == nil {
		t.Error("temperature 3 accepted")
	} else if st, _ := status(err); st != 400 {
		t.Errorf("temperature 3: %d", st)
	}
	p = greedyChat("hi", 5)
	p.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: make([]string, 17)}
	if _, err := c.Chat.Completions.New(ctx, p); err == nil {
		t.Error("17 stop strings accepted")
	} else if st, _ := status(err); st != 400 {
		t.Errorf("17 stop strings: %d", st)
	}
	p = greedyChat("hi", 5)
	p.Model = "gpt-9"
	if _, err := c.Chat.Completions.New(ctx, p); err == nil {
		t.Error("unknown model accepted")
	} else if st, code := status(err); st != 404 || code != "model_not_found" {
		t.Errorf("unknown model: %d %s", st, code)
	}
	long := strings.Repeat("Once upon a time there was a dog. ", 1000)
	if _, err := c.Chat.Completions.New(ctx, greedyChat(long, 5)); err == nil {
		t.Error("an overlong prompt accepted")
	} else if st, code := status(err); st != 400 || code != "context_length_exceeded" {
		t.Errorf("overlong prompt: %d %s", st, code)
	}
	if _, err := c.Chat.Completions.New(ctx, greedyChat("hi", 100000)); err == nil {
		t.Error("max_tokens past the context accepted")
	} else if st, code := status(err); st != 400 || code != "context_length_exceeded" {
		t.Errorf("max_tokens past the context: %d %s", st, code)
	}
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(strings.Repeat(" ", maxBody+10)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Errorf("a huge body: %d", resp.StatusCode)
	}
	resp, err = http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader("{"))
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Error struct{ Message, Type string } `json:"error"`
	}
	json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != 400 || body.Error.Type != "invalid_request_error" || body.Error.Message == "" {
		t.Errorf("bad JSON: %d %+v", resp.StatusCode, body)
	}

	// Full and not queueing: 503 while one reply runs. The reply is held
	// after its first 20 passes (its first chunk), so it is still running
	// when the second request comes: stories260K made its 400 tokens
	// before that under GOMAXPROCS=1, and the second was accepted.
	sctx, cancel := context.WithCancel(ctx)
	held.holdAfter(20)
	st := c.Chat.Completions.NewStreaming(sctx, greedyChat("Once upon a time", 400))
	if !st.Next() {
		t.Fatal(st.Err())
	}
	// (The refusal does not wait for the held step: Bounded fails rather
	// than hangs if it does.)
	if err := testmodels.Bounded(t, "a request on a full server", func() error {
		_, err := c.Chat.Completions.New(ctx, greedyChat("hi", 5))
		return err
	}); err == nil {
		t.Error("a second request on a full server accepted")
	} else if st, _ := status(err); st != 503 {
		t.Errorf("full server: %d", st)
	}
	cancel()
	held.free()
	st.Close()

	// With a key: 401 without it, fine with it.
	_, kts, keyed := start(t, Options{APIKey: "sekrit"})
	wrong := openai.NewClient(option.WithBaseURL(kts.URL+"/v1/"), option.WithMaxRetries(0), option.WithAPIKey("wrong"))
	if _, err := wrong.Chat.Completions.New(ctx, greedyChat("hi", 3)); err == nil {
		t.Error("a wrong key accepted")
	} else if st, code := status(err); st != 401 || code != "invalid_api_key" {
		t.Errorf("wrong key: %d %s", st, code)
	}
	if _, err := keyed.Chat.Completions.New(ctx, greedyChat("hi", 3)); err != nil {
		t.Errorf("the right key: %v", err)
	}
}

// TestKnobs: the request's sampling fields become the sampler's (vLLM's
// top_k, min_p and repetition_penalty too; temperature 0 is greedy);
// GET /health answers without a key.
func TestKnobs(t *testing.T) {
	var k knobs
	body := `{"temperature":0,"top_p":0.9,"top_k":7,"min_p":0.1,"presence_penalty":0.5,"frequency_penalty":0.25,"repetition_penalty":1.1,"seed":5}`
	if err := json.Unmarshal([]byte(body), &k); err != nil {
		t.Fatal(err)
	}
	p, e := k.params()
	if e != nil || !p.Greedy || p.TopP != 0.9 || p.TopK != 7 || p.MinP != 0.1 || p.PresencePenalty != 0.5 ||
		p.FrequencyPenalty != 0.25 || p.RepeatPenalty != 1.1 || p.Seed != 5 {
		t.Errorf("params %+v, %v", p, e)
	}
	_, ts, _ := start(t, Options{APIKey: "k"})
	if resp, err := http.Get(ts.URL + "/health"); err != nil || resp.StatusCode != 200 {
		t.Errorf("/health: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}

// TestCheckAddr: loopback without a key, anything else only with one.
func TestCheckAddr(t *testing.T) {
	for addr, ok := range map[string]bool{"127.0.0.1:8080": true, "localhost:1": true, "[::1]:80": true,
		":8080": false, "0.0.0.0:8080": false, "192.168.1.2:80": false, "nonsense": false,
		// Bug: a port out of range (llama-server's --port 99999) failed only
		// at listen, after the model loaded, with exit status 1.
		"127.0.0.1:99999": false, "127.0.0.1:-1": false, "127.0.0.1:0": true} {
		if err := CheckAddr(addr, ""); (err == nil) != ok {
			t.Errorf("%s without a key: %v", addr, err)
		}
	}
	if err := CheckAddr("0.0.0.0:8080", "k"); err != nil {
		t.Errorf("with a key: %v", err)
	}
}

// settle waits until the engine runs nothing and the goroutines are back
// to n (the HTTP server's idle connections are closed first).
func settle(t *testing.T, s *Server, ts *httptest.Server, n int) {
	t.Helper()
	ts.CloseClientConnections()
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(testmodels.HangAfter)
	for {
		l := s.Engine().Load()
		g := runtime.NumGoroutine()
		if l.Running == 0 && l.Waiting == 0 && g <= n {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("load %+v, %d goroutines (started with %d)\n%s", l, g, n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// warm runs a few requests (which start the kernels' worker goroutines)
// and returns the goroutine count after them.
func warm(t *testing.T, ts *httptest.Server) int {
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := rawStream(ts.URL, questions[i], 8, -1); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	ts.CloseClientConnections()
	http.DefaultClient.CloseIdleConnections()
	time.Sleep(50 * time.Millisecond)
	return runtime.NumGoroutine()
}

// freeAfter checks that, with the prefix cache emptied, every block of the
// pool is free again.
func freeAfter(t *testing.T, s *Server) {
	t.Helper()
	if err := s.Engine().ClearCache(); err != nil {
		t.Fatal(err)
	}
	if l := s.Engine().Load(); l.PoolUsed != 0 {
		t.Errorf("%d of %d blocks still held", l.PoolUsed, l.PoolBlocks)
	}
}

// Test64Streams: 64 streams at once all complete; then the goroutines and
// the free blocks are back where they started.
func Test64Streams(t *testing.T) {
	s, ts, _ := start(t, Options{Engine: engine.Options{MaxSeqs: 16, MaxWaiting: 64, MaxBatchTokens: 64}})
	base := warm(t, ts)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, fr, err := rawStream(ts.URL, questions[i%len(questions)], 32, -1)
			if err == nil && (n == 0 || fr == "") {
				err = fmt.Errorf("stream %d: %d chunks, finish %q", i, n, fr)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	settle(t, s, ts, base)
	freeAfter(t, s)
}

// Test100Disconnects: 100 clients that hang up in the middle of their
// stream leave no running reply, goroutine or held block behind.
func Test100Disconnects(t *testing.T) {
	s, ts, _ := start(t, Options{Engine: engine.Options{MaxSeqs: 8, MaxWaiting: 100, MaxBatchTokens: 32}})
	base := warm(t, ts)
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := rawStream(ts.URL, questions[i%len(questions)], 400, 1+i%3); err != nil && !errors.Is(err, errHungUp) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	settle(t, s, ts, base)
	freeAfter(t, s)
	if l := s.Engine().Load(); l.PromptTokens == 0 {
		t.Error("no request reached the engine")
	}
	if n := testutil.ToFloat64(s.met.success.WithLabelValues("abort")); n < 50 {
		t.Errorf("only %v of 100 hung-up requests ended as aborted", n)
	}
}

var errHungUp = errors.New("hung up")

// rawStream streams a chat completion with plain HTTP, hanging up after
// hangup chunks (-1: read to the end). It returns the chunks read and the
// finish reason.
func rawStream(url, q string, n, hangup int) (int, string, error) {
	body := fmt.Sprintf(`{"model":"stories260K","stream":true,"temperature":0.7,"seed":1,"max_tokens":%d,"messages":[{"role":"user","content":%q}]}`, n, q)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/chat/completions", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return 0, "", fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	chunks, finish := 0, ""
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			return chunks, "", err
		}
		chunks++
		if len(c.Choices) > 0 && c.Choices[0].FinishReason != nil {
			finish = *c.Choices[0].FinishReason
		}
		if chunks == hangup {
			return chunks, "", errHungUp
		}
	}
	return chunks, finish, sc.Err()
}

// TestOllama: /api/chat streams JSON lines ending with done and counts;
// /api/generate answers one object; /api/tags lists the model.
func TestOllama(t *testing.T) {
	_, ts, _ := start(t, Options{})
	resp, err := http.Post(ts.URL+"/api/chat", "application/json", strings.NewReader(
		`{"model":"stories260K:latest","messages":[{"role":"user","content":"Once upon a time"}],"options":{"temperature":0,"num_predict":20}}`))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	lines, done := 0, map[string]any{}
	var text strings.Builder
	for sc.Scan() {
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		lines++
		text.WriteString(l["message"].(map[string]any)["content"].(string))
		if l["done"] == true {
			done = l
		}
	}
	resp.Body.Close()
	if lines < 2 || done["eval_count"] != float64(20) || done["done_reason"] != "length" || text.Len() == 0 {
		t.Errorf("%d lines, %q, last %v", lines, text.String(), done)
	}
	resp, err = http.Post(ts.URL+"/api/generate", "application/json", strings.NewReader(
		`{"model":"stories260K","prompt":"Once upon a time","raw":true,"stream":false,"options":{"temperature":0,"num_predict":10}}`))
	if err != nil {
		t.Fatal(err)
	}
	var g map[string]any
	json.NewDecoder(resp.Body).Decode(&g)
	resp.Body.Close()
	if g["done"] != true || g["response"] == "" || g["eval_count"] != float64(10) {
		t.Errorf("generate: %v", g)
	}
	resp, err = http.Get(ts.URL + "/api/tags")
	if err != nil {
		t.Fatal(err)
	}
	var tags struct{ Models []struct{ Name string } }
	json.NewDecoder(resp.Body).Decode(&tags)
	resp.Body.Close()
	if len(tags.Models) != 1 || tags.Models[0].Name != "stories260K:latest" {
		t.Errorf("tags: %+v", tags)
	}
	resp, _ = http.Post(ts.URL+"/api/chat", "application/json", strings.NewReader(`{"model":"llama3","messages":[]}`))
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("unknown ollama model: %d", resp.StatusCode)
	}
	// Bug: images, a template override and a fill-in-the-middle suffix were
	// dropped without a word, so the reply answered another request.
	for path, body := range map[string]string{
		"/api/generate":   `{"model":"stories260K","prompt":"What is this?","images":["aGk="]}`,
		"/api/chat":       `{"model":"stories260K","messages":[{"role":"user","content":"What is this?","images":["aGk="]}]}`,
		"/api/generate ":  `{"model":"stories260K","prompt":"Once","template":"{{ .Prompt }}"}`,
		"/api/generate  ": `{"model":"stories260K","prompt":"def f(","suffix":"return x"}`,
	} {
		resp, err := http.Post(ts.URL+strings.TrimSpace(path), "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Error string }
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(e.Error, "not supported") {
			t.Errorf("%s %s: %d %q", path, body, resp.StatusCode, e.Error)
		}
	}
}

// TestMetricsText: /metrics is Prometheus text that the remote client reads
// as a chat server reporting every figure, after a request.
func TestMetricsText(t *testing.T) {
	_, ts, c := start(t, Options{})
	if _, err := c.Chat.Completions.New(context.Background(), greedyChat("Once upon a time", 8)); err != nil {
		t.Fatal(err)
	}
	m, err := remote.ParseMetrics(strings.NewReader(scrape(t, ts.URL)))
	if err != nil {
		t.Fatal(err)
	}
	if m.Server != "chat" || m.GenTokens != 8 || m.PromptTokens == 0 || m.KVUsage <= 0 || m.Running != 0 || len(m.Missing()) != 0 {
		t.Errorf("%+v, missing %v", m, m.Missing())
	}
}

// scrape is the server's /metrics text.
func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s, %v", resp.Status, err)
	}
	return string(b)
}

// A model name that is not UTF-8 (general.name is any bytes) is served as
// the id clients see, U+FFFD for each bad byte: it once panicked at start,
// as a /metrics label.
func TestNameNotUTF8(t *testing.T) {
	s, ts, c := start(t, Options{Name: "ev\x9bil\xff"})
	if s.Name() != "ev\uFFFDil\uFFFD" {
		t.Errorf("name %q", s.Name())
	}
	p := greedyChat("hi", 3)
	p.Model = s.Name()
	if _, err := c.Chat.Completions.New(context.Background(), p); err != nil {
		t.Errorf("the served id is refused: %v", err)
	}
	scrape(t, ts.URL) // a 200
}

// TestPreemptionKeepsGreedy: 16 requests at once in a pool too small for
// them all (so sequences are preempted and recomputed) still give each the
// headless greedy reply.
func TestPreemptionKeepsGreedy(t *testing.T) {
	// The first request's prefill is held until every other request is
	// inside engine.Start (waiting for the pool the held step has): they
	// then run together. Sent as they came, under GOMAXPROCS=1 the first
	// replies ended before the last requests arrived, and the pool was
	// never short.
	held := newHeld(storiesModel(t))
	s, _, c := startModel(t, held, Options{Engine: engine.Options{MaxSeqs: 16, MaxWaiting: 16, MaxBatchTokens: 48, KVMem: 1}})
	t.Cleanup(held.free)
	held.holdAfter(0)
	got := make([]string, len(questions))
	var wg sync.WaitGroup
	ask := func(i int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.Chat.Completions.New(context.Background(), greedyChat(questions[i], 200))
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = r.Choices[0].Message.Content
		}()
	}
	ask(0)
	<-held.onHold
	for i := 1; i < len(questions); i++ {
		ask(i)
	}
	for s.Engine().Starting() < len(questions)-1 {
		time.Sleep(time.Millisecond)
	}
	held.free()
	wg.Wait()
	l := s.Engine().Load()
	if l.Preemptions == 0 {
		t.Errorf("no preemption in a pool of %d blocks", l.PoolBlocks)
	}
	for i, q := range questions {
		if want := headless(t, q, 200); got[i] != want {
			t.Errorf("%q: %q, headless %q", q, got[i], want)
		}
	}
}

// A client may name the model by the file chat serve was given
// (ollama's users type what they pulled): with or without its extension.
func TestModelByFileName(t *testing.T) {
	_, _, c := start(t, Options{File: "/models/my-story.gguf"})
	ctx := context.Background()
	for _, name := range []string{"my-story.gguf", "my-story", "stories260K"} {
		if _, err := c.Models.Get(ctx, name); err != nil {
			t.Errorf("model %q: %v", name, err)
		}
	}
	for _, name := range []string{"models", "my-story.bin", "my"} {
		if _, err := c.Models.Get(ctx, name); err == nil {
			t.Errorf("model %q accepted", name)
		}
	}
}

// heldModel is a model whose forward passes from the holdFrom-th on (0:
// none) wait for release: a reply then stays running, however fast the
// model is and however late the test gets to look.
type heldModel struct {
	models.Model
	calls    atomic.Int64
	holdFrom atomic.Int64
	release  chan struct{}
	once     sync.Once
	onHold   chan struct{} // a pass is held
}

type heldRunner struct {
	models.Runner
	m *heldModel
}

func newHeld(m models.Model) *heldModel {
	return &heldModel{Model: m, release: make(chan struct{}), onHold: make(chan struct{}, 1)}
}

func (m *heldModel) NewRunner() models.Runner { return heldRunner{m.Model.NewRunner(), m} }

// GGUF is the held GGUF model's file, whose chat template the server uses.
func (m *heldModel) GGUF() *gguf.File { return m.Model.(interface{ GGUF() *gguf.File }).GGUF() }

// free releases the held passes (once).
func (m *heldModel) free() { m.once.Do(func() { close(m.release) }) }

// holdAfter holds every pass after the next n.
func (m *heldModel) holdAfter(n int64) { m.holdFrom.Store(m.calls.Load() + n + 1) }

func (r heldRunner) Forward(b *models.Batch, kv []models.KV) ([]float32, error) {
	if h := r.m.holdFrom.Load(); r.m.calls.Add(1) >= h && h > 0 {
		select {
		case r.m.onHold <- struct{}{}:
		default:
		}
		<-r.m.release
	}
	return r.Runner.Forward(b, kv)
}

// renamed is a model with another Info().Name.
type renamed struct {
	models.Model
	name string
}

func (r renamed) Info() models.Info { i := r.Model.Info(); i.Name = r.name; return i }

// The default model id is the model's name with a model file's extension
// dropped, not whatever follows a dot: Llama 3.2's general.name was served
// as "Llama 3".
func TestDefaultNameKeepsDots(t *testing.T) {
	for name, want := range map[string]string{
		"Llama 3.2 1B Instruct": "Llama 3.2 1B Instruct",
		"Qwen2.5 0.5B Instruct": "Qwen2.5 0.5B Instruct",
		"student.pt":            "student",
		"stories260K.gguf":      "stories260K",
	} {
		s, _, _ := startModel(t, renamed{storiesModel(t), name}, Options{})
		if s.Name() != want {
			t.Errorf("general.name %q: id %q, want %q", name, s.Name(), want)
		}
	}
}

// decodeBody reads body into v as a request handler does.
func decodeBody(t *testing.T, body string, v any) {
	t.Helper()
	if e := decode(httptest.NewRecorder(), httptest.NewRequest("POST", "/", strings.NewReader(body)), v); e != nil {
		t.Fatalf("%s: %s", body, e.err.Message)
	}
}

// TestPeerKnobs: llama-server's further sampler fields at an OpenAI
// request's top level, and ollama's in its options, become the sampler's;
// the knobs not given keep llama.cpp's defaults (all off), and a bad value
// gets the flag's message.
func TestPeerKnobs(t *testing.T) {
	body := `{"temperature":0.7,"dry_multiplier":0.8,"dry_base":2,"dry_allowed_length":3,"dry_penalty_last_n":64,
		"dry_sequence_breakers":["\n","::"],"top_n_sigma":1.5,"typical_p":0.9,"xtc_probability":0.5,"xtc_threshold":"0.2","unknown":1}`
	var k knobs
	decodeBody(t, body, &k)
	p, e := k.params()
	if e != nil || p.Temperature != 0.7 || p.DRYMultiplier != 0.8 || p.DRYBase != 2 || p.DRYAllowedLength != 3 || p.DRYPenaltyLastN != 64 ||
		!slices.Equal(sampler.SplitBreakers(p.DRYBreakers), []string{"\n", "::"}) || p.TopNSigma != 1.5 || p.TypicalP != 0.9 ||
		p.XTCProbability != 0.5 || p.XTCThreshold != 0.2 || p.Mirostat != 0 || p.MirostatTau != 5 || p.MirostatEta != 0.1 {
		t.Errorf("params %+v, %v", p, e)
	}
	// Without them: llama.cpp's defaults, every one off.
	var plain knobs
	decodeBody(t, `{"temperature":0.7}`, &plain)
	if p, _ := plain.params(); p.DRYMultiplier != 0 || p.DRYBase != 1.75 || sampler.JoinBreakers(sampler.DefaultBreakers) != p.DRYBreakers ||
		p.TopNSigma > 0 || p.TypicalP != 1 || p.XTCProbability != 0 || p.Mirostat != 0 {
		t.Errorf("defaults %+v", p)
	}
	var o ollamaRequest
	decodeBody(t, `{"model":"m","prompt":"x","mirostat":1,"options":{"mirostat":2,"mirostat_tau":4,"mirostat_eta":0.2,"typical_p":0.5}}`, &o)
	var q sampler.Params
	if e := applyPeer(&q, o.Options.peer); e != nil || q.Mirostat != 2 || q.MirostatTau != 4 || q.MirostatEta != 0.2 || q.TypicalP != 0.5 {
		t.Errorf("ollama options: %+v, %v", q, e)
	}
	for field, msg := range map[string]string{`"mirostat":3`: "mirostat must be between 0 and 2, got 3",
		`"dry_sequence_breakers":[1]`: "dry_sequence_breakers must be a list of texts", `"typical_p":"x"`: "typical_p must be a number between 0 and 1"} {
		var bad knobs
		decodeBody(t, "{"+field+"}", &bad)
		if _, e := bad.params(); e == nil || !strings.Contains(e.err.Message, msg) {
			t.Errorf("%s: %+v, want %q", field, e, msg)
		}
	}
	_, ts, _ := start(t, Options{})
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"mirostat":5}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), "mirostat must be between 0 and 2") {
		t.Errorf("bad mirostat over HTTP: %d %s", resp.StatusCode, b)
	}
}

// FuzzPeerFields: any request body gives the peer knobs or one clear
// error, never a panic, and knobs that pass make valid sampler params.
func FuzzPeerFields(f *testing.F) {
	for _, s := range []string{`{"dry_multiplier":0.8,"dry_sequence_breakers":["\n",":"]}`, `{"mirostat":"2","mirostat_tau":null}`,
		`{"typical_p":[1]}`, `{"dry_sequence_breakers":"x"}`, `[]`, `{"xtc_threshold":1e999}`, `{"top_n_sigma":"NaN"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var k knobs
		if decode(httptest.NewRecorder(), httptest.NewRequest("POST", "/", strings.NewReader(body)), &k) != nil {
			return
		}
		p := sampler.Params{Temperature: 1}
		if e := applyPeer(&p, k.peer); e == nil {
			if err := p.Validate(); err != nil {
				t.Fatalf("%s: accepted, but %v", body, err)
			}
		} else if e.err.Message == "" {
			t.Fatalf("%s: an error without a message", body)
		}
	})
}

// TestLlamaServerEndpoints: llama-server's /tokenize and /detokenize,
// which its scripts call to count tokens, round-trip a text; with_pieces
// gives each id's text; an id outside the vocabulary is a 400; /props says
// the context and the slots.
func TestLlamaServerEndpoints(t *testing.T) {
	_, ts, _ := start(t, Options{})
	post := func(path, body string, v any) int {
		t.Helper()
		resp, err := http.Post(ts.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		json.NewDecoder(resp.Body).Decode(v)
		return resp.StatusCode
	}
	var tok struct{ Tokens []int }
	if code := post("/tokenize", `{"content":"Once upon a time"}`, &tok); code != 200 || len(tok.Tokens) == 0 {
		t.Fatalf("/tokenize: %d %v", code, tok.Tokens)
	}
	var bos struct{ Tokens []int }
	post("/tokenize", `{"content":"Once upon a time","add_special":true}`, &bos)
	if len(bos.Tokens) != len(tok.Tokens)+1 {
		t.Errorf("add_special: %v against %v", bos.Tokens, tok.Tokens)
	}
	var pieces struct {
		Tokens []struct {
			ID    int
			Piece string
		}
	}
	post("/tokenize", `{"content":"Once upon a time","with_pieces":true}`, &pieces)
	var joined strings.Builder
	for i, p := range pieces.Tokens {
		if p.ID != tok.Tokens[i] {
			t.Fatalf("with_pieces ids %v, want %v", pieces.Tokens, tok.Tokens)
		}
		joined.WriteString(p.Piece)
	}
	if !strings.Contains(joined.String(), "upon a time") {
		t.Errorf("pieces join to %q", joined.String())
	}
	body, _ := json.Marshal(map[string]any{"tokens": tok.Tokens})
	var text struct{ Content string }
	if code := post("/detokenize", string(body), &text); code != 200 || !strings.Contains(text.Content, "Once upon a time") {
		t.Errorf("/detokenize: %d %q", code, text.Content)
	}
	// An empty text is no tokens: [], not null (a script's loop over
	// them failed on null).
	var empty map[string]any
	if code := post("/tokenize", `{"content":""}`, &empty); code != 200 || fmt.Sprint(empty["tokens"]) != "[]" {
		t.Errorf("/tokenize of nothing: %d %v", code, empty)
	}
	var e struct{ Error struct{ Message string } }
	if code := post("/detokenize", `{"tokens":[1, 99999999]}`, &e); code != 400 || !strings.Contains(e.Error.Message, "99999999") {
		t.Errorf("an id out of range: %d %q", code, e.Error.Message)
	}
	// /props: what llama-server's web UI reads (the context, the slots,
	// the chat template: stories260K has none).
	resp, err := http.Get(ts.URL + "/props")
	if err != nil {
		t.Fatal(err)
	}
	var props struct {
		Settings struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
		Slots    int    `json:"total_slots"`
		Template string `json:"chat_template"`
	}
	json.NewDecoder(resp.Body).Decode(&props)
	resp.Body.Close()
	if resp.StatusCode != 200 || props.Settings.NCtx <= 0 || props.Slots < 1 {
		t.Errorf("/props: %d %+v", resp.StatusCode, props)
	}
}

// A path that is not served (OpenAI's /v1/images/generations; /v1/responses was
// one): the 404 said only that, and now names the routes of the same API
// to call instead, /v1/responses among them (a GET where a POST is wanted
// too), in that API's shape.
func TestUnservedPathNamesTheRoutes(t *testing.T) {
	_, ts, _ := start(t, Options{})
	for _, c := range []struct {
		method, path string
		want, not    string
	}{
		{"POST", "/v1/images/generations", "POST /v1/chat/completions, POST /v1/responses", "/api/chat"},
		{"POST", "/v1/audio/speech", "GET /v1/health, POST /v1/chat/completions, POST /v1/responses, POST /v1/completions, POST /v1/embeddings, GET /v1/models, GET /v1/models/{model} param:", "/api/chat"},
		{"DELETE", "/api/delete", "the routes under /api/ are POST /api/chat, POST /api/generate, POST /api/embed, POST /api/embeddings, GET /api/tags, GET /api/version, POST /api/show, GET /api/ps", "/v1/"},
		{"GET", "/v1/responses", "POST /v1/responses", "/completion,"},
		{"GET", "/v1/chat/completions", "POST /v1/chat/completions", "/completion,"},
		{"POST", "/api/pull", "POST /api/chat", "/v1/"},
		{"POST", "/apply-template", "POST /completion", "/v1/"},
	} {
		req, _ := http.NewRequest(c.method, ts.URL+c.path, strings.NewReader(`{"model":"x","input":"hi"}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		msg := fmt.Sprint(v["error"])
		if resp.StatusCode != 404 || !strings.Contains(msg, c.want) || strings.Contains(msg, c.not) {
			t.Errorf("%s %s: %d %s, want 404 naming %s", c.method, c.path, resp.StatusCode, msg, c.want)
		}
		if _, ollama := v["error"].(string); ollama != strings.HasPrefix(c.path, "/api/") {
			t.Errorf("%s %s: %v is not that API's error shape", c.method, c.path, v)
		}
	}
}

// A missing API key is a 401 in the shape of the route's API: ollama's
// string, OpenAI's object with its code, llama-server's with the status.
func TestAuthErrorShape(t *testing.T) {
	_, ts, _ := start(t, Options{APIKey: "sekrit"})
	for path, want := range map[string]string{
		"/api/chat":            "a missing or wrong API key",
		"/v1/chat/completions": "map[code:invalid_api_key message:a missing or wrong API key",
		"/completion":          "map[code:401 message:a missing or wrong API key",
	} {
		code, v := post(t, ts.URL+path, `{}`)
		if msg := fmt.Sprint(v["error"]); code != 401 || !strings.HasPrefix(msg, want) {
			t.Errorf("%s: %d %s, want 401 %q", path, code, msg, want)
		}
	}
}
