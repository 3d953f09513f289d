package serve

import (
	"encoding/json"
	"strings"

	"chat/config/settings"
	"chat/engine/sampler"
)

// The samplers llama.cpp has beyond the OpenAI API's (DRY, XTC, top-nσ,
// typical-p, mirostat) are read from a request by their settings' names
// (settings.Request): llama-server's fields at an OpenAI request's top
// level, ollama's in "options". The setting's own rule reads each value,
// so a bad one gets the message the flag and /set give.

// peerSettings are the Request settings, in table order, and by their
// names: a request's field names one exactly, where settings.Lookup would
// also take its flag, aliases and other cases.
var peerSettings, peerByName = func() ([]*settings.Setting, map[string]*settings.Setting) {
	var list []*settings.Setting
	byName := map[string]*settings.Setting{}
	for _, st := range settings.All() {
		if st.Where&settings.Request != 0 {
			list = append(list, st)
			byName[st.Name] = st
		}
	}
	return list, byName
}()

// peerFields keeps the fields of a JSON object that are Request settings.
func peerFields(all map[string]json.RawMessage) map[string]json.RawMessage {
	var out map[string]json.RawMessage
	for name, raw := range all {
		if peerByName[name] != nil {
			if out == nil {
				out = map[string]json.RawMessage{}
			}
			out[name] = raw
		}
	}
	return out
}

// readFields keeps the request's peer fields and finds an OpenAI field set
// that this server cannot honour (decode calls it).
func (k *knobs) readFields(all map[string]json.RawMessage) {
	k.peer = peerFields(all)
	k.off = firstOn(all, openaiOff)
}

// UnmarshalJSON reads ollama's options and keeps their peer fields: only
// the options object is read again by name, not the whole body.
func (o *ollamaOptions) UnmarshalJSON(b []byte) error {
	type plain ollamaOptions // without this method
	if err := json.Unmarshal(b, (*plain)(o)); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	json.Unmarshal(b, &all) // an object: it went into the struct
	o.peer = peerFields(all)
	return nil
}

// applyPeer sets the peer knobs of p: their defaults (all off), then the
// request's values.
func applyPeer(p *sampler.Params, fields map[string]json.RawMessage) *errBody {
	v := settings.Values{Sampler: *p}
	for _, st := range peerSettings {
		st.Put(&v, st.Default(""))
	}
	for name, raw := range fields {
		if err := setJSON(peerByName[name], &v, raw); err != nil {
			return badRequest(name, err.Error())
		}
	}
	*p = v.Sampler
	return nil
}

// setJSON puts a JSON value in st: a number or a text read as the flag's
// text would be, a list of texts for a list; null leaves the default.
func setJSON(st *settings.Setting, v *settings.Values, raw json.RawMessage) error {
	t := strings.TrimSpace(string(raw))
	if t == "null" {
		return nil
	}
	var text string
	isText := json.Unmarshal(raw, &text) == nil
	if st.Kind == settings.List {
		var list []string
		if isText {
			list = []string{text}
		} else if json.Unmarshal(raw, &list) != nil {
			return &settings.Error{Setting: st.Name, Reason: "must be a list of texts"}
		}
		return st.SetList(v, list)
	}
	if !isText {
		text = t
	}
	return st.SetText(v, text)
}
