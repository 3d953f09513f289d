package ui

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestProgressBar(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b, "big.gguf")
	p.Update(10, 100) // within the first 300 ms: nothing
	if b.Len() != 0 {
		t.Fatalf("drew %q for a fast load", b.String())
	}
	p.start = time.Now().Add(-time.Second)
	p.Update(50e6, 100e6)
	if got := b.String(); !strings.Contains(got, "loading big.gguf ▕████████████░░░░░░░░░░░░▏  50%  50/100 MB") {
		t.Fatalf("bar %q", got)
	}
	p.Done()
	if !strings.HasSuffix(b.String(), "\r\x1b[K") {
		t.Fatalf("Done did not clear the line: %q", b.String())
	}
}
