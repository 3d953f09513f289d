// Package settings declares every knob the user can set exactly once: its
// name and aliases, type, range, hot-key step, default per mode, hot keys,
// help text, and whether a saved session keeps it (table.go). The command
// line flags and the config file (package config), /set, /show and resume
// (package session), and the palette, the panel and the help (package ui)
// are all made from this table, so a knob validates, reads and shows the
// same way everywhere.
//
// The values themselves live in Values, a plain struct; a Setting reads and
// writes its field through the accessors of its declaration.
package settings

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"chat/engine/sampler"
	"chat/models/quote"
)

// Values are the effective settings of a session.
type Values struct {
	Sampler    sampler.Params
	RandomSeed bool // a new seed for every reply; false: Sampler.Seed is pinned

	MaxTokens int    // reply budget
	Mode      string // "chat", "raw", or "" (from the model)
	System    string // system prompt (chat mode)
	Stop      []string
	IgnoreEOS bool // raw mode: generate past the model's end-of-generation tokens

	Quant  string // weight format; "" = as loaded
	Calib  string // calibration text file of the GPTQ and AWQ formats; "" = the shared TinyStories text
	Spec   string // speculative decoding: "off", "draft", "ngram", "lookup"
	DraftK int    // guesses per speculative round (the most, with SpecAdapt)
	// SpecAdapt lets speculation choose each round's guesses from what it
	// measures, and step aside when it loses time.
	SpecAdapt bool

	Context       int    // context window cap; 0 = the model's
	Threads       int    // 0 = all cores
	KVMem         int    // MB; 0 = the engine's default
	KVQuantK      string // one of KVFormats
	KVQuantV      string
	NoPrefixCache bool

	Lora          []string // LoRA adapters applied at load: "FILE" or "FILE:SCALE"
	Beam          int      // headless: beam search with this many beams; 0 = off
	LengthPenalty float64  // beam search: a hypothesis scores logp / length^α

	Theme string // "auto", "dark", "light"

	// The views of the TUI (next-token, token heat map, KV block map,
	// sparklines), each shown or not, and step mode: generation waits for
	// a key before each token.
	ViewNext, ViewTokens, ViewKV, ViewSpark, Step bool

	TopLogprobs int    // headless --json: each token's N likeliest alternatives
	Trace       string // headless: one JSON line per step to this file
}

// Kind is how a setting's text is read.
type Kind int

const (
	Float  Kind = iota // a finite number in [Min, Max]
	Int                // a whole number in [Min, Max]
	Bool               // on/off, true/false, yes/no, 1/0
	Choice             // one of Choices
	Text               // any text
	List               // texts (repeated flag, TOML array; /set takes one text or "none")
	Seed               // "random", or a whole number ≥ 0
)

// Where a setting can be given.
type Where int

const (
	Flag Where = 1 << iota // a command-line flag
	File                   // the config file
	Set                    // /set in a session (and the palette)
	// Request: chat serve reads it from a request by its name (an OpenAI
	// request's top level, as llama-server does; ollama's "options").
	Request
)

// Key is a hot-key action of a setting: pressing one of Keys (or Alt+Letter,
// with Shift when Upper) changes the setting by Dir steps (0: toggle/cycle).
type Key struct {
	Action string
	Keys   []string
	Letter rune
	Upper  bool
	Dir    int
	Help   string
}

