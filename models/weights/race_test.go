//go:build race

package weights

// raceOn: under the race detector sync.Pool drops a quarter of what is put
// back, so a product that takes its scratch from a pool allocates now and
// then; the allocation checks hold only without it.
const raceOn = true
