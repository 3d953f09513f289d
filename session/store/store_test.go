package store

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func rec(id string, updated time.Time, msgs ...string) *Record {
	r := &Record{ID: id, Title: Title(msgs[0]), Created: updated, Updated: updated, Mode: "chat",
		Model: Model{Name: "student-chat.pt", Identity: "sha256:00"}, Sampler: Sampler{Temperature: 0.8, TopP: 0.95, Seed: 1}}
	for i, m := range msgs {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		r.Messages = append(r.Messages, Message{Role: role, Content: m, Time: updated})
	}
	return r
}

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func TestSaveLoadRoundTrip(t *testing.T) {
	s := Open(filepath.Join(t.TempDir(), "sessions")) // created on first save
	r := rec("20261129-100000-abcd", t0, "Tell me a story.", "Once upon a time…")
	r.System = "Be brief."
	r.MaxTokens = 200
	if err := s.Save(r); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != Version || got.System != "Be brief." || got.MaxTokens != 200 || len(got.Messages) != 2 ||
		got.Messages[1].Content != "Once upon a time…" || !got.Messages[0].Time.Equal(t0) || got.Sampler.TopP != 0.95 {
		t.Errorf("loaded %+v", got)
	}
	st, err := os.Stat(s.path(r.ID))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("session file mode %v, want 0600 (conversations are private)", st.Mode().Perm())
	}
	latest, err := s.Latest()
	if err != nil || latest.ID != r.ID {
		t.Errorf("Latest = %v, %v", latest, err)
	}
}

// A crash after the new version is written but before the rename leaves the
// previous file as it was, and the leftover temp file is invisible.
func TestCrashBeforeRenameKeepsPreviousFile(t *testing.T) {
	s := Open(t.TempDir())
	r := rec("20261129-100000-abcd", t0, "first question", "first answer")
	if err := s.Save(r); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(s.path(r.ID))
	crash := errors.New("killed")
	s.beforeRename = func(tmp string) error {
		data, err := os.ReadFile(tmp)
		if err != nil || !strings.Contains(string(data), "second question") {
			t.Errorf("temp file not fully written before the rename: %v", err)
		}
		// A real crash leaves the temp file behind; keep a copy so List and
		// Load must ignore it.
		os.WriteFile(tmp+".left.tmp", data, 0o600)
		return crash
	}
	r.Messages = append(r.Messages, Message{Role: "user", Content: "second question"})
	if err := s.Save(r); !errors.Is(err, crash) {
		t.Fatalf("Save = %v", err)
	}
	after, _ := os.ReadFile(s.path(r.ID))
	if string(after) != string(before) {
		t.Errorf("the previous file changed:\n%s", after)
	}
	list, err := s.List()
	if err != nil || len(list) != 1 || list[0].Messages != 2 {
		t.Errorf("List after crash = %+v, %v", list, err)
	}
	got, err := s.Load(r.ID)
	if err != nil || len(got.Messages) != 2 {
		t.Errorf("Load after crash = %v, %v", got, err)
	}
	s.beforeRename = nil
	if err := s.Save(r); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Load(r.ID); len(got.Messages) != 3 {
		t.Errorf("save after crash: %d messages", len(got.Messages))
	}
}

// A real kill -9 of a process saving in a loop: whatever moment it dies at,
// the file on disk is one whole version.
func TestKillDuringSave(t *testing.T) {
	if dir := os.Getenv("STORE_TEST_CHILD_DIR"); dir != "" {
		s := Open(dir)
		r := rec("20261129-100000-abcd", t0, "q")
		for i := 0; ; i++ {
			r.Messages = append(r.Messages, Message{Role: "assistant", Content: strings.Repeat("x", 4096)})
			r.Title = strconv.Itoa(len(r.Messages))
			if err := s.Save(r); err != nil {
				os.Exit(3)
			}
			os.Stdout.WriteString("saved\n")
		}
	}
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillDuringSave$")
	cmd.Env = append(os.Environ(), "STORE_TEST_CHILD_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for n := 0; n < 30; n++ {
		if !sc.Scan() {
			cmd.Wait()
			t.Fatalf("child stopped after %d saves", n)
		}
	}
	cmd.Process.Kill() // SIGKILL, most likely in the middle of a save
	cmd.Wait()
	r, err := Open(dir).Load("20261129-100000-abcd")
	if err != nil {
		t.Fatalf("after kill -9: %v", err)
	}
	if r.Title != strconv.Itoa(len(r.Messages)) || len(r.Messages) < 31 {
		t.Errorf("after kill -9: title %q with %d messages: not one whole version", r.Title, len(r.Messages))
	}
}

func TestListNewestFirstSkipsCorrupt(t *testing.T) {
	dir := t.TempDir()
	s := Open(dir)
	for i, id := range []string{"20261129-100000-0001", "20261129-100000-0002", "20261129-100000-0003"} {
		if err := s.Save(rec(id, t0.Add(time.Duration([]int{2, 3, 1}[i])*time.Hour), "question "+id, "answer")); err != nil {
			t.Fatal(err)
		}
	}
	bad := map[string]string{
		"truncated.json": `{"version": 1, "id": "truncated", "messages": [`,
		"empty.json":     ``,
		"future.json":    `{"version": 2, "id": "future"}`,
		"noversion.json": `{"id": "noversion"}`,
		"array.json":     `[1, 2, 3]`,
		"wrongid.json":   `{"version": 1, "id": "other"}`,
		"badrole.json":   `{"version": 1, "id": "badrole", "messages": [{"role": "tool", "content": "x"}]}`,
		"notes.txt":      `not a session`,
	}
	for name, data := range bad {
		os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600)
	}
	os.Mkdir(filepath.Join(dir, "sub.json"), 0o700)
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, x := range list {
		ids = append(ids, x.ID)
	}
	if strings.Join(ids, " ") != "20261129-100000-0002 20261129-100000-0001 20261129-100000-0003" {
		t.Errorf("List order = %v, want newest update first", ids)
	}
	if x := list[0]; x.Title != "question 20261129-100000-0002" || x.Messages != 2 || x.Model != "student-chat.pt" {
		t.Errorf("summary = %+v", x)
	}
	for name, want := range map[string]string{
		"truncated": "damaged", "empty": "damaged", "future": "version 2", "noversion": "no format version",
		"array": "damaged", "wrongid": "disagree", "badrole": "role",
	} {
		_, err := s.Load(name)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), name+".json") {
			t.Errorf("Load(%s) = %v, want an error naming the file and saying %q", name, err, want)
		}
	}
	if _, err := s.Load("../../etc/passwd"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load of a path = %v", err)
	}
	if _, err := s.Load("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load(nope) = %v", err)
	}
}

