package serve

import (
	"encoding/json"
	"net/http"
	"slices"
)

// events writes a streamed reply one JSON event at a time, each flushed at
// once: as server-sent events ("data: JSON" per event and "data: [DONE]"
// at the end, the OpenAI stream), or as JSON lines (ollama's stream). The
// status line goes with the first event, so an error found before it (a
// full server) is still sent as an error response.
type events struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	sse     bool // server-sent events; false: JSON lines
	started bool
}

func newSSE(w http.ResponseWriter) *events {
	return &events{w: w, rc: http.NewResponseController(w), sse: true}
}

func newJSONLines(w http.ResponseWriter) *events {
	return &events{w: w, rc: http.NewResponseController(w)}
}

func (s *events) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if !s.sse {
		return s.write(append(b, '\n'))
	}
	return s.write(append(append([]byte("data: "), b...), '\n', '\n'))
}

// event sends v as a named server-sent event, as the Responses API's
// stream names each by its type (and ends without [DONE]).
func (s *events) event(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.write(slices.Concat([]byte("event: "+name+"\ndata: "), b, []byte("\n\n")))
}

func (s *events) write(b []byte) error {
	if !s.started {
		if s.sse {
			s.w.Header().Set("Content-Type", "text/event-stream")
			s.w.Header().Set("Cache-Control", "no-cache")
		} else {
			s.w.Header().Set("Content-Type", "application/x-ndjson")
		}
		s.w.WriteHeader(http.StatusOK)
		s.started = true
	}
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s *events) done() { s.write([]byte("data: [DONE]\n\n")) }
