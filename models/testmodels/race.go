//go:build race

package testmodels

// Race: the race detector is on. sync.Pool then drops a quarter of what is
// put back, so a product that takes its scratch from a pool allocates now
// and then (allocation checks hold only without it), and code runs several
// times slower (HangAfter allows for it).
const Race = true

const raceSlowdown = 10
