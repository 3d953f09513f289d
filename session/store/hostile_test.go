package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"chat/models/testmodels"
)

// Issue 16: special files named *.json in the sessions folder, oversized
// files and messages are refused with a message, fast and in little memory;
// the readable sessions are still listed and resumed.
func TestHostileSessionFiles(t *testing.T) {
	dir := t.TempDir()
	s := Open(dir)
	good := rec("20261129-100000-aaaa", t0, "hello", "hi")
	if err := s.Save(good); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{} // file → a word of its error
	if err := syscall.Mkfifo(filepath.Join(dir, "20261129-100001-fifo.json"), 0o600); err == nil {
		want["20261129-100001-fifo.json"] = "FIFO"
	}
	os.Symlink("/dev/zero", filepath.Join(dir, "20261129-100002-zero.json"))
	want["20261129-100002-zero.json"] = "device"
	// A 200 MB file (sparse: it costs no disk) is refused by its size.
	big, _ := os.Create(filepath.Join(dir, "20261129-100003-bigf.json"))
	big.Truncate(200 << 20)
	big.Close()
	want["20261129-100003-bigf.json"] = "larger than"
	// A message over the limit in a file under it.
	r := rec("20261129-100004-msgs", t0, strings.Repeat("x", MaxMessageBytes+1))
	r.Version = Version
	b, _ := json.Marshal(r)
	os.WriteFile(filepath.Join(dir, r.ID+".json"), b, 0o600)
	want[r.ID+".json"] = "message 0 is"

	var list []Summary
	var skipped []error
	err := testmodels.Bounded(t, "scan", func() error {
		var err error
		list, skipped, err = s.Scan()
		return err
	})
	if err != nil || len(list) != 1 || list[0].ID != good.ID {
		t.Fatalf("Scan: %v, %+v", err, list)
	}
	if len(skipped) != len(want) {
		t.Errorf("%d files skipped, want %d: %v", len(skipped), len(want), skipped)
	}
	for _, e := range skipped {
		ok := false
		for f, w := range want {
			if strings.Contains(e.Error(), f) && strings.Contains(e.Error(), w) {
				ok = true
			}
		}
		if !ok || strings.Contains(e.Error(), "\n") {
			t.Errorf("unexpected skip reason: %v", e)
		}
	}
	for f, w := range want {
		id := strings.TrimSuffix(f, ".json")
		err := testmodels.Bounded(t, f, func() error { _, err := s.Load(id); return err })
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Load(%s): %v, want %q", id, err, w)
		}
	}
	testmodels.Bounded(t, "latest", func() error {
		l, err := s.Latest()
		if err != nil || l.ID != good.ID {
			t.Errorf("Latest: %v, %v", l, err)
		}
		return err
	})
	if _, err := s.Prompts("", 10); err != nil {
		t.Error(err)
	}
}

// A session too large to keep is refused on save with a message, never
// written.
func TestSaveRefusesOversized(t *testing.T) {
	s := Open(t.TempDir())
	r := rec("20261129-100000-aaaa", t0, strings.Repeat("x", MaxMessageBytes+1))
	if err := s.Save(r); err == nil || !strings.Contains(err.Error(), "messages are kept up to") {
		t.Errorf("Save: %v", err)
	}
	var msgs []string
	for i := 0; i < 6; i++ {
		msgs = append(msgs, strings.Repeat("y", MaxMessageBytes-100))
	}
	if err := s.Save(rec("20261129-100000-bbbb", t0, msgs...)); err == nil || !strings.Contains(err.Error(), "sessions are kept up to") {
		t.Errorf("Save: %v", err)
	}
	if list, _ := s.List(); len(list) != 0 {
		t.Errorf("oversized sessions were written: %v", list)
	}
}

// A session file that is a symbolic link is written through: the target
// gets the new version and the link stays a link.
func TestSaveWritesThroughSymlink(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	s := Open(dir)
	r := rec("20261129-100000-aaaa", t0, "hello")
	target := filepath.Join(elsewhere, "kept.json")
	if err := Open(elsewhere).Save(r); err != nil {
		t.Fatal(err)
	}
	os.Rename(filepath.Join(elsewhere, r.ID+".json"), target)
	link := filepath.Join(dir, r.ID+".json")
	if err := os.Symlink(target, link); err != nil {
		t.Skip(err)
	}
	got, err := s.Load(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	got.Messages = append(got.Messages, Message{Role: "assistant", Content: "hi there"})
	if err := s.Save(got); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", fi.Mode(), err)
	}
	b, _ := os.ReadFile(target)
	if !bytes.Contains(b, []byte("hi there")) {
		t.Errorf("the target was not updated")
	}
	// A link that cannot be followed is an error, not a silent replacement.
	os.Remove(target)
	if err := s.Save(got); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("dangling link: %v", err)
	}
}

// FuzzDecode feeds any bytes as the contents of a session file: the full
// decode (Load) and the listing decode (List) give a record or an error
// naming the file, never a panic, and agree on which.
func FuzzDecode(f *testing.F) {
	b, _ := json.Marshal(rec("20261129-100000-aaaa", t0, "hello", "hi"))
	f.Add(b)
	f.Add([]byte(`{"version":1,"id":"20261129-100000-aaaa","messages":[{"role":"user","content":"\u001b[2Jx"}]}`))
	f.Add([]byte(`{"version":2,"id":7}`))
	f.Add([]byte(`{"version":1,"id":"20261129-100000-aaaa","messages":[{"role":"system","content":1}]}`))
	const path = "/s/20261129-100000-aaaa.json"
	f.Fuzz(func(t *testing.T, data []byte) {
		var r Record
		var l listing
		err := decode(path, bytes.NewReader(data), &r)
		lerr := decode(path, bytes.NewReader(data), &l)
		for _, e := range []error{err, lerr} {
			if e != nil && !strings.Contains(e.Error(), path) {
				t.Fatalf("error does not name the file: %v", e)
			}
		}
		if (err == nil) != (lerr == nil) && !strings.Contains(fmt.Sprint(err, lerr), "damaged") {
			t.Fatalf("Load and List disagree: %v / %v", err, lerr)
		}
		if err == nil && (r.ID != l.ID || len(r.Messages) != len(l.Messages)) {
			t.Fatalf("listing %+v differs from record %+v", l, r)
		}
	})
}
