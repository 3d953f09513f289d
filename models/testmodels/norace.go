//go:build !race

package testmodels

// Race: the race detector is on (race.go says what changes then).
const Race = false

const raceSlowdown = 1
