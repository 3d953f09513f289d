package torchpt

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// FuzzRead feeds whole files to Read: it must return a checkpoint or an
// error, never panic or hang. The seeds are a few hundred bytes, so that
// each input, and the fuzzer's minimisation of a new one, is cheap: the
// smallest checkpoint in a few forms and a compressed-storage bomb
// (hostile_test.go).
func FuzzRead(f *testing.F) {
	pkl := tinyPickle()
	data := f32bytes(binary.LittleEndian, 1, 2)
	f.Add(makeZip(f, entry{"a/data.pkl", pkl}, entry{"a/data/0", data}))
	f.Add(makeZip(f, entry{"a/data.pkl", pkl}, entry{"a/byteorder", []byte("big")}, entry{"a/data/0", data}))
	f.Add(makeZipMethod(f, zip.Deflate, entry{"a/data.pkl", pkl}, entry{"a/data/0", data}))
	f.Add(zeroBomb(f, 1<<18, false))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Read(bytes.NewReader(data), int64(len(data)), "fuzz.pt")
		checkResult(t, c, err)
	})
}

// tinyPickle is the smallest checkpoint pickle: {'w': a 2-element float32
// tensor of storage "0"}.
func tinyPickle() []byte {
	return newPW().op('}', '(').str("w").tensor("FloatStorage", "0", "cpu", 2, 0, []int{2}, []int{1}).op('u', '.').Bytes()
}

// FuzzPickle feeds data.pkl contents inside a valid zip, which reaches the
// unpickler far more often than mutating whole zips does.
func FuzzPickle(f *testing.F) {
	f.Add(tinyPickle())
	f.Add(synthPickle("cpu"))
	for p := 0; p <= 5; p++ {
		if b, err := os.ReadFile(filepath.Join("testdata", "proto"+string(rune('0'+p))+".pkl")); err == nil {
			f.Add(b)
		}
	}
	if b, err := os.ReadFile(filepath.Join("testdata", "plain0.pkl")); err == nil {
		f.Add(b)
	}
	for _, c := range hostilePickles {
		f.Add(c.pkl)
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
