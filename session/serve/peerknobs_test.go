package serve

import (
	"encoding/json"
	"testing"

	"chat/config/settings"
)

// peerFields keeps a body's fields that name a Request setting exactly (a
// request's field names, as llama-server reads them), found in the table
// once: an alias, a flag's spelling or another case is not one, nor is a
// setting a request does not take.
func TestPeerFields(t *testing.T) {
	all := map[string]json.RawMessage{"typ_p": nil, "top-nsigma": nil, "TYPICAL_P": nil, "mirostat-ent": nil, "messages": nil}
	want := 0
	for _, st := range settings.All() {
		all[st.Name] = json.RawMessage("1")
		if st.Where&settings.Request != 0 {
			want++
		}
	}
	got := peerFields(all)
	if len(got) != want || want == 0 {
		t.Errorf("%d fields kept, want the %d Request settings: %v", len(got), want, got)
	}
	for name := range got {
		if st := settings.Lookup(name); st == nil || st.Name != name || st.Where&settings.Request == 0 {
			t.Errorf("kept %q, not a Request setting's name", name)
		}
	}
}
