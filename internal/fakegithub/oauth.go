package fakegithub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The web application flow of a GitHub App's user authorization, as
// GitHub documents it ("Generating a user access token for a GitHub App"):
// GET /login/oauth/authorize sends the browser back to redirect_uri with a
// code and the state it was given; POST /login/oauth/access_token trades
// the code, once and within ten minutes, with the app's client id and
// secret, for a user access token (ghu_…) that expires after eight hours.
// The token then answers GET /user and GET /repos/{owner}/{repo}, and only
// those: other endpoints refuse it as bad credentials. Like GitHub's, a
// user token reaches what both the user and the app reach: a private
// repository needs a role of the user's (SetPermission) and an
// installation of the app that includes it; a public one anyone reads.
//
// These endpoints live on GitHub's web host, not its API: at the root of
// the fake's address (WebURL) whatever the API's prefix, as GitHub
// Enterprise Server serves them at https://HOST/login/oauth/… beside
// https://HOST/api/v3.

// oauthCodeTTL is how long an authorization code may be traded: GitHub's
// codes expire after ten minutes.
const oauthCodeTTL = 10 * time.Minute

// UserTokenTTL is how long a user access token lives: eight hours, as
// GitHub's expiring user tokens do.
const UserTokenTTL = 8 * time.Hour

type oauthCode struct {
	login, clientID, redirectURI string
	expires                      time.Time
}

type userToken struct {
	login    string
	clientID string // the app the token was issued to
	expires  time.Time
}

// SignInBrowser makes login the person signed in to the fake's web pages:
// whoever follows /login/oauth/authorize next authorizes the app as them,
// as a browser with a GitHub session does. "" signs out: authorize then
// shows a sign-in page and redirects nowhere.
func (s *Server) SignInBrowser(login string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.browserUser = login
	if login != "" {
		s.userLocked(login)
	}
}

// UserToken mints a user access token for login, as a finished web flow
// would, for tests that call with a token the person already has.
func (s *Server) UserToken(login string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.userTokenLocked(login)
}

// ExpireUserToken makes a user token dead, as eight hours or a revocation do.
func (s *Server) ExpireUserToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.userTokens, token)
}

// IssuedUserTokens returns the live user tokens, so that a test can check
// that none of them leaked into a page, a log or a cookie.
func (s *Server) IssuedUserTokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.userTokens))
	for tok := range s.userTokens {
		out = append(out, tok)
	}
	return out
}

func (s *Server) userTokenLocked(login string) string {
	s.userLocked(login)
	tok := randomToken("ghu_")
	s.userTokens[tok] = userToken{login: login, clientID: s.ClientID, expires: time.Now().Add(UserTokenTTL)}
	return tok
}

// appCredentials reports whether r is signed with the app's client id
// and secret (basic auth) and names the app's client id in its path, as
// GitHub's /applications/{client_id}/… endpoints want; otherwise it has
// answered as GitHub does.
func (s *Server) appCredentials(w http.ResponseWriter, r *http.Request) bool {
	id, secret, ok := r.BasicAuth()
	if !ok || id != s.ClientID || secret != s.ClientSecret {
		errorJSON(w, http.StatusUnauthorized, "Requires authentication")
		return false
	}
	if r.PathValue("client_id") != s.ClientID {
		notFound(w)
		return false
	}
	return true
}

// tokenOfApp is the prelude of the /applications/{client_id}/token
// endpoints: it checks the app's credentials (appCredentials), reads the
// {"access_token": …} body and returns the token if it is a live user
// token of this app; it has answered otherwise.
func (s *Server) tokenOfApp(w http.ResponseWriter, r *http.Request) (string, bool) {
	if !s.appCredentials(w, r) {
		return "", false
	}
	var v struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(r.Body).Decode(&v); err != nil || v.AccessToken == "" {
		errorJSON(w, http.StatusUnprocessableEntity, "Validation Failed")
		return "", false
	}
	s.mu.Lock()
	ut, ok := s.userTokens[v.AccessToken]
	s.mu.Unlock()
	if !ok || ut.clientID != s.ClientID || time.Now().After(ut.expires) {
		notFound(w)
		return "", false
	}
	return v.AccessToken, true
}

