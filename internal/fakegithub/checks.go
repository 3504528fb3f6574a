package fakegithub

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// Check run limits (GitHub's create/update request schema; FACTS.md §5).
const (
	maxCheckActions     = 3
	maxActionLabel      = 20
	maxActionIdentifier = 20
	maxActionDesc       = 40
	maxCheckOutput      = 65535 // output.summary and output.text; checked in bytes, the strict reading
)

var (
	checkStatuses    = map[string]bool{"queued": true, "in_progress": true, "completed": true}
	checkConclusions = map[string]bool{
		"action_required": true, "success": true, "failure": true, "neutral": true,
		"cancelled": true, "timed_out": true, "skipped": true,
	}
)

// checkRunIn is a create or update request body. Pointers tell "absent"
// from "empty"; Actions non-nil replaces the run's buttons.
type checkRunIn struct {
	Name       *string `json:"name"`
	HeadSHA    *string `json:"head_sha"`
	Status     *string `json:"status"`
	Conclusion *string `json:"conclusion"`
	ExternalID *string `json:"external_id"`
	DetailsURL *string `json:"details_url"`
	Output     *struct {
		Title   *string `json:"title"`
		Summary *string `json:"summary"`
		Text    *string `json:"text"`
	} `json:"output"`
	Actions *[]CheckAction `json:"actions"`
}

// invalidRequest answers like GitHub's schema validation does.
func invalidRequest(w http.ResponseWriter, msg string) {
	errorJSON(w, http.StatusUnprocessableEntity, "Invalid request.\n\n"+msg)
}

// applyCheckRun validates in against cur (the stored run, or a new one) and
// applies it to a copy; on a validation error it answers 422 and returns false.
func applyCheckRun(w http.ResponseWriter, cur CheckRun, in checkRunIn, create bool) (CheckRun, bool) {
	next := cur.clone()
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	if create {
		switch {
		case str(in.Name) == "":
			validationFailed(w, "CheckRun", "name", "missing_field", "")
			return next, false
		case str(in.HeadSHA) == "":
			validationFailed(w, "CheckRun", "head_sha", "missing_field", "")
			return next, false
		}
		next.HeadSHA = *in.HeadSHA
		next.Status = "queued"
	}
	if in.Name != nil {
		if *in.Name == "" {
			validationFailed(w, "CheckRun", "name", "missing_field", "")
			return next, false
		}
		next.Name = *in.Name
	}
	if in.Status != nil {
		if !checkStatuses[*in.Status] {
			invalidRequest(w, fmt.Sprintf("%q is not a member of [queued, in_progress, completed] for 'status'.", *in.Status))
			return next, false
		}
	}
	if in.Conclusion != nil && !checkConclusions[*in.Conclusion] {
		invalidRequest(w, fmt.Sprintf("%q is not a valid value for 'conclusion'.", *in.Conclusion))
		return next, false
	}
	switch {
	case in.Conclusion != nil && in.Status != nil && *in.Status != "completed":
		validationFailed(w, "CheckRun", "conclusion", "custom", "conclusion can only be given with status completed")
		return next, false
	case in.Conclusion != nil:
		// As on GitHub, a conclusion implies status completed.
		next.Status, next.Conclusion = "completed", *in.Conclusion
	case in.Status != nil && *in.Status == "completed":
		if next.Conclusion == "" {
			validationFailed(w, "CheckRun", "conclusion", "missing_field", "conclusion is required when status is completed")
			return next, false
		}
	case in.Status != nil:
		next.Status, next.Conclusion = *in.Status, ""
	}
	if in.ExternalID != nil {
		next.ExternalID = *in.ExternalID
	}
	if in.DetailsURL != nil {
		if u, err := url.Parse(*in.DetailsURL); *in.DetailsURL != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
			validationFailed(w, "CheckRun", "details_url", "invalid", "details_url is not a valid URL")
			return next, false
		}
		next.DetailsURL = *in.DetailsURL
	}
	if next.Conclusion == "action_required" && next.DetailsURL == "" {
		validationFailed(w, "CheckRun", "details_url", "missing_field", "details_url must be provided when conclusion is action_required")
		return next, false
	}
	if o := in.Output; o != nil {
		switch {
		case str(o.Title) == "":
			invalidRequest(w, `"title" wasn't supplied.`)
			return next, false
		case str(o.Summary) == "":
			invalidRequest(w, `"summary" wasn't supplied.`)
			return next, false
		case len(*o.Summary) > maxCheckOutput:
			validationFailed(w, "CheckRun", "output.summary", "custom", fmt.Sprintf("summary is too long (maximum is %d characters)", maxCheckOutput))
			return next, false
		case len(str(o.Text)) > maxCheckOutput:
			validationFailed(w, "CheckRun", "output.text", "custom", fmt.Sprintf("text is too long (maximum is %d characters)", maxCheckOutput))
			return next, false
		}
		next.Title, next.Summary, next.Text = *o.Title, *o.Summary, str(o.Text)
	}
	if in.Actions != nil {
		acts := *in.Actions
		if len(acts) > maxCheckActions {
			invalidRequest(w, fmt.Sprintf("For 'properties/actions', %d items is more than the maximum of %d.", len(acts), maxCheckActions))
			return next, false
		}
		for i, a := range acts {
			for _, f := range []struct {
				name, val string
				max       int
			}{
				{"label", a.Label, maxActionLabel},
				{"description", a.Description, maxActionDesc},
				{"identifier", a.Identifier, maxActionIdentifier},
			} {
				if f.val == "" {
					invalidRequest(w, fmt.Sprintf("%q wasn't supplied for 'actions/%d'.", f.name, i))
					return next, false
				}
				if n := utf8.RuneCountInString(f.val); n > f.max {
					invalidRequest(w, fmt.Sprintf("For 'actions/%d/%s', %q is longer than %d characters (%d).", i, f.name, f.val, f.max, n))
					return next, false
				}
			}
		}
		next.Actions = append([]CheckAction(nil), acts...)
	}
	if next.Status == "completed" && cur.Status != "completed" {
		next.CompletedAt = time.Now().UTC().Truncate(time.Second)
	}
	return next, true
}

