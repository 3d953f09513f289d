package session

import (
	"runtime"
	"strings"
	"testing"

	"chat/engine/sampler"
	"chat/models"
	"chat/models/load"
	"chat/models/testmodels"
)

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// Switching to int8 frees the float32 linears, not just the label: the heap
// shrinks by most of their bytes, and switching back reloads them.
func TestInt8FreesFloatWeights(t *testing.T) {
	path := testmodels.Path(t, "course/student.pt")
	reload := func() (models.Model, error) { return load.Open(path) }
	m, err := reload()
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(m, Options{Settings: testSettings("raw", 4, sampler.Params{Greedy: true}), Open: func(string) (models.Model, error) { return reload() }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m = nil
	f32 := heapAlloc()
	if err := s.SetQuant("int8"); err != nil {
		t.Fatal(err)
	}
	i8 := heapAlloc()
	t.Logf("heap: f32 %.1f MB, int8 %.1f MB", float64(f32)/1e6, float64(i8)/1e6)
	// student.pt has 1.77M parameters in its linears: 7.1 MB as float32,
	// 1.8 MB as int8.
	if f32 < i8 || f32-i8 < 4<<20 {
		t.Errorf("heap %d → %d bytes after int8: want at least 4 MiB freed", f32, i8)
	}
	if st := s.Status(); !strings.Contains(st, "re-prefill") {
		t.Errorf("status after the switch: %q", st)
	}
	if err := s.Send("Once upon a time"); err != nil {
		t.Fatal(err)
	}
	if res := s.Wait(); res.Err != nil || len(res.IDs) == 0 {
		t.Fatalf("int8 reply: %+v", res)
	}
	if st := s.Status(); st != "" {
		t.Errorf("status after the re-prefilled turn: %q", st)
	}
	if err := s.SetQuant("f32"); err != nil {
		t.Fatal(err)
	}
	if q := s.Quant(); q != "f32" {
		t.Errorf("back to %q, want f32", q)
	}
}
