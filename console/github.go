package console

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// githubTimeout bounds every call to GitHub the console makes.
const githubTimeout = 10 * time.Second

// errUnauthorized is GitHub refusing the person's token: expired, revoked,
// or never one.
var errUnauthorized = errors.New("github refused the token")

// errForbidden is GitHub answering 403 or 451 for something the token
// may not have: an organisation's SAML enforcement or IP allow list, a
// repository blocked for legal reasons. It is not a rate limit: those are
// errors, retried later.
var errForbidden = errors.New("github forbids this token that resource")

// WebURL is the address of GitHub's web pages for a REST base URL:
// github.com for api.github.com, https://HOST for GitHub Enterprise
// Server's https://HOST/api/v3, SUBDOMAIN.ghe.com for api.SUBDOMAIN.ghe.com,
// and the base itself otherwise (a test server that serves both).
func WebURL(apiURL string) (string, error) {
	u, err := url.Parse(strings.TrimRight(apiURL, "/"))
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("GitHub API URL %q: not an absolute URL", apiURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/api/v3")
	if h, ok := strings.CutPrefix(u.Host, "api."); ok {
		u.Host = h
	}
	u.RawQuery, u.Fragment = "", ""
	return strings.TrimRight(u.String(), "/"), nil
}

// github is what the console asks GitHub, always on behalf of a person:
// with the app's client credentials to trade their code, then with their
// own token. It never uses the app's installation tokens, so what a
// person sees is what GitHub lets them see.
type github struct {
	api, web       string
	clientID       string
	clientSecret   string
	client         *http.Client
	permissionTTL  time.Duration
	now            func() time.Time
	mu             sync.Mutex
	roles          map[string]cached // token digest + repository → role
	users          map[string]cached // token digest → user
	lastSweep      time.Time
	maxCacheAnswer int
	// maxPerToken bounds one token's share of the role cache: one person
	// listing many repositories evicts their own answers, not everyone's.
	maxPerToken int
	// demo answers every role question with write, asking no one: a
	// demo console's recorded tasks are of no real repository.
	demo bool
}

type cached struct {
	refused bool // the token is refused (401): a negative answer of whoami
	role    string
	repoID  int64 // GitHub's id of the repository the role is on
	user    user
	expires time.Time
}

// user is a GitHub user as GET /user answers.
type user struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
}

// authorizeURL is where a browser goes to sign in, with state to find
// the way back to this browser's sign-in.
func (g *github) authorizeURL(redirect, state string) string {
	return g.web + "/login/oauth/authorize?" + url.Values{
		"client_id": {g.clientID}, "redirect_uri": {redirect}, "state": {state},
		// GitHub may show its account picker; sign-in never creates an account.
		"allow_signup": {"false"},
	}.Encode()
}

// exchange trades an authorization code for the person's user token.
func (g *github) exchange(ctx context.Context, code, redirect string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, githubTimeout)
	defer cancel()
	form := url.Values{"client_id": {g.clientID}, "client_secret": {g.clientSecret}, "code": {code}, "redirect_uri": {redirect}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.web+"/login/oauth/access_token", strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("trade code: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := g.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("trade code: %w", err)
	}
	defer resp.Body.Close()
	var v struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("trade code: GitHub answered %s", resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&v); err != nil {
		return "", fmt.Errorf("trade code: %w", err)
	}
	if v.Error != "" {
		// GitHub answers its errors with 200 and a code; the code and its
		// description are GitHub's words, safe to log.
		return "", fmt.Errorf("trade code: %s: %s", v.Error, v.Description)
	}
	if v.AccessToken == "" {
		return "", errors.New("trade code: GitHub gave no token")
	}
	return v.AccessToken, nil
}

// get calls the API with token and decodes a 200 answer into v; it returns
// false on 404.
func (g *github) get(ctx context.Context, token, path string, v any) (bool, error) {
	found, _, err := g.getDated(ctx, token, path, v)
	return found, err
}

// getDated is get, and the time of GitHub's answer (its Date header, zero
// if it had none): GitHub's clock, by which the bot orders events.
func (g *github) getDated(ctx context.Context, token, path string, v any) (bool, time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, githubTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.api+path, nil)
	if err != nil {
		return false, time.Time{}, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	resp, err := g.client.Do(req)
	if err != nil {
		return false, time.Time{}, err
	}
	defer resp.Body.Close()
	date, _ := http.ParseTime(resp.Header.Get("Date"))
	switch resp.StatusCode {
	case http.StatusOK:
		return true, date, json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
	case http.StatusNotFound:
		return false, date, nil
	case http.StatusUnauthorized:
		return false, date, errUnauthorized
	case http.StatusForbidden, http.StatusUnavailableForLegalReasons:
		// GitHub's rate limits answer 403 too, with no requests left;
		// those say nothing about the token's rights.
		if resp.Header.Get("X-RateLimit-Remaining") != "0" && resp.Header.Get("Retry-After") == "" {
			return false, date, errForbidden
		}
	}
	return false, date, fmt.Errorf("GitHub answered %s", resp.Status)
}

