package serve

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"chat/engine"
	"chat/models/testmodels"
)

// llamaAnswer is the part of a /completion answer (or stream event) the
// tests read.
type llamaAnswer struct {
	Index           int    `json:"index"`
	Content         string `json:"content"`
	Tokens          []int  `json:"tokens"`
	Stop            bool   `json:"stop"`
	StopType        string `json:"stop_type"`
	Truncated       bool   `json:"truncated"`
	StoppingWord    string `json:"stopping_word"`
	TokensPredicted int    `json:"tokens_predicted"`
	TokensEvaluated int    `json:"tokens_evaluated"`
	Prompt          string `json:"prompt"`
	Timings         *struct {
		CacheN      int     `json:"cache_n"`
		PromptN     int     `json:"prompt_n"`
		PredictedN  int     `json:"predicted_n"`
		PredictedMS float64 `json:"predicted_ms"`
	} `json:"timings"`
	Settings map[string]any `json:"generation_settings"`
	Probs    []struct {
		ID      int     `json:"id"`
		Token   string  `json:"token"`
		Logprob float64 `json:"logprob"`
		Top     []struct {
			ID      int     `json:"id"`
			Logprob float64 `json:"logprob"`
		} `json:"top_logprobs"`
	} `json:"completion_probabilities"`
	Error *struct{ Message string } `json:"error"`
}

// llamaPost sends a /completion body and reads the answer.
func llamaPost(t *testing.T, url, body string) (int, llamaAnswer) {
	t.Helper()
	resp, err := http.Post(url+"/completion", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a llamaAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return resp.StatusCode, a
}

// llamaStream sends a streamed /completion body and reads its events.
func llamaStream(t *testing.T, url, body string) []llamaAnswer {
	t.Helper()
	resp, err := http.Post(url+"/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%s: %d %s", body, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var evs []llamaAnswer
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == "" {
			continue
		}
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			t.Fatalf("a line that is no event of llama-server's stream: %q", sc.Text())
		}
		var a llamaAnswer
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, a)
	}
	return evs
}

