package fakegithub

import (
	"fmt"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// PullRequestSeed is a pull request seeded with AddPullRequest, as someone
// other than the app opened it.
type PullRequestSeed struct {
	Number int // 0: the next free number (issues and pull requests share them)
	Title  string
	Body   string
	Author string // login; defaults to "octocat"
	// HeadOwner/HeadRepo is the repository of the head branch; empty means
	// the base repository. Another repository makes this a pull request from
	// a fork: the fork is then known to the fake as one of the base
	// repository (see createPull's cross-repository heads), but it is a
	// separate repository for AddInstallation and SetPublic.
	HeadOwner, HeadRepo string
	HeadRef             string // branch in the head repository; required
	HeadSHA             string
	BaseRef             string // default "main"
	BaseSHA             string
	MaintainerCanModify bool
	Draft               bool
	Locked              bool
	State               string // "open" (default) or "closed"
	Merged              bool   // merged (then closed)
	// HeadRepoDeleted makes GitHub's answer for a fork that was deleted:
	// "head": {"repo": null, ...}.
	HeadRepoDeleted bool
}

// AddPullRequest seeds a pull request in owner/repo and the issue of the same
// number that every pull request also is on GitHub, and returns the number.
func (s *Server) AddPullRequest(owner, repo string, pr PullRequestSeed) int {
	if pr.HeadRef == "" {
		panic("fakegithub: AddPullRequest: HeadRef is required")
	}
	if pr.Author == "" {
		pr.Author = "octocat"
	}
	if pr.HeadOwner == "" {
		pr.HeadOwner = owner
	}
	if pr.HeadRepo == "" {
		pr.HeadRepo = repo
	}
	if pr.BaseRef == "" {
		pr.BaseRef = "main"
	}
	switch {
	case pr.Merged:
		pr.State = "closed"
	case pr.State == "":
		pr.State = "open"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := repoKey(owner, repo)
	if pr.Number == 0 {
		pr.Number = s.nextNumberLocked(k)
	}
	for _, p := range s.pulls[k] {
		if p.Number == pr.Number {
			panic(fmt.Sprintf("fakegithub: AddPullRequest: %s#%d exists", k, pr.Number))
		}
	}
	if hk := repoKey(pr.HeadOwner, pr.HeadRepo); hk != k {
		s.forkParent[hk] = k
	}
	s.userLocked(pr.Author)
	if s.issues[k] == nil {
		s.issues[k] = map[int]*issue{}
	}
	s.issues[k][pr.Number] = &issue{
		Issue:     Issue{Number: pr.Number, Title: pr.Title, Body: pr.Body, Author: pr.Author, Locked: pr.Locked, IsPR: true},
		createdAt: time.Now().UTC(),
	}
	s.pulls[k] = append(s.pulls[k], &pullRequest{PullRequest: PullRequest{
		Number: pr.Number, NodeID: pullNodeID(k, pr.Number), Title: pr.Title, Body: pr.Body,
		Author: pr.Author, Head: pr.HeadRef, Base: pr.BaseRef, Draft: pr.Draft, State: pr.State,
		HTMLURL: pullHTMLURL(owner, repo, pr.Number), HeadOwner: pr.HeadOwner, HeadRepo: pr.HeadRepo,
		HeadSHA: pr.HeadSHA, BaseSHA: pr.BaseSHA, MaintainerCanModify: pr.MaintainerCanModify,
		Merged: pr.Merged, HeadRepoDeleted: pr.HeadRepoDeleted,
	}})
	return pr.Number
}

// SetPullHead sets the head SHA of pull request n of owner/repo, as a push
// to its head branch does on GitHub.
func (s *Server) SetPullHead(owner, repo string, n int, sha string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pullByNumberLocked(repoKey(owner, repo), n)
	if p == nil {
		panic(fmt.Sprintf("fakegithub: SetPullHead: no pull request %s#%d", repoKey(owner, repo), n))
	}
	p.HeadSHA = sha
}

// SetPublic makes owner/repo public (or private again). Like on GitHub, any
// installation token may read a public repository (GET requests) even when
// its installation does not include it, but not write to it: writes are
// refused with 403 "Resource not accessible by integration". A private
// repository outside the installation does not exist for the token (404).
func (s *Server) SetPublic(owner, repo string, public bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.public[repoKey(owner, repo)] = public
}

// RepoID returns the id of owner/repo, given on first use. GitHub's ids
// stay with a repository when it is renamed; a name deleted and created
// again (RecreateRepo) is another repository with another id.
func (s *Server) RepoID(owner, repo string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.repoIDLocked(repoKey(owner, repo))
}

func (s *Server) repoIDLocked(k string) int64 {
	id, ok := s.repoIDs[k]
	if !ok {
		s.nextID++
		id = s.nextID
		s.repoIDs[k] = id
	}
	return id
}

// RecreateRepo makes owner/repo a new repository under the old name, as
// after the old one was renamed, transferred or deleted and someone
// created the name again: a new id, public or not, with no roles yet.
// It returns the new id.
func (s *Server) RecreateRepo(owner, repo string, public bool) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := repoKey(owner, repo)
	delete(s.repoIDs, k)
	delete(s.perms, k)
	s.public[k] = public
	return s.repoIDLocked(k)
}

// ForbidRepo makes GET /repos/{owner}/{repo} answer user tokens 403, as
// GitHub does for an organisation's SAML enforcement or IP allow list the
// token does not satisfy.
func (s *Server) ForbidRepo(owner, repo string, forbid bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forbidden[repoKey(owner, repo)] = forbid
}

// DiffTooLarge makes the diff of pull request n of owner/repo be refused
// the way GitHub refuses a diff too large to render: 406 with a "too_large"
// error.
func (s *Server) DiffTooLarge(owner, repo string, n int, tooLarge bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.diffTooLarge[pullKey(repoKey(owner, repo), n)] = tooLarge
}

func pullKey(k string, n int) string { return k + "#" + strconv.Itoa(n) }

func (s *Server) pullByNumberLocked(k string, n int) *pullRequest {
	for _, p := range s.pulls[k] {
		if p.Number == n {
			return p
		}
	}
	return nil
}

// pullViewLocked is the stored pull request with what lives on its issue.
func (s *Server) pullViewLocked(k string, p *pullRequest) PullRequest {
	out := p.PullRequest
	if is := s.issues[k][p.Number]; is != nil {
		out.Locked = is.Locked
	}
	return out
}

// headRepoLocked names the repository of a cross-repository head
// "headOwner:branch" of a pull request into k: the repository of that owner
// in k's fork network, else the owner's repository of the same name (a
// fork keeps its parent's name unless renamed).
func (s *Server) headRepoLocked(k, headOwner, name string) string {
	if o, n, _ := strings.Cut(k, "/"); strings.EqualFold(o, headOwner) {
		return n
	}
	parent := k
	if p, ok := s.forkParent[k]; ok {
		parent = p
	}
	if o, n, _ := strings.Cut(parent, "/"); strings.EqualFold(o, headOwner) {
		return n
	}
	for child, p := range s.forkParent {
		if o, n, _ := strings.Cut(child, "/"); p == parent && strings.EqualFold(o, headOwner) {
			return n
		}
	}
	return name
}

func (s *Server) cloneURL(owner, repo string) string {
	if s.CloneURL != nil {
		return s.CloneURL(owner, repo)
	}
	return fmt.Sprintf("%s/%s/%s.git", HTMLBase, owner, repo)
}

func repoID(k string) int64 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(k))
	return int64(h.Sum32()%100000000) + 1
}