// Setting is one knob.
type Setting struct {
	Name    string   // /set KEY and the config file key, e.g. "top_p"
	Flag    string   // the command-line flag, "" = Name with '-' for '_'
	Aliases []string // other names /set and Lookup take ("topk", ollama's "num_ctx")
	// PeerFlags are other tools' spellings of the flag, as they type them
	// (llama-cli's "-c" and "--temp", ollama's "--mirostat-tau"): flags
	// too, listed by -h, and without the dashes names Lookup takes.
	PeerFlags []string
	Table     string // config file table: "" (top level) or "sampler"
	Stage     string // the sampler stage it tunes (one of sampler.Order), for the "sampler" table
	Where     Where
	Kind      Kind
	Min       float64 // Float and Int
	Max       float64
	Choices   []string // Choice
	// Near names, for values other tools take, the choice that comes
	// closest here (llama.cpp's -ctk q8_0 is int8): the error says so
	// rather than guessing silently, since the formats are not the same.
	Near map[string]string
	// OffWhen reports the values that switch the knob off (shown as "off");
	// nil: none do. Off is what the help says about them. A sampler knob
	// with OffByStage gets stageSkips: off where the sampler skips its
	// stage.
	OffWhen    func(float64) bool
	OffByStage bool
	stage      int // Stage's index in sampler.Order, for stageSkips
	Off        string
	// MaxItems bounds a List's texts, MaxItemBytes each text (0: no bound).
	MaxItems, MaxItemBytes int
	// Escapes: a List's texts read backslash escapes (\n, \t, \", \\,
	// \xHH), as llama.cpp reads its --dry-sequence-breaker.
	Escapes bool
	// MinusOneIsMax: an Int that reads -1 as its Max, llama-cli's and
	// ollama's "no limit" (-n -1, num_predict -1).
	MinusOneIsMax bool
	// MinusOneIsMin: an Int that reads -1 as its Min, vLLM's and
	// llama.cpp's "off" where Min is off here (top_k -1).
	MinusOneIsMin bool
	// Step or Ladder move the value for hot keys: Step for an even step
	// (clamped to HotMax), Ladder for the rungs to step through.
	Step   float64
	HotMax float64
	Ladder []float64
	Keys   []Key
	Label  string // short name in the panel ("" = not in the panel's list)
	Arg    string // the value's name in chat -h ("" = from Kind: N, X, TEXT...)
	// View is the name /view gives a view of the TUI (its key toggles it;
	// the panel lists the views that are on); "" for other settings.
	View string
	// Always: the panel shows it even at its default (others only when set
	// and on).
	Always bool
	// Under names the setting that switches on the sampler this one tunes
	// (dry_base: dry_multiplier); the panel shows it only while that is on.
	Under string
	Help  string
	// Persist: a saved session keeps it and resume restores it.
	Persist bool
	// Local: it sets up the model or the engine in this process, so
	// --remote, where the server runs the model, ignores it (with a notice).
	Local bool
	// Live: a running reply uses the new value from its next token.
	Live bool

	// Default is the value for mode ("chat" or "raw"; "" when the mode is
	// not known yet). ModeDefault marks settings whose default depends on it.
	Default     func(mode string) any
	ModeDefault bool

	get func(*Values) any
	set func(*Values, any)
}

// All is the table, in the order /show, the palette and the config file list
// the settings.
func All() []*Setting { return table }

// byName is the table by canonical name (what Under holds), so the panel's
// per-update Active does not scan the table through Lookup.
var byName = func() map[string]*Setting {
	m := make(map[string]*Setting, len(table))
	for _, s := range table {
		m[s.Name] = s
	}
	return m
}()

// Lookup finds a setting by name, alias or flag, ignoring case and treating
// '-' as '_'. It returns nil for an unknown name.
func Lookup(name string) *Setting {
	n := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "-", "_")
	return byAnyName[strings.TrimLeft(n, "_")]
}

// byAnyName is the table by every name Lookup takes (name, flag with '_'
// for '-', aliases, peers' flags), the first setting in table order for a
// name two share. A server looks up every field of a request: a scan of
// the table per field, building each flag's name again, took seconds for
// a body of 300,000 unknown fields.
var byAnyName = func() map[string]*Setting {
	m := map[string]*Setting{}
	add := func(n string, s *Setting) {
		if _, ok := m[n]; !ok {
			m[n] = s
		}
	}
	for _, s := range table {
		add(s.Name, s)
		add(strings.ReplaceAll(s.FlagName(), "-", "_"), s)
		for _, a := range s.Aliases {
			add(a, s)
		}
		for _, p := range s.PeerFlags {
			add(strings.ReplaceAll(strings.TrimLeft(p, "-"), "-", "_"), s)
		}
	}
	return m
}()

// Views are the settings that are views of the TUI, in table order.
func Views() []*Setting {
	var out []*Setting
	for _, s := range table {
		if s.View != "" {
			out = append(out, s)
		}
	}
	return out
}

