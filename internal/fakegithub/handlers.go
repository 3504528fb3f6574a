package fakegithub

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxBody is GitHub's limit for comment and issue/PR bodies, in characters.
const maxBody = 65536

func contextWith(r *http.Request, info *reqInfo) context.Context {
	return context.WithValue(r.Context(), ctxKey{}, info)
}

func infoOf(r *http.Request) *reqInfo {
	if i, ok := r.Context().Value(ctxKey{}).(*reqInfo); ok {
		return i
	}
	return &reqInfo{auth: "none"}
}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { notFound(w) })

	m.HandleFunc("GET /app", s.app(s.getApp))
	m.HandleFunc("GET /app/installations", s.app(s.listInstallations))
	m.HandleFunc("POST /app/installations/{id}/access_tokens", s.app(s.createToken))
	m.HandleFunc("GET /users/{login}", s.getUser)
	m.HandleFunc("GET /user", s.getAuthenticatedUser)
	m.HandleFunc("GET /login/oauth/authorize", s.authorize)
	m.HandleFunc("GET "+attachmentPrefix+"{id}", s.attachment)
	m.HandleFunc("POST /login/oauth/access_token", s.accessToken)
	m.HandleFunc("POST /settings/apps/new", s.newApp)
	m.HandleFunc("POST /organizations/{org}/settings/apps/new", s.newApp)
	m.HandleFunc("POST /app-manifests/{code}/conversions", s.convertManifest)
	m.HandleFunc("GET /repos/{owner}/{repo}", s.getRepository)
	m.HandleFunc("GET /repos/{owner}/{repo}/installation", s.app(s.getRepoInstallation))
	m.HandleFunc("DELETE /applications/{client_id}/token", s.deleteAppToken)
	m.HandleFunc("POST /applications/{client_id}/token", s.checkAppToken)

	m.HandleFunc("GET /repos/{owner}/{repo}/issues/{number}", s.repoOrUser(s.getIssue))
	// One pattern for an issue's comments and a comment by id: the mux
	// refuses the two as patterns of their own (both would match
	// .../issues/comments/comments).
	m.HandleFunc("GET /repos/{owner}/{repo}/issues/{number}/{what}", s.repo(s.issueCommentsOrComment))
	m.HandleFunc("POST /repos/{owner}/{repo}/issues/{number}/comments", s.repo(s.createComment))
	m.HandleFunc("PATCH /repos/{owner}/{repo}/issues/comments/{id}", s.repo(s.editComment))
	m.HandleFunc("POST /repos/{owner}/{repo}/issues/comments/{id}/reactions", s.repo(s.createReaction))
	m.HandleFunc("GET /repos/{owner}/{repo}/pulls", s.repo(s.listPulls))
	// GitHub refuses a pull request in a repository the installation does
	// not include with 403, not 404: the head usually is in a repository
	// the token sees, the base in a fork it does not.
	m.HandleFunc("POST /repos/{owner}/{repo}/pulls", s.repoWrite(s.createPull))
	m.HandleFunc("GET /repos/{owner}/{repo}/pulls/{number}", s.repo(s.getPull))
	m.HandleFunc("PATCH /repos/{owner}/{repo}/pulls/{number}", s.repo(s.editPull))
	m.HandleFunc("GET /repos/{owner}/{repo}/pulls/{number}/comments", s.repo(s.listReviewComments))
	m.HandleFunc("POST /repos/{owner}/{repo}/pulls/{number}/comments", s.repo(s.createReviewComment))
	m.HandleFunc("POST /repos/{owner}/{repo}/pulls/{number}/comments/{id}/replies", s.repo(s.createReviewReply))
	m.HandleFunc("GET /repos/{owner}/{repo}/pulls/{number}/reviews", s.repo(s.listPullReviews))
	m.HandleFunc("POST /repos/{owner}/{repo}/pulls/{number}/reviews", s.repo(s.createPullReview))
	m.HandleFunc("PATCH /repos/{owner}/{repo}/pulls/comments/{id}", s.repo(s.editReviewComment))
	m.HandleFunc("POST /repos/{owner}/{repo}/pulls/comments/{id}/reactions", s.repo(s.createReviewReaction))
	m.HandleFunc("POST /repos/{owner}/{repo}/check-runs", s.repo(s.createCheckRun))
	m.HandleFunc("GET /repos/{owner}/{repo}/check-runs/{id}", s.repo(s.getCheckRun))
	m.HandleFunc("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", s.repo(s.listCheckRunsForRef))
	m.HandleFunc("PATCH /repos/{owner}/{repo}/check-runs/{id}", s.repo(s.updateCheckRun))
	m.HandleFunc("GET /repos/{owner}/{repo}/check-runs/{id}/annotations", s.repo(s.listAnnotations))
	m.HandleFunc("GET /repos/{owner}/{repo}/actions/jobs/{id}/logs", s.repo(s.jobLogs))
	// serve maps the GraphQL endpoint (which lives outside an "/api/v3"
	// prefix) to this route.
	m.HandleFunc("POST /graphql", s.graphql)
	m.HandleFunc("GET /repos/{owner}/{repo}/collaborators/{user}/permission", s.repo(s.getPermission))
	m.HandleFunc("GET /repos/{owner}/{repo}/contents/{path...}", s.repo(s.getContents))
	m.HandleFunc("GET /orgs/{org}/teams/{team}/memberships/{user}", s.orgScope(s.getTeamMembership))
	s.mux = m
}

