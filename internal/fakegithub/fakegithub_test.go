package fakegithub

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func signJWT(t *testing.T, key *rsa.PrivateKey, alg string, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	head := enc(map[string]string{"alg": alg, "typ": "JWT"})
	body := enc(claims)
	sum := sha256.Sum256([]byte(head + "." + body))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return head + "." + body + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func do(t *testing.T, method, url, auth, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestJWTVerification(t *testing.T) {
	s := New(t)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	iat, exp := now.Add(-30*time.Second).Unix(), now.Add(90*time.Second).Unix()
	tests := []struct {
		name   string
		key    *rsa.PrivateKey
		alg    string
		claims map[string]any
		want   string
	}{
		{"iss as string", s.key, "RS256", map[string]any{"iss": "4242", "iat": iat, "exp": exp}, "jwt"},
		{"iss as number", s.key, "RS256", map[string]any{"iss": 4242, "iat": iat, "exp": exp}, "jwt"},
		{"wrong key", other, "RS256", map[string]any{"iss": "4242", "iat": iat, "exp": exp}, "bad"},
		{"wrong app", s.key, "RS256", map[string]any{"iss": "1", "iat": iat, "exp": exp}, "bad"},
		{"expired", s.key, "RS256", map[string]any{"iss": "4242", "iat": now.Add(-5 * time.Minute).Unix(), "exp": now.Add(-time.Minute).Unix()}, "bad"},
		{"too long", s.key, "RS256", map[string]any{"iss": "4242", "iat": iat, "exp": now.Add(time.Hour).Unix()}, "bad"},
		{"no iat", s.key, "RS256", map[string]any{"iss": "4242", "exp": exp}, "bad"},
		{"alg none", s.key, "none", map[string]any{"iss": "4242", "iat": iat, "exp": exp}, "bad"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := signJWT(t, tt.key, tt.alg, tt.claims)
			if got, _ := s.classifyAuth("Bearer " + tok); got != tt.want {
				t.Errorf("auth = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestAuthAndRouting(t *testing.T) {
	s := New(t)
	s.AddInstallation(1, "acme/widgets")
	s.AddInstallation(2, "acme/other")
	s.AddIssue("acme", "widgets", Issue{Number: 5, Title: "t"})
	jwt := "Bearer " + signJWT(t, s.key, "RS256", map[string]any{
		"iss": "4242", "iat": time.Now().Unix(), "exp": time.Now().Add(time.Minute).Unix(),
	})

	mint := func(inst string) string {
		resp, body := do(t, "POST", s.URL+"/app/installations/"+inst+"/access_tokens", jwt, "")
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("mint %s: %d %s", inst, resp.StatusCode, body)
		}
		var out struct {
			Token     string    `json:"token"`
			ExpiresAt time.Time `json:"expires_at"`
		}
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.Token, "ghs_") || out.ExpiresAt.Before(time.Now().Add(50*time.Minute)) {
			t.Errorf("token response %s", body)
		}
		return out.Token
	}
	tok1, tok2 := mint("1"), mint("2")
	if inst, ok := s.ValidToken(tok1); !ok || inst != 1 {
		t.Errorf("ValidToken(tok1) = %d, %v", inst, ok)
	}
	if _, ok := s.ValidToken("ghs_nope"); ok {
		t.Error("ValidToken accepted an unknown token")
	}
	if !s.TokenCanAccess(tok1, "acme/widgets") || s.TokenCanAccess(tok2, "acme/widgets") {
		t.Error("TokenCanAccess wrong")
	}

	issue := s.URL + "/repos/acme/widgets/issues/5"
	tests := []struct {
		name, method, url, auth string
		want                    int
		wantAuth                string
	}{
		{"app needs jwt", "GET", s.URL + "/app", "token " + tok1, 401, "token"},
		{"app with jwt", "GET", s.URL + "/app", jwt, 200, "jwt"},
		{"unknown installation", "POST", s.URL + "/app/installations/9/access_tokens", jwt, 404, "jwt"},
		{"repo without auth", "GET", issue, "", 401, "none"},
		{"repo with jwt", "GET", issue, jwt, 401, "jwt"},
		{"repo with bad token", "GET", issue, "token ghs_x", 401, "bad"},
		{"repo outside installation", "GET", issue, "token " + tok2, 404, "token"},
		{"repo with token", "GET", issue, "token " + tok1, 200, "token"},
		{"repo with bearer token", "GET", issue, "Bearer " + tok1, 200, "token"},
		{"unknown route", "GET", s.URL + "/nope", "token " + tok1, 404, "token"},
		{"wrong method", "DELETE", issue, "token " + tok1, 404, "token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := do(t, tt.method, tt.url, tt.auth, "")
			if resp.StatusCode != tt.want {
				t.Errorf("status = %d (%s), want %d", resp.StatusCode, body, tt.want)
			}
			if strings.Contains(body, "ghs_") {
				t.Errorf("body echoes a token: %s", body)
			}
			reqs := s.Requests()
			last := reqs[len(reqs)-1]
			if last.Auth != tt.wantAuth || last.Status != resp.StatusCode || last.Method != tt.method {
				t.Errorf("recorded %+v, want auth %s status %d", last, tt.wantAuth, resp.StatusCode)
			}
		})
	}
}

func TestCommentsPaginationAndFaults(t *testing.T) {
	s := NewWithPrefix(t, "/api/v3")
	s.AddInstallation(1, "acme/widgets")
	n := s.AddIssue("acme", "widgets", Issue{Title: "t"})
	for range 5 {
		s.AddComment("acme", "widgets", n, "alice", "hi")
	}
	jwt := "Bearer " + signJWT(t, s.key, "RS256", map[string]any{
		"iss": 4242, "iat": time.Now().Unix(), "exp": time.Now().Add(time.Minute).Unix(),
	})
	_, body := do(t, "POST", s.URL+"/app/installations/1/access_tokens", jwt, "")
	var tok struct{ Token string }
	_ = json.Unmarshal([]byte(body), &tok)
	auth := "token " + tok.Token

	resp, body := do(t, "GET", s.URL+"/repos/acme/widgets/issues/1/comments?per_page=2&page=2", auth, "")
	var page []map[string]any
	if err := json.Unmarshal([]byte(body), &page); err != nil || len(page) != 2 {
		t.Fatalf("page 2 = %s (%v)", body, err)
	}
	link := resp.Header.Get("Link")
	for _, want := range []string{`/api/v3/repos/acme/widgets/issues/1/comments?page=3&per_page=2>; rel="next"`, `page=3&per_page=2>; rel="last"`, `page=1&per_page=2>; rel="prev"`} {
		if !strings.Contains(link, want) {
			t.Errorf("Link %q lacks %q", link, want)
		}
	}

	s.FailNext("GET", "/repos/acme/widgets/issues", 2, 503, http.Header{"Retry-After": {"7"}})
	for i := range 3 {
		resp, _ := do(t, "GET", s.URL+"/repos/acme/widgets/issues/1", auth, "")
		want := 503
		if i == 2 {
			want = 200
		}
		if resp.StatusCode != want {
			t.Errorf("request %d: status %d, want %d", i, resp.StatusCode, want)
		}
		if want == 503 && resp.Header.Get("Retry-After") != "7" {
			t.Errorf("fault header missing")
		}
	}

	// Outside the prefix: 404.
	root := strings.TrimSuffix(s.URL, "/api/v3")
	if resp, _ := do(t, "GET", root+"/repos/acme/widgets/issues/1", auth, ""); resp.StatusCode != 404 {
		t.Errorf("unprefixed request: %d, want 404", resp.StatusCode)
	}

	// Comment creation on the bot's behalf and the length limit.
	resp, body = do(t, "POST", s.URL+"/repos/acme/widgets/issues/1/comments", auth, `{"body":"from the bot"}`)
	if resp.StatusCode != 201 || !strings.Contains(body, `"login":"pullwright-test[bot]"`) || !strings.Contains(body, `"type":"Bot"`) {
		t.Errorf("create comment: %d %s", resp.StatusCode, body)
	}
	long, _ := json.Marshal(map[string]string{"body": strings.Repeat("é", maxBody+1)})
	if resp, body := do(t, "POST", s.URL+"/repos/acme/widgets/issues/1/comments", auth, string(long)); resp.StatusCode != 422 || !strings.Contains(body, "Body is too long") {
		t.Errorf("too long comment: %d %s", resp.StatusCode, body)
	}
	if got := len(s.Comments("acme", "widgets", 1)); got != 6 {
		t.Errorf("%d comments, want 6", got)
	}
}
