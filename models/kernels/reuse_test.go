package kernels

import "testing"

// TestReuseFor: weights past the last-level cache stream, others stay
// cached; the cache is never taken for less than an L2's 1 MiB.
func TestReuseFor(t *testing.T) {
	llc := LastLevelCache()
	if llc < 1<<20 {
		t.Fatalf("LastLevelCache %d bytes", llc)
	}
	t.Logf("last-level cache %d MiB", llc>>20)
	if ReuseFor(llc+1) != Stream || ReuseFor(llc) != Cached {
		t.Fatalf("ReuseFor around %d bytes: %v %v", llc, ReuseFor(llc+1), ReuseFor(llc))
	}
}
