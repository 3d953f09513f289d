// Package store keeps conversations as one JSON file each under
// $XDG_DATA_HOME/chat/sessions (default ~/.local/share/chat/sessions).
//
// Files are written atomically (a temp file in the same directory, fsync,
// rename, fsync of the directory), so a crash or kill -9 in the middle of a
// save leaves the previous version whole; a session file that is a symbolic
// link is written through: the link's target is replaced, in its own
// directory. The format carries a version number; files from a newer chat
// are refused with a message instead of being half understood. Only regular
// files of at most MaxFileBytes, with messages of at most MaxMessageBytes,
// are read (a FIFO would block, /dev/zero never end, and a huge message
// costs far more than its size once rendered and tokenized); Save refuses
// to write more. A file that cannot be read is skipped by List, reported by
// Scan and named in Load's error.
package store

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"chat/models/quote"
	"chat/models/regular"
)

// Version is the format this package writes and the newest it reads.
const Version = 1

// The largest session file and message read or written: a long chat with a
// small model is well under 1 MB; a message longer than any context cannot
// be sent anyway.
const (
	MaxFileBytes    = 4 << 20
	MaxMessageBytes = 1 << 20
)

// Record is one saved conversation (format version 1).
type Record struct {
	Version   int       `json:"version"`
	ID        string    `json:"id"`
	Name      string    `json:"name,omitempty"` // set by /save NAME; unique among the sessions
	Title     string    `json:"title"`          // from the first user message
	Created   time.Time `json:"created"`
	Updated   time.Time `json:"updated"`
	Model     Model     `json:"model"`
	Mode      string    `json:"mode"` // "chat" or "raw"
	System    string    `json:"system,omitempty"`
	MaxTokens int       `json:"max_tokens,omitempty"`
	Sampler   Sampler   `json:"sampler"`
	// Settings are the knobs a session keeps (config/settings, Persist), as
	// the text /set takes: name → value. When present they are read instead
	// of Mode, MaxTokens and Sampler, which stay for older readers.
	Settings map[string]string `json:"settings,omitempty"`
	Messages []Message         `json:"messages"`
}

// Model says which model the conversation was held with.
type Model struct {
	Name     string `json:"name"`
	Path     string `json:"path,omitempty"`     // "" for the embedded model
	Identity string `json:"identity,omitempty"` // "sha256:<hex>" or "size:<bytes>" (see Identity)
}

// Sampler holds the knobs with their own JSON names, so that renaming a Go
// field never changes the file format.
type Sampler struct {
	Greedy           bool    `json:"greedy"`
	Temperature      float64 `json:"temperature"`
	TopK             int     `json:"top_k"`
	TopP             float64 `json:"top_p"`
	MinP             float64 `json:"min_p"`
	RepeatPenalty    float64 `json:"repeat_penalty"`
	FrequencyPenalty float64 `json:"frequency_penalty"`
	PresencePenalty  float64 `json:"presence_penalty"`
	PenaltyWindow    int     `json:"penalty_window,omitempty"`
	Seed             uint64  `json:"seed"`
}

// Message is one turn.
type Message struct {
	Role    string    `json:"role"` // "user", "assistant", or "system" (the system prompt set at this point)
	Content string    `json:"content"`
	Time    time.Time `json:"time,omitzero"`
}

// Summary is what List shows of a session.
type Summary struct {
	ID       string
	Name     string
	Title    string
	Model    string
	Updated  time.Time
	Messages int
}

// Store is a directory of session files.
type Store struct {
	dir string
	// beforeRename, when set (tests), runs between writing the temp file and
	// renaming it; an error stands for a crash at that moment.
	beforeRename func(tmp string) error
}

// DefaultDir is $XDG_DATA_HOME/chat/sessions, or ~/.local/share/chat/sessions
// when XDG_DATA_HOME is unset or relative (the XDG spec says to ignore
// relative paths).
func DefaultDir() (string, error) {
	base := os.Getenv("XDG_DATA_HOME")
	if !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("sessions directory: %w (set XDG_DATA_HOME)", err)
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "chat", "sessions"), nil
}

// Open returns the store in dir. The directory is created on the first save,
// so listing an empty store writes nothing.
func Open(dir string) *Store { return &Store{dir: dir} }

