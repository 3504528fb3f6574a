//go:build !unix

package localrun

// terminalWidth is 0, unknown, where the size of a terminal is not asked.
func terminalWidth(any) int { return 0 }
