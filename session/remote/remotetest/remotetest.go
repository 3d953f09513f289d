// Package remotetest serves streams for the tests of chat --remote's
// client and session.
package remotetest

import (
	"io"
	"net/http"
)

// KeepAliveStream streams a chat completion of two deltas, "Once" and
// " upon", with keep-alive comments (SSE lines starting with ':') before,
// between and after them, then holds the stream open until release is
// closed (or the client goes away) before it finishes it: a client that
// held a delta back behind the comments would wait on a server that waits
// on it.
func KeepAliveStream(w http.ResponseWriter, r *http.Request, release <-chan struct{}) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	for _, part := range []string{
		": connected\n\n",
		`data: {"choices":[{"delta":{"content":"Once"}}]}` + "\n\n",
		": keep-alive\n\n", ":\n\n", ": ping 2026-12-04\n",
		`data: {"choices":[{"delta":{"content":" upon"}}]}` + "\n\n",
		": keep-alive\n\n",
	} {
		io.WriteString(w, part)
		if fl != nil {
			fl.Flush()
		}
	}
	select {
	case <-release:
	case <-r.Context().Done():
		return
	}
	io.WriteString(w, `data: {"choices":[{"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
}
