package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"chat/models/regular"

	"github.com/pelletier/go-toml/v2"
)

// The config file: defaults for the flags, in TOML, at
// $XDG_CONFIG_HOME/chat/config.toml (~/.config/chat/config.toml). Flags given
// on the command line override it. Example:
//
//	model = "~/models/student.pt"
//	mode = "chat"
//	system = "You tell short stories."
//	max_tokens = 200
//	threads = 2
//	theme = "dark"
//
//	[sampler]
//	temperature = 0.7
//	top_p = 0.9
//
//	[keys]
//	temperature_up = "f3"
//	newline = ["alt+enter", "ctrl+j"]

type fileSampler struct {
	Greedy           *bool    `toml:"greedy"`
	Temperature      *float64 `toml:"temperature"`
	TopK             *int     `toml:"top_k"`
	TopP             *float64 `toml:"top_p"`
	MinP             *float64 `toml:"min_p"`
	RepeatPenalty    *float64 `toml:"repeat_penalty"`
	FrequencyPenalty *float64 `toml:"frequency_penalty"`
	PresencePenalty  *float64 `toml:"presence_penalty"`
	Seed             *int64   `toml:"seed"`
}

// fileConfig mirrors the file; pointers tell a key that is absent from one
// set to its zero value.
type fileConfig struct {
	Model     *string        `toml:"model"`
	Mode      *string        `toml:"mode"`
	System    *string        `toml:"system"`
	MaxTokens *int           `toml:"max_tokens"`
	Threads   *int           `toml:"threads"`
	KVMem     *int           `toml:"kv_mem"`
	Theme     *string        `toml:"theme"`
	Sampler   fileSampler    `toml:"sampler"`
	Keys      map[string]any `toml:"keys"`
}

// Themes the UI knows; "auto" follows the terminal's background.
var Themes = []string{"auto", "dark", "light"}

// DefaultFile is $XDG_CONFIG_HOME/chat/config.toml, or
// ~/.config/chat/config.toml when XDG_CONFIG_HOME is unset or relative.
func DefaultFile() string {
	base := os.Getenv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "" // no home: no default file
		}
		base = filepath.Join(home, ".config")
	}
	return filepath.Join(base, "chat", "config.toml")
}

// maxFileBytes bounds the config file (a real one is a few hundred bytes).
const maxFileBytes = 1 << 20

// loadFile applies the file at path to c. A missing file is an error only
// when must is set (--config FILE); the default file is optional. Only a
// regular file is read (a FIFO would block, /dev/zero never end); a UTF-8
// byte order mark at its start is skipped, as editors on Windows write one.
func (c *Config) loadFile(path string, must bool) error {
	data, err := regular.ReadFile(path, maxFileBytes)
	if errors.Is(err, fs.ErrNotExist) && !must {
		return nil
	}
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	c.File = path
	return c.applyFile(path, data)
}