// app guards endpoints that need the app's JWT.
func (s *Server) app(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if infoOf(r).auth != "jwt" {
			errorJSON(w, http.StatusUnauthorized, "A JSON web token could not be decoded")
			return
		}
		h(w, r)
	}
}

// tokenAuth answers 401, as GitHub does, unless the request carries an
// installation token; it reports whether the request may go on.
func tokenAuth(w http.ResponseWriter, auth string) bool {
	return authAs(w, auth, "token", "Requires authentication")
}

// authAs reports whether the request's credentials (reqInfo.auth) are of
// the kind want. Otherwise it has answered 401 as GitHub does: with
// noCreds to a request without credentials (endpoints word it
// differently), and "Bad credentials" to any others.
func authAs(w http.ResponseWriter, auth, want, noCreds string) bool {
	switch auth {
	case want:
		return true
	case "none":
		errorJSON(w, http.StatusUnauthorized, noCreds)
	default:
		errorJSON(w, http.StatusUnauthorized, "Bad credentials")
	}
	return false
}

// repo guards repository endpoints: an installation token whose installation
// includes the repository. Like GitHub, a repository the token cannot see is
// "Not Found"; a public one (SetPublic) it can read but not write to (403).
func (s *Server) repo(h http.HandlerFunc) http.HandlerFunc { return s.repoGuard(h, false) }

// repoWrite is repo for an endpoint that GitHub refuses with 403 "Resource
// not accessible by integration" whenever the installation does not include
// the repository, public or not.
func (s *Server) repoWrite(h http.HandlerFunc) http.HandlerFunc { return s.repoGuard(h, true) }

// repoOrUser is repo for a read that a GitHub App's user token may also
// make (the console reads an issue as the person): the token reads what
// both the person and an installation of the app can; a repository it
// cannot see is "Not Found", and one whose organisation's SAML the token
// has not passed is 403.
func (s *Server) repoOrUser(h http.HandlerFunc) http.HandlerFunc {
	installation := s.repo(h)
	return func(w http.ResponseWriter, r *http.Request) {
		info := infoOf(r)
		if info.auth != "user" {
			installation(w, r)
			return
		}
		k := repoKey(r.PathValue("owner"), r.PathValue("repo"))
		s.mu.Lock()
		forbidden := s.forbidden[k]
		s.mu.Unlock()
		switch _, ok := s.userRole(info.user, k); {
		case forbidden:
			errorJSON(w, http.StatusForbidden, "Resource protected by organization SAML enforcement. You must grant your Personal Access token access to this organization.")
		case ok:
			h(w, r)
		default:
			notFound(w)
		}
	}
}

func (s *Server) repoGuard(h http.HandlerFunc, forbid bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		info := infoOf(r)
		if !tokenAuth(w, info.auth) {
			return
		}
		k := repoKey(r.PathValue("owner"), r.PathValue("repo"))
		s.mu.Lock()
		ok, public := s.installations[info.installation][k], s.public[k]
		s.mu.Unlock()
		read := r.Method == http.MethodGet || r.Method == http.MethodHead
		switch {
		case ok, public && read && !forbid:
			h(w, r)
		case public, forbid:
			errorJSON(w, http.StatusForbidden, "Resource not accessible by integration")
		default:
			notFound(w)
		}
	}
}

func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		errorJSON(w, http.StatusBadRequest, "Problems parsing JSON")
		return false
	}
	return true
}

