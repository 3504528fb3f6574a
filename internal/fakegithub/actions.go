package fakegithub

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// GitHub Actions as an app: its check runs are the jobs of workflow runs.
// The id and slug are GitHub's (the app object of an Actions check run).
const (
	ActionsApp   = "github-actions"
	ActionsAppID = 15368
)

// blobPrefix is where the fake serves job logs, standing in for the other
// host GitHub's 302 sends a client to.
const blobPrefix = "/_blob/job-logs/"

// blobTTL is how long a log's download URL works: "This link expires
// after 1 minute" (REST docs, "Download job logs for a workflow run").
const blobTTL = time.Minute

type blob struct {
	checkRun int64
	expires  time.Time
}

// AddCheckRun stores a check run another app reported on a commit (App
// set, ActionsApp for a workflow's job), completed with cr's conclusion
// unless cr says otherwise, and returns its id. The id of an Actions run is
// also its job's id, as on GitHub.
func (s *Server) AddCheckRun(owner, repo string, cr CheckRun) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := repoKey(owner, repo)
	s.nextID++
	cr.ID, cr.Repo = s.nextID, k
	if cr.Status == "" {
		cr.Status = "completed"
	}
	if cr.Status == "completed" && cr.CompletedAt.IsZero() {
		cr.CompletedAt = time.Now().UTC().Truncate(time.Second)
	}
	if cr.App == ActionsApp && cr.DetailsURL == "" {
		cr.DetailsURL = fmt.Sprintf("%s/%s/actions/runs/%d/job/%d", HTMLBase, k, cr.ID+1_000_000, cr.ID)
	}
	c := cr.clone()
	s.checkRuns[c.ID] = &c
	s.checkOrder[k] = append(s.checkOrder[k], c.ID)
	s.indexCheckRunLocked(&c)
	return c.ID
}

// DenyActions takes the actions: read permission from an installation, as
// when the app's owner has not granted it: GitHub then refuses job logs
// with 403.
func (s *Server) DenyActions(installation int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noActions[installation] = true
}

func (s *Server) appJSON(slug string) map[string]any {
	switch slug {
	case "":
		return map[string]any{"id": s.AppID, "slug": s.AppSlug}
	case ActionsApp:
		return map[string]any{"id": ActionsAppID, "slug": ActionsApp, "name": "GitHub Actions"}
	}
	return map[string]any{"id": 1, "slug": slug, "name": slug}
}

// listAnnotations serves GET /repos/{o}/{r}/check-runs/{id}/annotations,
// paged like GitHub's lists.
func (s *Server) listAnnotations(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cr, ok := s.checkRunLocked(w, r)
	if !ok {
		return
	}
	out := []map[string]any{}
	for _, a := range pageOf(w, r, cr.Annotations) {
		out = append(out, map[string]any{
			"path": a.Path, "blob_href": fmt.Sprintf("%s/%s/blob/%s/%s", HTMLBase, cr.Repo, cr.HeadSHA, a.Path),
			"start_line": a.StartLine, "end_line": a.EndLine, "start_column": nil, "end_column": nil,
			"annotation_level": a.Level, "title": a.Title, "message": a.Message, "raw_details": nil,
		})
	}
	writeJSON(w, http.StatusOK, out)
}

// jobLogs serves GET /repos/{o}/{r}/actions/jobs/{id}/logs as GitHub does:
// 302 with a Location to a download URL good for a minute; 403 "Resource
// not accessible by integration" without actions: read; 404 for a job
// that is not there; 410 once the logs expired.
func (s *Server) jobLogs(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.noActions[infoOf(r).installation] {
		errorJSON(w, http.StatusForbidden, "Resource not accessible by integration")
		return
	}
	cr, ok := s.checkRunLocked(w, r)
	if !ok {
		return
	}
	switch {
	case cr.App != ActionsApp:
		notFound(w)
		return
	case cr.LogExpired:
		errorJSON(w, http.StatusGone, "The logs for this job have expired")
		return
	}
	tok := randomToken("sig")
	s.blobs[tok] = blob{checkRun: cr.ID, expires: time.Now().Add(blobTTL)}
	host := strings.TrimSuffix(s.URL, s.prefix)
	w.Header().Set("Location", host+blobPrefix+strconv.FormatInt(cr.ID, 10)+"?sig="+tok)
	w.WriteHeader(http.StatusFound)
}

// serveBlob serves a log's download URL: no API auth, the signature in the
// URL is the authorisation, and it expires.
func (s *Server) serveBlob(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.blobs[r.URL.Query().Get("sig")]
	cr := s.checkRuns[b.checkRun]
	switch {
	case !ok || cr == nil || strings.TrimPrefix(r.URL.Path, blobPrefix) != strconv.FormatInt(b.checkRun, 10):
		http.Error(w, "AuthenticationFailed", http.StatusForbidden)
	case time.Now().After(b.expires):
		http.Error(w, "AuthenticationFailed: Signed expiry time has passed", http.StatusForbidden)
	default:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(cr.Log))
	}
}
