package store

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"chat/models/testmodels"
)

// A session file's id and roles are quoted and cut in errors: a hostile
// file gets one short line without control characters.
func TestHostileFieldsInMessages(t *testing.T) {
	long := "\n" + testmodels.HostileName(1<<20) // a newline too: these formats allow one
	const id = "20261129-100000-evil"
	cases := []struct {
		name, want string
		edit       func(r *Record)
	}{
		{"id", "the id and the file name disagree", func(r *Record) { r.ID = long }},
		{"role", "has role", func(r *Record) { r.Messages[0].Role = long }},
	}
	// A megabyte-long number where the version goes: encoding/json's error
	// quoted it whole.
	t.Run("number", func(t *testing.T) {
		dir := t.TempDir()
		b := []byte(`{"version":1` + strings.Repeat("0", 1<<20) + `}`)
		if err := os.WriteFile(filepath.Join(dir, id+".json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir).Load(id)
		if err == nil || !strings.Contains(err.Error(), "is damaged") || len(err.Error()) >= 600 {
			t.Fatalf("Load: %d bytes: %.200v", len(fmt.Sprint(err)), err)
		}
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r := rec(id, t0, "hello", "hi")
			r.Version = Version
			tc.edit(r)
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, id+".json"), b, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = Open(dir).Load(id)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: %v, want %q", err, tc.want)
			}
			testmodels.OneShortLine(t, err, 300)
		})
	}
}
