//go:build !race

package weights

const raceOn = false