// Dir is the directory the store reads and writes.
func (s *Store) Dir() string { return s.dir }

// IDs are made by NewID; they are also accepted from the user (Load), so they
// are checked to be plain file names.
var (
	idPattern   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	autoPattern = regexp.MustCompile(`^\d{8}-\d{6}-[0-9a-f]{4}$`)
	namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
)

// NewID returns a fresh id: the local time to the second and 4 random hex
// digits, so ids sort by creation time and two sessions started in the same
// second still differ.
func NewID(now time.Time) string {
	var b [2]byte
	rand.Read(b[:])
	return now.Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// ValidName reports why name cannot name a session, or nil.
func ValidName(name string) error {
	switch {
	case !namePattern.MatchString(name):
		return fmt.Errorf("session name %q: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	case autoPattern.MatchString(name):
		return fmt.Errorf("session name %q looks like a session id; choose another", name)
	case isIndex(name):
		return fmt.Errorf("session name %q is a number, which /load reads as a position in the list; choose another", name)
	}
	return nil
}

func isIndex(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

func (s *Store) path(id string) string { return filepath.Join(s.dir, id+".json") }

// Save writes r atomically as <dir>/<id>.json, creating the directory if
// needed. It sets r.Version.
func (s *Store) Save(r *Record) error {
	if !idPattern.MatchString(r.ID) {
		return fmt.Errorf("save session: bad id %q", r.ID)
	}
	if r.Name != "" {
		if err := ValidName(r.Name); err != nil {
			return err
		}
	}
	r.Version = Version
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("save session %s: %w", r.ID, err)
	}
	data = append(data, '\n')
	if len(data) > MaxFileBytes {
		return fmt.Errorf("save session: the conversation is %d KB; sessions are kept up to %d KB (start a new one with /new)", len(data)>>10, MaxFileBytes>>10)
	}
	for i, m := range r.Messages {
		if len(m.Content) > MaxMessageBytes {
			return fmt.Errorf("save session: message %d is %d KB; messages are kept up to %d KB", i+1, len(m.Content)>>10, MaxMessageBytes>>10)
		}
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	path := s.path(r.ID)
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		// Write through the link: replace its target, in the target's
		// directory (rename is atomic only within one), and keep the link.
		if path, err = filepath.EvalSymlinks(path); err != nil {
			return fmt.Errorf("save session: %s is a symbolic link that cannot be followed: %w", s.path(r.ID), err)
		}
	}
	return s.writeAtomic(path, data)
}

// writeAtomic replaces path with data so that a reader (or a crash) sees the
// old file or the new one, never a mix: the bytes go to a temp file in the
// same directory (rename is atomic only within a file system), are fsynced,
// and the temp file is renamed over path; the directory is fsynced so the
// rename itself survives a power cut.
func (s *Store) writeAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	if s.beforeRename != nil {
		if err := s.beforeRename(tmp); err != nil {
			return err // a simulated crash: the temp file stays, as it would
		}
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	if d, derr := os.Open(dir); derr == nil {
		d.Sync() // best effort: not every file system can sync a directory
		d.Close()
	}
	return nil
}

// ErrNotFound is returned (wrapped) when no session matches.
var ErrNotFound = errors.New("no such session")

// Load reads the session with this id.
func (s *Store) Load(id string) (*Record, error) {
	if !idPattern.MatchString(id) {
		return nil, fmt.Errorf("session %s: %w", quote.Quote(id), ErrNotFound)
	}
	var r Record
	err := decodeFile(s.path(id), &r)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("session %s: %w", quote.Quote(id), ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// decodeFile reads the session file at path into r (a *Record, or a
// *listing for List), streaming it from the file; every failure names the
// file.
func decodeFile[R Record | listing](path string, r *R) error {
	f, st, err := regular.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err != nil {
		return fmt.Errorf("session file %s cannot be read: %w", path, err)
	}
	defer f.Close()
	if st.Size() > MaxFileBytes {
		return fmt.Errorf("session file %s is not read: %w", path, regular.TooLarge(st.Size(), MaxFileBytes))
	}
	return decode(path, f, r)
}

// decode reads a session file's contents from f; path is for messages.
func decode[R Record | listing](path string, f io.Reader, r *R) error {
	lr := &io.LimitedReader{R: f, N: MaxFileBytes + 1}
	derr := json.NewDecoder(lr).Decode(r)
	v := version(r)
	switch {
	case lr.N <= 0:
		return fmt.Errorf("session file %s is not read: it is larger than %d KB", path, MaxFileBytes>>10)
	case v > Version:
		return fmt.Errorf("session file %s has format version %d, but this chat reads up to version %d: open it with a newer chat", path, v, Version)
	case derr != nil:
		// encoding/json quotes the value it refused, which may be a
		// megabyte-long number.
		return fmt.Errorf("session file %s is damaged: %s", path, quote.Cut(derr.Error(), 4*quote.Max))
	case v == 0:
		return fmt.Errorf("session file %s has no format version: not a chat session", path)
	case v < 0:
		return fmt.Errorf("session file %s has an invalid format version %d", path, v)
	}
	id, roles, sizes := fields(r)
	if id+".json" != filepath.Base(path) {
		return fmt.Errorf("session file %s holds session %s: the id and the file name disagree", path, quote.Quote(id))
	}
	for i, role := range roles {
		if role != "user" && role != "assistant" && role != "system" {
			return fmt.Errorf("session file %s: message %d has role %s (want user, assistant or system)", path, i, quote.Quote(role))
		}
		if sizes != nil && sizes[i] > MaxMessageBytes {
			return fmt.Errorf("session file %s is not read: message %d is %d KB, more than the %d KB allowed", path, i, sizes[i]>>10, MaxMessageBytes>>10)
		}
	}
	return nil
}

// listing is what List decodes of a file: the summary, and of each message
// its role and size, without keeping the text.
type listing struct {
	Version int       `json:"version"`
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Title   string    `json:"title"`
	Updated time.Time `json:"updated"`
	Model   struct {
		Name string `json:"name"`
	} `json:"model"`
	Messages []struct {
		Role    string   `json:"role"`
		Content sizeOnly `json:"content"`
	} `json:"messages"`
}

// sizeOnly decodes a JSON string keeping only its length.
type sizeOnly int

func (n *sizeOnly) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '"' {
		return errors.New("message content is not a string")
	}
	*n = sizeOnly(len(b) - 2)
	return nil
}

func version[R Record | listing](r *R) int {
	switch x := any(r).(type) {
	case *Record:
		return x.Version
	case *listing:
		return x.Version
	}
	return 0
}

// fields are the id, the message roles and the message sizes (nil when
// they need no check: List keeps no text) of a decoded file.
func fields[R Record | listing](r *R) (id string, roles []string, sizes []int) {
	switch x := any(r).(type) {
	case *Record:
		for _, m := range x.Messages {
			roles = append(roles, m.Role)
			sizes = append(sizes, len(m.Content))
		}
		return x.ID, roles, sizes
	case *listing:
		for _, m := range x.Messages {
			roles = append(roles, m.Role)
			sizes = append(sizes, int(m.Content))
		}
		return x.ID, roles, sizes
	}
	return "", nil, nil
}

// Scan returns the readable sessions, most recently updated first, and an
// error for each session file that could not be read (and why). A missing
// directory is an empty store.
func (s *Store) Scan() ([]Summary, []error, error) {
	ents, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list sessions: %w", err)
	}
	var out []Summary
	var skipped []error
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			continue // temp files of interrupted saves start with "."
		}
		if !idPattern.MatchString(strings.TrimSuffix(name, ".json")) {
			// Load could not open it; its name may be long and hold
			// control characters, so it is quoted and cut.
			skipped = append(skipped, fmt.Errorf("session file %s in %s is not read: its name is not a session id", quote.Quote(name), s.dir))
			continue
		}
		var l listing
		if err := decodeFile(filepath.Join(s.dir, name), &l); err != nil {
			skipped = append(skipped, err)
			continue
		}
		n := 0 // the system prompts set along the way are not messages
		for _, m := range l.Messages {
			if m.Role != "system" {
				n++
			}
		}
		out = append(out, Summary{ID: l.ID, Name: quote.Cut(l.Name, 200), Title: quote.Cut(l.Title, 200), Model: quote.Cut(l.Model.Name, 200),
			Updated: l.Updated, Messages: n})
	}
	slices.SortFunc(out, func(a, b Summary) int {
		if c := b.Updated.Compare(a.Updated); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return out, skipped, nil
}

// List returns the readable sessions, most recently updated first. Files that
// are damaged, too large, from a newer version or not sessions at all are
// skipped (Scan says which).
func (s *Store) List() ([]Summary, error) {
	list, _, err := s.Scan()
	return list, err
}

// Latest is the most recently updated session, or an ErrNotFound error when
// there is none.
func (s *Store) Latest() (*Record, error) {
	list, skipped, err := s.Scan()
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		more := ""
		if len(skipped) > 0 {
			more = fmt.Sprintf(" (%d files could not be read: see chat --sessions)", len(skipped))
		}
		return nil, fmt.Errorf("no saved sessions in %s%s: %w", s.dir, more, ErrNotFound)
	}
	return s.Load(list[0].ID)
}

// Resolve finds the session a user means by ref: an id, a name given with
// /save, a position in List (1 = newest), or a unique prefix of an id.
func (s *Store) Resolve(ref string) (string, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return "", errors.New("which session? give a name, an id or a number from the list")
	}
	if idPattern.MatchString(ref) {
		if _, err := os.Stat(s.path(ref)); err == nil {
			return ref, nil
		}
	}
	list, err := s.List()
	if err != nil {
		return "", err
	}
	for _, x := range list {
		if x.Name == ref {
			return x.ID, nil
		}
	}
	if n, err := strconv.Atoi(ref); err == nil {
		if n < 1 || n > len(list) {
			return "", fmt.Errorf("session number %d: %w (there are %d)", n, ErrNotFound, len(list))
		}
		return list[n-1].ID, nil
	}
	var match []string
	for _, x := range list {
		if strings.HasPrefix(x.ID, ref) {
			match = append(match, x.ID)
		}
	}
	switch len(match) {
	case 1:
		return match[0], nil
	case 0:
		return "", fmt.Errorf("session %s: %w", quote.Quote(ref), ErrNotFound)
	default:
		more := ""
		if len(match) > maxShown {
			more = fmt.Sprintf(" and %d more", len(match)-maxShown)
			match = match[:maxShown]
		}
		return "", fmt.Errorf("session %s is ambiguous: it begins %s%s", quote.Quote(ref), strings.Join(match, ", "), more)
	}
}