// revoke deletes the person's token on GitHub ("Delete an app token":
// DELETE /applications/{client_id}/token with the app's client
// credentials), so that a copy of the session cookie (a shared machine, a
// proxy's log) is worth nothing after sign-out; and forgets what the
// caches know of it. A token GitHub no longer knows (404) is already
// dead, which is what sign-out wants.
func (g *github) revoke(ctx context.Context, token string) error {
	g.forget(token)
	ctx, cancel := context.WithTimeout(ctx, githubTimeout)
	defer cancel()
	body, err := json.Marshal(map[string]string{"access_token": token})
	if err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, g.api+"/applications/"+url.PathEscape(g.clientID)+"/token", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	req.SetBasicAuth(g.clientID, g.clientSecret)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	req.Header.Set("Content-Type", "application/json")
	resp, err := g.client.Do(req)
	if err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNoContent, http.StatusNotFound:
		return nil
	}
	return fmt.Errorf("revoke token: GitHub answered %s", resp.Status)
}

// appUser returns whose token this is, if it is a token of this app:
// GitHub's "Check a token" (POST /applications/{client_id}/token with the
// app's client credentials) answers 200 and the token's user for one,
// 404 for any other. GET /user alone would accept a token of any app or
// a personal one, which the console never handed out and whose reach is
// not the app's. The answer, refusals too, is cached with whoami's.
func (g *github) appUser(ctx context.Context, token string) (user, error) {
	k := digest(token)
	if c, ok := g.lookup(g.users, k); ok {
		if c.refused {
			return user{}, fmt.Errorf("check token: %w", errUnauthorized)
		}
		return c.user, nil
	}
	ctx, cancel := context.WithTimeout(ctx, githubTimeout)
	defer cancel()
	body, err := json.Marshal(map[string]string{"access_token": token})
	if err != nil {
		return user{}, fmt.Errorf("check token: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.api+"/applications/"+url.PathEscape(g.clientID)+"/token", bytes.NewReader(body))
	if err != nil {
		return user{}, fmt.Errorf("check token: %w", err)
	}
	req.SetBasicAuth(g.clientID, g.clientSecret)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	req.Header.Set("Content-Type", "application/json")
	resp, err := g.client.Do(req)
	if err != nil {
		return user{}, fmt.Errorf("check token: %w", err)
	}
	defer resp.Body.Close()
	var v struct {
		User user `json:"user"`
	}
	switch resp.StatusCode {
	case http.StatusOK:
		if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&v); err != nil {
			return user{}, fmt.Errorf("check token: %w", err)
		}
		if v.User.Login == "" {
			return user{}, errors.New("check token: GitHub named no user")
		}
	case http.StatusNotFound, http.StatusUnprocessableEntity:
		// Not a token of this app (or not a token at all).
		g.remember(g.users, k, cached{refused: true})
		return user{}, fmt.Errorf("check token: %w", errUnauthorized)
	default:
		return user{}, fmt.Errorf("check token: GitHub answered %s", resp.Status)
	}
	g.remember(g.users, k, cached{user: v.User})
	return v.User, nil
}

// forget drops the caches' answers for token: after sign-out this replica
// must not answer from them (other replicas' answers end with the TTL).
func (g *github) forget(token string) {
	k := digest(token)
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.users, k)
	for rk := range g.roles {
		if strings.HasPrefix(rk, k+"\x00") {
			delete(g.roles, rk)
		}
	}
}

// digest names a token in the caches without keeping it as a key.
func digest(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:16])
}

// whoami returns whose token this is, cached for the permission TTL so
// that an API client calling with its token is not a GitHub call per
// request, and a revoked token stops working within it.
func (g *github) whoami(ctx context.Context, token string) (user, error) {
	k := digest(token)
	if c, ok := g.lookup(g.users, k); ok {
		if c.refused {
			return user{}, fmt.Errorf("who is the token's user: %w", errUnauthorized)
		}
		return c.user, nil
	}
	var u user
	found, err := g.get(ctx, token, "/user", &u)
	switch {
	case errors.Is(err, errUnauthorized) || (err == nil && (!found || u.Login == "")):
		// Refusals are cached too: anyone may send made-up tokens, and
		// each must not cost a call to GitHub (and our rate limit). A
		// refused token never becomes good, so this costs nothing.
		g.remember(g.users, k, cached{refused: true})
		return user{}, fmt.Errorf("who is the token's user: %w", errUnauthorized)
	case err != nil:
		return user{}, fmt.Errorf("who is the token's user: %w", err)
	}
	g.remember(g.users, k, cached{user: u})
	return u, nil
}