// TestLlamaCompletion: POST /completion continues a prompt as
// /v1/completions does (greedy, the same text), in llama-server's shape:
// the text, the ids with return_tokens, why it stopped, the counts, the
// timings and the settings; a prompt of token ids, or ids and text
// mixed, is the same prompt; the stream's pieces make the same text and
// ids and end with the whole answer's fields, without [DONE].
func TestLlamaCompletion(t *testing.T) {
	s, ts, _ := start(t, Options{Engine: engine.Options{MaxSeqs: 4, MaxWaiting: 4}})
	code, v := post(t, ts.URL+"/v1/completions", `{"prompt":"Once upon a time","max_tokens":30,"temperature":0}`)
	if code != 200 {
		t.Fatal(v)
	}
	want := v["choices"].([]any)[0].(map[string]any)["text"].(string)
	code, a := llamaPost(t, ts.URL, `{"prompt":"Once upon a time","n_predict":30,"temperature":0,"return_tokens":true,"cache_prompt":true,"id_slot":3,"n_keep":-1}`)
	if code != 200 || a.Content != want || !a.Stop || a.StopType != "limit" || a.TokensPredicted != 30 || len(a.Tokens) != 30 {
		t.Fatalf("%d %+v; /v1/completions gave %q", code, a, want)
	}
	if got := s.m.Tokenizer().Decode(a.Tokens); got != want {
		t.Errorf("tokens spell %q, content %q", got, want)
	}
	if a.Timings == nil || a.Timings.PredictedN != 30 || a.Timings.PromptN+a.Timings.CacheN != a.TokensEvaluated || a.TokensEvaluated < 4 ||
		!strings.Contains(a.Prompt, "Once upon a time") || a.Settings["temperature"] != 0.0 || a.Settings["top_k"] != 40.0 ||
		a.Settings["n_predict"] != 30.0 || a.Settings["repeat_last_n"] != 64.0 || a.Settings["dry_multiplier"] != 0.0 {
		t.Errorf("counts, timings or settings: %+v %+v", a, a.Timings)
	}

	// The prompt as ids (the BOS first, as /tokenize with add_special
	// gives them), and as the BOS id and the text.
	var tok struct{ Tokens []int }
	resp, err := http.Post(ts.URL+"/tokenize", "application/json", strings.NewReader(`{"content":"Once upon a time","add_special":true}`))
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	ids, _ := json.Marshal(tok.Tokens)
	for _, p := range []string{string(ids), "[" + string(ids) + "]", fmt.Sprintf(`[%d, "Once upon a time"]`, tok.Tokens[0]),
		`{"prompt_string":"Once upon a time"}`, `["Once upon a time"]`} {
		if code, b := llamaPost(t, ts.URL, `{"prompt":`+p+`,"n_predict":30,"temperature":0}`); code != 200 || b.Content != want || b.TokensEvaluated != a.TokensEvaluated {
			t.Errorf("prompt %s: %d %q (%d evaluated), want %q (%d)", p, code, b.Content, b.TokensEvaluated, want, a.TokensEvaluated)
		}
	}

	// The stream, on the alias /completions.
	evs := llamaStream(t, ts.URL, `{"prompt":"Once upon a time","n_predict":30,"temperature":0,"stream":true,"timings_per_token":true}`)
	var text strings.Builder
	var streamed []int
	for _, e := range evs[:len(evs)-1] {
		if e.Stop || e.Timings == nil {
			t.Fatalf("a piece %+v", e)
		}
		text.WriteString(e.Content)
		streamed = append(streamed, e.Tokens...)
	}
	last := evs[len(evs)-1]
	if len(evs) < 2 || text.String() != want || !slices.Equal(streamed, a.Tokens) || !last.Stop || last.Content != "" || last.StopType != "limit" || last.TokensPredicted != 30 {
		t.Errorf("streamed %q in %d events (ids %v, want %v), last %+v", text.String(), len(evs), streamed, a.Tokens, last)
	}

	// n_cmpl: that many replies, reply i sampled with the seed + i.
	one := func(seed int) string {
		_, x := llamaPost(t, ts.URL, fmt.Sprintf(`{"prompt":"Tom had a red ball","n_predict":20,"seed":%d}`, seed))
		return x.Content
	}
	resp, err = http.Post(ts.URL+"/completion", "application/json", strings.NewReader(`{"prompt":"Tom had a red ball","n_predict":20,"seed":7,"n_cmpl":3}`))
	if err != nil {
		t.Fatal(err)
	}
	var three []llamaAnswer
	err = json.NewDecoder(resp.Body).Decode(&three)
	resp.Body.Close()
	if err != nil || len(three) != 3 {
		t.Fatalf("n_cmpl 3: %d, %d answers, %v", resp.StatusCode, len(three), err)
	}
	for i, x := range three {
		if x.Index != i || x.Content != one(7+i) {
			t.Errorf("n_cmpl reply %d: %+v, alone with seed %d %q", i, x, 7+i, one(7+i))
		}
	}
	texts, ends := map[int]string{}, map[int]int{}
	for _, e := range llamaStream(t, ts.URL, `{"prompt":"Tom had a red ball","n_predict":20,"seed":7,"n_cmpl":2,"stream":true}`) {
		texts[e.Index] += e.Content
		if e.Stop {
			ends[e.Index]++
		}
	}
	if texts[0] != three[0].Content || texts[1] != three[1].Content || ends[0] != 1 || ends[1] != 1 || len(texts) != 2 {
		t.Errorf("n_cmpl 2 streamed %v (%v ends), want %q and %q", texts, ends, three[0].Content, three[1].Content)
	}

	// response_fields: only those, paths at the top.
	if code, v := post(t, ts.URL+"/completion", `{"prompt":"Once upon a time","n_predict":5,"response_fields":["content","timings/predicted_n","generation_settings/top_k","nothing/here"]}`); code != 200 ||
		len(v) != 3 || v["content"] == nil || v["timings/predicted_n"] != 5.0 || v["generation_settings/top_k"] != 40.0 {
		t.Errorf("response_fields: %d %v", code, v)
	}

	// A stop string: the text is cut before it, and named.
	stop := want[len(want)/2 : len(want)/2+3]
	body, _ := json.Marshal(map[string]any{"prompt": "Once upon a time", "n_predict": 30, "temperature": 0, "stop": []string{"zzz", stop}})
	if code, b := llamaPost(t, ts.URL, string(body)); code != 200 || b.Content != want[:strings.Index(want, stop)] || b.StopType != "word" || b.StoppingWord != stop {
		t.Errorf("stop %q: %d %+v", stop, code, b)
	}

	// n_probs: each token's logprob and its likeliest (greedy: the first).
	if code, b := llamaPost(t, ts.URL, `{"prompt":"Once upon a time","n_predict":8,"temperature":0,"n_probs":3}`); code != 200 || len(b.Probs) != 8 {
		t.Errorf("n_probs: %d %+v", code, b)
	} else {
		for _, p := range b.Probs {
			if len(p.Top) != 3 || p.Top[0].ID != p.ID || p.Logprob > 0 || p.Top[1].Logprob > p.Top[0].Logprob {
				t.Errorf("n_probs: %+v", p)
			}
		}
	}

	// A random seed is shown in generation_settings, and sent back it
	// samples the same text; n_predict 0 only reads the prompt.
	_, x := llamaPost(t, ts.URL, `{"prompt":"Tom had a red ball","n_predict":20}`)
	seed, _ := x.Settings["seed"].(float64)
	if _, y := llamaPost(t, ts.URL, fmt.Sprintf(`{"prompt":"Tom had a red ball","n_predict":20,"seed":%d}`, int64(seed))); seed >= 1<<32 || y.Content != x.Content {
		t.Errorf("seed %v: %q, then %q", x.Settings["seed"], x.Content, y.Content)
	}
	if code, b := llamaPost(t, ts.URL, `{"prompt":"Once upon a time","n_predict":0}`); code != 200 || b.Content != "" || b.TokensPredicted != 0 || b.TokensEvaluated == 0 || b.StopType != "limit" {
		t.Errorf("n_predict 0: %d %+v", code, b)
	}
}

