package gguf

import (
	"bytes"
	"strings"
	"testing"
	"unicode"
)

var hostileName = "evil" + strings.Repeat("\x1b[2J\x1b]0;pwned\x07\r\n\bx", 1<<20/20)

// oneShortLine fails unless err is one line under 300 bytes with no
// control characters.
func oneShortLine(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if len(msg) >= 300 {
		t.Errorf("error of %d bytes: %.200q...", len(msg), msg)
	}
	if i := strings.IndexFunc(msg, unicode.IsControl); i >= 0 {
		t.Errorf("error holds control character %q: %.200q", msg[i], msg)
	}
}

// A tensor name in TensorFloat32's errors is quoted and cut.
func TestTensorFloat32HostileName(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, nil, []WriteTensor{{Name: "w", Dims: []int64{4}, Type: TypeF32, Data: make([]float32, 4)}}); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.TensorFloat32(hostileName)
	if err == nil || !strings.Contains(err.Error(), "no tensor") {
		t.Fatalf("TensorFloat32 = %v, want no tensor", err)
	}
	oneShortLine(t, err)
}