// role returns the person's role on a repository ("admin", "maintain",
// "write", "triage" or "read"), or "" when they cannot read it, and the
// id of the repository that now has that name.
//
// It asks GET /repos/{owner}/{repo} with the person's own token, rather
// than the collaborator permission endpoint with the app's: one call
// answers both questions, GitHub answers 404 for a repository the token
// cannot see (private, SAML session missing, app not installed there),
// public repositories are readable as on GitHub, and the app needs no
// permission to ask about other users. Answers (also "cannot read") are
// cached for the permission TTL, as the comment commands' are; errors are
// not.
func (g *github) role(ctx context.Context, token, fullName string) (string, int64, error) {
	if g.demo {
		return "write", 0, nil
	}
	k := digest(token) + "\x00" + strings.ToLower(fullName)
	if c, ok := g.lookup(g.roles, k); ok {
		return c.role, c.repoID, nil
	}
	owner, name, ok := strings.Cut(fullName, "/")
	if !ok {
		return "", 0, fmt.Errorf("repository %q: not owner/name", fullName)
	}
	var v struct {
		ID          int64           `json:"id"`
		Permissions map[string]bool `json:"permissions"`
	}
	found, err := g.get(ctx, token, "/repos/"+url.PathEscape(owner)+"/"+url.PathEscape(name), &v)
	switch {
	case errors.Is(err, errForbidden):
		// SAML, an IP allow list, a legal block: the person cannot read
		// it now, an answer like 404, cached as one.
		found = false
	case err != nil:
		return "", 0, fmt.Errorf("permission on %s: %w", fullName, err)
	}
	role := ""
	if found {
		// The legacy names of GitHub's answer, highest first.
		for _, p := range []struct{ key, role string }{
			{"admin", "admin"}, {"maintain", "maintain"}, {"push", "write"}, {"triage", "triage"}, {"pull", "read"},
		} {
			if v.Permissions[p.key] {
				role = p.role
				break
			}
		}
		if role == "" {
			// Seen but no permissions object: readable, nothing more.
			role = "read"
		}
	}
	g.remember(g.roles, k, cached{role: role, repoID: v.ID})
	return role, v.ID, nil
}

func (g *github) lookup(m map[string]cached, k string) (cached, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := m[k]
	if !ok || !g.now().Before(c.expires) {
		return cached{}, false
	}
	return c, true
}

// remember caches c for the TTL. The caches are bounded whatever the
// traffic: expired entries go at most once per TTL; a token with
// maxPerToken answers loses its own oldest one; and a cache still full
// loses its oldest tenth. It never empties: one caller filling it would
// otherwise cost everyone their answers and GitHub a call each.
func (g *github) remember(m map[string]cached, k string, c cached) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	c.expires = now.Add(g.permissionTTL)
	if len(m) >= g.maxCacheAnswer || now.Sub(g.lastSweep) > g.permissionTTL {
		g.lastSweep = now
		for k, v := range m {
			if !now.Before(v.expires) {
				delete(m, k)
			}
		}
	}
	if tok, _, ok := strings.Cut(k, "\x00"); ok && g.maxPerToken > 0 {
		evictOldest(m, 1, func(key string) bool { return strings.HasPrefix(key, tok+"\x00") }, g.maxPerToken)
	}
	if len(m) >= g.maxCacheAnswer {
		evictOldest(m, max(1, g.maxCacheAnswer/10), func(string) bool { return true }, g.maxCacheAnswer)
	}
	m[k] = c
}

// evictOldest deletes the n oldest entries among those of, when there
// are at least limit of them. Every entry lives the same TTL, so the one
// expiring first is the oldest.
func evictOldest(m map[string]cached, n int, of func(string) bool, limit int) {
	type entry struct {
		k       string
		expires time.Time
	}
	var es []entry
	for k, v := range m {
		if of(k) {
			es = append(es, entry{k, v.expires})
		}
	}
	if len(es) < limit {
		return
	}
	slices.SortFunc(es, func(a, b entry) int { return a.expires.Compare(b.expires) })
	for _, e := range es[:min(len(es), len(es)-limit+n)] {
		delete(m, e.k)
	}
}
