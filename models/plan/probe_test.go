package plan

import (
	"chat/models/kernels"
	"fmt"
	"math"
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
		p.PeakFLOPS/1e9, p.PeakInt8/1e9, kernels.Int8DotInstr(), p.Bandwidth/1e9, p.Ridge(), p.ISA, p.Threads)

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

// TestForWeights: a model under the probe's 128 MB gets the read bandwidth
// of its own size when that is higher (never lower: the bound stays a
// bound), measured over at least one 1 MB matrix; a larger model, or one of
// unknown size, keeps the probe's.
func TestForWeights(t *testing.T) {
	slow := Machine{PeakFLOPS: 1e12, Bandwidth: 1} // one byte a second: anything measured beats it
	if got := slow.ForWeights(10 << 20); !(got.Bandwidth > 1) || math.IsInf(got.Bandwidth, 0) || got.PeakFLOPS != 1e12 {
		t.Fatalf("10 MB of weights: %+v", got)
	}
	if got := slow.ForWeights(100); !(got.Bandwidth > 1) {
		t.Fatalf("100 bytes of weights (one 1 MB matrix): %+v", got)
	}
	fast := Machine{Bandwidth: 1e18}
	if got := fast.ForWeights(10 << 20); got != fast {
		t.Fatalf("a measurement lowered the bandwidth: %+v", got)
	}
	for _, n := range []int64{0, readBytes, 4 << 30} {
		if got := slow.ForWeights(n); got != slow {
			t.Fatalf("%d bytes of weights: %+v, want the probe's", n, got)
		}
	}
}