// ForeignUserToken mints a user token login got from another app: GitHub
// answers GET /user for it, but it is not this app's (checkAppToken 404).
func (s *Server) ForeignUserToken(login string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.userLocked(login)
	tok := randomToken("ghu_")
	s.userTokens[tok] = userToken{login: login, clientID: "Iv23liOtherApp", expires: time.Now().Add(UserTokenTTL)}
	return tok
}

// checkAppToken is POST /applications/{client_id}/token, GitHub's "Check
// a token": 200 with the token's user for a live token of this app, 404
// for any other.
func (s *Server) checkAppToken(w http.ResponseWriter, r *http.Request) {
	tok, ok := s.tokenOfApp(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	ut := s.userTokens[tok]
	u := s.userJSONLocked(ut.login)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"token": tok, "expires_at": ut.expires.UTC().Format(time.RFC3339),
		"app":  map[string]any{"client_id": s.ClientID, "name": s.AppSlug},
		"user": map[string]any{"login": u.Login, "id": u.ID, "type": u.Type},
	})
}

// deleteAppToken is DELETE /applications/{client_id}/token, GitHub's
// "Delete an app token": the user token is revoked, and refused (401)
// from then on. 204 No Content.
func (s *Server) deleteAppToken(w http.ResponseWriter, r *http.Request) {
	tok, ok := s.tokenOfApp(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	delete(s.userTokens, tok)
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// userTokenLogin returns whose live user token cred is.
func (s *Server) userTokenLogin(cred string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ut, ok := s.userTokens[cred]
	if !ok || time.Now().After(ut.expires) {
		return "", false
	}
	return ut.login, true
}

// authorize is GitHub's authorization page. A browser signed in (here:
// SignInBrowser) that already authorized the app goes straight back to
// redirect_uri with a code and the state, which GitHub passes on as given.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != s.ClientID {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, "<html><body>Not Found</body></html>")
		return
	}
	back, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || !back.IsAbs() {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, "<html><body>The redirect_uri is not valid.</body></html>")
		return
	}
	if s.CallbackURL != "" && back.String() != s.CallbackURL {
		// A code must never go to an address the app did not register:
		// GitHub answers on the registered callback instead.
		reg, err := url.Parse(s.CallbackURL)
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		v := url.Values{"error": {"redirect_uri_mismatch"},
			"error_description": {"The redirect_uri MUST match the registered callback URL for this application."}}
		if st := q.Get("state"); st != "" {
			v.Set("state", st)
		}
		reg.RawQuery = v.Encode()
		http.Redirect(w, r, reg.String(), http.StatusFound)
		return
	}
	s.mu.Lock()
	login := s.browserUser
	var code string
	if login != "" {
		code = randomToken("")[:20]
		s.codes[code] = oauthCode{login: login, clientID: s.ClientID, redirectURI: back.String(), expires: time.Now().Add(oauthCodeTTL)}
	}
	s.mu.Unlock()
	if login == "" {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<html><body>Sign in to GitHub</body></html>")
		return
	}
	v := back.Query()
	v.Set("code", code)
	if st := q.Get("state"); st != "" {
		v.Set("state", st)
	}
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// accessToken trades a code. GitHub answers its errors with 200 and an
// "error" field, in the format the Accept header asks for: JSON, or by
// default a form-encoded body.
func (s *Server) accessToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	f := r.Form
	answer := func(v map[string]any) {
		if strings.Contains(r.Header.Get("Accept"), "application/json") {
			writeJSON(w, http.StatusOK, v)
			return
		}
		form := url.Values{}
		for k, x := range v {
			form.Set(k, fmt.Sprint(x))
		}
		w.Header().Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
		fmt.Fprint(w, form.Encode())
	}
	fail := func(code, desc string) {
		answer(map[string]any{"error": code, "error_description": desc,
			"error_uri": "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#" + strings.ReplaceAll(code, "_", "-")})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Get("client_id") != s.ClientID || f.Get("client_secret") != s.ClientSecret {
		fail("incorrect_client_credentials", "The client_id and/or client_secret passed are incorrect.")
		return
	}
	c, ok := s.codes[f.Get("code")]
	if ok {
		// A code is traded once, right or wrong.
		delete(s.codes, f.Get("code"))
	}
	if !ok || time.Now().After(c.expires) || c.clientID != f.Get("client_id") {
		fail("bad_verification_code", "The code passed is incorrect or expired.")
		return
	}
	if ru := f.Get("redirect_uri"); ru != "" && ru != c.redirectURI {
		fail("redirect_uri_mismatch", "The redirect_uri MUST match the registered callback URL for this application.")
		return
	}
	answer(map[string]any{
		"access_token":             s.userTokenLocked(c.login),
		"expires_in":               int(UserTokenTTL / time.Second),
		"refresh_token":            randomToken("ghr_"),
		"refresh_token_expires_in": 15897600,
		"scope":                    "",
		"token_type":               "bearer",
	})
}

