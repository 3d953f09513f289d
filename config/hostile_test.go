package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"chat/models/testmodels"
)

// Issue 16: a config file is read only when it is a regular file of at
// most 1 MB; a UTF-8 byte order mark is skipped; messages name the key and
// the TOML type wanted (no Go type names) and stay one short line.
func TestHostileConfigFiles(t *testing.T) {
	path := isolate(t)
	write(t, path, "\uFEFFmodel = \"/m/student.pt\"\n[sampler]\ntemperature = 0.5\n")
	if c := parse(t); c.Model != "/m/student.pt" || c.Sampler.Temperature != 0.5 {
		t.Errorf("a file with a BOM: model %q, temperature %v", c.Model, c.Sampler.Temperature)
	}

	deep := strings.Repeat("a.", 20000) + "b = 1"
	for body, want := range map[string]string{
		"sampler = 5":                  "sampler is a table ([sampler]), got 5",
		"keys = 5":                     "keys is a table ([keys]), got 5",
		"[model]\nx = 1":               "model is a path in quotes, got a table",
		"system = {a = 1}":             "system must be text in quotes, got a table",
		"[keys]\nsend = {y = {z = 1}}": "keys.send: want a key name or a list of them, got a table",
		"[keys]\nsend = " + nest(3000): "keys.send: key names are strings, got a list",
		deep:                           `unknown setting "a" at the top level`,
		"[keys]\n" + strings.Repeat("x", 50000) + " = \"f3\"":   "unknown action \"xxxx",
		"mode = \"" + strings.Repeat("\\u001b[2J", 5000) + "\"": `mode must be one of chat, raw, got "\x1b[2J`,
		"max_tokens = 1e400": "value out of range",
		// Each DRY breaker is a pass over the vocabulary at the first reply.
		"[sampler]\ndry_sequence_breakers = [" + strings.Repeat(`"a",`, 100000) + "]": "dry_sequence_breakers takes at most 64 texts, got 100000",
	} {
		write(t, path, body)
		err := testmodels.Bounded(t, want, func() error { _, err := Parse(nil); return err })
		if err == nil {
			t.Errorf("%.40q: no error", body)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, want) || len(msg) > len(path)+600 || strings.Contains(msg, "\n") ||
			strings.Contains(msg, "interface {}") || strings.Contains(msg, "config.file") || strings.Contains(msg, "strconv") ||
			strings.ContainsAny(msg, "\x1b\u009b") {
			t.Errorf("%.40q: error %.400q, want one short line with %q", body, msg, want)
		}
	}

	dir := t.TempDir()
	zero := filepath.Join(dir, "zero.toml")
	os.Symlink("/dev/zero", zero)
	for _, p := range []string{zero, dir} {
		err := testmodels.Bounded(t, p, func() error { _, err := Parse([]string{"--config", p}); return err })
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("--config %s: %v", p, err)
		}
	}
	// A FIFO is read when a writer feeds it (a FIFO nobody writes to gives
	// up after a while: models/regular's tests).
	if fifo := filepath.Join(dir, "config.toml"); syscall.Mkfifo(fifo, 0o600) == nil {
		go func() {
			if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil { // waits for Parse to open it
				f.WriteString("[sampler]\ntemperature = 0.5\n")
				f.Close()
			}
		}()
		var c *Config
		err := testmodels.Bounded(t, fifo, func() (err error) { c, err = Parse([]string{"--config", fifo}); return err })
		if err != nil || c.Sampler.Temperature != 0.5 {
			t.Errorf("--config FIFO with a writer: %v", err)
		}
	}
	big := filepath.Join(dir, "big.toml")
	f, _ := os.Create(big)
	f.Truncate(100 << 20)
	f.Close()
	if _, err := Parse([]string{"--config", big}); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a 100 MB config: %v", err)
	}
}

// nest is n nested empty TOML arrays.
// Flags repeat to a list, within the same bound.
func TestTooManyBreakerFlags(t *testing.T) {
	isolate(t)
	var args []string
	for range 65 {
		args = append(args, "--dry-sequence-breaker", "a")
	}
	if _, err := Parse(args); err == nil || !strings.Contains(err.Error(), "dry_sequence_breakers takes at most 64 texts, got 65") {
		t.Errorf("65 breaker flags: %v", err)
	}
	if _, err := Parse(args[:128]); err != nil {
		t.Errorf("64 breaker flags: %v", err)
	}
}

func nest(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