// Local are the settings --remote ignores (Setting.Local), in table order.
func Local() []*Setting {
	var out []*Setting
	for _, s := range table {
		if s.Local {
			out = append(out, s)
		}
	}
	return out
}

// Names are the names of the settings that can be given where w says.
func Names(w Where) []string {
	var out []string
	for _, s := range table {
		if s.Where&w != 0 {
			out = append(out, s.Name)
		}
	}
	return out
}

// Suggest is a near name for a misspelt one ("" when none is close): the
// setting that shares the longest prefix with it, or is one edit away.
func Suggest(name string, w Where) string {
	n := strings.ReplaceAll(strings.ToLower(name), "-", "_")
	best, bestD := "", 3
	for _, s := range Names(w) {
		if d := editDistance(n, s); d < bestD {
			best, bestD = s, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// FlagName is the command-line flag (without dashes).
func (s *Setting) FlagName() string {
	if s.Flag != "" {
		return s.Flag
	}
	return strings.ReplaceAll(s.Name, "_", "-")
}

// Dashed is the flag as typed: "-n", "--top-p".
func (s *Setting) Dashed() string { return Dashed(s.FlagName()) }

// Dashed is a flag name as it is typed: "-n", "--model" (the flag package
// takes either dash and reports neither).
func Dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// Error is a value a setting refuses. Its text is the same wherever the
// value was given: "top_p must be between 0 and 1, got 2".
type Error struct {
	Setting string
	Reason  string
}

func (e *Error) Error() string { return e.Setting + " " + e.Reason }

// Parse reads text as a value of s, or says why it cannot be one.
func (s *Setting) Parse(text string) (any, error) {
	t := strings.TrimSpace(text)
	bad := func(format string, a ...any) error {
		return &Error{s.Name, fmt.Sprintf(format, a...)}
	}
	switch s.Kind {
	case Float:
		f, err := strconv.ParseFloat(t, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, bad("must be a number%s, got %s", s.rangeText(), quote.Quote(text))
		}
		if f < s.Min || f > s.Max {
			return nil, bad("must be %s, got %s", strings.TrimPrefix(s.rangeText(), " "), t)
		}
		return f, nil
	case Int:
		n, err := strconv.Atoi(t)
		if err != nil {
			return nil, bad("must be a whole number%s, got %s", s.rangeText(), quote.Quote(text))
		}
		if n == -1 && s.MinusOneIsMax {
			return int(s.Max), nil
		}
		if n == -1 && s.MinusOneIsMin {
			return int(s.Min), nil
		}
		if float64(n) < s.Min || float64(n) > s.Max {
			return nil, bad("must be %s, got %d", strings.TrimPrefix(s.rangeText(), " "), n)
		}
		return n, nil
	case Bool:
		switch strings.ToLower(t) {
		case "on", "true", "yes", "1":
			return true, nil
		case "off", "false", "no", "0":
			return false, nil
		}
		return nil, bad("must be on or off, got %s", quote.Quote(text))
	case Choice:
		l := strings.ToLower(t)
		if slices.Contains(s.Choices, l) || l == "" && s.Default("") == "" {
			return l, nil
		}
		hint := ""
		if n, ok := s.Near[l]; ok {
			hint = " (" + n + " is the nearest)"
		}
		return nil, bad("must be one of %s, got %s%s", strings.Join(s.Choices, ", "), quote.Quote(text), hint)
	case Text:
		return text, nil
	case List:
		if t == "" || strings.EqualFold(t, "none") || strings.EqualFold(t, "off") {
			return []string(nil), nil
		}
		if s.Escapes && (len(t) < 2 || t[0] != '"' || t[len(t)-1] != '"') {
			return []string{Unescape(t)}, nil
		}
		return []string{unquote(t)}, nil
	case Seed:
		if strings.EqualFold(t, "random") || t == "-1" {
			return seedValue{random: true}, nil
		}
		n, err := strconv.ParseUint(t, 10, 64)
		if err != nil {
			return nil, bad("must be \"random\" or a whole number ≥ 0, got %s", quote.Quote(text))
		}
		return seedValue{seed: n}, nil
	}
	return nil, bad("has an unknown kind")
}

// unquote reads a Go-quoted text ("\n" for a newline), or returns t.
func unquote(t string) string {
	if len(t) >= 2 && t[0] == '"' && t[len(t)-1] == '"' {
		if u, err := strconv.Unquote(t); err == nil {
			return u
		}
	}
	return t
}

// Unescape reads the backslash escapes of t as llama.cpp's
// string_process_escapes does: \n \r \t \' \" \\ \a \b \f \v, and \xHH
// (two hex digits) for a byte. Any other backslash stays as it is.
func Unescape(t string) string {
	if !strings.Contains(t, `\`) {
		return t
	}
	var b strings.Builder
	for i := 0; i < len(t); i++ {
		if t[i] != '\\' || i+1 == len(t) {
			b.WriteByte(t[i])
			continue
		}
		if c, ok := escapes[t[i+1]]; ok {
			b.WriteByte(c)
			i++
			continue
		}
		if t[i+1] == 'x' && i+3 < len(t) {
			if v, err := strconv.ParseUint(t[i+2:i+4], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(t[i])
	}
	return b.String()
}

var escapes = map[byte]byte{'n': '\n', 'r': '\r', 't': '\t', '\'': '\'', '"': '"', '\\': '\\', 'a': '\a', 'b': '\b', 'f': '\f', 'v': '\v'}

// seedValue is a Seed setting's value.
type seedValue struct {
	random bool
	seed   uint64
}

// rangeText says which values a numeric setting takes: " between 0 and 1",
// " ≥ 0"; "" when any finite number goes.
func (s *Setting) rangeText() string {
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	switch {
	case math.IsInf(s.Min, -1) && math.IsInf(s.Max, 1):
		return ""
	case math.IsInf(s.Max, 1):
		return " ≥ " + num(s.Min)
	}
	r := " between " + num(s.Min) + " and " + num(s.Max)
	if s.MinusOneIsMax {
		r += " (or -1)"
	}
	return r
}

// Get is s's value in v.
func (s *Setting) Get(v *Values) any { return s.get(v) }

// Put sets s in v to a value Parse returned (or Default gave).
func (s *Setting) Put(v *Values, x any) { s.set(v, x) }

// SetText parses text and puts it in v; v is unchanged on error.
func (s *Setting) SetText(v *Values, text string) error {
	x, err := s.Parse(text)
	if err != nil {
		return err
	}
	if s.Kind == List {
		// /set stop TEXT adds a stop string; "none" clears them.
		list := x.([]string)
		if len(list) > 0 {
			list = append(slices.Clone(s.get(v).([]string)), list...)
		}
		return s.SetList(v, list)
	}
	s.set(v, x)
	return nil
}

// SetList puts the texts of a List in v, or says why it cannot (more than
// MaxItems, or one longer than MaxItemBytes); v is unchanged on error.
func (s *Setting) SetList(v *Values, list []string) error {
	if s.MaxItems > 0 && len(list) > s.MaxItems {
		return &Error{s.Name, fmt.Sprintf("takes at most %d texts, got %d", s.MaxItems, len(list))}
	}
	for _, t := range list {
		if s.MaxItemBytes > 0 && len(t) > s.MaxItemBytes {
			return &Error{s.Name, fmt.Sprintf("takes texts of at most %d bytes, got %d", s.MaxItemBytes, len(t))}
		}
	}
	s.set(v, list)
	return nil
}

// SetFormatted puts a value Format wrote (a saved session's) in v.
func (s *Setting) SetFormatted(v *Values, text string) error {
	if s.Kind != List {
		return s.SetText(v, text)
	}
	var list []string
	for rest := strings.TrimSpace(text); rest != ""; rest = strings.TrimSpace(rest) {
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return &Error{s.Name, fmt.Sprintf("must be quoted texts, got %s", quote.Quote(text))}
		}
		t, _ := strconv.Unquote(q)
		list = append(list, t)
		rest = rest[len(q):]
	}
	return s.SetList(v, list)
}

// Format writes s's value in v as text that Parse reads back (the config
// file and saved sessions use it; a List reads back with SetFormatted).
func (s *Setting) Format(v *Values) string { return s.format(s.get(v)) }

func (s *Setting) format(x any) string {
	switch x := x.(type) {
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case int:
		return strconv.Itoa(x)
	case bool:
		if x {
			return "on"
		}
		return "off"
	case string:
		return x
	case []string:
		q := make([]string, len(x))
		for i, t := range x {
			q[i] = strconv.Quote(t)
		}
		return strings.Join(q, " ")
	case seedValue:
		if x.random {
			return "random"
		}
		return strconv.FormatUint(x.seed, 10)
	}
	return fmt.Sprint(x)
}

// Active reports whether s matters in v: away from its default (def), not
// off, and not tuning a sampler (Under) that is off. The panel lists these,
// and a remote request sends those that are Request settings.
func (s *Setting) Active(v, def *Values) bool {
	return s.Format(v) != s.Format(def) && s.Show(v) != "off" && (s.Under == "" || byName[s.Under].Show(v) != "off")
}

// ReplacedBy names the setting whose stage runs in v in place of s's
// ("mirostat" for top-p, say), or is "".
func (s *Setting) ReplacedBy(v *Values) string {
	if s.Stage != "" && v.Sampler.MirostatOn() && sampler.MirostatReplaces(slices.Index(sampler.Order(), s.Stage)) {
		return "mirostat"
	}
	return ""
}

// Show writes s's value for people: "off" where the knob does nothing.
func (s *Setting) Show(v *Values) string {
	x := s.get(v)
	var f float64
	switch x := x.(type) {
	case float64:
		f = x
	case int:
		f = float64(x)
	case string:
		if x == "" {
			return "—"
		}
		return x
	case []string:
		if len(x) == 0 {
			return "none"
		}
	}
	if s.Kind == Float || s.Kind == Int {
		if s.isOff(f) {
			return "off"
		}
		if s.MinusOneIsMax && f == s.Max {
			return "no limit"
		}
	}
	return s.format(x)
}

// ZeroMeans is what 0 stands for in a setting whose help says "(0 = the
// model's ...)", "" for the others: there 0 is not "off".
func (s *Setting) ZeroMeans() string {
	_, rest, ok := strings.Cut(s.Help, "(0 = ")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, ";)"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

func (s *Setting) isOff(f float64) bool { return s.OffWhen != nil && s.OffWhen(f) }

// stageBase is the sampler at its defaults, where stageSkips tries a value.
var stageBase sampler.Params

func init() {
	stageBase = Defaults("").Sampler
	order := sampler.Order()
	for _, s := range table {
		if s.OffByStage {
			s.stage = slices.Index(order, s.Stage)
			s.OffWhen = s.stageSkips
		}
	}
}

// stageSkips reports whether sampler.Params.Runs skips s's stage with s at
// f, the other knobs at their defaults and the knob s is Under switched on
// (at its Max): the sampler's own rule, not a restatement of it.
func (s *Setting) stageSkips(f float64) bool {
	v := Values{Sampler: stageBase}
	if s.Under != "" {
		u := byName[s.Under]
		u.set(&v, u.number(u.Max))
	}
	s.set(&v, s.number(f))
	return !v.Sampler.Runs(s.stage)
}

// number is f as s's Kind holds it (Int or Float).
func (s *Setting) number(f float64) any {
	if s.Kind == Int {
		return int(f)
	}
	return f
}

// DefaultText is the default for mode as text, for the help and the config
// file's comments.
func (s *Setting) DefaultText(mode string) string {
	var v Values
	s.set(&v, s.Default(mode))
	return s.Show(&v)
}

// Defaults are every setting's default for mode ("" when not known yet).
func Defaults(mode string) Values {
	var v Values
	for _, s := range table {
		s.set(&v, s.Default(mode))
	}
	return v
}

// ApplyModeDefaults gives the settings whose default depends on the mode,
// and that set does not name, their default for mode.
func ApplyModeDefaults(v *Values, mode string, set map[string]bool) {
	for _, s := range table {
		if s.ModeDefault && !set[s.Name] {
			s.set(v, s.Default(mode))
		}
	}
}

// StepKey applies hot-key action to v. It returns the setting it changed,
// or nil when action is no setting's key.
func StepKey(v *Values, action string) *Setting {
	for _, s := range table {
		for _, k := range s.Keys {
			if k.Action == action {
				s.step(v, k.Dir)
				return s
			}
		}
	}
	return nil
}

// KeyOf finds the setting and key of a hot-key action.
func KeyOf(action string) (*Setting, *Key) {
	for _, s := range table {
		for i := range s.Keys {
			if s.Keys[i].Action == action {
				return s, &s.Keys[i]
			}
		}
	}
	return nil, nil
}

// step moves s by dir steps (0: toggle a Bool, cycle a Choice).
func (s *Setting) step(v *Values, dir int) {
	switch s.Kind {
	case Bool:
		s.set(v, !s.get(v).(bool))
	case Choice:
		cur := s.get(v).(string)
		i := slices.Index(s.Choices, cur)
		if dir == 0 {
			dir = 1
		}
		s.set(v, s.Choices[(i+dir+len(s.Choices))%len(s.Choices)])
	case Float:
		f := s.get(v).(float64)
		s.set(v, s.stepFloat(f, dir))
	case Int:
		n := s.get(v).(int)
		s.set(v, int(s.stepFloat(float64(n), dir)))
	}
}

// stepFloat is one hot-key step from f. An "off" value counts as the end of
// the range it switches off: top-p off is 1 (down gives 0.95), top-k off is
// past the last rung; stepping down stops a step above an off bottom.
func (s *Setting) stepFloat(f float64, dir int) float64 {
	if s.Ladder != nil {
		return stepLadder(f, s.Ladder, dir)
	}
	lo, hi := s.Min, s.Max
	if s.HotMax != 0 {
		hi = s.HotMax
	}
	if s.isOff(f) {
		f = hi
	}
	if s.isOff(lo) {
		lo = s.Step
	}
	steps := math.Round(f / s.Step)
	f = (steps + float64(dir)) * s.Step
	return math.Round(min(hi, max(lo, f))*1000) / 1000
}

// stepLadder moves v to the next rung of ladder in direction dir. A rung of
// 0 at the end of the ladder means "off", above every other rung.
func stepLadder(v float64, ladder []float64, dir int) float64 {
	rank := func(x float64) float64 { // where x sits, between rungs if not on one
		if x <= 0 && ladder[len(ladder)-1] == 0 {
			return float64(len(ladder) - 1)
		}
		for i, r := range ladder {
			if r == 0 && i == len(ladder)-1 {
				return float64(i) - 0.5
			}
			if x == r {
				return float64(i)
			}
			if x < r {
				return float64(i) - 0.5
			}
		}
		return float64(len(ladder)) - 0.5
	}
	r := rank(v)
	var i int
	if dir > 0 {
		i = int(math.Floor(r)) + 1
	} else {
		i = int(math.Ceil(r)) - 1
	}
	i = min(len(ladder)-1, max(0, i))
	return ladder[i]
}

// ErrUnknown is wrapped by the error for a setting name nobody declared.
var ErrUnknown = errors.New("unknown setting")

// SetArgs splits the argument of /set into a setting's name and its value.
// ollama's "/set parameter KEY VALUE" reads as "/set KEY VALUE", so the
// habit of its users works (with its names: num_predict, num_ctx, ...).
func SetArgs(arg string) (name, value string) {
	name, value, _ = strings.Cut(strings.TrimSpace(arg), " ")
	if name == "parameter" {
		name, value, _ = strings.Cut(strings.TrimSpace(value), " ")
	}
	return name, strings.TrimSpace(value)
}

// UnknownError says a name is no setting, with a near one when there is.
func UnknownError(name string, w Where) error {
	if near := Suggest(name, w); near != "" {
		return fmt.Errorf("%w %q (did you mean %s?)", ErrUnknown, name, near)
	}
	return fmt.Errorf("%w %q; settings: %s", ErrUnknown, name, strings.Join(Names(w), ", "))
}
