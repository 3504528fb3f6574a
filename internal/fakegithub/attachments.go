package fakegithub

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
)

// attachmentPrefix is where GitHub serves the files people drop into an
// issue or a comment: https://github.com/user-attachments/assets/<id>, on
// the web host (the fake's root, outside the API's prefix). For a private
// repository GitHub answers a request without a token with 404, and one
// with a token of an installation that can read the repository with a 302
// to a short-lived signed URL on its storage host
// (private-user-images.githubusercontent.com/…?jwt=…), which serves the
// bytes to anyone holding the URL.
const attachmentPrefix = "/user-attachments/assets/"

// Attachment is a file the fake serves as an attachment.
type Attachment struct {
	Owner, Repo string // the repository whose issue holds it
	Data        []byte
	// ContentType is what the storage host says the file is, right or
	// wrong ("image/png" over the bytes of a page, say).
	ContentType string
}

// StorageRequest is one request the storage host received.
type StorageRequest struct {
	Path, Query string
	// Authorization is the header as it came: "" unless someone sent
	// a token to the storage host, which must never happen.
	Authorization string
	Status        int
}

// storage stands in for GitHub's storage host: another host name than
// the fake's (localhost rather than 127.0.0.1), so that a client's
// redirect from the web host to it is a change of host, as from
// github.com to githubusercontent.com.
type storage struct {
	srv      *httptest.Server
	mu       sync.Mutex
	files    map[string]Attachment // id → file
	signed   map[string]string     // jwt → id
	requests []StorageRequest
}

// AddAttachment stores a file dropped into an issue of owner/repo and
// returns its link as GitHub writes it into the text.
func (s *Server) AddAttachment(a Attachment) string {
	st := s.attachmentStorage()
	id := randomToken("")[:8] + "-" + randomToken("")[:4] + "-4" + randomToken("")[:3] + "-a" + randomToken("")[:3] + "-" + randomToken("")[:12]
	st.mu.Lock()
	st.files[id] = a
	st.mu.Unlock()
	return s.WebURL + attachmentPrefix + id
}

// StorageRequests are the requests the storage host received, in order.
func (s *Server) StorageRequests() []StorageRequest {
	st := s.attachmentStorage()
	st.mu.Lock()
	defer st.mu.Unlock()
	return append([]StorageRequest(nil), st.requests...)
}

// StorageURL is the storage host's origin as the web host's redirects
// name it ("http://localhost:PORT"), and StorageAddr the loopback
// address it listens on: what a client that judges hosts and addresses
// must be told to take as GitHub's (ghapp.ImageTest).
func (s *Server) StorageURL() string {
	u, _ := url.Parse(s.attachmentStorage().srv.URL)
	u.Host = strings.Replace(u.Host, "127.0.0.1", "localhost", 1)
	return u.String()
}

// StorageAddr is the address the storage host listens on.
func (s *Server) StorageAddr() netip.AddrPort {
	return netip.MustParseAddrPort(s.attachmentStorage().srv.Listener.Addr().String())
}

func (s *Server) attachmentStorage() *storage {
	s.storageOnce.Do(func() {
		st := &storage{files: map[string]Attachment{}, signed: map[string]string{}}
		st.srv = httptest.NewServer(http.HandlerFunc(st.serve))
		s.t.Cleanup(st.srv.Close)
		s.storage = st
	})
	return s.storage
}

// attachment answers GET /user-attachments/assets/{id} on the web host.
func (s *Server) attachment(w http.ResponseWriter, r *http.Request) {
	st := s.attachmentStorage()
	id := r.PathValue("id")
	st.mu.Lock()
	f, ok := st.files[id]
	st.mu.Unlock()
	info := infoOf(r)
	if !ok || info.auth != "token" || !s.canRead(info.installation, f.Owner, f.Repo) {
		// GitHub does not tell a file it hides from one it does not have.
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("<html><body>Not Found</body></html>"))
		return
	}
	jwt := randomToken("")
	st.mu.Lock()
	st.signed[jwt] = id
	st.mu.Unlock()
	w.Header().Set("Location", s.StorageURL()+"/1/"+id+"?jwt="+jwt)
	w.WriteHeader(http.StatusFound)
}

// canRead reports whether installation inst covers owner/repo, or the
// repository is public.
func (s *Server) canRead(inst int64, owner, repo string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := repoKey(owner, repo)
	return s.installations[inst][k] || s.public[k]
}

func (st *storage) serve(w http.ResponseWriter, r *http.Request) {
	st.mu.Lock()
	defer st.mu.Unlock()
	rec := StorageRequest{Path: r.URL.Path, Query: r.URL.RawQuery, Authorization: r.Header.Get("Authorization")}
	id, signed := st.signed[r.URL.Query().Get("jwt")]
	f, ok := st.files[id]
	switch {
	case !signed || !ok || !strings.HasSuffix(r.URL.Path, "/"+id):
		rec.Status = http.StatusForbidden
		http.Error(w, "<Error><Code>AccessDenied</Code></Error>", rec.Status)
	default:
		rec.Status = http.StatusOK
		w.Header().Set("Content-Type", f.ContentType)
		_, _ = w.Write(f.Data)
	}
	st.requests = append(st.requests, rec)
}
