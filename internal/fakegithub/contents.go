package fakegithub

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// maxInlineContent is the largest file the contents API returns inline.
// GitHub answers a bigger one (up to 100 MB) with encoding "none" and empty
// content, and serves its bytes only through the raw media type, which the
// fake does not model.
const maxInlineContent = 1 << 20

// entry is one path of a repository at one ref.
type entry struct {
	content []byte
	target  string // symbolic links: the link's target as stored in git
}

func (e entry) symlink() bool { return e.target != "" }

// SetFile stores the content of the file at path on ref (a branch name,
// "refs/heads/<branch>", a tag or a SHA: refs are matched as strings, except
// that "refs/heads/" is ignored) of owner/repo, for the contents endpoint.
// Directories exist implicitly, as parents of the files set here.
func (s *Server) SetFile(owner, repo, ref, p string, content []byte) {
	s.setEntry(owner, repo, ref, p, entry{content: append([]byte{}, content...)})
}

// SetSymlink stores a symbolic link at path on ref pointing to target (as git
// stores it: relative to the link's directory). Like GitHub, the contents
// endpoint answers with the target file when target names a file set on the
// same ref, and with {"type": "symlink", "target": …} otherwise.
func (s *Server) SetSymlink(owner, repo, ref, p, target string) {
	if target == "" {
		panic("fakegithub: SetSymlink: empty target")
	}
	s.setEntry(owner, repo, ref, p, entry{target: target})
}

