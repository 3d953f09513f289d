package session

import (
	"testing"
	"time"

	"chat/models/plan"
)

// TestDecodeBound: with a known machine the stats carry the roofline bound
// of a decode step (weights and the cache read at the machine's bandwidth);
// without one (Options.Probe unset, as in tests) they carry none.
func TestDecodeBound(t *testing.T) {
	m := embedded(t)
	s := greedy(t, m, "raw", 8)
	if err := s.Send("Once upon a time"); err != nil {
		t.Fatal(err)
	}
	s.Wait()
	if b := s.Poll().Stats.DecodeBound; b != 0 {
		t.Fatalf("a bound without a machine: %v", b)
	}
	s.machine.Store(&plan.Machine{PeakFLOPS: 1e12, Bandwidth: 1e10})
	st := s.Poll().Stats
	info := m.Info()
	lay := m.KVLayout()
	kv := int64(st.KVUsed) * int64(lay.Layers*(lay.KDim+lay.VDim)*4) // float32 keys and values
	want := time.Duration(float64(info.WeightBytes+kv) / 1e10 * float64(time.Second))
	if st.DecodeBound != want {
		t.Fatalf("bound %v, want %v (%d weight bytes, %d KV bytes)", st.DecodeBound, want, info.WeightBytes, kv)
	}
}