func (s *Server) createCheckRun(w http.ResponseWriter, r *http.Request) {
	var in checkRunIn
	if !decodeBody(w, r, &in) {
		return
	}
	k := repoKey(r.PathValue("owner"), r.PathValue("repo"))
	cr, ok := applyCheckRun(w, CheckRun{Repo: k}, in, true)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	cr.ID = s.nextID
	s.checkRuns[cr.ID] = &cr
	s.checkOrder[k] = append(s.checkOrder[k], cr.ID)
	s.indexCheckRunLocked(&cr)
	writeJSON(w, http.StatusCreated, s.checkRunJSONLocked(&cr))
}

func (s *Server) checkRunLocked(w http.ResponseWriter, r *http.Request) (*CheckRun, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	cr := s.checkRuns[id]
	if err != nil || cr == nil || cr.Repo != repoKey(r.PathValue("owner"), r.PathValue("repo")) {
		notFound(w)
		return nil, false
	}
	return cr, true
}

// refKey names a commit's runs of one name in checkRefs.
func refKey(repo, sha, name string) string { return repo + "\x00" + sha + "\x00" + name }

// indexCheckRunLocked files a new run under its commit, name and app, so a
// listing reads the runs it may answer with, not every run of the repository.
func (s *Server) indexCheckRunLocked(cr *CheckRun) {
	k := refKey(cr.Repo, cr.HeadSHA, cr.Name)
	if s.checkRefs[k] == nil {
		s.checkRefs[k] = map[string][]int64{}
		rk := cr.Repo + "\x00" + cr.HeadSHA
		s.checkNames[rk] = append(s.checkNames[rk], cr.Name)
	}
	s.checkRefs[k][cr.App] = append(s.checkRefs[k][cr.App], cr.ID)
}

// unindexCheckRunLocked takes a run out of checkRefs before its name changes.
func (s *Server) unindexCheckRunLocked(cr *CheckRun) {
	byApp := s.checkRefs[refKey(cr.Repo, cr.HeadSHA, cr.Name)]
	byApp[cr.App] = slices.DeleteFunc(byApp[cr.App], func(id int64) bool { return id == cr.ID })
}

// appIDOf is the id appJSON gives the app named slug.
func (s *Server) appIDOf(slug string) int64 {
	switch slug {
	case "":
		return s.AppID
	case ActionsApp:
		return ActionsAppID
	}
	return 1
}

