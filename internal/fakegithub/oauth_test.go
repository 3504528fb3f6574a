package fakegithub

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// noRedirect stops at the first answer, as a test of a redirect needs.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// authorizeCode follows the authorize page as a browser and returns the
// code and state it was sent back with.
func authorizeCode(t *testing.T, s *Server, clientID, redirect, state string) (code, gotState string, status int) {
	t.Helper()
	u := s.WebURL + "/login/oauth/authorize?" + url.Values{"client_id": {clientID}, "redirect_uri": {redirect}, "state": {state}}.Encode()
	resp, err := noRedirect.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return "", "", resp.StatusCode
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(loc.String(), redirect) {
		t.Fatalf("redirected to %s, want under %s", loc, redirect)
	}
	return loc.Query().Get("code"), loc.Query().Get("state"), resp.StatusCode
}

func trade(t *testing.T, s *Server, form url.Values, accept string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.WebURL+"/login/oauth/access_token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("access_token answered %d", resp.StatusCode)
	}
	out := map[string]any{}
	if accept == "" {
		b, _ := io.ReadAll(resp.Body)
		v, err := url.ParseQuery(string(b))
		if err != nil {
			t.Fatal(err)
		}
		for k := range v {
			out[k] = v.Get(k)
		}
		return out
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestUserAuthorizationWebFlow(t *testing.T) {
	for _, prefix := range []string{"", "/api/v3"} {
		t.Run("prefix "+prefix, func(t *testing.T) {
			s := NewWithPrefix(t, prefix)
			const back = "https://console.example/console/callback"
			if _, _, st := authorizeCode(t, s, s.ClientID, back, "st"); st != http.StatusOK {
				t.Fatalf("authorize without a signed-in browser = %d, want the sign-in page", st)
			}
			s.SignInBrowser("alice")
			if _, _, st := authorizeCode(t, s, "Iv23liother", back, "st"); st != http.StatusNotFound {
				t.Fatalf("authorize for another client = %d, want 404", st)
			}
			code, state, _ := authorizeCode(t, s, s.ClientID, back, "st-123")
			if code == "" || state != "st-123" {
				t.Fatalf("code %q, state %q", code, state)
			}
			good := url.Values{"client_id": {s.ClientID}, "client_secret": {s.ClientSecret}, "code": {code}, "redirect_uri": {back}}
			bad := func(k, v string) url.Values {
				f := url.Values{}
				for k, vs := range good {
					f[k] = vs
				}
				f.Set(k, v)
				return f
			}
			// Wrong credentials or redirect spend nothing but the tries.
			for _, tc := range []struct {
				form url.Values
				want string
			}{
				{bad("client_secret", "nope"), "incorrect_client_credentials"},
				{bad("code", "nope"), "bad_verification_code"},
			} {
				if got := trade(t, s, tc.form, "application/json"); got["error"] != tc.want {
					t.Fatalf("trade = %v, want error %s", got, tc.want)
				}
			}
			got := trade(t, s, good, "application/json")
			tok, _ := got["access_token"].(string)
			if !strings.HasPrefix(tok, "ghu_") || got["token_type"] != "bearer" || got["expires_in"] != float64(28800) {
				t.Fatalf("trade = %v", got)
			}
			if again := trade(t, s, good, "application/json"); again["error"] != "bad_verification_code" {
				t.Fatalf("second trade of one code = %v", again)
			}
			// Without Accept: JSON, GitHub answers form-encoded.
			code2, _, _ := authorizeCode(t, s, s.ClientID, back, "x")
			if f := trade(t, s, bad("code", code2), ""); !strings.HasPrefix(f["access_token"].(string), "ghu_") {
				t.Fatalf("form answer = %v", f)
			}
			code3, _, _ := authorizeCode(t, s, s.ClientID, back, "x")
			f := bad("code", code3)
			f.Set("redirect_uri", "https://evil.example/cb")
			if got := trade(t, s, f, "application/json"); got["error"] != "redirect_uri_mismatch" {
				t.Fatalf("trade with another redirect = %v", got)
			}

			resp, body := do(t, http.MethodGet, s.URL+"/user", "Bearer "+tok, "")
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"login":"alice"`) {
				t.Fatalf("GET /user = %d %s", resp.StatusCode, body)
			}
			s.ExpireUserToken(tok)
			if resp, _ := do(t, http.MethodGet, s.URL+"/user", "Bearer "+tok, ""); resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("GET /user with an expired token = %d", resp.StatusCode)
			}
		})
	}
}

func TestRepositoryWithUserToken(t *testing.T) {
	s := New(t)
	s.AddInstallation(1, "o/private", "o/readonly", "o/public")
	s.SetPublic("o", "public", true)
	s.SetPermission("o", "private", "alice", "write")
	s.SetPermission("o", "readonly", "alice", "read")
	s.SetPermission("o", "uninstalled", "alice", "admin")
	s.SetPermission("o", "private", "bob", "none")
	alice, bob := s.UserToken("alice"), s.UserToken("bob")
	tests := []struct {
		name, token, repo string
		status            int
		push, pull        bool
	}{
		{"writer", alice, "o/private", 200, true, true},
		{"reader", alice, "o/readonly", 200, false, true},
		{"public, no role", bob, "o/public", 200, false, true},
		{"role none", bob, "o/private", 404, false, false},
		{"not a collaborator", bob, "o/readonly", 404, false, false},
		{"a repository the app is not installed on", alice, "o/uninstalled", 404, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(t, http.MethodGet, s.URL+"/repos/"+tc.repo, "Bearer "+tc.token, "")
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if tc.status != 200 {
				return
			}
			var v struct {
				Permissions map[string]bool `json:"permissions"`
			}
			if err := json.Unmarshal([]byte(body), &v); err != nil {
				t.Fatal(err)
			}
			if v.Permissions["push"] != tc.push || v.Permissions["pull"] != tc.pull {
				t.Fatalf("permissions %v", v.Permissions)
			}
		})
	}
	// Reading an issue follows the same rule; the fake takes no other
	// call with a user token.
	s.AddIssue("o", "private", Issue{Number: 1, Title: "t", Body: "b"})
	s.AddIssue("o", "readonly", Issue{Number: 1, Title: "t", Body: "b"})
	for _, tc := range []struct {
		method, path, token string
		status              int
	}{
		{http.MethodGet, "/repos/o/private/issues/1", alice, http.StatusOK},
		{http.MethodGet, "/repos/o/readonly/issues/1", bob, http.StatusNotFound},
		{http.MethodPost, "/repos/o/private/issues/1/comments", alice, http.StatusUnauthorized},
		{http.MethodGet, "/repos/o/private/issues/1/comments", alice, http.StatusUnauthorized},
	} {
		if resp, body := do(t, tc.method, s.URL+tc.path, "Bearer "+tc.token, `{"body":"x"}`); resp.StatusCode != tc.status {
			t.Errorf("%s %s with a user token = %d, want %d: %s", tc.method, tc.path, resp.StatusCode, tc.status, body)
		}
	}
}

func TestRepositoryInstallation(t *testing.T) {
	s := New(t)
	s.AddInstallation(7, "o/app")
	jwt := "Bearer " + signJWT(t, s.key, "RS256", map[string]any{
		"iss": s.AppID, "iat": time.Now().Unix(), "exp": time.Now().Add(time.Minute).Unix(),
	})
	for _, tc := range []struct {
		repo, auth string
		status     int
	}{
		{"o/app", jwt, http.StatusOK},
		{"o/other", jwt, http.StatusNotFound},
		{"o/app", "Bearer " + s.UserToken("alice"), http.StatusUnauthorized},
	} {
		resp, body := do(t, http.MethodGet, s.URL+"/repos/"+tc.repo+"/installation", tc.auth, "")
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %d, want %d: %s", tc.repo, resp.StatusCode, tc.status, body)
			continue
		}
		if tc.status == http.StatusOK && !strings.Contains(body, `"id":7`) {
			t.Errorf("%s: %s, want installation 7", tc.repo, body)
		}
	}
}

// appTokenCall calls one of the /applications/{client_id}/token endpoints.
func appTokenCall(t *testing.T, s *Server, method, clientID, secret, token string) int {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"access_token": token})
	req, _ := http.NewRequest(method, s.URL+"/applications/"+clientID+"/token", strings.NewReader(string(body)))
	req.SetBasicAuth(clientID, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func userStatus(t *testing.T, s *Server, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/user", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestDeleteAppToken(t *testing.T) {
	s := New(t)
	tok := s.UserToken("alice")
	if got := appTokenCall(t, s, http.MethodDelete, s.ClientID, "wrong", tok); got != http.StatusUnauthorized {
		t.Errorf("wrong secret = %d", got)
	}
	if got := userStatus(t, s, tok); got != http.StatusOK {
		t.Fatalf("GET /user before = %d", got)
	}
	if got := appTokenCall(t, s, http.MethodDelete, s.ClientID, s.ClientSecret, tok); got != http.StatusNoContent {
		t.Fatalf("delete = %d", got)
	}
	if got := userStatus(t, s, tok); got != http.StatusUnauthorized {
		t.Errorf("GET /user with a revoked token = %d, want 401", got)
	}
	if got := appTokenCall(t, s, http.MethodDelete, s.ClientID, s.ClientSecret, tok); got != http.StatusNotFound {
		t.Errorf("delete again = %d, want 404", got)
	}
}

func TestCheckAppToken(t *testing.T) {
	s := New(t)
	ours, theirs := s.UserToken("alice"), s.ForeignUserToken("alice")
	if got := userStatus(t, s, theirs); got != http.StatusOK {
		t.Fatalf("GET /user with another app's token = %d", got)
	}
	if got := appTokenCall(t, s, http.MethodPost, s.ClientID, s.ClientSecret, ours); got != http.StatusOK {
		t.Errorf("check our token = %d", got)
	}
	if got := appTokenCall(t, s, http.MethodPost, s.ClientID, s.ClientSecret, theirs); got != http.StatusNotFound {
		t.Errorf("check another app's token = %d, want 404", got)
	}
	if got := appTokenCall(t, s, http.MethodPost, s.ClientID, "wrong", ours); got != http.StatusUnauthorized {
		t.Errorf("check with a wrong secret = %d", got)
	}
}

func TestAuthorizeRefusesUnregisteredRedirect(t *testing.T) {
	s := New(t)
	s.CallbackURL = "https://bot.example/console/callback"
	s.SignInBrowser("alice")
	u := s.WebURL + "/login/oauth/authorize?" + url.Values{"client_id": {s.ClientID}, "redirect_uri": {"https://evil.example/steal"}, "state": {"st"}}.Encode()
	resp, err := noRedirect.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || loc == nil || !strings.HasPrefix(loc.String(), s.CallbackURL+"?") {
		t.Fatalf("authorize with a foreign redirect_uri = %d to %q, want the registered callback", resp.StatusCode, resp.Header.Get("Location"))
	}
	if loc.Query().Get("code") != "" || loc.Query().Get("error") != "redirect_uri_mismatch" || loc.Query().Get("state") != "st" {
		t.Errorf("redirected with %v", loc.Query())
	}
	if code, _, status := authorizeCode(t, s, s.ClientID, s.CallbackURL, "st"); status != http.StatusFound || code == "" {
		t.Errorf("the registered callback = %d, code %q", status, code)
	}
}

func TestManifestFlow(t *testing.T) {
	s := New(t)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	create := func(manifest string) *http.Response {
		t.Helper()
		resp, err := noFollow.PostForm(s.URL+"/organizations/acme/settings/apps/new?state=st", url.Values{"manifest": {manifest}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := create(`{"name":"x","redirect_url":"https://bot.example/setup/done"}`); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("a manifest without url and hook = %d, want 422", resp.StatusCode)
	}
	resp := create(`{"name":"x","url":"https://bot.example","hook_attributes":{"url":"https://bot.example/webhook"},"redirect_url":"https://bot.example/setup/done"}`)
	back, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || back.Host != "bot.example" || back.Query().Get("state") != "st" || back.Query().Get("code") == "" {
		t.Fatalf("create = %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	conv := s.URL + "/app-manifests/" + back.Query().Get("code") + "/conversions"
	r, body := do(t, http.MethodPost, conv, "", "")
	if r.StatusCode != http.StatusCreated || !strings.Contains(body, `"webhook_secret":"`+s.WebhookSecret()+`"`) {
		t.Fatalf("conversion = %d %s", r.StatusCode, body)
	}
	if r, _ := do(t, http.MethodPost, conv, "", ""); r.StatusCode != http.StatusNotFound {
		t.Errorf("a code used twice = %d, want 404", r.StatusCode)
	}
	if m := s.Manifests(); len(m) != 1 || m[0].Org != "acme" {
		t.Errorf("manifests = %+v", m)
	}
}
