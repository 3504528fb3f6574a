package pullwright

// Change is one path of a checkout that differs from its HEAD commit.
type Change struct {
	Path   string // slash-separated, relative to the checkout's root
	Status string // ChangeAdded, ChangeModified or ChangeDeleted
}

// How a Change changed its path.
const (
	ChangeAdded    = "added"
	ChangeModified = "modified"
	ChangeDeleted  = "deleted"
)

// FileStat is the size of the change to one file.
type FileStat struct {
	Path    string `json:"path"`
	Added   int    `json:"added"`
	Deleted int    `json:"deleted"`
}

// TreeFile is one file of a commit's tree, read without checking it out.
type TreeFile struct {
	Path string // slash-separated, relative to the root
	// Data is the file's start, at most as many bytes as the reader was
	// asked for; Size is the whole file's.
	Data []byte
	Size int64
	// Link is true for a symbolic link, which is not followed: Data is
	// then empty.
	Link bool
}