func TestFutureVersionMessage(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x.json"), []byte(`{"version": 7, "id": "x", "messages": "a new shape"}`), 0o600)
	_, err := Open(dir).Load("x")
	if err == nil || !strings.Contains(err.Error(), "newer chat") {
		t.Errorf("err = %v, want it to say a newer chat is needed", err)
	}
}

func TestEmptyStore(t *testing.T) {
	s := Open(filepath.Join(t.TempDir(), "none"))
	if list, err := s.List(); err != nil || len(list) != 0 {
		t.Errorf("List = %v, %v", list, err)
	}
	if _, err := s.Latest(); !errors.Is(err, ErrNotFound) {
		t.Errorf("Latest = %v", err)
	}
	if _, err := os.Stat(s.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("listing created the directory")
	}
}

func TestResolveAndNames(t *testing.T) {
	s := Open(t.TempDir())
	a := rec("20261129-100000-aaaa", t0, "a")
	a.Name = "story"
	b := rec("20261129-110000-bbbb", t0.Add(time.Hour), "b")
	c := rec("20261129-110000-bbcc", t0.Add(2*time.Hour), "c")
	for _, r := range []*Record{a, b, c} {
		if err := s.Save(r); err != nil {
			t.Fatal(err)
		}
	}
	for ref, want := range map[string]string{
		"20261129-100000-aaaa": a.ID, "story": a.ID, "1": c.ID, "3": a.ID, "20261129-10": a.ID, "20261129-110000-bbc": c.ID,
	} {
		if got, err := s.Resolve(ref); err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", ref, got, err, want)
		}
	}
	for ref, want := range map[string]string{"4": "there are 3", "20261129-110000-bb": "ambiguous", "zzz": "no such session", "": "which session"} {
		if _, err := s.Resolve(ref); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Resolve(%q) = %v, want %q", ref, err, want)
		}
	}
	if id, _ := s.NameOwner("story"); id != a.ID {
		t.Errorf("NameOwner = %q", id)
	}
	for _, bad := range []string{"", "a/b", "..", ".hidden", "12", "20261129-100000-abcd", strings.Repeat("x", 65), "with space"} {
		if ValidName(bad) == nil {
			t.Errorf("ValidName(%q) = nil", bad)
		}
	}
	if err := ValidName("my-story_2.v1"); err != nil {
		t.Error(err)
	}
	bad := rec("20261129-120000-dddd", t0, "x")
	bad.Name = "a/b"
	if s.Save(bad) == nil {
		t.Error("saved a record with a bad name")
	}
	bad.Name, bad.ID = "", "../x"
	if s.Save(bad) == nil {
		t.Error("saved a record with a path as id")
	}
}

func TestPrompts(t *testing.T) {
	s := Open(t.TempDir())
	s.Save(rec("20261129-100000-0001", t0, "p1", "r", "p2", "r"))
	s.Save(rec("20261129-100000-0002", t0.Add(time.Hour), "p3", "r", "  ", "r", "p4"))
	s.Save(rec("20261129-100000-0003", t0.Add(2*time.Hour), "current"))
	got, err := s.Prompts("20261129-100000-0003", 100)
	if err != nil || strings.Join(got, ",") != "p1,p2,p3,p4" {
		t.Errorf("Prompts = %q, %v", got, err)
	}
	if got, _ := s.Prompts("", 3); strings.Join(got, ",") != "p3,p4,current" {
		t.Errorf("Prompts(max 3) = %q", got)
	}
}

func TestTitle(t *testing.T) {
	for in, want := range map[string]string{
		"\n\n  Tell   me\ta story \nsecond line": "Tell me a story",
		"":                                       "",
		strings.Repeat("é", 70):                  strings.Repeat("é", 59) + "…",
	} {
		if got := Title(in); got != want {
			t.Errorf("Title(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIdentity(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.pt")
	os.WriteFile(p, []byte("abc"), 0o600)
	id, err := Identity(p)
	if want := "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; err != nil || id != want || IdentityOf([]byte("abc")) != want {
		t.Errorf("Identity = %q, %v", id, err)
	}
	if _, err := Identity(p + ".missing"); err == nil {
		t.Error("no error for a missing file")
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/xdg/data")
	if d, _ := DefaultDir(); d != "/xdg/data/chat/sessions" {
		t.Errorf("DefaultDir = %q", d)
	}
	t.Setenv("XDG_DATA_HOME", "relative/ignored")
	t.Setenv("HOME", "/home/u")
	if d, _ := DefaultDir(); d != "/home/u/.local/share/chat/sessions" {
		t.Errorf("DefaultDir with a relative XDG_DATA_HOME = %q", d)
	}
}