func validationFailed(w http.ResponseWriter, resource, field, code, msg string) {
	e := map[string]string{"resource": resource, "field": field, "code": code}
	if msg != "" {
		e["message"] = msg
	}
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{
		"message": "Validation Failed",
		"errors":  []map[string]string{e},
	})
}

// ---- JSON shapes ----

type userJSON struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
	Type  string `json:"type"`
}

func (s *Server) userJSONLocked(login string) userJSON {
	if strings.EqualFold(login, s.BotLogin()) {
		return userJSON{Login: s.BotLogin(), ID: BotUserID, Type: "Bot"}
	}
	typ := "User"
	if strings.HasSuffix(login, "[bot]") {
		typ = "Bot"
	}
	return userJSON{Login: login, ID: s.userLocked(login), Type: typ}
}

func (s *Server) commentJSONLocked(c *comment) map[string]any {
	owner, repo, _ := strings.Cut(c.repo, "/")
	kind := "issues"
	if c.isPR {
		kind = "pull"
	}
	return map[string]any{
		"id":         c.ID,
		"node_id":    fmt.Sprintf("IC_%d", c.ID),
		"url":        fmt.Sprintf("%s/repos/%s/%s/issues/comments/%d", s.URL, owner, repo, c.ID),
		"html_url":   fmt.Sprintf("%s/%s/%s/%s/%d#issuecomment-%d", HTMLBase, owner, repo, kind, c.issue, c.ID),
		"issue_url":  fmt.Sprintf("%s/repos/%s/%s/issues/%d", s.URL, owner, repo, c.issue),
		"body":       c.Body,
		"user":       s.userJSONLocked(c.Author),
		"created_at": c.CreatedAt.Format(time.RFC3339),
		"updated_at": c.update.Format(time.RFC3339),
	}
}

func pullHTMLURL(owner, repo string, n int) string {
	return fmt.Sprintf("%s/%s/%s/pull/%d", HTMLBase, owner, repo, n)
}

// ---- app endpoints ----

func (s *Server) getApp(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"id":       s.AppID,
		"slug":     s.AppSlug,
		"name":     "Pullwright (test)",
		"html_url": HTMLBase + "/apps/" + s.AppSlug,
		"owner":    userJSON{Login: "pullwright", ID: 1, Type: "Organization"},
	})
}