func (s *Server) repoJSONLocked(owner, repo string) map[string]any {
	k := repoKey(owner, repo)
	_, fork := s.forkParent[k]
	def := s.defaultBranch[k]
	if def == "" {
		def = "main"
	}
	return map[string]any{
		"id":             repoID(k),
		"node_id":        fmt.Sprintf("R_kgDO%08x", repoID(k)),
		"name":           repo,
		"full_name":      owner + "/" + repo,
		"owner":          map[string]any{"login": owner},
		"private":        !s.public[k],
		"fork":           fork,
		"html_url":       fmt.Sprintf("%s/%s/%s", HTMLBase, owner, repo),
		"url":            fmt.Sprintf("%s/repos/%s/%s", s.URL, owner, repo),
		"clone_url":      s.cloneURL(owner, repo),
		"default_branch": def,
	}
}

// refSHAs are commits a pull request answer reports in place of the stored
// (empty) ones.
type refSHAs struct{ head, base string }

func (s *Server) pullJSONLocked(owner, repo string, p *pullRequest, shas refSHAs) map[string]any {
	k := repoKey(owner, repo)
	v := s.pullViewLocked(k, p)
	headSHA, baseSHA := v.HeadSHA, v.BaseSHA
	if headSHA == "" {
		headSHA = shas.head
	}
	if baseSHA == "" {
		baseSHA = shas.base
	}
	var headRepo any
	if !v.HeadRepoDeleted {
		headRepo = s.repoJSONLocked(v.HeadOwner, v.HeadRepo)
	}
	created := time.Now().UTC()
	if is := s.issues[k][v.Number]; is != nil {
		created = is.createdAt
	}
	out := map[string]any{
		"id":                    int64(v.Number) + 500000,
		"node_id":               v.NodeID,
		"number":                v.Number,
		"url":                   fmt.Sprintf("%s/repos/%s/%s/pulls/%d", s.URL, owner, repo, v.Number),
		"html_url":              v.HTMLURL,
		"diff_url":              v.HTMLURL + ".diff",
		"title":                 v.Title,
		"body":                  v.Body,
		"state":                 v.State,
		"draft":                 v.Draft,
		"locked":                v.Locked,
		"merged":                v.Merged,
		"maintainer_can_modify": v.MaintainerCanModify,
		"user":                  s.userJSONLocked(v.Author),
		"created_at":            created.Format(time.RFC3339),
		"head": map[string]any{
			"label": v.HeadOwner + ":" + v.Head,
			"ref":   v.Head,
			"sha":   headSHA,
			"user":  map[string]any{"login": v.HeadOwner},
			"repo":  headRepo,
		},
		"base": map[string]any{
			"label": owner + ":" + v.Base,
			"ref":   v.Base,
			"sha":   baseSHA,
			"user":  map[string]any{"login": owner},
			"repo":  s.repoJSONLocked(owner, repo),
		},
	}
	if v.Merged {
		out["merged_at"] = created.Format(time.RFC3339)
	} else {
		out["merged_at"] = nil
	}
	return out
}