func (s *Server) setEntry(owner, repo, ref, p string, e entry) {
	p = strings.Trim(p, "/")
	if p == "" {
		panic("fakegithub: empty file path")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ref := repoKey(owner, repo), normRef(ref)
	if s.files[k] == nil {
		s.files[k] = map[string]map[string]entry{}
	}
	if s.files[k][ref] == nil {
		s.files[k][ref] = map[string]entry{}
	}
	s.files[k][ref][p] = e
}

// SetDefaultBranch sets the branch the contents endpoint reads when a
// request names no ref. Without it, that is "main".
func (s *Server) SetDefaultBranch(owner, repo, branch string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.defaultBranch[repoKey(owner, repo)] = branch
}

// normRef lets "refs/heads/main" and "main" name the same stored branch.
func normRef(ref string) string { return strings.TrimPrefix(ref, "refs/heads/") }

// blobSHA is git's object id of a blob with this content, as GitHub reports
// in the contents API's sha field.
func blobSHA(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// wrapBase64 encodes b the way the contents API does: base64 with a line
// break after every 60 characters and at the end.
func wrapBase64(b []byte) string {
	enc := base64.StdEncoding.EncodeToString(b)
	var sb strings.Builder
	for len(enc) > 0 {
		n := min(60, len(enc))
		sb.WriteString(enc[:n])
		sb.WriteByte('\n')
		enc = enc[n:]
	}
	return sb.String()
}

func (s *Server) contentLinks(owner, repo, ref, p, sha, kind string) map[string]any {
	q := "?ref=" + url.QueryEscape(ref)
	blob := "blob"
	if kind == "dir" {
		blob = "tree"
	}
	return map[string]any{
		"url":      fmt.Sprintf("%s/repos/%s/%s/contents/%s%s", s.URL, owner, repo, escapePath(p), q),
		"git_url":  fmt.Sprintf("%s/repos/%s/%s/git/%ss/%s", s.URL, owner, repo, blob, sha),
		"html_url": fmt.Sprintf("%s/%s/%s/%s/%s/%s", HTMLBase, owner, repo, blob, url.PathEscape(ref), escapePath(p)),
	}
}

func escapePath(p string) string { return (&url.URL{Path: p}).EscapedPath() }

// fileJSON is a "type": "file" answer, with the content inline unless the
// file is too big for that.
func (s *Server) fileJSON(owner, repo, ref, p string, content []byte) map[string]any {
	sha := blobSHA(content)
	out := s.contentLinks(owner, repo, ref, p, sha, "file")
	out["type"] = "file"
	out["name"] = path.Base(p)
	out["path"] = p
	out["size"] = len(content)
	out["sha"] = sha
	out["download_url"] = fmt.Sprintf("https://raw.githubusercontent.com/%s/%s/%s/%s", owner, repo, url.PathEscape(ref), escapePath(p))
	if len(content) > maxInlineContent {
		out["encoding"], out["content"] = "none", ""
	} else {
		out["encoding"], out["content"] = "base64", wrapBase64(content)
	}
	return out
}

func (s *Server) symlinkJSON(owner, repo, ref, p, target string) map[string]any {
	sha := blobSHA([]byte(target))
	out := s.contentLinks(owner, repo, ref, p, sha, "file")
	out["type"] = "symlink"
	out["target"] = target
	out["name"] = path.Base(p)
	out["path"] = p
	out["size"] = len(target)
	out["sha"] = sha
	return out
}

// getContents serves GET /repos/{owner}/{repo}/contents/{path...}?ref=: a
// file (or the file a symbolic link points to), a symbolic link, or a
// directory listing, from what SetFile and SetSymlink stored and then from
// the Files hook. Anything else is 404 {"message": "Not Found"}.
func (s *Server) getContents(w http.ResponseWriter, r *http.Request) {
	owner, repo := r.PathValue("owner"), r.PathValue("repo")
	p := strings.Trim(r.PathValue("path"), "/")
	k := repoKey(owner, repo)

	s.mu.Lock()
	ref := r.URL.Query().Get("ref")
	if ref == "" {
		ref = s.defaultBranch[k]
		if ref == "" {
			ref = "main"
		}
	}
	tree := s.files[k][normRef(ref)]
	if e, ok := tree[p]; ok && p != "" {
		var out map[string]any
		switch {
		case !e.symlink():
			out = s.fileJSON(owner, repo, ref, p, e.content)
		default:
			// GitHub follows a link to a regular file of the repository.
			tp := path.Join(path.Dir(p), e.target)
			if t, ok := tree[tp]; ok && !t.symlink() && !path.IsAbs(e.target) {
				out = s.fileJSON(owner, repo, ref, tp, t.content)
			} else {
				out = s.symlinkJSON(owner, repo, ref, p, e.target)
			}
		}
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, out)
		return
	}
	if list := s.listDirLocked(owner, repo, ref, tree, p); list != nil {
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, list)
		return
	}
	hook := s.Files
	s.mu.Unlock()

	// The hook runs without the lock: it may be slow (git) or call back
	// into the fake.
	if hook != nil && p != "" {
		content, found, err := hook(owner, repo, ref, p)
		switch {
		case err != nil:
			errorJSON(w, http.StatusInternalServerError, "fakegithub: Files hook: "+err.Error())
			return
		case found:
			writeJSON(w, http.StatusOK, s.fileJSON(owner, repo, ref, p, content))
			return
		}
	}
	errorJSON(w, http.StatusNotFound, "Not Found")
}

// listDirLocked lists the directory dir ("" is the root) of tree, or returns
// nil when no stored entry lies under it.
func (s *Server) listDirLocked(owner, repo, ref string, tree map[string]entry, dir string) []map[string]any {
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	children := map[string]bool{} // name → is a directory
	for p := range tree {
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok {
			continue
		}
		name, _, sub := strings.Cut(rest, "/")
		children[name] = children[name] || sub
	}
	if len(children) == 0 {
		return nil
	}
	names := make([]string, 0, len(children))
	for n := range children {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]map[string]any, 0, len(names))
	for _, n := range names {
		p := prefix + n
		var item map[string]any
		switch e := tree[p]; {
		case children[n]:
			sha := blobSHA([]byte("tree " + p)) // stable, not git's tree id
			item = s.contentLinks(owner, repo, ref, p, sha, "dir")
			item["type"], item["size"], item["sha"] = "dir", 0, sha
		case e.symlink():
			item = s.symlinkJSON(owner, repo, ref, p, e.target)
			delete(item, "target") // listings do not carry it
		default:
			item = s.fileJSON(owner, repo, ref, p, e.content)
			delete(item, "content") // listings carry no content
			delete(item, "encoding")
		}
		item["name"], item["path"] = n, p
		out = append(out, item)
	}
	return out
}