func (s *Server) listInstallations(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	out := []map[string]any{}
	for id := range s.installations {
		out = append(out, map[string]any{"id": id, "app_id": s.AppID})
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// getRepoInstallation is GET /repos/{owner}/{repo}/installation: the
// app's installation on the repository, for the app's JWT; "Not Found"
// when it has none there.
func (s *Server) getRepoInstallation(w http.ResponseWriter, r *http.Request) {
	owner := r.PathValue("owner")
	k := repoKey(owner, r.PathValue("repo"))
	s.mu.Lock()
	var id int64
	for inst, repos := range s.installations {
		if repos[k] && (id == 0 || inst < id) {
			id = inst
		}
	}
	s.mu.Unlock()
	if id == 0 {
		notFound(w)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": id, "app_id": s.AppID, "target_type": "Organization",
		"account": map[string]any{"login": owner}, "repository_selection": "selected",
	})
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil || s.installations[id] == nil {
		notFound(w)
		return
	}
	tok := randomToken(s.tokenPrefix)
	exp := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	s.tokens[tok] = tokenInfo{installation: id, expires: exp}
	writeJSON(w, http.StatusCreated, map[string]any{
		"token":                tok,
		"expires_at":           exp.Format(time.RFC3339),
		"permissions":          map[string]string{"issues": "write", "pull_requests": "write", "contents": "write", "checks": "write", "members": "read", "metadata": "read"},
		"repository_selection": "selected",
	})
}

func (s *Server) getUser(w http.ResponseWriter, r *http.Request) {
	info := infoOf(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case info.auth == "bad":
		errorJSON(w, http.StatusUnauthorized, "Bad credentials")
		return
	case s.privateMode && info.auth != "token":
		errorJSON(w, http.StatusUnauthorized, "Must authenticate to access this API.")
		return
	}
	login := r.PathValue("login")
	if strings.EqualFold(login, s.BotLogin()) {
		writeJSON(w, http.StatusOK, s.userJSONLocked(login))
		return
	}
	if _, ok := s.users[strings.ToLower(login)]; !ok {
		notFound(w)
		return
	}
	writeJSON(w, http.StatusOK, s.userJSONLocked(login))
}

// ---- issues and comments ----

func (s *Server) issueLocked(w http.ResponseWriter, r *http.Request) (*issue, bool) {
	n, err := strconv.Atoi(r.PathValue("number"))
	is := s.issues[repoKey(r.PathValue("owner"), r.PathValue("repo"))][n]
	if err != nil || is == nil {
		notFound(w)
		return nil, false
	}
	return is, true
}

func (s *Server) getIssue(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	is, ok := s.issueLocked(w, r)
	if !ok {
		return
	}
	owner, repo := r.PathValue("owner"), r.PathValue("repo")
	out := map[string]any{
		"id":         int64(is.Number) + 900000,
		"number":     is.Number,
		"title":      is.Title,
		"body":       is.Body,
		"state":      "open",
		"locked":     is.Locked,
		"user":       s.userJSONLocked(is.Author),
		"comments":   len(is.comments),
		"html_url":   fmt.Sprintf("%s/%s/%s/issues/%d", HTMLBase, owner, repo, is.Number),
		"created_at": is.createdAt.Format(time.RFC3339),
		"labels":     labelsJSON(is.Labels),
	}
	if is.IsPR {
		out["html_url"] = pullHTMLURL(owner, repo, is.Number)
		out["pull_request"] = map[string]any{
			"url":      fmt.Sprintf("%s/repos/%s/%s/pulls/%d", s.URL, owner, repo, is.Number),
			"html_url": pullHTMLURL(owner, repo, is.Number),
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// labelsJSON is an issue's labels as GitHub writes them: objects, of
// which the bot reads the name.
func labelsJSON(names []string) []map[string]any {
	out := []map[string]any{}
	for i, n := range names {
		out = append(out, map[string]any{"id": 7000 + i, "name": n, "color": "ededed", "default": false})
	}
	return out
}

func (s *Server) listComments(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	is, ok := s.issueLocked(w, r)
	if !ok {
		return
	}
	out := []map[string]any{}
	for _, id := range pageOf(w, r, is.comments) {
		out = append(out, s.commentJSONLocked(s.comments[id]))
	}
	writeJSON(w, http.StatusOK, out)
}

func pageParams(r *http.Request) (page, perPage int) {
	q := r.URL.Query()
	page, perPage = 1, 30
	if p, err := strconv.Atoi(q.Get("page")); err == nil && p > 0 {
		page = p
	}
	if p, err := strconv.Atoi(q.Get("per_page")); err == nil && p > 0 {
		perPage = min(p, 100)
	}
	return page, perPage
}

// pageOf is the page of all that r asks for (page, per_page), with the
// Link header that names the other pages set on w, as GitHub's lists
// answer.
func pageOf[T any](w http.ResponseWriter, r *http.Request, all []T) []T {
	page, perPage := pageParams(r)
	lo := min((page-1)*perPage, len(all))
	hi := min(lo+perPage, len(all))
	setLinks(w, r, page, perPage, len(all))
	return all[lo:hi]
}

// setLinks writes a GitHub-style Link header with absolute URLs that keep the
// request's other query parameters.
func setLinks(w http.ResponseWriter, r *http.Request, page, perPage, total int) {
	last := max(1, (total+perPage-1)/perPage)
	if last == 1 {
		return
	}
	link := func(p int, rel string) string {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(p))
		q.Set("per_page", strconv.Itoa(perPage))
		u := url.URL{Scheme: "http", Host: r.Host, Path: infoOf(r).fullPath, RawQuery: q.Encode()}
		return fmt.Sprintf("<%s>; rel=%q", u.String(), rel)
	}
	var links []string
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"), link(page-1, "prev"))
	}
	w.Header().Set("Link", strings.Join(links, ", "))
}

func (s *Server) createComment(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Body *string `json:"body"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	is, ok := s.issueLocked(w, r)
	if !ok {
		return
	}
	if !checkBody(w, "IssueComment", in.Body, true) {
		return
	}
	// Locked issues accept comments from the app, as from a collaborator.
	c := s.addCommentLocked(repoKey(r.PathValue("owner"), r.PathValue("repo")), is, s.BotLogin(), "Bot", *in.Body)
	writeJSON(w, http.StatusCreated, s.commentJSONLocked(c))
}

// checkBody applies GitHub's body validation.
func checkBody(w http.ResponseWriter, resource string, body *string, required bool) bool {
	switch {
	case body == nil && !required:
		return true
	case body == nil || (required && *body == ""):
		validationFailed(w, resource, "body", "missing_field", "")
		return false
	case utf8.RuneCountInString(*body) > maxBody:
		validationFailed(w, resource, "body", "custom", fmt.Sprintf("Body is too long (maximum is %d characters)", maxBody))
		return false
	}
	return true
}

func (s *Server) commentLocked(w http.ResponseWriter, r *http.Request) (*comment, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	c := s.comments[id]
	if err != nil || c == nil || c.repo != repoKey(r.PathValue("owner"), r.PathValue("repo")) {
		notFound(w)
		return nil, false
	}
	return c, true
}

// issueCommentsOrComment routes GET .../issues/{number}/comments to
// listComments and GET .../issues/comments/{id} to getComment, as GitHub
// does (it has no issue numbered "comments").
func (s *Server) issueCommentsOrComment(w http.ResponseWriter, r *http.Request) {
	switch a, b := r.PathValue("number"), r.PathValue("what"); {
	case a == "comments":
		r.SetPathValue("id", b)
		s.getComment(w, r)
	case b == "comments":
		s.listComments(w, r)
	default:
		notFound(w)
	}
}

// getComment answers GET /repos/{owner}/{repo}/issues/comments/{id} as
// GitHub does: the comment (issue or pull request conversation), or 404.
func (s *Server) getComment(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.commentLocked(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, s.commentJSONLocked(c))
}

func (s *Server) editComment(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Body *string `json:"body"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.commentLocked(w, r)
	if !ok {
		return
	}
	if !checkBody(w, "IssueComment", in.Body, true) {
		return
	}
	c.Body = *in.Body
	c.Edits++
	c.update = s.commentTimeLocked()
	writeJSON(w, http.StatusOK, s.commentJSONLocked(c))
}

var reactionContents = map[string]bool{
	"+1": true, "-1": true, "laugh": true, "confused": true,
	"heart": true, "hooray": true, "rocket": true, "eyes": true,
}

func (s *Server) createReaction(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Content string `json:"content"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.commentLocked(w, r)
	if !ok {
		return
	}
	s.reactLocked(w, c.ID, in.Content)
}

// reactLocked adds the app's reaction to a comment (issue or review comment:
// their ids do not collide in the fake); an existing one is answered 200.
func (s *Server) reactLocked(w http.ResponseWriter, id int64, content string) {
	if !reactionContents[content] {
		validationFailed(w, "Reaction", "content", "invalid", "")
		return
	}
	user := s.BotLogin()
	for _, re := range s.reactions[id] {
		if re.user == user && re.content == content {
			writeJSON(w, http.StatusOK, s.reactionJSONLocked(re))
			return
		}
	}
	s.nextID++
	re := reaction{id: s.nextID, user: user, content: content}
	s.reactions[id] = append(s.reactions[id], re)
	writeJSON(w, http.StatusCreated, s.reactionJSONLocked(re))
}

func (s *Server) reactionJSONLocked(re reaction) map[string]any {
	return map[string]any{
		"id":         re.id,
		"node_id":    fmt.Sprintf("REA_%d", re.id),
		"user":       s.userJSONLocked(re.user),
		"content":    re.content,
		"created_at": time.Now().UTC().Format(time.RFC3339),
	}
}

// ---- pull requests ----

// splitHead turns "owner:branch" or "branch" into its parts.
func splitHead(head, defOwner string) (owner, branch string) {
	if o, b, ok := strings.Cut(head, ":"); ok {
		return o, b
	}
	return defOwner, head
}

func (s *Server) listPulls(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	owner, repo := r.PathValue("owner"), r.PathValue("repo")
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, p := range s.pulls[repoKey(owner, repo)] {
		if state != "all" && p.State != state {
			continue
		}
		if h := q.Get("head"); h != "" {
			ho, hb := splitHead(h, owner)
			if !strings.EqualFold(ho, p.HeadOwner) || hb != p.Head {
				continue
			}
		}
		if b := q.Get("base"); b != "" && b != p.Base {
			continue
		}
		out = append(out, s.pullJSONLocked(owner, repo, p, refSHAs{}))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createPull(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Title string `json:"title"`
		Body  string `json:"body"`
		Head  string `json:"head"`
		Base  string `json:"base"`
		Draft bool   `json:"draft"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	owner, repo := r.PathValue("owner"), r.PathValue("repo")
	switch {
	case in.Title == "":
		validationFailed(w, "PullRequest", "title", "missing_field", "")
		return
	case in.Head == "":
		validationFailed(w, "PullRequest", "head", "missing_field", "")
		return
	case in.Base == "":
		validationFailed(w, "PullRequest", "base", "missing_field", "")
		return
	}
	if !checkBody(w, "PullRequest", &in.Body, false) {
		return
	}
	ho, hb := splitHead(in.Head, owner)
	k := repoKey(owner, repo)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.pulls[k] {
		if p.State == "open" && strings.EqualFold(p.HeadOwner, ho) && p.Head == hb && p.Base == in.Base {
			validationFailed(w, "PullRequest", "", "custom", fmt.Sprintf("A pull request already exists for %s:%s.", ho, hb))
			return
		}
	}
	// Pull requests share the issue number space: the PR is also issue n,
	// so issue comments, reactions and GET /issues/n work on it.
	n := s.nextNumberLocked(k)
	if s.issues[k] == nil {
		s.issues[k] = map[int]*issue{}
	}
	s.issues[k][n] = &issue{
		Issue:     Issue{Number: n, Title: in.Title, Body: in.Body, Author: s.BotLogin(), IsPR: true},
		createdAt: time.Now().UTC(),
	}
	p := &pullRequest{
		PullRequest: PullRequest{
			Number: n, NodeID: pullNodeID(k, n), Title: in.Title, Body: in.Body, Author: s.BotLogin(),
			Head: hb, Base: in.Base, Draft: in.Draft, State: "open", HTMLURL: pullHTMLURL(owner, repo, n),
			HeadOwner: ho, HeadRepo: s.headRepoLocked(k, ho, repo),
		},
	}
	s.pulls[k] = append(s.pulls[k], p)
	writeJSON(w, http.StatusCreated, s.pullJSONLocked(owner, repo, p, refSHAs{}))
}

// pullNodeID is a stable, globally unique node id for pull request n of the
// repository k. It does not take from nextID, so adding node ids did not
// shift the ids of comments made after a pull request.
func pullNodeID(k string, n int) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(k))
	return fmt.Sprintf("PR_kwDO%08x_%d", h.Sum32(), n)
}

