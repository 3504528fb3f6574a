//go:build race

package botproc

// raceEnabled: this process runs under the race detector, so the bot is
// built with it too.
const raceEnabled = true
