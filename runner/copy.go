package runner

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/pullwright/pullwright"
)

// copyTree copies the directory tree at src to dst, which must not exist.
// Regular files keep their contents, permission bits and modification times;
// symbolic links are recreated with the same target and never followed, so a
// link pointing out of the tree stays a link; directories keep their
// permission bits (applied after their contents are copied, so a read-only
// directory can still be filled). Sockets, devices and named pipes are
// skipped. Hard links become separate files. .git is copied like anything
// else: tools that read VCS information need it.
// treeRoot is the directory src names, through symbolic links: the root
// of a tree to copy, whose own links inside are never followed.
func treeRoot(src string) (string, fs.FileInfo, error) {
	root, err := filepath.EvalSymlinks(src)
	if err != nil {
		return "", nil, err
	}
	info, err := os.Stat(root)
	if err != nil {
		return "", nil, err
	}
	if !info.IsDir() {
		return "", nil, fmt.Errorf("%s is not a directory", src)
	}
	return root, info, nil
}

func copyTree(ctx context.Context, src, dst string) error {
	root, _, err := treeRoot(src)
	if err != nil {
		return err
	}

	type dirMode struct {
		path string
		info fs.FileInfo
	}
	var dirs []dirMode // fixed up after the walk, deepest last
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch mode := info.Mode(); {
		case mode.IsDir():
			if err := os.Mkdir(target, 0o700); err != nil {
				return err
			}
			dirs = append(dirs, dirMode{target, info})
		case mode&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case mode.IsRegular():
			return copyFile(path, target, info)
		}
		return nil // sockets, devices, named pipes
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		d := dirs[i]
		if err := os.Chmod(d.path, d.info.Mode().Perm()|d.info.Mode()&(fs.ModeSetgid|fs.ModeSticky)); err != nil {
			return err
		}
		if err := os.Chtimes(d.path, d.info.ModTime(), d.info.ModTime()); err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies one regular file, refusing to follow a symlink that replaced
// it since the walk saw it.
func copyFile(src, dst string, info fs.FileInfo) error {
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// Chmod, not the mode given to OpenFile, so the umask does not apply.
	if err := os.Chmod(dst, info.Mode().Perm()|info.Mode()&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
		return err
	}
	return os.Chtimes(dst, info.ModTime(), info.ModTime())
}

// removeTree removes path and everything below it, first making directories
// writable and searchable if a plain os.RemoveAll fails: a command may leave
// read-only directories behind (chmod -R a-w, Go's module cache).
func removeTree(path string) error {
	if err := os.RemoveAll(path); err == nil {
		return nil
	}
	_ = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		// WalkDir calls this for a directory before reading it, so opening
		// it up here lets the walk descend into it.
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(path)
}

// tarTree writes the directory tree at src to w as a tar stream, with the
// same rules as copyTree (regular files with their contents, permission bits
// and modification times; directories; symbolic links recreated, never
// followed; other types skipped; hard links as separate files). Every entry
// is owned by uid:gid, so the receiver needs no chown pass. The root itself
// has no entry: the receiver's directory keeps its own owner and mode.
// reserve, if not nil, is asked before each regular file with its size; its
// error stops the stream before that file is sent.
//
// Each of links is added as a symbolic link where the tree has nothing of
// its name and has its directory (a real one: a link is never written
// through a symbolic link); one the tree has is left as the tree has it.
func tarTree(ctx context.Context, src string, w io.Writer, uid, gid int, reserve func(size int64) error, links ...pullwright.Link) error {
	root, info, err := treeRoot(src)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if path == root {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr := &tar.Header{
			Name:    filepath.ToSlash(rel),
			Mode:    tarMode(info.Mode()),
			ModTime: info.ModTime(),
			Uid:     uid,
			Gid:     gid,
		}
		switch mode := info.Mode(); {
		case mode.IsDir():
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
			return tw.WriteHeader(hdr)
		case mode&fs.ModeSymlink != 0:
			if hdr.Linkname, err = os.Readlink(path); err != nil {
				return err
			}
			hdr.Typeflag = tar.TypeSymlink
			return tw.WriteHeader(hdr)
		case mode.IsRegular():
			hdr.Typeflag, hdr.Size = tar.TypeReg, info.Size()
			if reserve != nil {
				if err := reserve(hdr.Size); err != nil {
					return err
				}
			}
			return tarFile(tw, path, hdr)
		}
		return nil // sockets, devices, named pipes
	})
	if err != nil {
		return err
	}
	for _, l := range links {
		if !validLinkName(l) {
			return fmt.Errorf("link %q: not a path inside the workspace", l.Name)
		}
		if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(l.Name))); err == nil {
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if !realDirs(root, path.Dir(l.Name)) {
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Name: l.Name, Typeflag: tar.TypeSymlink, Linkname: l.Target,
			Mode: 0o777, ModTime: info.ModTime(), Uid: uid, Gid: gid}); err != nil {
			return err
		}
	}
	return tw.Close()
}

// realDirs reports whether every component of dir (slash-separated,
// under root) is a directory, not a symbolic link to one.
func realDirs(root, dir string) bool {
	p := root
	for _, part := range strings.Split(dir, "/") {
		if part == "." {
			continue
		}
		p = filepath.Join(p, part)
		if fi, err := os.Lstat(p); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// tarFile writes one regular file, refusing to follow a symlink that replaced
// it since the walk saw it. A file that shrank since is an error (the header
// already promised its size); one that grew is cut at that size.
func tarFile(tw *tar.Writer, path string, hdr *tar.Header) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, f, hdr.Size); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// tarMode is the tar header mode of m: permission, setuid, setgid and sticky
// bits, in the numeric form tar uses.
func tarMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	if m&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
}
