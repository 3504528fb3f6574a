package ghapp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/fakegithub"
	"github.com/pullwright/pullwright/internal/testimage"
)

var (
	pngBytes  = testimage.PNG(2, 2)
	pageBytes = []byte("<!DOCTYPE html><html><body>Sign in to GitHub</body></html>")
)

var widgets = pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}

// An attachment is fetched as GitHub serves it: the link on the web host,
// asked with the installation's token, answers with a redirect to a
// signed URL on the storage host, which gets no token and serves the
// bytes. Neither the token nor the signature is logged.
func TestImageFollowsGitHubsRedirectWithoutTheToken(t *testing.T) {
	e := newEnv(t)
	link := e.fake.AddAttachment(fakegithub.Attachment{Owner: owner, Repo: repo, Data: pngBytes, ContentType: "image/png"})
	data, kind, err := e.app.Image(context.Background(), widgets, link, 1<<20)
	if err != nil {
		t.Fatalf("Image: %v\nlogs:\n%s", err, e.logs)
	}
	if kind != "image/png" || string(data) != string(pngBytes) {
		t.Errorf("Image = %q, %d bytes; want image/png, %d bytes", kind, len(data), len(pngBytes))
	}
	path := strings.TrimPrefix(link, e.fake.WebURL)
	var asked []fakegithub.Request
	for _, r := range e.fake.Requests() {
		if r.Path == path {
			asked = append(asked, r)
		}
	}
	if len(asked) != 1 || asked[0].Auth != "token" || asked[0].Status != http.StatusFound {
		t.Errorf("the web host was asked %+v; want one request with the installation's token, answered 302", asked)
	}
	stored := e.fake.StorageRequests()
	if len(stored) != 1 || stored[0].Status != http.StatusOK {
		t.Fatalf("the storage host was asked %+v; want one signed request answered 200", stored)
	}
	if stored[0].Authorization != "" {
		t.Errorf("the storage host, another host, got Authorization %q", stored[0].Authorization)
	}
	tok, err := e.app.Token(context.Background(), inst)
	if err != nil {
		t.Fatal(err)
	}
	if logs := e.logs.String(); strings.Contains(logs, tok) || strings.Contains(logs, stored[0].Query) {
		t.Errorf("the logs hold the token or the signed query:\n%s", logs)
	}
}

// What may not be given to the model is refused, and says why.
func TestImageRefusals(t *testing.T) {
	e := newEnv(t)
	e.fake.AddInstallation(99, "other/secret")
	elsewhere := &recorder{}
	other := httptest.NewServer(elsewhere)
	t.Cleanup(other.Close)
	big := append(append([]byte(nil), pngBytes...), make([]byte, 2048)...)
	for _, tc := range []struct {
		name string
		link string
		want error
	}{
		{"another host", other.URL + "/screenshot.png", pullwright.ErrNotGitHubs},
		{"another host, with GitHub's path", other.URL + "/user-attachments/assets/1", pullwright.ErrNotGitHubs},
		{"credentials in the link", strings.Replace(e.fake.WebURL, "http://", "http://u:p@", 1) + "/user-attachments/assets/1", pullwright.ErrNotGitHubs},
		{"too large", e.fake.AddAttachment(fakegithub.Attachment{Owner: owner, Repo: repo, Data: big, ContentType: "image/png"}), pullwright.ErrTooLarge},
		{"a page called a picture", e.fake.AddAttachment(fakegithub.Attachment{Owner: owner, Repo: repo, Data: pageBytes, ContentType: "image/png"}), pullwright.ErrNotAnImage},
		{"another repository's file", e.fake.AddAttachment(fakegithub.Attachment{Owner: "other", Repo: "secret", Data: pngBytes, ContentType: "image/png"}), pullwright.ErrGone},
		{"no such file", e.fake.WebURL + "/user-attachments/assets/00000000-0000-4000-a000-000000000000", pullwright.ErrGone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := e.app.Image(context.Background(), widgets, tc.link, 1024)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Image(%s) = %v, want %v", tc.link, err, tc.want)
			}
			if strings.Contains(err.Error(), "jwt=") {
				t.Errorf("the error shows the signed URL: %v", err)
			}
		})
	}
	if n := elsewhere.count(); n != 0 {
		t.Errorf("the other host was asked %d times", n)
	}
	for _, r := range e.fake.StorageRequests() {
		if r.Status == http.StatusOK && r.Authorization != "" {
			t.Errorf("the storage host got a token: %+v", r)
		}
	}
}