// applyFile applies the contents of the config file at path to c.
func (c *Config) applyFile(path string, data []byte) error {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	var f fileConfig
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return fileError(path, err)
	}
	at := func(table, key string) string { return path + ":" + strconv.Itoa(lineOf(data, table, key)) }

	if f.Model != nil {
		c.Model = expandPath(*f.Model, filepath.Dir(path))
	}
	if f.Mode != nil {
		if *f.Mode != "" && *f.Mode != "chat" && *f.Mode != "raw" {
			return fmt.Errorf("%s: mode %s: want \"chat\", \"raw\" or \"\" (from the model)", at("", "mode"), shown(*f.Mode))
		}
		c.Mode = *f.Mode
	}
	if f.System != nil {
		c.System = *f.System
	}
	if f.MaxTokens != nil {
		if *f.MaxTokens < 0 {
			return fmt.Errorf("%s: max_tokens must be positive (0 = the mode's default), got %d", at("", "max_tokens"), *f.MaxTokens)
		}
		c.Tokens = *f.MaxTokens
	}
	if f.Threads != nil {
		if *f.Threads < 0 {
			return fmt.Errorf("%s: threads must be positive (0 = all cores), got %d", at("", "threads"), *f.Threads)
		}
		c.Threads = *f.Threads
	}
	if f.KVMem != nil {
		if *f.KVMem < 0 {
			return fmt.Errorf("%s: kv_mem must be positive (MB; 0 = default), got %d", at("", "kv_mem"), *f.KVMem)
		}
		c.KVMem = *f.KVMem
	}
	if f.Theme != nil {
		if !slices.Contains(Themes, *f.Theme) {
			return fmt.Errorf("%s: theme %s: want %s", at("", "theme"), shown(*f.Theme), strings.Join(Themes, ", "))
		}
		c.Theme = *f.Theme
	}

	s, p := f.Sampler, &c.Sampler
	floats := []struct {
		flag, key string
		v         *float64
		dst       *float64
		lo, hi    float64
	}{
		{"temperature", "temperature", s.Temperature, &p.Temperature, 0, math.Inf(1)},
		{"top-p", "top_p", s.TopP, &p.TopP, 0, 1},
		{"min-p", "min_p", s.MinP, &p.MinP, 0, 1},
		{"repeat-penalty", "repeat_penalty", s.RepeatPenalty, &p.RepeatPenalty, 0, math.Inf(1)},
		{"frequency-penalty", "frequency_penalty", s.FrequencyPenalty, &p.FrequencyPenalty, math.Inf(-1), math.Inf(1)},
		{"presence-penalty", "presence_penalty", s.PresencePenalty, &p.PresencePenalty, math.Inf(-1), math.Inf(1)},
	}
	for _, k := range floats {
		if k.v == nil {
			continue
		}
		if math.IsNaN(*k.v) || math.IsInf(*k.v, 0) || *k.v < k.lo || *k.v > k.hi {
			rng := "a finite number"
			switch {
			case k.hi == 1:
				rng = "between 0 and 1"
			case k.lo == 0:
				rng = "≥ 0"
			}
			return fmt.Errorf("%s: %s must be %s, got %v", at("sampler", k.key), k.key, rng, *k.v)
		}
		*k.dst = *k.v
		c.SamplerSet[k.flag] = true
	}
	if s.TopK != nil {
		if *s.TopK < 0 {
			return fmt.Errorf("%s: top_k must be ≥ 0 (0 = off), got %d", at("sampler", "top_k"), *s.TopK)
		}
		p.TopK = *s.TopK
		c.SamplerSet["top-k"] = true
	}
	if s.Seed != nil {
		if *s.Seed < 0 {
			return fmt.Errorf("%s: seed must be ≥ 0, got %d", at("sampler", "seed"), *s.Seed)
		}
		p.Seed = uint64(*s.Seed)
		c.SamplerSet["seed"] = true
	}
	if s.Greedy != nil {
		p.Greedy = *s.Greedy
		c.SamplerSet["greedy"] = true
	}

	user := map[string][]string{}
	for action, v := range f.Keys {
		switch v := v.(type) {
		case string:
			user[action] = []string{v}
		case []any:
			ks := []string{}
			for _, k := range v {
				s, ok := k.(string)
				if !ok {
					return fmt.Errorf("%s: keys.%s: key names are strings, got %s", at("keys", action), cut(action), tomlKind(k))
				}
				ks = append(ks, s)
			}
			user[action] = ks
		default:
			return fmt.Errorf("%s: keys.%s: want a key name or a list of them, got %s", at("keys", action), cut(action), tomlKind(v))
		}
	}
	keys, err := mergeKeys(user, func(action string) string { return at("keys", action) })
	if err != nil {
		return err
	}
	c.Keys = keys
	return nil
}

// fileError turns go-toml's errors into "FILE:LINE:COL: what".
func fileError(path string, err error) error {
	var de *toml.DecodeError
	var sm *toml.StrictMissingError
	switch {
	case errors.As(err, &sm) && len(sm.Errors) > 0:
		var msgs []string
		for _, e := range sm.Errors {
			row, col := e.Position()
			msgs = append(msgs, fmt.Sprintf("%s:%d:%d: unknown setting %s (see chat --print-config for the known ones)", path, row, col, shown(strings.Join(e.Key(), "."))))
			if len(msgs) == 5 && len(sm.Errors) > 5 {
				msgs = append(msgs, fmt.Sprintf("%s: and %d more unknown settings", path, len(sm.Errors)-5))
				break
			}
		}
		return errors.New(strings.Join(msgs, "\n"))
	case errors.As(err, &de):
		row, col := de.Position()
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		key := cut(strings.Join(de.Key(), "."))
		if m := typeErr.FindStringSubmatch(msg); m != nil && key != "" {
			msg = fmt.Sprintf("%s is a TOML %s; want %s", key, m[1], goTypeWant(m[2]))
		} else if m := storeErr.FindStringSubmatch(msg); m != nil && key != "" {
			msg = fmt.Sprintf("%s is a TOML %s; want %s", key, m[1], goTypeWant(m[2]))
		}
		msg = goPkg.ReplaceAllString(msg, "")
		return fmt.Errorf("%s:%d:%d: %s", path, row, col, cut(msg))
	}
	return fmt.Errorf("%s: %s", path, strings.TrimPrefix(err.Error(), "toml: "))
}

// typeErr and storeErr match go-toml's type mismatches, which name Go
// types; goTypeWant says what the file should hold instead.
var (
	typeErr  = regexp.MustCompile(`^cannot decode TOML (.+?) into struct field \S+ of type \*?(.+)$`)
	storeErr = regexp.MustCompile(`^cannot store (?:a |an )?(.+?) in (?:a |an )?(\S+)$`)
	goPkg    = regexp.MustCompile(`strconv\.\w+: `)
)

func goTypeWant(goType string) string {
	switch {
	case goType == "int" || goType == "int64" || goType == "integer":
		return "an integer"
	case goType == "float64" || goType == "float":
		return "a number"
	case goType == "string":
		return "a string"
	case goType == "bool" || goType == "boolean":
		return "true or false"
	case goType == "config.fileSampler":
		return "a table ([sampler])"
	case strings.HasPrefix(goType, "map["):
		return "a table ([keys])"
	}
	return "another type"
}

