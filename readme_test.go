package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