// TestLlamaTruncated: truncated says the end of the context cut the reply
// (engine.Result.ContextFull), not n_predict.
func TestLlamaTruncated(t *testing.T) {
	_, ts, _ := start(t, Options{Engine: engine.Options{Context: 32}})
	for _, c := range []struct {
		body      string
		truncated bool
	}{
		{`{"prompt":"Once upon a time","n_predict":-1,"ignore_eos":true}`, true},
		{`{"prompt":"Once upon a time","n_predict":1000,"ignore_eos":true}`, true},
		{`{"prompt":"Once upon a time","n_predict":5,"ignore_eos":true}`, false},
		{`{"prompt":"Once upon a time","n_predict":0}`, false},
	} {
		if code, a := llamaPost(t, ts.URL, c.body); code != 200 || a.StopType != "limit" || a.Truncated != c.truncated {
			t.Errorf("%s: %d %+v, want truncated %v", c.body, code, a, c.truncated)
		}
	}
}

// TestLlamaCompletionConstrained: grammar and json_schema ({} is any
// JSON) constrain /completion's text, streamed or not.
func TestLlamaCompletionConstrained(t *testing.T) {
	_, ts, _ := start(t, Options{})
	person := validator(t, personSchema)
	for _, c := range []struct {
		field string
		check func(string) error
	}{
		{`"grammar":` + fmt.Sprintf("%q", listGrammar), matching(listRe)},
		{`"json_schema":` + personSchema, person},
		{`"json_schema":{}`, isJSON},
	} {
		for _, stream := range []bool{false, true} {
			body := fmt.Sprintf(`{"prompt":"Once upon a time","n_predict":100,"temperature":0,"stream":%v,%s}`, stream, c.field)
			var got string
			if stream {
				for _, e := range llamaStream(t, ts.URL, body) {
					got += e.Content
				}
			} else {
				code, a := llamaPost(t, ts.URL, body)
				if code != 200 {
					t.Fatalf("%s: %d %+v", c.field, code, a.Error)
				}
				got = a.Content
			}
			if err := c.check(got); err != nil {
				t.Errorf("%.60s stream %v: %q: %v", c.field, stream, got, err)
			}
		}
	}
	if code, a := llamaPost(t, ts.URL, `{"prompt":"x","grammar":"root ::= \"a\"","json_schema":{}}`); code != 400 || !strings.Contains(a.Error.Message, "give one constraint") {
		t.Errorf("two constraints: %d %+v", code, a.Error)
	}
}

