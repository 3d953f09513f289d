package config

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"chat/config/settings"
)

// readmeSection is the text of README.md from the heading that starts with
// title to the next heading.
func readmeSection(t *testing.T, title string) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n"+title)
	if i < 0 {
		t.Fatalf("README.md has no heading %q", title)
	}
	s = s[i+len(title)+1:]
	if j := strings.Index(s, "\n#"); j >= 0 {
		s = s[:j]
	}
	return s
}

var (
	flagSpelling = regexp.MustCompile("(?:^|[ `(,/])(--?[a-z][a-z0-9-]*)")
	codeSpan     = regexp.MustCompile("`[^`]+`")
)

// The README's flag table and the flag set agree: every flag a row's first
// column names is one chat takes, and every flag of -h (otherFlags and the
// settings') is named in a row (a knob that tunes another, --dry-base, in
// that one's).
func TestReadmeFlagTable(t *testing.T) {
	_, fs := newFlagSet()
	inTable := map[string]bool{}
	for _, line := range strings.Split(readmeSection(t, "### Flags"), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.SplitN(line[1:], " | ", 2)[0]
		for _, m := range flagSpelling.FindAllStringSubmatch(first, -1) {
			if fs.Lookup(strings.TrimLeft(m[1], "-")) == nil {
				t.Errorf("README's flag table names %s, which chat does not take", m[1])
			}
		}
		for _, code := range codeSpan.FindAllString(line, -1) {
			for _, m := range flagSpelling.FindAllStringSubmatch(code, -1) {
				inTable[strings.TrimLeft(m[1], "-")] = true
			}
		}
	}
	var want []string
	for _, f := range otherFlags {
		want = append(want, f.name)
	}
	for _, s := range settings.All() {
		if s.Where&settings.Flag != 0 {
			want = append(want, s.FlagName())
		}
	}
	for _, name := range want {
		if !inTable[name] {
			t.Errorf("README's flag table has no row for --%s", name)
		}
	}
}

// between is the text of s after the first start, up to the first end after it.
func between(t *testing.T, s, start, end string) string {
	t.Helper()
	i := strings.Index(s, start)
	if i < 0 {
		t.Fatalf("README.md lost %q", start)
	}
	s = s[i+len(start):]
	j := strings.Index(s, end)
	if j < 0 {
		t.Fatalf("README.md lost %q after %q", end, start)
	}
	return s[:j]
}

// codeWords are the first words of s's code spans.
func codeWords(s string) []string {
	var out []string
	for _, c := range codeSpan.FindAllString(s, -1) {
		out = append(out, strings.Fields(strings.Trim(c, "`"))[0])
	}
	return out
}

// The README's list of /set names is the settings table's: each name is a
// setting /set takes, and each such setting but the sampler's knobs (which
// the list names as a group) is in it.
func TestReadmeSetNames(t *testing.T) {
	list := between(t, readmeSection(t, "### Keys (TUI)"), "every setting the session takes:", "), `/show`")
	listed := map[string]bool{}
	for _, name := range codeWords(list) {
		listed[name] = true
		if s := settings.Lookup(name); s == nil || s.Where&settings.Set == 0 {
			t.Errorf("README lists /set %s, which /set does not take", name)
		}
	}
	for _, s := range settings.All() {
		if s.Where&settings.Set != 0 && s.Table != "sampler" && !listed[s.Name] {
			t.Errorf("README's /set list lacks %s", s.Name)
		}
	}
}

// The config file keys the README names at the top level are settings of
// the file's top level (model and draft are the Config's own).
func TestReadmeConfigKeys(t *testing.T) {
	list := between(t, readmeSection(t, "### Config file and sessions"), "by its `/set` name (", ")")
	for _, name := range codeWords(list) {
		if s := settings.Lookup(name); s == nil || s.Where&settings.File == 0 || s.Table != "" || s.Name != name {
			t.Errorf("README names %s as a config file key of the top level, which it is not", name)
		}
	}
}

// readmeFlagRow is the row of README's flag table whose first column starts
// with the flag.
func readmeFlagRow(t *testing.T, flag string) string {
	t.Helper()
	for _, line := range strings.Split(readmeSection(t, "### Flags"), "\n") {
		if strings.HasPrefix(line, "| `"+flag) {
			return line
		}
	}
	t.Fatalf("README's flag table has no row for %s", flag)
	return ""
}

// The flag table's --quant and --kv-quant-k rows name every weight and KV
// format the settings take (int4-g32/g64/g128 written once, int4-gN-a8 for
// the three group sizes).
func TestReadmeFormats(t *testing.T) {
	quant := readmeFlagRow(t, "--quant F")
	group := regexp.MustCompile(`-g(32|64|128)`)
	for _, f := range settings.QuantFormats {
		gN := group.ReplaceAllString(f, "-gN")
		prefix, plain := strings.CutSuffix(gN, "-gN")
		if !strings.Contains(quant, "`"+f+"`") && !strings.Contains(quant, "`"+gN+"`") &&
			!(plain && strings.Contains(quant, "`"+prefix+"-g32`/`g64`/`g128`")) {
			t.Errorf("README's --quant row lacks %s", f)
		}
	}
	kv := readmeFlagRow(t, "--kv-quant-k F")
	for _, f := range settings.KVChoices {
		if !strings.Contains(kv, "`"+f+"`") {
			t.Errorf("README's --kv-quant-k row lacks %s", f)
		}
	}
}

// The flags the README says --remote ignores are the table's Local
// settings, all of them.
func TestReadmeRemoteIgnores(t *testing.T) {
	list := between(t, readmeSection(t, "### Serving"), "the flags that set up the model here (", ") are ignored")
	listed := map[string]bool{}
	for _, flag := range codeWords(list) {
		s := settings.Lookup(flag)
		if s == nil || !s.Local {
			t.Errorf("README says --remote ignores %s, which is not a Local setting", flag)
			continue
		}
		listed[s.Name] = true
	}
	for _, s := range settings.Local() {
		if !listed[s.Name] {
			t.Errorf("README's list of flags --remote ignores lacks %s", s.Dashed())
		}
	}
}
