//go:build !race

package botproc

const raceEnabled = false
