package serve

import (
	"encoding/json"
	"net/http"
)

// sse writes server-sent events: "data: JSON" per event, flushed at once,
// and "data: [DONE]" at the end (the OpenAI stream). The status line goes
// with the first event, so an error found before it (a full server) is
// still sent as an error response.
type sse struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
}

func newSSE(w http.ResponseWriter) *sse { return &sse{w: w, rc: http.NewResponseController(w)} }

func (s *sse) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.write(append(append([]byte("data: "), b...), '\n', '\n'))
}

func (s *sse) write(b []byte) error {
	if !s.started {
		s.w.Header().Set("Content-Type", "text/event-stream")
		s.w.Header().Set("Cache-Control", "no-cache")
		s.w.WriteHeader(http.StatusOK)
		s.started = true
	}
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s *sse) done() { s.write([]byte("data: [DONE]\n\n")) }
