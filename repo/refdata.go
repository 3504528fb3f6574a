package repo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/pullwright/pullwright"
)

// The functions below keep a small file in a repository under a ref outside
// refs/heads and refs/tags, with no local clone: a ref points at a commit
// whose tree holds the one file. Such refs are not branches, so they show
// in no branch list, no default clone fetches them, and a push to them
// starts no "on: push" workflow; yet whoever may push to the repository may
// write them, as a workflow's token with contents: write can. The GitHub
// Action keeps a waiting task's state there between runs.

// maxRefFile bounds what ReadRefFile accepts.
const maxRefFile = 64 << 20

func checkDataRef(ref string) error {
	for _, p := range []string{"refs/heads/", "refs/tags/", "refs/remotes/"} {
		if strings.HasPrefix(ref, p) {
			return fmt.Errorf("%q is a branch or tag; data refs live in a namespace of their own", ref)
		}
	}
	if !strings.HasPrefix(ref, "refs/") || strings.Count(ref, "/") < 2 || strings.ContainsAny(ref, " ~^:?*[\\\x00") ||
		strings.Contains(ref, "..") || strings.Contains(ref, "//") || strings.HasSuffix(ref, "/") || strings.HasSuffix(ref, ".lock") {
		return fmt.Errorf("%q is not a valid data ref (want refs/<namespace>/<name>)", ref)
	}
	return nil
}

func remoteAt(url string) *git.Remote {
	return git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{url}})
}

// ListRefs returns the refs of the repository at url whose names start with
// prefix, mapped to the commits they point at.
func ListRefs(ctx context.Context, url, token, prefix string) (map[string]string, error) {
	safe, err := checkURL(url)
	if err != nil {
		return nil, fmt.Errorf("list %s* on %s: %w", prefix, safe, err)
	}
	refs, err := remoteAt(url).ListContext(ctx, &git.ListOptions{Auth: auth(token)})
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, opError(fmt.Sprintf("list %s* on %s", prefix, safe), err, token)
	}
	out := map[string]string{}
	for _, r := range refs {
		if r.Type() == plumbing.HashReference && strings.HasPrefix(r.Name().String(), prefix) {
			out[r.Name().String()] = r.Hash().String()
		}
	}
	return out, nil
}

// ReadRefFile returns the file at path in the commit ref points at, and
// that commit.
func ReadRefFile(ctx context.Context, url, token, ref, path string) ([]byte, string, error) {
	safe, err := checkURL(url)
	if err != nil {
		return nil, "", fmt.Errorf("read %s on %s: %w", ref, safe, err)
	}
	if err := checkDataRef(ref); err != nil {
		return nil, "", err
	}
	st := memory.NewStorage()
	remote := git.NewRemote(st, &config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{url}})
	err = remote.FetchContext(ctx, &git.FetchOptions{
		RefSpecs: []config.RefSpec{config.RefSpec("+" + ref + ":" + ref)},
		Depth:    1,
		Auth:     auth(token),
		Tags:     git.NoTags,
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil, "", opError(fmt.Sprintf("fetch %s from %s", ref, safe), err, token)
	}
	r, err := st.Reference(plumbing.ReferenceName(ref))
	if err != nil {
		return nil, "", fmt.Errorf("read %s on %s: %w", ref, safe, err)
	}
	c, err := object.GetCommit(st, r.Hash())
	if err != nil {
		return nil, "", fmt.Errorf("read %s on %s: commit: %w", ref, safe, err)
	}
	f, err := c.File(path)
	if err != nil {
		return nil, "", fmt.Errorf("read %s in %s on %s: %w", path, ref, safe, err)
	}
	if f.Size > maxRefFile {
		return nil, "", fmt.Errorf("read %s in %s on %s: %d bytes is more than %d", path, ref, safe, f.Size, maxRefFile)
	}
	rd, err := f.Reader()
	if err != nil {
		return nil, "", fmt.Errorf("read %s in %s on %s: %w", path, ref, safe, err)
	}
	defer rd.Close()
	b, err := io.ReadAll(rd)
	if err != nil {
		return nil, "", fmt.Errorf("read %s in %s on %s: %w", path, ref, safe, err)
	}
	return b, c.Hash.String(), nil
}

// ErrRefMoved means a data ref no longer points at the commit the caller
// read: someone else wrote it meanwhile.
var ErrRefMoved = errors.New("the ref moved since it was read")