// maxShown is how many ids an ambiguous reference's error lists.
const maxShown = 5

// NameOwner is the id of the session called name, or "".
func (s *Store) NameOwner(name string) (string, error) {
	list, err := s.List()
	if err != nil {
		return "", err
	}
	for _, x := range list {
		if x.Name == name {
			return x.ID, nil
		}
	}
	return "", nil
}

// Prompts returns the user messages of the most recent sessions, oldest
// first, at most max of them, leaving out the session skip (the one being
// held in memory). It feeds up-arrow recall. Sessions are read one at a
// time, newest first, until max prompts are found.
func (s *Store) Prompts(skip string, max int) ([]string, error) {
	list, err := s.List()
	if err != nil {
		return nil, err
	}
	var rev []string // newest first
	for _, x := range list {
		if len(rev) >= max {
			break
		}
		if x.ID == skip {
			continue
		}
		r, err := s.Load(x.ID)
		if err != nil {
			continue // changed since it was listed
		}
		for i := len(r.Messages) - 1; i >= 0 && len(rev) < max; i-- {
			if m := r.Messages[i]; m.Role == "user" && strings.TrimSpace(m.Content) != "" {
				rev = append(rev, m.Content)
			}
		}
	}
	slices.Reverse(rev)
	return rev, nil
}

// Title makes a one-line title from the first user message: its first
// non-empty line, spaces collapsed, cut at 60 characters.
func Title(text string) string {
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.Join(strings.Fields(line), " ")
		if line == "" {
			continue
		}
		if r := []rune(line); len(r) > 60 {
			line = strings.TrimSpace(string(r[:59])) + "…"
		}
		return line
	}
	return ""
}
