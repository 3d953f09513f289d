package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"chat/config/settings"
	"chat/models/quote"
	"chat/models/regular"

	"github.com/pelletier/go-toml/v2"
)

// The config file: defaults for the flags, in TOML, at
// $XDG_CONFIG_HOME/chat/config.toml (~/.config/chat/config.toml). Flags given
// on the command line override it. Its keys are the settings' names
// (config/settings), the sampler's in a [sampler] table, plus model, draft
// and a [keys] table. Example:
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
// when must is set (--config FILE); the default file is optional. A regular
// file or a pipe is read (regular.ReadFile: /dev/zero would never end).
func (c *Config) loadFile(path string, must bool) error {
	data, err := regular.ReadFile(path, maxFileBytes)
	if errors.Is(err, fs.ErrNotExist) && !must {
		return nil
	}
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	c.File = path
	return c.readFile(path, data)
}

// readFile applies the contents of the config file at path. A UTF-8 byte
// order mark at its start is skipped, as editors on Windows write one.
func (c *Config) readFile(path string, data []byte) error {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	var f map[string]any
	if err := toml.Unmarshal(data, &f); err != nil {
		return fileError(path, err)
	}
	at := func(table, key string) string { return path + ":" + strconv.Itoa(lineOf(data, table, key)) }

	for _, key := range sortedKeys(f) {
		v := f[key]
		switch key {
		case "model", "draft":
			p, ok := v.(string)
			if !ok {
				return fmt.Errorf("%s: %s is a path in quotes, got %s", at("", key), key, tomlShow(v))
			}
			if key == "model" {
				c.Model = expandPath(p, filepath.Dir(path))
			} else {
				c.Draft = expandPath(p, filepath.Dir(path))
			}
		case "sampler":
			t, ok := v.(map[string]any)
			if !ok {
				return fmt.Errorf("%s: sampler is a table ([sampler]), got %s", at("", key), tomlShow(v))
			}
			for _, k := range sortedKeys(t) {
				if err := c.fileSetting("sampler", k, t[k], at("sampler", k)); err != nil {
					return err
				}
			}
		case "keys":
			t, ok := v.(map[string]any)
			if !ok {
				return fmt.Errorf("%s: keys is a table ([keys]), got %s", at("", key), tomlShow(v))
			}
			if err := c.fileKeys(t, func(action string) string { return at("keys", action) }); err != nil {
				return err
			}
		default:
			if err := c.fileSetting("", key, v, at("", key)); err != nil {
				return err
			}
		}
	}
	return nil
}