// WriteRefFile points ref at a new commit, with no parent, whose tree holds
// data at path (a single file name), and returns that commit. With expect
// "", the ref is replaced whatever it pointed at: it holds data, not
// anyone's work. Otherwise it is replaced only if it still points at
// expect (ErrRefMoved if not), so two writers cannot both win.
func WriteRefFile(ctx context.Context, url, token, ref, path string, data []byte, author pullwright.Identity, msg string, when time.Time, expect string) (string, error) {
	safe, err := checkURL(url)
	if err != nil {
		return "", fmt.Errorf("write %s on %s: %w", ref, safe, err)
	}
	if err := checkDataRef(ref); err != nil {
		return "", err
	}
	if path == "" || strings.Contains(path, "/") {
		return "", fmt.Errorf("write %s: file name %q must be a single path element", ref, path)
	}
	if err := validIdentity(author); err != nil {
		return "", fmt.Errorf("write %s: %w", ref, err)
	}
	st := memory.NewStorage()
	put := func(o interface {
		Encode(plumbing.EncodedObject) error
	}) (plumbing.Hash, error) {
		obj := st.NewEncodedObject()
		if err := o.Encode(obj); err != nil {
			return plumbing.ZeroHash, err
		}
		return st.SetEncodedObject(obj)
	}
	blob := st.NewEncodedObject()
	blob.SetType(plumbing.BlobObject)
	w, err := blob.Writer()
	if err != nil {
		return "", fmt.Errorf("write %s: %w", ref, err)
	}
	if _, err := w.Write(data); err != nil {
		return "", fmt.Errorf("write %s: %w", ref, err)
	}
	w.Close()
	blobHash, err := st.SetEncodedObject(blob)
	if err != nil {
		return "", fmt.Errorf("write %s: %w", ref, err)
	}
	treeHash, err := put(&object.Tree{Entries: []object.TreeEntry{{Name: path, Mode: filemode.Regular, Hash: blobHash}}})
	if err != nil {
		return "", fmt.Errorf("write %s: tree: %w", ref, err)
	}
	sig := object.Signature{Name: author.Name, Email: author.Email, When: when}
	commitHash, err := put(&object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: treeHash})
	if err != nil {
		return "", fmt.Errorf("write %s: commit: %w", ref, err)
	}
	name := plumbing.ReferenceName(ref)
	if err := st.SetReference(plumbing.NewHashReference(name, commitHash)); err != nil {
		return "", fmt.Errorf("write %s: %w", ref, err)
	}
	remote := git.NewRemote(st, &config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{url}})
	err = remote.PushContext(ctx, &git.PushOptions{
		RefSpecs:          []config.RefSpec{config.RefSpec("+" + ref + ":" + ref)},
		RequireRemoteRefs: required(expect, ref),
		Auth:              auth(token),
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return "", refError(fmt.Sprintf("push %s to %s", ref, safe), err, token, expect)
	}
	return commitHash.String(), nil
}

func required(expect, ref string) []config.RefSpec {
	if expect == "" {
		return nil
	}
	return []config.RefSpec{config.RefSpec(expect + ":" + ref)}
}

// refError is opError, with go-git's refusal of RequireRemoteRefs as
// ErrRefMoved.
func refError(op string, err error, token, expect string) error {
	if expect != "" && strings.Contains(err.Error(), "required to be") {
		return fmt.Errorf("%s: %w", op, ErrRefMoved)
	}
	return opError(op, err, token)
}

// DeleteRef removes ref from the repository at url; a ref that is not
// there is no error. With expect set, only if it still points at expect
// (ErrRefMoved if not).
func DeleteRef(ctx context.Context, url, token, ref, expect string) error {
	safe, err := checkURL(url)
	if err != nil {
		return fmt.Errorf("delete %s on %s: %w", ref, safe, err)
	}
	if err := checkDataRef(ref); err != nil {
		return err
	}
	err = remoteAt(url).PushContext(ctx, &git.PushOptions{
		RefSpecs:          []config.RefSpec{config.RefSpec(":" + ref)},
		RequireRemoteRefs: required(expect, ref),
		Auth:              auth(token),
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return refError(fmt.Sprintf("delete %s on %s", ref, safe), err, token, expect)
	}
	return nil
}
