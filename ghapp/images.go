package ghapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/images"
)

// maxImageRedirects bounds the redirects of one image: GitHub's
// attachment link answers with one, to its storage's signed URL.
const maxImageRedirects = 3

// imageHosts are the hosts of the configured GitHub that serve the
// pictures people put in issues: its web host, where attachment links
// live (github.com/user-attachments/assets/…, the same on a GitHub
// Enterprise Server's host) and the only one the installation token is
// sent to, and the storage hosts that serve older uploads by a signed or
// public URL, sent nothing.
type imageHosts struct {
	web     *url.URL
	storage map[string]bool
}

// newImageHosts derives the hosts from the REST base URL, as GitHub pairs
// them: api.github.com with github.com and its githubusercontent.com
// image hosts; a GitHub Enterprise Server's https://HOST/api/v3 with HOST
// and, with subdomain isolation, media.HOST; api.SUB.ghe.com with SUB.ghe.com;
// anything else (a test's server) is its own web host.
func newImageHosts(base string) (imageHosts, error) {
	u, err := url.Parse(base)
	if err != nil {
		return imageHosts{}, fmt.Errorf("GitHub API base URL %q: %w", base, err)
	}
	web := &url.URL{Scheme: u.Scheme, Host: u.Host}
	// A server's API under /api/v3 is on its web host, whatever the host
	// is called: api.corp.example/api/v3 serves api.corp.example, and
	// corp.example may be anyone's.
	if h, ok := strings.CutPrefix(u.Host, "api."); ok && !strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/api/v3") {
		web.Host = h
	}
	h := imageHosts{web: web, storage: map[string]bool{}}
	switch {
	case web.Host == "github.com":
		h.storage["private-user-images.githubusercontent.com"] = true
		h.storage["user-images.githubusercontent.com"] = true
	case strings.HasSuffix(u.Path, "/api/v3"):
		h.storage["media."+web.Host] = true
	}
	return h, nil
}

// classify says whether u may be fetched, and whether with the token.
func (h imageHosts) classify(u *url.URL) (ours, token bool) {
	if u.User != nil {
		return false, false
	}
	if u.Scheme == h.web.Scheme && strings.EqualFold(u.Host, h.web.Host) {
		// The token reads whatever the installation may: on the web
		// host it goes only to an attachment's link, never to a
		// repository's raw file an issue's author picked.
		if !strings.HasPrefix(u.Path, "/user-attachments/assets/") || strings.Contains(u.Path[len("/user-attachments/assets/"):], "/") {
			return false, false
		}
		return true, true
	}
	return u.Scheme == "https" && h.storage[strings.ToLower(u.Host)], false
}

// Image fetches a picture an issue or comment of r shows, when ref is on
// the configured GitHub's own hosts; a link to any other host is refused
// with pullwright.ErrNotGitHubs before anything is asked of it. The
// installation's token goes to GitHub's web host alone: GitHub answers an
// attachment link with a redirect to its storage, on another host, which
// gets no Authorization header (net/http drops it on a redirect to
// another host, and checkRedirect drops it on any change of host or port
// too). At most limit bytes are taken (more is pullwright.ErrTooLarge,
// after reading limit+1), and the bytes must be a PNG, JPEG, GIF or WebP
// picture whatever the server's Content-Type says
// (pullwright.ErrNotAnImage). Errors and logs name the URL without its
// query, where a signed URL keeps its signature.
func (a *App) Image(ctx context.Context, r pullwright.Repo, ref string, limit int64) (data []byte, kind string, err error) {
	u, err := url.Parse(ref)
	if err != nil {
		return nil, "", fmt.Errorf("image link: %w", pullwright.ErrNotGitHubs)
	}
	hosts, err := newImageHosts(a.base)
	if err != nil {
		return nil, "", err
	}
	ours, withToken := hosts.classify(u)
	if !ours {
		return nil, "", fmt.Errorf("image on %s: %w", redact(u), pullwright.ErrNotGitHubs)
	}
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, "", fmt.Errorf("image %s: %w", redact(u), err)
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "image/*")
	if withToken {
		tok, err := a.Token(ctx, r.InstallationID)
		if err != nil {
			return nil, "", fmt.Errorf("image %s: %w", redact(u), err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	client := &http.Client{Transport: a.rt, CheckRedirect: checkImageRedirect}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			// url.Error prints the URL it failed on, a signed one after a
			// redirect: keep its cause only.
			err = ue.Err
		}
		return nil, "", fmt.Errorf("fetch image %s: %w", redact(u), err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return nil, "", fmt.Errorf("fetch image %s: %w", redact(u), pullwright.ErrGone)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, "", fmt.Errorf("fetch image %s: GitHub answered %d: %w", redact(u), resp.StatusCode, pullwright.ErrNotPermitted)
	case resp.StatusCode != http.StatusOK:
		return nil, "", fmt.Errorf("fetch image %s: GitHub answered %d", redact(u), resp.StatusCode)
	}
	if resp.ContentLength > limit {
		return nil, "", fmt.Errorf("image %s of %d bytes: %w (%d)", redact(u), resp.ContentLength, pullwright.ErrTooLarge, limit)
	}
	data, err = io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, "", fmt.Errorf("read image %s: %w", redact(u), err)
	}
	if int64(len(data)) > limit {
		return nil, "", fmt.Errorf("image %s: %w (%d bytes)", redact(u), pullwright.ErrTooLarge, limit)
	}
	kind, ok := images.Kind(data)
	if !ok {
		return nil, "", fmt.Errorf("image %s (%s): %w", redact(u), http.DetectContentType(data), pullwright.ErrNotAnImage)
	}
	a.log.DebugContext(ctx, "fetched an image", "url", redact(u), "bytes", len(data), "type", kind)
	return data, kind, nil
}

// checkImageRedirect follows at most maxImageRedirects redirects, never
// from https to http, and sends the token to no host but the first
// request's (net/http would still send it to a subdomain, or to another
// port of the same host).
func checkImageRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > maxImageRedirects {
		return fmt.Errorf("more than %d redirects", maxImageRedirects)
	}
	first := via[0].URL
	if req.URL.Scheme != "https" && (req.URL.Scheme != "http" || first.Scheme == "https") {
		return fmt.Errorf("redirect to %s refused", redact(req.URL))
	}
	if req.URL.Host != first.Host || req.URL.Scheme != first.Scheme {
		req.Header.Del("Authorization")
	}
	return nil
}

// redact is u without its query, fragment or credentials: what a log or
// an error may show of a URL that may be signed.
func redact(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}