// tomlKind names the TOML type of a decoded value, for messages.
func tomlKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return "a date or time"
}

// shown quotes a string from the file for a message, cut to a readable
// length (Go escapes keep its control characters visible).
func shown(s string) string { return strconv.Quote(cut(s)) }

// cut shortens s to about 80 bytes, keeping whole runes.
func cut(s string) string {
	const n = 80
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// lineOf finds the line of key in table ("" for the top level) for messages
// about values that parse but do not make sense; 1 if not found.
func lineOf(data []byte, table, key string) int {
	cur := ""
	for i, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "[") {
			cur = strings.TrimSpace(strings.Trim(strings.SplitN(t, "#", 2)[0], " []"))
			continue
		}
		k, _, ok := strings.Cut(t, "=")
		k = strings.Trim(strings.TrimSpace(k), `"'`)
		if ok && (cur == table && k == key || table == "" && cur == "" && k == key || cur == "" && k == table+"."+key) {
			return i + 1
		}
	}
	return 1
}

// expandPath reads "~/" as the home directory and a relative path as
// relative to the config file's directory, so a config works from any
// working directory.
func expandPath(p, dir string) string {
	if p == "" {
		return ""
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[1:])
		}
	}
	if !filepath.IsAbs(p) {
		return filepath.Join(dir, p)
	}
	return p
}

// WriteTOML prints the effective settings as a config file that gives the
// same settings when read back (chat --print-config). Knobs whose default
// depends on the mode are shown as comments when the mode is left to the
// model and they were not set.
func (c *Config) WriteTOML(w io.Writer) error {
	c2 := *c
	if c2.Mode != "" {
		c2.SamplerSet = maps(c.SamplerSet)
		c2.ApplyModeDefaults(c2.Mode)
	}
	var b strings.Builder
	src := "built-in defaults"
	if c.File != "" {
		src += " < " + c.File
	}
	fmt.Fprintf(&b, "# chat: effective settings (%s < flags)\n", src)
	fmt.Fprintf(&b, "model = %s%s\n", quote(c2.Model), comment(c2.Model == "", "the embedded model"))
	fmt.Fprintf(&b, "mode = %s%s\n", quote(c2.Mode), comment(c2.Mode == "", "chat for chat-tuned checkpoints, raw otherwise"))
	fmt.Fprintf(&b, "system = %s\n", quote(c2.System))
	if c2.Tokens == 0 {
		b.WriteString("# max_tokens: 256 in chat mode, 100 in raw mode\n")
	} else {
		fmt.Fprintf(&b, "max_tokens = %d\n", c2.Tokens)
	}
	fmt.Fprintf(&b, "threads = %d%s\n", c2.Threads, comment(c2.Threads == 0, "all cores"))
	fmt.Fprintf(&b, "kv_mem = %d%s\n", c2.KVMem, comment(c2.KVMem == 0, "MB; 256 MiB or 16 context windows, whichever is smaller"))
	fmt.Fprintf(&b, "theme = %s\n", quote(c2.Theme))
	p := c2.Sampler
	b.WriteString("\n[sampler]\n")
	fmt.Fprintf(&b, "greedy = %t\n", p.Greedy)
	fmt.Fprintf(&b, "temperature = %s\n", tomlFloat(p.Temperature))
	if c2.Mode == "" && !c2.SamplerSet["top-k"] {
		b.WriteString("# top_k: 0 (off) in chat mode, 50 in raw mode\n")
	} else {
		fmt.Fprintf(&b, "top_k = %d\n", p.TopK)
	}
	if c2.Mode == "" && !c2.SamplerSet["top-p"] {
		b.WriteString("# top_p: 0.95 in chat mode, 0 (off) in raw mode\n")
	} else {
		fmt.Fprintf(&b, "top_p = %s\n", tomlFloat(p.TopP))
	}
	fmt.Fprintf(&b, "min_p = %s\n", tomlFloat(p.MinP))
	fmt.Fprintf(&b, "repeat_penalty = %s\n", tomlFloat(p.RepeatPenalty))
	fmt.Fprintf(&b, "frequency_penalty = %s\n", tomlFloat(p.FrequencyPenalty))
	fmt.Fprintf(&b, "presence_penalty = %s\n", tomlFloat(p.PresencePenalty))
	fmt.Fprintf(&b, "seed = %d\n", p.Seed)
	b.WriteString("\n[keys]\n")
	keys := c2.Keys
	if keys == nil {
		keys = DefaultKeys()
	}
	for _, a := range KeyActions() {
		q := make([]string, len(keys[a]))
		for i, k := range keys[a] {
			q[i] = quote(k)
		}
		fmt.Fprintf(&b, "%s = [%s]\n", a, strings.Join(q, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func maps(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func comment(ok bool, text string) string {
	if ok {
		return " # " + text
	}
	return ""
}

// quote writes a TOML basic string: JSON's escapes are a subset of TOML's.
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// tomlFloat always has a decimal point or exponent, so it reads back as a
// float.
func tomlFloat(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return s
}
