// Package hardlink tells how many names a file has. A workspace's file
// with more than one may share its bytes with a file outside the
// workspace (a hard link can name any file on the same file system), and
// os.Root confines names, not files: reading it could reveal that file and
// writing it in place would change it. Git never checks out a hard link,
// so the file tools and the commit treat such a file as foreign.
package hardlink

import "io/fs"

// Count is the number of hard links (names) of the file fi describes, as
// the system reports it; 1 where it reports none.
func Count(fi fs.FileInfo) uint64 {
	if n := count(fi); n > 0 {
		return n
	}
	return 1
}
