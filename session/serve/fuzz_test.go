package serve

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzRequests: any body for the chat, responses, completion, llama-server
// and ollama endpoints is read into a job (an embedding request into its
// inputs' ids) or refused with an error; none panics. (Only the reading is
// fuzzed: no reply or embedding is computed.)
func FuzzRequests(f *testing.F) {
	for _, s := range []string{
		`{"model":"stories260K","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stop":["a","b"],"top_logprobs":2,"logprobs":true}`,
		`{"messages":[{"role":"system","content":[{"type":"text","text":"x"}]},{"role":"tool","content":null}]}`,
		`{"prompt":[1,2,3],"max_tokens":0,"logprobs":9}`, `{"prompt":"Once","stop":"x","temperature":-1,"n":2}`,
		`{"model":"m:latest","options":{"num_predict":-1,"repeat_last_n":3},"prompt":"hi","raw":true}`, `[]`, `{"stop":7}`,
		`{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"p","schema":{"type":"object"}}}}`,
		`{"prompt":"x","grammar":"root ::= \"a\"","structured_outputs":{"regex":"a"}}`, `{"prompt":"x","format":{"type":"string"}}`,
		`{"prompt":[1,"Once",[2]],"n_predict":-1,"repeat_last_n":-1,"seed":-1,"samplers":"dkypmxt","logit_bias":{}}`,
		`{"prompt":[{"prompt_string":"x"}],"json_schema":{},"n_probs":3,"top_k":-5,"temperature":-1}`,
		`{"model":"stories260K","input":"hi","instructions":"Be brief.","max_output_tokens":5,"text":{"format":{"type":"json_object"}}}`,
		`{"input":[{"role":"user","content":[{"type":"input_text","text":"x"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"y"}]}],"store":false,"tools":[]}`,
		`{"input":[{"type":"function_call_output","output":"42"}],"text":{"format":{"type":"json_schema","name":"p","schema":{"type":"object"}}},"n":1}`,
		`{"model":"stories260K","input":[[1,2],[3]],"encoding_format":"base64","truncate":false}`, `{"input":["a",""],"dimensions":64}`,
	} {
		f.Add(s)
	}
	s, err := New(storiesModel(f), Options{})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body))
		var c chatRequest
		if decode(httptest.NewRecorder(), r, &c) == nil {
			s.chatJob(&c)
		}
		r = httptest.NewRequest("POST", "/v1/responses", strings.NewReader(body))
		var resp responsesRequest
		if decode(httptest.NewRecorder(), r, &resp) == nil {
			s.responsesJob(&resp)
		}
		r = httptest.NewRequest("POST", "/v1/completions", strings.NewReader(body))
		var p completionRequest
		if decode(httptest.NewRecorder(), r, &p) == nil {
			s.completionJob(&p)
		}
		r = httptest.NewRequest("POST", "/completion", strings.NewReader(body))
		var l llamaRequest
		if decode(httptest.NewRecorder(), r, &l) == nil {
			s.llamaJob(&l)
		}
		r = httptest.NewRequest("POST", "/v1/embeddings", strings.NewReader(body))
		var e struct {
			Input    embedInput `json:"input"`
			Truncate bool       `json:"truncate"`
		}
		if decode(httptest.NewRecorder(), r, &e) == nil {
			s.embedTokens(e.Input, e.Truncate)
		}
		r = httptest.NewRequest("POST", "/api/generate", strings.NewReader(body))
		var o ollamaRequest
		if decode(httptest.NewRecorder(), r, &o) == nil {
			if msgs, e := conversation("messages", o.Messages, chatParts); e == nil {
				s.ollamaJob(&o, s.tmpl.Render(msgs, true), nil)
			}
		}
	})
}
