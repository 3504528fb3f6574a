//go:build unix

package localrun

import (
	"os"

	"golang.org/x/sys/unix"
)

// terminalWidth is the columns of the terminal w is, 0 when it is none
// or cannot tell. Asked each time: the window may have been resized.
func terminalWidth(w any) int {
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}