// ---- teams ----

// AddTeamMember makes user an active member of the team org/team (slug).
func (s *Server) AddTeamMember(org, team, user string) {
	s.setTeamMembership(org, team, user, "active")
}

// InviteTeamMember makes user a pending member of org/team: invited, not
// yet accepted, which GitHub reports with state "pending".
func (s *Server) InviteTeamMember(org, team, user string) {
	s.setTeamMembership(org, team, user, "pending")
}

// RemoveTeamMember removes user from org/team.
func (s *Server) RemoveTeamMember(org, team, user string) {
	s.setTeamMembership(org, team, user, "")
}

func (s *Server) setTeamMembership(org, team, user, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := strings.ToLower(org + "/" + team)
	if s.teams[k] == nil {
		s.teams[k] = map[string]string{}
	}
	if state == "" {
		delete(s.teams[k], strings.ToLower(user))
		return
	}
	s.teams[k][strings.ToLower(user)] = state
	s.userLocked(user)
}

// orgScope guards organisation endpoints: an installation token whose
// installation includes at least one repository of the organisation (the
// fake's installations are lists of repositories). Others get 404, as a
// repository the token cannot see does.
func (s *Server) orgScope(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		info := infoOf(r)
		if !tokenAuth(w, info.auth) {
			return
		}
		prefix := strings.ToLower(r.PathValue("org")) + "/"
		s.mu.Lock()
		ok := false
		for repo := range s.installations[info.installation] {
			ok = ok || strings.HasPrefix(repo, prefix)
		}
		s.mu.Unlock()
		if !ok {
			notFound(w)
			return
		}
		h(w, r)
	}
}

func (s *Server) getTeamMembership(w http.ResponseWriter, r *http.Request) {
	org, team, user := r.PathValue("org"), r.PathValue("team"), r.PathValue("user")
	s.mu.Lock()
	defer s.mu.Unlock()
	state, ok := s.teams[strings.ToLower(org+"/"+team)][strings.ToLower(user)]
	if !ok {
		notFound(w)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"url":   fmt.Sprintf("%s/orgs/%s/teams/%s/memberships/%s", s.URL, org, team, user),
		"role":  "member",
		"state": state,
	})
}

// ---- token prefix ----

// SetTokenPrefix makes every installation token minted from now on start
// with prefix (for example "ghs_PWSECRET"), so that a test can search logs,
// files and messages for any token by that string. Tokens stay unique and
// valid; the default prefix is "ghs_". It panics on a prefix that would not
// survive an Authorization header or would look like a JWT.
func (s *Server) SetTokenPrefix(prefix string) {
	if prefix == "" || strings.ContainsAny(prefix, ". \t\r\n") || !isPrintableASCII(prefix) {
		panic("fakegithub: SetTokenPrefix: prefix must be non-empty printable ASCII without '.' or spaces: " + strconv.Quote(prefix))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokenPrefix = prefix
}

func isPrintableASCII(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] < 0x21 || v[i] > 0x7e {
			return false
		}
	}
	return true
}

// WorkflowToken mints a token of installation, as GitHub gives a workflow
// job its GITHUB_TOKEN: a test of the GitHub Action hands it to the bot
// directly, with no app credentials. It expires in an hour like the rest.
func (s *Server) WorkflowToken(installation int64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.installations[installation] == nil {
		panic(fmt.Sprintf("fakegithub: WorkflowToken: no installation %d", installation))
	}
	tok := randomToken(s.tokenPrefix)
	s.tokens[tok] = tokenInfo{installation: installation, expires: time.Now().Add(time.Hour)}
	return tok
}
