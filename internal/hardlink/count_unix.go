//go:build unix

package hardlink

import (
	"io/fs"
	"syscall"
)

func count(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 0
}
