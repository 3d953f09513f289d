package kernels

import "testing"

// TestISA: the levels this CPU runs are tested (every bitwise test loops
// over impls()); the others are named here, skipped.
func TestISA(t *testing.T) {
	ls := isaLevels(t) // logs the levels this CPU cannot run
	if ls[0] != isaGo || ls[len(ls)-1] != hostISA {
		t.Fatalf("levels %v, host %s", ls, isaNames[hostISA])
	}
	t.Logf("kernel set in use: %s; tested: %d levels", ISA(), len(ls))
	vex := hostISA // avxvnni where the CPU has it, else the host's own
	if hasAVXVNNI {
		vex = min(isaAVXVNNI, hostISA)
	}
	for _, c := range []struct {
		env  string
		want isaLevel
	}{{"go", isaGo}, {"avx2", min(isaAVX2, hostISA)}, {"avxvnni", vex}, {"avx512", min(isaAVX512, hostISA)}, {"", hostISA}, {"bogus", hostISA}} {
		if got := capISA(hostISA, c.env); got != c.want {
			t.Errorf("CHAT_KERNELS=%q gives %s, want %s", c.env, isaNames[got], isaNames[c.want])
		}
	}
}