// wantsDiff reports whether the Accept header asks for the diff media type
// (application/vnd.github.diff, or the older vnd.github.v3.diff).
func wantsDiff(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		switch strings.ToLower(mt) {
		case "application/vnd.github.diff", "application/vnd.github.v3.diff":
			return true
		}
	}
	return false
}

// getPull serves GET /repos/{owner}/{repo}/pulls/{number}: the pull request,
// or its diff when the diff media type is asked for. The hooks run without
// the lock: they may be slow (git) or call back into the fake.
func (s *Server) getPull(w http.ResponseWriter, r *http.Request) {
	owner, repo := r.PathValue("owner"), r.PathValue("repo")
	k := repoKey(owner, repo)
	s.mu.Lock()
	p, ok := s.pullLocked(w, r)
	if !ok {
		s.mu.Unlock()
		return
	}
	v := s.pullViewLocked(k, p)
	tooLarge := s.diffTooLarge[pullKey(k, v.Number)]
	refs, diffs := s.Refs, s.Diffs
	s.mu.Unlock()

	if wantsDiff(r) {
		s.servePullDiff(w, owner, repo, v, tooLarge, diffs)
		return
	}
	var shas refSHAs
	if refs != nil {
		var err error
		if v.HeadSHA == "" && !v.HeadRepoDeleted {
			if shas.head, _, err = refs(v.HeadOwner, v.HeadRepo, v.Head); err != nil {
				errorJSON(w, http.StatusInternalServerError, "fakegithub: Refs hook: "+err.Error())
				return
			}
		}
		if v.BaseSHA == "" {
			if shas.base, _, err = refs(owner, repo, v.Base); err != nil {
				errorJSON(w, http.StatusInternalServerError, "fakegithub: Refs hook: "+err.Error())
				return
			}
		}
	}
	s.mu.Lock()
	out := s.pullJSONLocked(owner, repo, p, shas)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) servePullDiff(w http.ResponseWriter, owner, repo string, v PullRequest, tooLarge bool, diffs func(owner, repo, base, head string) (string, error)) {
	if tooLarge {
		writeJSON(w, http.StatusNotAcceptable, map[string]any{
			"message": "Sorry, the diff exceeded the maximum number of files (300). Consider using 'List pull requests files' API or locally cloning the repository instead.",
			"errors": []map[string]string{
				{"resource": "PullRequest", "field": "diff", "code": "too_large"},
			},
			"documentation_url": "https://docs.github.com/rest/pulls/pulls#get-a-pull-request",
		})
		return
	}
	if diffs == nil {
		errorJSON(w, http.StatusNotImplemented, "fakegithub: set Server.Diffs to serve pull request diffs")
		return
	}
	head := v.HeadSHA
	switch {
	case head != "":
	case strings.EqualFold(v.HeadOwner+"/"+v.HeadRepo, owner+"/"+repo):
		head = v.Head
	default:
		head = fmt.Sprintf("refs/pull/%d/head", v.Number)
	}
	d, err := diffs(owner, repo, v.Base, head)
	if err != nil {
		errorJSON(w, http.StatusInternalServerError, "fakegithub: Diffs hook: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/vnd.github.diff; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(d))
}