// fileSetting applies key = v of table to c: the setting's own rule reads
// the value, so a bad one gets the message /set and the flags give.
func (c *Config) fileSetting(table, key string, v any, where string) error {
	s := settings.Lookup(key)
	if s == nil || s.Name != key || s.Where&settings.File == 0 || s.Table != table {
		return fmt.Errorf("%s: %s", where, unknownKey(table, key))
	}
	text, err := tomlText(s, v)
	if err == nil {
		if s.Kind == settings.List {
			var x []string
			if x, err = listValue(s, v); err == nil {
				err = s.SetList(&c.Values, x)
			}
		} else {
			err = s.SetText(&c.Values, text)
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	c.Set[s.Name] = true
	return nil
}

// unknownKey says a key is no setting of its table, naming a near one or
// the table that has it.
func unknownKey(table, key string) string {
	if s := settings.Lookup(key); s != nil && s.Where&settings.File != 0 {
		want := s.Name + " at the top level"
		if s.Table != "" {
			want = s.Name + " in [" + s.Table + "]"
		}
		return fmt.Sprintf("unknown setting %s here; write %s", quote.Quote(key), want)
	}
	var names []string
	for _, s := range settings.All() {
		if s.Where&settings.File != 0 && s.Table == table {
			names = append(names, s.Name)
		}
	}
	if table == "" {
		names = append([]string{"model", "draft"}, names...)
	}
	where := "at the top level"
	if table != "" {
		where = "in [" + table + "]"
	}
	msg := fmt.Sprintf("unknown setting %s %s", quote.Quote(key), where)
	if near := settings.Suggest(key, settings.File); near != "" {
		return msg + fmt.Sprintf(" (did you mean %s?)", near)
	}
	return msg + "; settings: " + strings.Join(names, ", ")
}

// tomlText turns a TOML value into the text the setting parses; a TOML type
// that cannot be the setting's is refused here.
func tomlText(s *settings.Setting, v any) (string, error) {
	bad := func(want string) error {
		return &settings.Error{Setting: s.Name, Reason: fmt.Sprintf("must be %s, got %s", want, tomlShow(v))}
	}
	switch s.Kind {
	case settings.Float, settings.Int:
		switch v := v.(type) {
		case int64:
			return strconv.FormatInt(v, 10), nil
		case float64:
			if s.Kind == settings.Int {
				return "", bad("a whole number")
			}
			return strconv.FormatFloat(v, 'g', -1, 64), nil
		}
		if s.Kind == settings.Int {
			return "", bad("a whole number")
		}
		return "", bad("a number")
	case settings.Bool:
		if b, ok := v.(bool); ok {
			return strconv.FormatBool(b), nil
		}
		return "", bad("true or false")
	case settings.Seed:
		switch v := v.(type) {
		case int64:
			return strconv.FormatInt(v, 10), nil
		case string:
			return v, nil
		}
		return "", bad(`"random" or a whole number ≥ 0`)
	case settings.List:
		return "", nil
	}
	if t, ok := v.(string); ok {
		return t, nil
	}
	return "", bad("text in quotes")
}

// listValue reads a List setting: one text or an array of them.
func listValue(s *settings.Setting, v any) ([]string, error) {
	switch v := v.(type) {
	case string:
		return []string{v}, nil
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			t, ok := x.(string)
			if !ok {
				return nil, &settings.Error{Setting: s.Name, Reason: fmt.Sprintf("must be texts in quotes, got %s", tomlShow(x))}
			}
			out = append(out, t)
		}
		return out, nil
	}
	return nil, &settings.Error{Setting: s.Name, Reason: fmt.Sprintf("must be a text or a list of texts, got %s", tomlShow(v))}
}

func tomlShow(v any) string {
	switch v := v.(type) {
	case string:
		return quote.Quote(v)
	case map[string]any:
		return "a table"
	case []any:
		return "a list"
	}
	return quote.Cut(fmt.Sprint(v), quote.Max)
}

// goPkg matches the Go function names go-toml's messages may quote
// ("strconv.ParseFloat: "), which mean nothing to a user.
var goPkg = regexp.MustCompile(`strconv\.\w+: `)

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// fileKeys reads the [keys] table: action = key or [keys].
func (c *Config) fileKeys(t map[string]any, where func(action string) string) error {
	user := map[string][]string{}
	for action, v := range t {
		switch v := v.(type) {
		case string:
			user[action] = []string{v}
		case []any:
			ks := []string{}
			for _, k := range v {
				s, ok := k.(string)
				if !ok {
					return fmt.Errorf("%s: keys.%s: key names are strings, got %s", where(action), quote.Cut(action, quote.Max), tomlShow(k))
				}
				ks = append(ks, s)
			}
			user[action] = ks
		default:
			return fmt.Errorf("%s: keys.%s: want a key name or a list of them, got %s", where(action), quote.Cut(action, quote.Max), tomlShow(v))
		}
	}
	keys, err := settings.MergeKeys(user, where)
	if err != nil {
		return err
	}
	c.Keys = keys
	return nil
}

// fileError turns go-toml's syntax errors into "FILE:LINE:COL: what".
func fileError(path string, err error) error {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		msg := goPkg.ReplaceAllString(strings.TrimPrefix(de.Error(), "toml: "), "")
		return fmt.Errorf("%s:%d:%d: %s", path, row, col, quote.Cut(msg, quote.Max))
	}
	return fmt.Errorf("%s: %s", path, quote.Cut(strings.TrimPrefix(err.Error(), "toml: "), quote.Max))
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
// same settings when read back (chat --print-config). Settings whose default
// depends on the mode are shown as comments when the mode is left to the
// model and they were not set.
func (c *Config) WriteTOML(w io.Writer) error {
	v := c.Values
	if c.Mode != "" {
		settings.ApplyModeDefaults(&v, c.Mode, c.Set)
	}
	var b strings.Builder
	src := "built-in defaults"
	if c.File != "" {
		src += " < " + c.File
	}
	fmt.Fprintf(&b, "# chat: effective settings (%s < flags)\n", src)
	fmt.Fprintf(&b, "model = %s%s\n", tomlString(c.Model), comment(c.Model == "", "the embedded model"))
	fmt.Fprintf(&b, "draft = %s%s\n", tomlString(c.Draft), comment(c.Draft == "", "no draft model"))
	for _, table := range []string{"", "sampler"} {
		if table != "" {
			fmt.Fprintf(&b, "\n[%s]\n", table)
		}
		for _, s := range settings.All() {
			if s.Where&settings.File == 0 || s.Table != table {
				continue
			}
			if s.ModeDefault && c.Mode == "" && !c.Set[s.Name] {
				fmt.Fprintf(&b, "# %s: %s in chat mode, %s in raw mode\n", s.Name, s.DefaultText("chat"), s.DefaultText("raw"))
				continue
			}
			line := s.Name + " = " + tomlValue(s, &v)
			switch {
			case s.Name == "mode" && v.Mode == "":
				line += " # chat for chat-tuned models, raw otherwise"
			case s.Name == "quant" && v.Quant == "":
				line += " # as loaded"
			case s.OffWhen != nil && s.Show(&v) == "off":
				note := "off"
				if z := s.ZeroMeans(); z != "" {
					note = z // ctx_size 0 is the model's window, not none
				}
				line += " # " + note
			}
			b.WriteString(line + "\n")
		}
	}
	b.WriteString("\n[keys]\n")
	keys := c.Keys
	if keys == nil {
		keys = settings.DefaultKeys()
	}
	for _, a := range settings.KeyActions() {
		q := make([]string, len(keys[a]))
		for i, k := range keys[a] {
			q[i] = tomlString(k)
		}
		fmt.Fprintf(&b, "%s = [%s]\n", a, strings.Join(q, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// tomlValue writes s's value in v as TOML.
func tomlValue(s *settings.Setting, v *settings.Values) string {
	x := s.Get(v)
	switch x := x.(type) {
	case float64:
		return tomlFloat(x)
	case int:
		return strconv.Itoa(x)
	case bool:
		return strconv.FormatBool(x)
	case string:
		return tomlString(x)
	case []string:
		q := make([]string, len(x))
		for i, t := range x {
			q[i] = tomlString(t)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	if t := s.Format(v); t == "random" {
		return tomlString(t)
	} else {
		return t
	}
}

func comment(ok bool, text string) string {
	if ok {
		return " # " + text
	}
	return ""
}

// tomlString writes a TOML basic string: JSON's escapes are a subset of TOML's.
func tomlString(s string) string {
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