// getAuthenticatedUser is GET /user: the user a user token is of.
// Installation tokens are no user: GitHub refuses them.
func (s *Server) getAuthenticatedUser(w http.ResponseWriter, r *http.Request) {
	info := infoOf(r)
	if info.auth == "token" {
		errorJSON(w, http.StatusForbidden, "Resource not accessible by integration")
		return
	}
	if !authAs(w, info.auth, "user", "Requires authentication") {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.userJSONLocked(info.user)
	writeJSON(w, http.StatusOK, map[string]any{"login": u.Login, "id": u.ID, "type": u.Type, "name": u.Login,
		"html_url": HTMLBase + "/" + u.Login})
}

// getRepository is GET /repos/{owner}/{repo}. With a user token, a
// repository the user cannot see is "Not Found", as on GitHub, and one
// they can see carries their permissions on it. With an installation
// token it is guarded like every repository endpoint.
func (s *Server) getRepository(w http.ResponseWriter, r *http.Request) {
	info := infoOf(r)
	if info.auth != "user" {
		s.repo(s.repositoryAnswer(""))(w, r)
		return
	}
	k := repoKey(r.PathValue("owner"), r.PathValue("repo"))
	s.mu.Lock()
	forbidden := s.forbidden[k]
	s.mu.Unlock()
	if forbidden {
		errorJSON(w, http.StatusForbidden, "Resource protected by organization SAML enforcement. You must grant your Personal Access token access to this organization.")
		return
	}
	role, ok := s.userRole(info.user, k)
	if !ok {
		notFound(w)
		return
	}
	s.repositoryAnswer(role)(w, r)
}

// userRole is what a user token of the app may do in repository k: the
// person's role, "read" on a public repository, and nothing (false) on a
// private one the person cannot see or the app is not installed on.
func (s *Server) userRole(login, k string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	role := s.perms[k][strings.ToLower(login)]
	installed := false
	for _, repos := range s.installations {
		installed = installed || repos[k]
	}
	switch {
	case s.forbidden[k]:
		return "", false
	case s.public[k] && (role == "" || role == "none"):
		return "read", true
	case s.public[k]:
		return role, true
	case !installed || role == "" || role == "none":
		return "", false
	}
	return role, true
}

// repositoryAnswer writes a repository; role, when set, gives the
// permissions object GitHub adds for the authenticated user.
func (s *Server) repositoryAnswer(role string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		owner, name := r.PathValue("owner"), r.PathValue("repo")
		k := repoKey(owner, name)
		s.mu.Lock()
		branch := s.defaultBranch[k]
		public := s.public[k]
		id := s.repoIDLocked(k)
		s.mu.Unlock()
		if branch == "" {
			branch = "main"
		}
		out := map[string]any{
			"id":             id,
			"name":           name,
			"full_name":      owner + "/" + name,
			"owner":          map[string]any{"login": owner},
			"private":        !public,
			"html_url":       HTMLBase + "/" + owner + "/" + name,
			"default_branch": branch,
			"clone_url":      s.cloneURL(owner, name),
			"archived":       false,
		}
		if role != "" {
			rank := map[string]int{"read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}[role]
			out["permissions"] = map[string]bool{
				"pull": rank >= 1, "triage": rank >= 2, "push": rank >= 3, "maintain": rank >= 4, "admin": rank >= 5,
			}
		}
		writeJSON(w, http.StatusOK, out)
	}
}