// listCheckRunsForRef serves GET /repos/{o}/{r}/commits/{ref}/check-runs for
// a commit SHA, with the check_name, status, filter and app_id parameters,
// newest first and paged, like GitHub. filter=latest (GitHub's default)
// keeps the newest run of each name and app, so a check re-run since counts
// by its last run. Every call is recorded (Requests), so a test can count
// them.
func (s *Server) listCheckRunsForRef(w http.ResponseWriter, r *http.Request) {
	k := repoKey(r.PathValue("owner"), r.PathValue("repo"))
	q := r.URL.Query()
	ref, name, filter, status := r.PathValue("ref"), q.Get("check_name"), q.Get("filter"), q.Get("status")
	if filter != "" && filter != "latest" && filter != "all" {
		invalidRequest(w, fmt.Sprintf("%q is not a member of [latest, all] for 'filter'.", filter))
		return
	}
	if status != "" && !checkStatuses[status] {
		invalidRequest(w, fmt.Sprintf("%q is not a member of [queued, in_progress, completed] for 'status'.", status))
		return
	}
	app, byApp := int64(0), q.Has("app_id")
	if byApp {
		var err error
		if app, err = strconv.ParseInt(q.Get("app_id"), 10, 64); err != nil {
			invalidRequest(w, fmt.Sprintf("%q is not an integer for 'app_id'.", q.Get("app_id")))
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	names := []string{name}
	if name == "" {
		names = s.checkNames[k+"\x00"+ref]
	}
	// Each list holds one name's runs by one app, oldest first: filter=latest
	// takes its last run that passes status, filter=all all that do.
	var match []*CheckRun
	for _, n := range names {
		for slug, ids := range s.checkRefs[refKey(k, ref, n)] {
			if byApp && s.appIDOf(slug) != app {
				continue
			}
			for i := len(ids) - 1; i >= 0; i-- {
				cr := s.checkRuns[ids[i]]
				if filter != "all" && i < len(ids)-1 {
					break // only the newest run of a name and app is "latest"
				}
				if status == "" || cr.Status == status {
					match = append(match, cr)
				}
			}
		}
	}
	slices.SortFunc(match, func(a, b *CheckRun) int { return cmp.Compare(b.ID, a.ID) })
	runs := []any{}
	for _, cr := range pageOf(w, r, match) {
		runs = append(runs, s.checkRunJSONLocked(cr))
	}
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(match), "check_runs": runs})
}

func (s *Server) getCheckRun(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cr, ok := s.checkRunLocked(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, s.checkRunJSONLocked(cr))
}

func (s *Server) updateCheckRun(w http.ResponseWriter, r *http.Request) {
	var in checkRunIn
	if !decodeBody(w, r, &in) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.checkRunLocked(w, r)
	if !ok {
		return
	}
	// head_sha is not an update parameter; GitHub ignores it.
	in.HeadSHA = nil
	next, ok := applyCheckRun(w, *cur, in, false)
	if !ok {
		return
	}
	next.Updates++
	renamed := next.Name != cur.Name
	if renamed {
		s.unindexCheckRunLocked(cur)
	}
	*cur = next
	if renamed {
		s.indexCheckRunLocked(cur)
	}
	writeJSON(w, http.StatusOK, s.checkRunJSONLocked(cur))
}

func (s *Server) checkRunJSONLocked(cr *CheckRun) map[string]any {
	var completed any
	if !cr.CompletedAt.IsZero() {
		completed = cr.CompletedAt.Format(time.RFC3339)
	}
	var conclusion any
	if cr.Conclusion != "" {
		conclusion = cr.Conclusion
	}
	return map[string]any{
		"id":           cr.ID,
		"node_id":      fmt.Sprintf("CR_kwDO%d", cr.ID),
		"name":         cr.Name,
		"head_sha":     cr.HeadSHA,
		"external_id":  cr.ExternalID,
		"url":          fmt.Sprintf("%s/repos/%s/check-runs/%d", s.URL, cr.Repo, cr.ID),
		"html_url":     fmt.Sprintf("%s/%s/runs/%d", HTMLBase, cr.Repo, cr.ID),
		"details_url":  cr.DetailsURL,
		"status":       cr.Status,
		"conclusion":   conclusion,
		"completed_at": completed,
		"output": map[string]any{
			"title":             cr.Title,
			"summary":           cr.Summary,
			"text":              cr.Text,
			"annotations_count": len(cr.Annotations),
			"annotations_url":   fmt.Sprintf("%s/repos/%s/check-runs/%d/annotations", s.URL, cr.Repo, cr.ID),
		},
		"app":           s.appJSON(cr.App),
		"pull_requests": []any{},
	}
}
