package fakegithub

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// An attachment link answers as GitHub's does: 404 without a token or for
// an installation that cannot read the repository, else a 302 to a signed
// URL on another host, which serves the bytes only with its signature.
func TestAttachments(t *testing.T) {
	s := NewWithPrefix(t, "/api/v3")
	s.AddInstallation(1, "acme/widgets")
	s.AddInstallation(2, "acme/other")
	link := s.AddAttachment(Attachment{Owner: "acme", Repo: "widgets", Data: []byte("bytes"), ContentType: "image/png"})
	if !strings.HasPrefix(link, s.WebURL+"/user-attachments/assets/") {
		t.Fatalf("link %s is not on the web host %s", link, s.WebURL)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(u, auth string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", u, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	if resp := get(link, ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("without a token: %d, want 404", resp.StatusCode)
	}
	if resp := get(link, mintToken(t, s, 2)); resp.StatusCode != http.StatusNotFound {
		t.Errorf("another installation's token: %d, want 404", resp.StatusCode)
	}
	resp := get(link, mintToken(t, s, 1))
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("with the token: %d, want 302", resp.StatusCode)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	web, _ := url.Parse(s.WebURL)
	if loc.Hostname() == web.Hostname() || loc.Query().Get("jwt") == "" {
		t.Fatalf("redirect to %s: want another host and a signed query", loc)
	}
	unsigned := *loc
	unsigned.RawQuery = "jwt=forged"
	if resp := get(unsigned.String(), ""); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a forged signature: %d, want 403", resp.StatusCode)
	}
	resp = get(loc.String(), "")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != "bytes" || resp.Header.Get("Content-Type") != "image/png" {
		t.Errorf("the signed URL: %d %q %q", resp.StatusCode, body, resp.Header.Get("Content-Type"))
	}
	got := s.StorageRequests()
	if len(got) != 2 || got[0].Status != http.StatusForbidden || got[1].Status != http.StatusOK {
		t.Errorf("storage requests %+v", got)
	}
	var asked int
	for _, r := range s.Requests() {
		if strings.HasPrefix(r.Path, "/user-attachments/assets/") {
			asked++
		}
	}
	if asked != 3 {
		t.Errorf("the web host recorded %d attachment requests, want 3", asked)
	}
}
