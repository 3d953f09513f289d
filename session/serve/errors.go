package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Errors in the OpenAI shape: {"error": {"message", "type", "param",
// "code"}} with the status that goes with them; llama-server's own routes
// (/completion, /tokenize, ...) answer in its shape, {"error": {"code": 400,
// "message", "type"}}; ollama's routes answer {"error": "message"}.

type apiErr struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// errBody is an OpenAI error ready to send.
type errBody struct {
	status int
	err    apiErr
}

func (e *errBody) Error() string { return e.err.Message }

// badRequest is a 400 about param.
func badRequest(param, msg string) *errBody {
	return newErr(http.StatusBadRequest, "invalid_request_error", param, "", msg)
}

func newErr(status int, typ, param, code, msg string) *errBody {
	e := &errBody{status: status, err: apiErr{Message: msg, Type: typ}}
	if param != "" {
		e.err.Param = &param
	}
	if code != "" {
		e.err.Code = &code
	}
	return e
}

// codePastContext is the code of a request past the context, as vLLM
// answers it (llama-server's type: exceed_context_size_error).
const codePastContext = "context_length_exceeded"

// pastContext is the 400 of a request that does not fit the context of win
// tokens; why says by how much.
func pastContext(param string, win int, why string) *errBody {
	return newErr(http.StatusBadRequest, "invalid_request_error", param, codePastContext,
		fmt.Sprintf("This model's maximum context length is %d tokens; %s.", win, why))
}

func apiError(w http.ResponseWriter, r *http.Request, status int, typ, param, code, msg string) {
	writeErr(w, r, newErr(status, typ, param, code, msg))
}

// writeErr sends e in the shape of r's API (apiOf): llama-server's for its
// own routes, ollama's for /api/, OpenAI's for /v1/.
func writeErr(w http.ResponseWriter, r *http.Request, e *errBody) {
	switch apiOf(r.URL.Path) {
	case "/":
		writeJSON(w, e.status, map[string]any{"error": e.llama()})
	case "/api/":
		ollamaError(w, e.status, e.err.Message)
	default:
		writeJSON(w, e.status, map[string]any{"error": e.err})
	}
}

// llamaErr is llama-server's error (format_error_response in its
// tools/server): the status as a number and a type that follows it (its
// types of the statuses this server answers).
type llamaErr struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Type    string `json:"type"`
}

func (e *errBody) llama() llamaErr {
	typ := "invalid_request_error"
	switch {
	case e.err.Code != nil && *e.err.Code == codePastContext:
		typ = "exceed_context_size_error"
	case e.status == http.StatusUnauthorized:
		typ = "authentication_error"
	case e.status == http.StatusNotFound:
		typ = "not_found_error"
	case e.status == http.StatusServiceUnavailable:
		typ = "unavailable_error"
	case e.status >= 500:
		typ = "server_error"
	}
	return llamaErr{Code: e.status, Message: e.err.Message, Type: typ}
}

func ollamaError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
