package session

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"chat/engine/constrain"
	"chat/engine/sampler"
)

// /format turns constrained replies on and off; each reply under it is
// complete and parses, in chat and raw mode, and the stats name it.
func TestFormatCommand(t *testing.T) {
	s, _ := stored(t, sharedModel(t), 120)
	s.SetSampler(sampler.Params{Temperature: 1, Seed: 4})
	if got := run(t, s, "/format"); !strings.Contains(got, "free") {
		t.Fatalf("/format: %q", got)
	}
	if got := run(t, s, "/format json"); got != "replies are constrained: json" {
		t.Fatalf("/format json: %q", got)
	}
	for range 3 {
		reply := turn(t, s, "Give me JSON.")
		if !json.Valid([]byte(reply)) {
			t.Fatalf("reply %q is not JSON", reply)
		}
	}
	if st := s.Poll().Stats.Constraint; st.Spec != "json" || st.MaskTime <= 0 {
		t.Errorf("stats %+v", st)
	}
	run(t, s, "/format regex (red|green|blue) [a-z]{2,5}")
	re := regexp.MustCompile(`^(red|green|blue) [a-z]{2,5}$`)
	if reply := turn(t, s, "A colour?"); !re.MatchString(reply) {
		t.Fatalf("%q does not match", reply)
	}
	schema := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(schema, []byte(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`), 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, s, "/format schema "+schema)
	var v struct{ N *int }
	if reply := turn(t, s, "A number?"); json.Unmarshal([]byte(reply), &v) != nil || v.N == nil {
		t.Fatalf("%q does not fit the schema", reply)
	}
	if err := s.SetMode("raw"); err != nil {
		t.Fatal(err)
	}
	run(t, s, "/format regex [0-9]{3}")
	if reply := turn(t, s, "Once upon a time"); !regexp.MustCompile(`^[0-9]{3}$`).MatchString(reply) {
		t.Fatalf("raw mode: %q", reply)
	}
	run(t, s, "/format off")
	if s.Constraint() != "" {
		t.Fatal("/format off left a constraint")
	}
}

func TestFormatErrors(t *testing.T) {
	s, _ := stored(t, sharedModel(t), 10)
	for line, want := range map[string]string{
		"/format yaml":                      "usage: /format",
		"/format regex":                     "usage: /format",
		"/format regex (a":                  "regex: at byte 2: expected ')'",
		"/format schema {\"type\": 1}":      "json schema: line 1, col 10 (/type)",
		"/format grammar /nonexistent.gbnf": "no such file",
	} {
		_, _, err := s.Command(line)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", line, err, want)
		}
	}
	if s.Constraint() != "" {
		t.Error("a failed /format changed the setting")
	}
	if err := s.SetConstraint(constrain.Spec{Kind: "json"}); err != nil || s.Constraint() != "json" {
		t.Fatal(err)
	}
}
