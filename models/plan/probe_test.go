package plan

import (
	"fmt"
	"os"
	"testing"
)

// TestProbeCache: a probe measures something, is written to the cache
// folder and read back from it (not measured again) for the same machine.
func TestProbeCache(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	if _, ok := Cached(); ok {
		t.Fatal("a probe cached in an empty folder")
	}
	p, err := Measure(false)
	if err != nil {
		t.Fatal(err)
	}
	if p.Cached || !(p.PeakFLOPS > 0) || !(p.PeakInt8 > 0) || !(p.Bandwidth > 0) || p.CPU == "" || p.Threads < 1 {
		t.Fatalf("probe %+v", p)
	}
	c, ok := Cached()
	if !ok || !c.Cached || c.Machine != p.Machine || c.key() != p.key() {
		t.Fatalf("cached %+v, measured %+v", c, p)
	}
	again, err := Measure(false)
	if err != nil || !again.Cached {
		t.Fatalf("second Measure measured again: %+v %v", again, err)
	}
	if re, err := Measure(true); err != nil || re.Cached { // --reprobe
		t.Fatalf("Measure(true) took the cached probe: %+v %v", re, err)
	}
	t.Logf("peak %.1f GFLOP/s float32, %.1f GOP/s int8 (%s), read %.1f GB/s, ridge %.1f FLOP/byte (%s, %d threads)",
		p.PeakFLOPS/1e9, p.PeakInt8/1e9, p.Int8Instr, p.Bandwidth/1e9, p.Ridge(), p.ISA, p.Threads)

	// A probe cached before the int8 peak was measured is measured again.
	path, err := cacheFile()
	if err != nil {
		t.Fatal(err)
	}
	old := fmt.Sprintf(`{%q: {"peak_flops": 2e11, "read_bytes_per_s": 3e10}}`, p.key())
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, ok := Cached(); ok {
		t.Fatalf("a probe without the int8 peak was taken: %+v", c)
	}
}

// TestStreamer: Read reads at least the bytes asked for, in whole passes.
func TestStreamer(t *testing.T) {
	s := NewStreamer()
	n, d := s.Read(1)
	if n != readBytes || d <= 0 {
		t.Fatalf("read %d bytes in %v", n, d)
	}
}
