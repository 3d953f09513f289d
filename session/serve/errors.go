package serve

import (
	"encoding/json"
	"net/http"
)

// Errors in the OpenAI shape: {"error": {"message", "type", "param",
// "code"}} with the status that goes with them; ollama's routes answer
// {"error": "message"}.

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

func apiError(w http.ResponseWriter, status int, typ, param, code, msg string) {
	writeErr(w, newErr(status, typ, param, code, msg))
}

func writeErr(w http.ResponseWriter, e *errBody) {
	writeJSON(w, e.status, map[string]any{"error": e.err})
}

func ollamaError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
