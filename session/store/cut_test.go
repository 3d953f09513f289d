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

// Names found in the sessions folder reach messages quoted and cut: a file
// name as long as the file system allows, full of escape sequences, a
// session name of a megabyte, and a prefix matching many sessions.
func TestFolderNamesAreCut(t *testing.T) {
	dir := t.TempDir()
	s := Open(dir)
	long := testmodels.HostileName(240) + ".json" // NAME_MAX is 255 bytes on most file systems
	if err := os.WriteFile(filepath.Join(dir, long), []byte("{}"), 0o600); err != nil {
		t.Skipf("cannot make such a file name here: %v", err)
	}
	r := rec("20261129-100000-name", t0, "hello")
	r.Version = Version
	r.Name = strings.Repeat("n", 1<<20)
	b, _ := json.Marshal(r)
	os.WriteFile(filepath.Join(dir, r.ID+".json"), b, 0o600)
	list, skipped, err := s.Scan()
	if err != nil || len(list) != 1 || len(skipped) != 1 {
		t.Fatalf("Scan: %v, %d listed, skipped %v", err, len(list), skipped)
	}
	if !strings.Contains(skipped[0].Error(), "its name is not a session id") {
		t.Errorf("skipped: %v", skipped[0])
	}
	testmodels.OneShortLine(t, skipped[0], len(dir)+200)
	if len(list[0].Name) > 300 {
		t.Errorf("a session name of %d bytes listed", len(list[0].Name))
	}

	for i := range 20 {
		if err := s.Save(rec(fmt.Sprintf("20261129-2%05d-aaaa", i), t0, "hi")); err != nil {
			t.Fatal(err)
		}
	}
	_, err = s.Resolve("20261129-2")
	if err == nil || !strings.Contains(err.Error(), "is ambiguous") || !strings.Contains(err.Error(), "and 15 more") {
		t.Fatalf("Resolve: %.300v", err)
	}
	testmodels.OneShortLine(t, err, 300)
	_, err = s.Load(strings.Repeat("\x1b[2J", 1<<16))
	testmodels.OneShortLine(t, err, 300)
}
