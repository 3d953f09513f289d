package testmodels

import (
	"runtime"
	"testing"
	"time"
)

// Limits a hostile input must stay within (issue 16): one clean error (or
// the documented result) within HangAfter, allocating less than MaxAlloc.
const (
	HangAfter = 30 * time.Second * raceSlowdown // 5 s was reached by a 7 MB /completion prompt's tokenizing on a loaded 2-core host
	MaxAlloc  = 512 << 20
)

// Bounded runs f, the handling of a hostile input, and fails t when it does
// not return within HangAfter (a hang, not a speed measurement: the inputs
// are refused in milliseconds) or allocates MaxAlloc bytes or more in all
// (the runtime's TotalAlloc, so peak memory was lower still). It returns
// f's error.
func Bounded(t testing.TB, what string, f func() error) error {
	t.Helper()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	done := make(chan error, 1)
	go func() { done <- f() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(HangAfter):
		t.Fatalf("%s: no result after %v", what, HangAfter)
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n >= MaxAlloc {
		t.Errorf("%s: allocated %d MB (limit %d MB)", what, n>>20, MaxAlloc>>20)
	}
	return err
}
