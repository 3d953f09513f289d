package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"chat/config"
)

// The README's dependency table names every module go.mod requires
// directly, and no other.
func TestReadmeDependencies(t *testing.T) {
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	required := map[string]bool{}
	for _, line := range strings.Split(string(mod), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && strings.Contains(f[0], ".") { // "module version", not "// indirect"
			required[f[0]] = true
		}
	}
	_, table, ok := strings.Cut(string(readme), "\n## Dependencies")
	if !ok {
		t.Fatal("README.md has no ## Dependencies section")
	}
	table, _, _ = strings.Cut(table, "\n#")
	named := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		for _, m := range regexp.MustCompile("`([a-z0-9.-]+\\.[a-z]+/[^` ]+)`").FindAllStringSubmatch(line, -1) {
			named[m[1]] = true
			if !required[m[1]] {
				t.Errorf("README lists %s, which go.mod does not require directly", m[1])
			}
		}
	}
	for m := range required {
		if !named[m] {
			t.Errorf("go.mod requires %s, which README's dependency table does not name", m)
		}
	}
}

// Every CHAT_ environment variable the code reads is named in README.md or
// BENCHMARKS.md (how to switch a heavier check on), and every one those
// name is read somewhere, so a renamed switch cannot leave the docs behind.
func TestReadmeEnvSwitches(t *testing.T) {
	// Set by tests for their own child processes, or developer tools that
	// their test's comment explains (the TUI demo, kernel timing, fixture
	// writers); not checks anyone switches on.
	internal := map[string]bool{"CHAT_TEST_FSIZE_DIR": true, "CHAT_TEST_INTERRUPT": true, "CHAT_TEST_SIGNAL_DIR": true,
		"CHAT_UI_DEMO": true, "CHAT_UI_THEME": true, "CHAT_KERNELS_MINTIME": true, "CHAT_WRITE_EXTRA_MODELS": true}
	name := regexp.MustCompile(`CHAT_[A-Z0-9_]*[A-Z0-9]`)
	read := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, ".sh") {
			return err
		}
		b, err := os.ReadFile(path)
		for _, m := range regexp.MustCompile(`(?:Getenv\(|envInt\()"(CHAT_[A-Z0-9_]+)"|\$\{?(CHAT_[A-Z0-9_]+)`).FindAllStringSubmatch(string(b), -1) {
			read[m[1]+m[2]] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var docs string
	for _, f := range []string{"README.md", "BENCHMARKS.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs += string(b)
	}
	named := map[string]bool{}
	for _, v := range name.FindAllString(docs, -1) {
		named[v] = true
	}
	for v := range read {
		if !named[v] && !internal[v] {
			t.Errorf("the code reads %s, which neither README.md nor BENCHMARKS.md names", v)
		}
	}
	for v := range named {
		if !read[v] {
			t.Errorf("the docs name %s, which no code reads", v)
		}
	}
	if len(read) < 10 {
		t.Fatalf("only %d variables found: did the way they are read change?", len(read))
	}
}

// readmeCommands are the command lines README.md shows: code spans that
// start with chat, and the lines of its code blocks that do, without their
// comments; each as its words after "chat".
func readmeCommands(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	block := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			block = !block
			continue
		}
		if block {
			line, _, _ = strings.Cut(line, "  #")
			lines = append(lines, line)
			continue
		}
		for _, m := range regexp.MustCompile("`((?:\\./)?chat [^`]+)`").FindAllStringSubmatch(line, -1) {
			lines = append(lines, m[1])
		}
	}
	var out [][]string
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) > 1 && (f[0] == "chat" || f[0] == "./chat") {
			out = append(out, f[1:])
		}
	}
	return out
}

// Every flag a command line in README.md shows is one that command takes:
// chat's own (config.Parse does not call it unknown) or, for a subcommand,
// one its -h lists.
func TestReadmeCommandLines(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	flagWord := regexp.MustCompile(`^--?[a-z][a-z0-9-]*$`)
	subs := []string{"bench serve", "bench", "serve", "quant-report", "convert", "prune", "merge-lora", "plan", "show"}
	help := map[string]string{}
	checked := 0
	for _, words := range readmeCommands(t) {
		sub := ""
		for _, s := range subs {
			if strings.HasPrefix(strings.Join(words, " ")+" ", s+" ") {
				sub = s
				break
			}
		}
		if sub != "" && help[sub] == "" {
			_, stdout, stderr := runCLI(append(strings.Fields(sub), "-h")...)
			help[sub] = stdout + stderr
		}
		for _, w := range words {
			w = strings.TrimLeft(w, "[(")
			w, _, _ = strings.Cut(w, "=")
			w = strings.TrimRight(w, "])|,;")
			if !flagWord.MatchString(w) || w == "-h" {
				continue
			}
			checked++
			if sub == "" {
				if _, err := config.Parse([]string{w}); err != nil && strings.Contains(err.Error(), "unknown flag") {
					t.Errorf("README shows chat %s: %v", strings.Join(words, " "), err)
				}
				continue
			}
			if !slices.ContainsFunc(strings.Split(help[sub], "\n"), func(l string) bool { return strings.HasPrefix(l, "  "+w+" ") }) {
				t.Errorf("README shows chat %s, but chat %s -h has no %s", strings.Join(words, " "), sub, w)
			}
		}
	}
	if checked < 30 {
		t.Fatalf("only %d flags checked: did README's command lines change form?", checked)
	}
}

// README.md and the tests agree: every fuzz target is named in its list
// of them, and every test, benchmark or fuzz target it cites exists.
func TestReadmeTestNames(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	funcs := map[string]bool{}
	def := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)[A-Za-z0-9_]+)\(`)
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		for _, m := range def.FindAllStringSubmatch(string(b), -1) {
			funcs[m[1]] = true
			if strings.HasPrefix(m[1], "Fuzz") && !strings.Contains(string(readme), "`"+m[1]+"`") {
				t.Errorf("%s: README.md does not name %s", path, m[1])
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(funcs) < 500 {
		t.Fatalf("only %d test functions found", len(funcs))
	}
	for _, name := range regexp.MustCompile(`\b(?:Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*`).FindAllString(string(readme), -1) {
		if !funcs[name] {
			t.Errorf("README.md cites %s, which no test file defines", name)
		}
	}
}