func (s *Server) pullLocked(w http.ResponseWriter, r *http.Request) (*pullRequest, bool) {
	n, err := strconv.Atoi(r.PathValue("number"))
	if err == nil {
		for _, p := range s.pulls[repoKey(r.PathValue("owner"), r.PathValue("repo"))] {
			if p.Number == n {
				return p, true
			}
		}
	}
	notFound(w)
	return nil, false
}

func (s *Server) editPull(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Title *string `json:"title"`
		Body  *string `json:"body"`
		State *string `json:"state"`
		Base  *string `json:"base"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	if !checkBody(w, "PullRequest", in.Body, false) {
		return
	}
	owner, repo := r.PathValue("owner"), r.PathValue("repo")
	n, _ := strconv.Atoi(r.PathValue("number"))
	k := repoKey(owner, repo)
	s.mu.Lock()
	defer s.mu.Unlock()
	var p *pullRequest
	for _, c := range s.pulls[k] {
		if c.Number == n {
			p = c
		}
	}
	if p == nil {
		notFound(w)
		return
	}
	if in.Title != nil {
		p.Title = *in.Title
		s.issues[k][n].Title = *in.Title
	}
	if in.Body != nil {
		p.Body = *in.Body
		s.issues[k][n].Body = *in.Body
	}
	if in.State != nil {
		p.State = *in.State
	}
	if in.Base != nil {
		p.Base = *in.Base
	}
	writeJSON(w, http.StatusOK, s.pullJSONLocked(owner, repo, p, refSHAs{}))
}

// ---- permissions ----

func (s *Server) getPermission(w http.ResponseWriter, r *http.Request) {
	user := r.PathValue("user")
	s.mu.Lock()
	defer s.mu.Unlock()
	role, ok := s.perms[repoKey(r.PathValue("owner"), r.PathValue("repo"))][strings.ToLower(user)]
	if !ok {
		errorJSON(w, http.StatusNotFound, fmt.Sprintf("%s is not a user", user))
		return
	}
	legacy := role
	switch role {
	case "maintain":
		legacy = "write"
	case "triage":
		legacy = "read"
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"permission": legacy,
		"role_name":  role,
		"user":       s.userJSONLocked(user),
	})
}