// recorder is a host that is not GitHub's: it counts what it is asked.
type recorder struct {
	mu    sync.Mutex
	asked []http.Header
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.asked = append(r.asked, req.Header.Clone())
	r.mu.Unlock()
	w.Header().Set("Content-Type", "image/png")
	_, _ = w.Write(pngBytes)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.asked)
}

// A GitHub whose redirects go on, or go to another port of its own host
// name (where net/http alone would still send the token): the redirects
// are bounded, and the token stays with the first host and port.
func TestImageRedirects(t *testing.T) {
	side := &recorder{}
	sideSrv := httptest.NewServer(side)
	t.Cleanup(sideSrv.Close)
	hops := 0
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/user-attachments/assets/loop":
			hops++
			http.Redirect(w, r, "/user-attachments/assets/loop", http.StatusFound)
		case "/user-attachments/assets/port":
			http.Redirect(w, r, sideSrv.URL+"/signed.png?jwt=secret-signature", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(web.Close)
	app, err := New(Config{Token: "ghs_fixedtoken", Identity: &pullwright.Identity{Login: "github-actions[bot]"}, BaseURL: web.URL, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := app.Image(context.Background(), widgets, web.URL+"/user-attachments/assets/loop", 1024); err == nil || !strings.Contains(err.Error(), "redirects") {
		t.Errorf("a redirect loop = %v, want the bound on redirects", err)
	}
	if hops != maxImageRedirects+1 {
		t.Errorf("the loop was followed %d times, want %d", hops, maxImageRedirects+1)
	}
	data, _, err := app.Image(context.Background(), widgets, web.URL+"/user-attachments/assets/port", 1024)
	if err != nil || len(data) != len(pngBytes) {
		t.Fatalf("Image = %d bytes, %v", len(data), err)
	}
	side.mu.Lock()
	defer side.mu.Unlock()
	if len(side.asked) != 1 || side.asked[0].Get("Authorization") != "" {
		t.Errorf("the other port was asked %d times, with Authorization %q", len(side.asked), side.asked[0].Get("Authorization"))
	}
}

func TestImageHosts(t *testing.T) {
	for _, tc := range []struct {
		base        string
		link        string
		ours, token bool
	}{
		{"https://api.github.com", "https://github.com/user-attachments/assets/1", true, true},
		{"https://api.github.com", "https://private-user-images.githubusercontent.com/1/2.png?jwt=x", true, false},
		{"https://api.github.com", "https://user-images.githubusercontent.com/1/2.png", true, false},
		{"https://api.github.com", "http://github.com/user-attachments/assets/1", false, false},
		{"https://api.github.com", "https://api.github.com/user-attachments/assets/1", false, false},
		{"https://api.github.com", "https://github.com.evil.example/x.png", false, false},
		{"https://api.github.com", "https://camo.githubusercontent.com/x", false, false},
		{"https://ghe.example.com/api/v3", "https://ghe.example.com/user-attachments/assets/1", true, true},
		{"https://ghe.example.com/api/v3", "https://media.ghe.example.com/user/1/files/2", true, false},
		{"https://ghe.example.com/api/v3", "https://github.com/user-attachments/assets/1", false, false},
		{"https://ghe.example.com/api/v3", "https://private-user-images.githubusercontent.com/1/2.png", false, false},
		{"https://api.acme.ghe.com", "https://acme.ghe.com/user-attachments/assets/1", true, true},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080/user-attachments/assets/1", true, true},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8081/user-attachments/assets/1", false, false},
		// A server named api.* serving /api/v3 is its own web host; the
		// name without api. may be anyone's.
		{"https://api.corp.example.com/api/v3", "https://corp.example.com/x.png", false, false},
		{"https://api.corp.example.com/api/v3", "https://api.corp.example.com/user-attachments/assets/1", true, true},
		// The token goes to an attachment's link only, never to a file an
		// issue's author points at.
		{"https://api.github.com", "https://github.com/org/private/raw/main/x.png", false, false},
		{"https://api.github.com", "https://github.com/user-attachments/assets/1/../../org/private/raw/main/x.png", false, false},
		{"https://api.github.com", "https://github.com/user-attachments/files/1/secret.png", false, false},
	} {
		h, err := newImageHosts(tc.base)
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(tc.link)
		if ours, token := h.classify(u); ours != tc.ours || token != tc.token {
			t.Errorf("on %s, %s: ours %v, token %v; want %v, %v", tc.base, tc.link, ours, token, tc.ours, tc.token)
		}
	}
}
