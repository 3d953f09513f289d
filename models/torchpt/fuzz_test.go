package torchpt

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzRead feeds whole files to Read: it must return a checkpoint or an
// error, never panic or hang.
func FuzzRead(f *testing.F) {
	f.Add(synthZip(f, ".tiny.pt.x/", false, false, "cpu"))
	f.Add(synthZip(f, "archive/", true, true, "cuda:0"))
	for _, p := range []string{"proto2.pkl", "proto4.pkl"} {
		if b, err := os.ReadFile(filepath.Join("testdata", p)); err == nil {
			f.Add(wrapPickle(f, b))
		}
	}
	if dir, err := sharedDir(f); err == nil {
		// The smallest real checkpoint keeps each run cheap.
		if b, err := os.ReadFile(filepath.Join(dir, "course", "tiny-gqa.pt")); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Read(bytes.NewReader(data), int64(len(data)), "fuzz.pt")
		checkResult(t, c, err)
	})
}

// FuzzPickle feeds data.pkl contents inside a valid zip, which reaches the
// unpickler far more often than mutating whole zips does.
func FuzzPickle(f *testing.F) {
	f.Add(synthPickle("cpu"))
	for p := 0; p <= 5; p++ {
		if b, err := os.ReadFile(filepath.Join("testdata", "proto"+string(rune('0'+p))+".pkl")); err == nil {
			f.Add(b)
		}
	}
	if b, err := os.ReadFile(filepath.Join("testdata", "plain0.pkl")); err == nil {
		f.Add(b)
	}
	// The real pickles (with storages too short for them, so the
	// unpickler and the error paths after it both run).
	if dir, err := sharedDir(f); err == nil {
		for _, name := range []string{"course/tiny.pt", "course/tiny-classic.pt", "embed/student-chat.pt"} {
			if b, err := realPickle(filepath.Join(dir, name)); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, pkl []byte) {
		z := wrapPickle(t, pkl)
		c, err := Read(bytes.NewReader(z), int64(len(z)), "fuzz.pt")
		checkResult(t, c, err)
	})
}

func checkResult(t *testing.T, c *Checkpoint, err error) {
	if err != nil {
		if c != nil {
			t.Fatalf("checkpoint and error: %v", err)
		}
		return
	}
	if len(c.Tensors) == 0 || c.Config == nil || c.Payload == nil {
		t.Fatalf("incomplete checkpoint without error")
	}
	for k, tt := range c.Tensors {
		if len(tt.F32)+len(tt.I64) != tt.Numel() {
			t.Fatalf("%s: %d values for shape %v", k, len(tt.F32)+len(tt.I64), tt.Shape)
		}
	}
}

// sharedDir finds the shared models like testmodels does, but without
// skipping: the real seed is optional and the fuzz target must still run.
func sharedDir(testing.TB) (string, error) {
	dir := os.Getenv("CHAT_SHARED_MODELS")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "models") // from models/torchpt
	}
	_, err := os.Stat(dir)
	return dir, err
}

func realPickle(path string) ([]byte, error) {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/data.pkl") {
			rc, err := f.Open()
			if err != nil {
				return nil, err
			}
			defer rc.Close()
			return io.ReadAll(rc)
		}
	}
	return nil, os.ErrNotExist
}