// TestLlamaCompletionRefusals: a field this server does not have is a 400
// that names it, unless it is sent at its off value; a bad value gets its
// rule's message; the hostile bodies are refused or answered within the
// context, at once.
func TestLlamaCompletionRefusals(t *testing.T) {
	_, ts, _ := start(t, Options{})
	win := 0
	for _, c := range []struct {
		extra string
		want  string // in the error; "" for a 200
	}{
		{`"logit_bias":[[15043,1.0]]`, "logit_bias is not supported"},
		{`"logit_bias":[]`, ""},
		{`"logit_bias":{}`, ""},
		{`"n_cmpl":17`, "n_cmpl must be between 1 and 16"},
		{`"n_cmpl":1`, ""},
		{`"samplers":["top_k","temperature"]`, "samplers (an order of your own)"},
		{`"samplers":["dry","top_k","typ_p","top_p","min_p","xtc","temperature"]`, ""},
		{`"dynatemp_range":0.5`, "dynamic temperature"},
		{`"dynatemp_range":0.0,"dynatemp_exponent":2`, ""},
		{`"post_sampling_probs":true`, "post_sampling_probs"},
		{`"min_keep":1`, ""},
		{`"lora":[{"id":0,"scale":0.5}]`, "lora"},
		{`"response_fields":[]`, ""},
		{`"t_max_predict_ms":100`, "t_max_predict_ms"},
		{`"mirostat":5`, "mirostat must be between 0 and 2"},
		{`"mirostat":2,"mirostat_tau":4,"dry_multiplier":0.5`, ""},
		{`"top_p":2`, "top_p must be between 0 and 1"},
		{`"n_probs":21`, "n_probs must be at most 20"},
		{`"n_predict":-2`, "n_predict must be -1"},
		{`"repeat_last_n":-2`, "repeat_last_n must be -1"},
		{`"repeat_last_n":-1,"repeat_penalty":1.1,"top_k":-1,"temperature":-1,"seed":4294967295`, ""},
	} {
		code, a := llamaPost(t, ts.URL, `{"prompt":"Once upon a time","n_predict":3,`+c.extra+`}`)
		switch {
		case c.want == "" && code != 200:
			t.Errorf("%s: %d %+v", c.extra, code, a.Error)
		case c.want != "" && (code != 400 || a.Error == nil || !strings.Contains(a.Error.Message, c.want)):
			t.Errorf("%s: %d %+v, want 400 %q", c.extra, code, a.Error, c.want)
		case c.want == "":
			win = int(a.Settings["n_ctx"].(float64))
		}
	}

	ids := strings.Repeat("1,", 3<<20) + "1" // 3M ids, near the 8 MB a body may be
	deep := strings.Repeat("[", 5000) + "1" + strings.Repeat("]", 5000)
	for _, c := range []struct {
		body   string
		status int
		want   string
	}{
		// A budget past the context ends at the context, as llama-server's.
		{`{"prompt":"Once","n_predict":9223372036854775807,"ignore_eos":true}`, 200, ""},
		{`{"prompt":"Once` + "\xff\xfe" + `upon","n_predict":2}`, 200, ""},
		{`{"prompt":"Once","stop":["` + "\xc3" + `"],"n_predict":2}`, 200, ""},
		{`{"prompt":` + deep + `}`, 400, "several prompts"},
		{`{"prompt":[` + ids + `]}`, 400, "maximum context length"},
		{`{"prompt":"` + strings.Repeat("a", 7<<20) + `"}`, 400, "the prompt is at least"},
		{`{"prompt":["a","b"]}`, 400, "several prompts"},
		{`{"prompt":[[1,2],[3]]}`, 400, "several prompts"},
		{`{"prompt":[1,99999999]}`, 400, "token 99999999 at index 1 is outside the vocabulary"},
		{`{"prompt":[1.5]}`, 400, "must be a token id or a text"},
		{`{"prompt":[]}`, 400, "the prompt is empty"},
		{`{"prompt":{"prompt_string":"x","multimodal_data":["aGk="]}}`, 400, "multimodal_data is not supported"},
		{`{"prompt":{"x":1}}`, 400, "prompt must be a text"},
		{`{"n_predict":3}`, 400, "prompt is required"},
		{`{"prompt":"x","stop":` + `["` + strings.Repeat("s", 300) + `"]}`, 400, "a stop string is at most"},
	} {
		var code int
		var a llamaAnswer
		testmodels.Bounded(t, c.body, func() error { code, a = llamaPost(t, ts.URL, c.body); return nil })
		msg := ""
		if a.Error != nil {
			msg = a.Error.Message
		}
		if code != c.status || !strings.Contains(msg, c.want) || len(msg) > 600 {
			t.Errorf("%.100q: %d %.300s, want %d %q", c.body, code, msg, c.status, c.want)
		}
		if code == 200 && a.TokensEvaluated+a.TokensPredicted > win {
			t.Errorf("%.100q: %+v past the context (%d)", c.body, a, win)
		}
	}
}

