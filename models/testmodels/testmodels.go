// Package testmodels finds the shared real model files (../shared/models next
// to the repository) for tests, and skips a test with a message naming the
// folder when they are absent. CHAT_SHARED_MODELS overrides the location.
package testmodels

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the shared models folder, or skips t when it is missing.
func Dir(t testing.TB) string {
	t.Helper()
	dir, err := find()
	if err != nil {
		t.Skipf("shared models folder not found (%v): set CHAT_SHARED_MODELS or place ../shared/models next to the repository", err)
	}
	return dir
}

// Path returns the file rel inside the shared models folder, or skips t when
// the folder or the file is missing.
func Path(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(Dir(t), rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared model file %s missing: %v", p, err)
	}
	return p
}

func find() (string, error) {
	if d := os.Getenv("CHAT_SHARED_MODELS"); d != "" {
		if _, err := os.Stat(d); err != nil {
			return "", err
		}
		return d, nil
	}
	// Walk up from the package directory to the module root (the folder with
	// go.mod); the shared folder sits beside it.
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, "..", "shared", "models")
			if _, err := os.Stat(p); err != nil {
				return "", err
			}
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