// TestLlamaSlotsHealth: /slots has one entry per sequence, busy ones
// marked, and fail_on_no_slot answers 503 when none is free; /v1/health is
// /health; /props gives /completion's defaults.
func TestLlamaSlotsHealth(t *testing.T) {
	s, ts, _ := start(t, Options{Engine: engine.Options{MaxSeqs: 2}})
	var slots []struct {
		ID           int  `json:"id"`
		NCtx         int  `json:"n_ctx"`
		IsProcessing bool `json:"is_processing"`
	}
	resp, err := http.Get(ts.URL + "/slots?fail_on_no_slot=1")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&slots)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(slots) != 2 || slots[1].ID != 1 || slots[0].NCtx != s.e.Window() || slots[0].IsProcessing {
		t.Errorf("/slots: %d %+v", resp.StatusCode, slots)
	}
	for _, path := range []string{"/v1/health", "/health"} {
		code, v := get(t, ts.URL+path)
		if code != 200 || v["status"] != "ok" {
			t.Errorf("%s: %d %v", path, code, v)
		}
	}
	_, props := get(t, ts.URL+"/props")
	p := props["default_generation_settings"].(map[string]any)["params"].(map[string]any)
	if p["temperature"] != 0.8 || p["top_k"] != 40.0 || p["top_p"] != 0.95 || p["min_p"] != 0.05 || p["seed"] != -1.0 || p["n_predict"] != -1.0 {
		t.Errorf("/props params: %v", p)
	}
	// Bug: repeat_penalty was 0, the engine's "off"; llama-server's off is
	// 1 (it divides logits by the penalty), and so are the other penalties'
	// and samplers' off values it shows.
	for k, want := range map[string]float64{"repeat_penalty": 1, "frequency_penalty": 0, "presence_penalty": 0, "repeat_last_n": 64,
		"typical_p": 1, "top_n_sigma": -1, "xtc_probability": 0, "mirostat": 0, "dry_multiplier": 0} {
		if p[k] != want {
			t.Errorf("/props params %s = %v; want llama-server's %v", k, p[k], want)
		}
	}
}

// get fetches a JSON answer.
func get(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	json.NewDecoder(resp.Body).Decode(&v)
	return resp.StatusCode, v
}

// llama-server's own routes answer errors in its shape, {"error": {"code":
// 400, "message", "type"}}, the code a number and the type following the
// status (its format_error_response); /v1/ keeps OpenAI's, whose code is a
// string or null.
func TestLlamaServerErrorShape(t *testing.T) {
	_, ts, _ := start(t, Options{})
	_, kts, _ := start(t, Options{APIKey: "sekrit"})
	long := `{"prompt":"` + strings.Repeat("Once upon a time there was a dog. ", 1000) + `"}`
	for _, c := range []struct {
		url, path, body string
		status          int
		typ             string
	}{
		{ts.URL, "/completion", "{", 400, "invalid_request_error"},
		{ts.URL, "/completions", `{"prompt":"x","temperature":"hot"}`, 400, "invalid_request_error"},
		{ts.URL, "/completion", long, 400, "exceed_context_size_error"},
		{ts.URL, "/tokenize", "[", 400, "invalid_request_error"},
		{ts.URL, "/detokenize", `{"tokens":[-1]}`, 400, "invalid_request_error"},
		{ts.URL, "/nothing-here", "{}", 404, "not_found_error"},
		{kts.URL, "/completion", `{"prompt":"x"}`, 401, "authentication_error"},
	} {
		resp, err := http.Post(c.url+c.path, "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]map[string]any
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		e := got["error"]
		if err != nil || resp.StatusCode != c.status || len(e) != 3 || e["code"] != float64(c.status) || e["type"] != c.typ || e["message"] == "" {
			t.Errorf("%s %.40s: %d %v (%v), want %d %s", c.path, c.body, resp.StatusCode, got, err, c.status, c.typ)
		}
	}
	for status, typ := range map[int]string{500: "server_error", 503: "unavailable_error", 413: "invalid_request_error"} {
		if got := newErr(status, "server_error", "", "", "m").llama(); got != (llamaErr{Code: status, Message: "m", Type: typ}) {
			t.Errorf("%d: %+v, want type %s", status, got, typ)
		}
	}
	resp, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader("{"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got map[string]map[string]any
	json.NewDecoder(resp.Body).Decode(&got)
	if e := got["error"]; resp.StatusCode != 400 || e["type"] != "invalid_request_error" || e["code"] != nil || len(e) != 4 {
		t.Errorf("/v1/completions: %d %v, want OpenAI's shape", resp.StatusCode, got)
	}
}
