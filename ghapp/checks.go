package ghapp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/google/go-github/v88/github"

	"github.com/pullwright/pullwright"
)

// Check run limits from GitHub's "create/update a check run" request body
// (FACTS.md §5 for the actions).
const (
	MaxCheckActions           = 3
	MaxCheckActionLabel       = 20
	MaxCheckActionIdentifier  = 20
	MaxCheckActionDescription = 40
	// MaxCheckOutputChars is the limit of output.summary and output.text.
	// It is enforced in UTF-8 bytes, which also satisfies a reading of the
	// limit in characters.
	MaxCheckOutputChars = 65535
)

const checkTruncatedNote = "\n\n---\n*This text was cut: it exceeded GitHub's 65535-character limit.*"

// FieldError is a request the bot refuses to send because GitHub would
// reject it (422): Field names the offending field, as in CheckRun.
type FieldError struct {
	Field   string // e.g. "Actions[1].Label"
	Problem string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }

var (
	checkStatuses    = map[string]bool{"queued": true, "in_progress": true, "completed": true}
	checkConclusions = map[string]bool{
		"action_required": true, "success": true, "failure": true, "neutral": true,
		"cancelled": true, "timed_out": true, "skipped": true,
	}
)

// normalize checks cr against GitHub's rules and fills in Status
// "completed" when only a Conclusion is given.
func normalizeCheckRun(cr *pullwright.CheckRun) error {
	if cr.ID < 0 {
		return &FieldError{"ID", fmt.Sprintf("invalid check run id %d", cr.ID)}
	}
	if cr.ID == 0 {
		if cr.Name == "" {
			return &FieldError{"Name", "required to create a check run"}
		}
		if cr.HeadSHA == "" {
			return &FieldError{"HeadSHA", "required to create a check run"}
		}
	}
	if cr.Status == "" && cr.Conclusion != "" {
		cr.Status = "completed"
	}
	switch {
	case cr.Status != "" && !checkStatuses[cr.Status]:
		return &FieldError{"Status", fmt.Sprintf("%q is not queued, in_progress or completed", cr.Status)}
	case cr.Conclusion != "" && !checkConclusions[cr.Conclusion]:
		return &FieldError{"Conclusion", fmt.Sprintf("unknown conclusion %q", cr.Conclusion)}
	case cr.Status == "completed" && cr.Conclusion == "":
		return &FieldError{"Conclusion", "required when Status is completed"}
	case cr.Status != "completed" && cr.Conclusion != "":
		return &FieldError{"Conclusion", fmt.Sprintf("only allowed with Status completed, not %q", cr.Status)}
	case cr.Conclusion == "action_required" && cr.DetailsURL == "":
		return &FieldError{"DetailsURL", "required when Conclusion is action_required"}
	}
	if cr.Title != "" || cr.Summary != "" || cr.Text != "" {
		if cr.Title == "" {
			return &FieldError{"Title", "required when Summary or Text is set"}
		}
		if cr.Summary == "" {
			return &FieldError{"Summary", "required when Title or Text is set"}
		}
	}
	if len(cr.Actions) > MaxCheckActions {
		return &FieldError{"Actions", fmt.Sprintf("%d actions, GitHub allows at most %d", len(cr.Actions), MaxCheckActions)}
	}
	for i, a := range cr.Actions {
		for _, f := range []struct {
			name, val string
			max       int
		}{
			{"Label", a.Label, MaxCheckActionLabel},
			{"Description", a.Description, MaxCheckActionDescription},
			{"Identifier", a.Identifier, MaxCheckActionIdentifier},
		} {
			field := fmt.Sprintf("Actions[%d].%s", i, f.name)
			if f.val == "" {
				return &FieldError{field, "required"}
			}
			if n := utf8.RuneCountInString(f.val); n > f.max {
				return &FieldError{field, fmt.Sprintf("%q is %d characters, GitHub allows at most %d", f.val, n, f.max)}
			}
		}
	}
	return nil
}

// fitBytes cuts s to at most limit bytes (on a rune boundary), ending it
// with note when it cuts.
func fitBytes(s string, limit int, note string) string {
	if len(s) <= limit {
		return s
	}
	keep := limit - len(note)
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + note
}

// checkRunBody is the create/update request body. Unlike go-github's
// options it always sends "actions" on update, so buttons can be removed.
type checkRunBody struct {
	Name       string            `json:"name,omitempty"`
	HeadSHA    string            `json:"head_sha,omitempty"`
	Status     string            `json:"status,omitempty"`
	Conclusion string            `json:"conclusion,omitempty"`
	ExternalID string            `json:"external_id,omitempty"`
	DetailsURL string            `json:"details_url,omitempty"`
	Output     *checkRunOutput   `json:"output,omitempty"`
	Actions    []checkActionJSON `json:"actions"`
}

type checkActionJSON struct {
	Label       string `json:"label"`
	Description string `json:"description"`
	Identifier  string `json:"identifier"`
}

type checkRunOutput struct {
	Title   string `json:"title"`
	Summary string `json:"summary"`
	Text    string `json:"text,omitempty"`
}

// UpsertCheckRun creates (cr.ID == 0) or updates a check run and returns its
// id. cr is checked first against GitHub's limits (at most 3 actions, label
// and identifier ≤ 20 characters, description ≤ 40, a details URL with
// action_required, a conclusion exactly when completed): a violation is a
// *FieldError naming the field, and no request is made. Summary and Text
// longer than GitHub accepts are cut with a note.
//
// Updating a check run that is gone (404) creates a new one when cr.HeadSHA
// and cr.Name are set; the new id is returned.
func (a *App) UpsertCheckRun(ctx context.Context, r pullwright.Repo, cr pullwright.CheckRun) (int64, error) {
	inst, owner, repo := r.InstallationID, r.Owner, r.Name
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	what := fmt.Sprintf("create check run %q in %s/%s", cr.Name, owner, repo)
	if cr.ID != 0 {
		what = fmt.Sprintf("update check run %d (%q) in %s/%s", cr.ID, cr.Name, owner, repo)
	}
	if err := normalizeCheckRun(&cr); err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	gh, err := a.client(inst)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	if cr.ID == 0 && cr.ExternalID != "" && !cr.FirstTry {
		// A create whose answer was lost (or a step replayed after a crash)
		// must not make a second run: find ours by external id first (the
		// caller says FirstTry when no earlier try can have reached GitHub,
		// and then nothing is looked up). Only
		// a run as this write would leave it is ours: one that has since
		// concluded otherwise (an answered approval whose request is asked
		// anew by an Action re-run) is history, and its buttons must not
		// come back to life.
		found, err := a.findCheckRun(ctx, gh, owner, repo, cr)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", what, err)
		}
		if found != 0 {
			cr.ID = found
			what = fmt.Sprintf("update check run %d (%q) in %s/%s", cr.ID, cr.Name, owner, repo)
		}
	}
	id, err := a.writeCheckRun(ctx, gh, owner, repo, cr)
	if cr.ID != 0 && StatusCode(err) == http.StatusNotFound && cr.HeadSHA != "" && cr.Name != "" {
		a.log.InfoContext(ctx, "github check run to update is gone; creating a new one",
			"repo", owner+"/"+repo, "check_run_id", cr.ID, "name", cr.Name)
		cr.ID = 0
		what = fmt.Sprintf("create check run %q in %s/%s", cr.Name, owner, repo)
		id, err = a.writeCheckRun(ctx, gh, owner, repo, cr)
	}
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	return id, nil
}

// maxCheckLookupPages bounds the look for a run by external id: GitHub
// keeps at most 1,000 runs of one name in an app's check suite, deleting
// older ones, so ten pages of 100 of the app's runs of that name hold all
// of them on a commit with one suite of ours.
const maxCheckLookupPages = 10

// findCheckRun returns the id of the app's check run named cr.Name on
// cr.HeadSHA that carries cr.ExternalID, cr.Status and cr.Conclusion, or 0.
//
// It first asks for the app's newest run of that name (filter=latest: one
// run per name and check suite), which is the run a create just made
// unless another request on the same commit made one since: one call
// whatever the commit holds. Only then does it list them all, newest first
// as GitHub answers, at most maxCheckLookupPages pages. A commit holding
// more (runs of several suites of the app) is logged as such and treated as
// not holding ours: the create that follows may then duplicate a run that
// is older than 1,000 others of its name, which the warning says.
func (a *App) findCheckRun(ctx context.Context, gh *github.Client, owner, repo string, cr pullwright.CheckRun) (int64, error) {
	slug, err := a.appSlug(ctx)
	if err != nil {
		return 0, err
	}
	var app *int64
	if a.cfg.AppID > 0 {
		app = github.Ptr(a.cfg.AppID)
	}
	ours := func(run *github.CheckRun) bool {
		return run.GetExternalID() == cr.ExternalID && run.GetApp().GetSlug() == slug &&
			run.GetStatus() == cr.Status && run.GetConclusion() == cr.Conclusion
	}
	for _, filter := range []string{"latest", "all"} {
		opts := &github.ListCheckRunsOptions{
			CheckName: github.Ptr(cr.Name), Filter: github.Ptr(filter), AppID: app,
			ListOptions: github.ListOptions{PerPage: 100},
		}
		var id int64
		pages := 0
		rest, err := eachPage(&opts.ListOptions, func() (*github.Response, bool, error) {
			res, resp, err := gh.Checks.ListCheckRunsForRef(ctx, owner, repo, cr.HeadSHA, opts)
			if err != nil {
				return nil, false, err
			}
			pages++
			for _, run := range res.CheckRuns {
				if ours(run) {
					id = run.GetID()
					return resp, false, nil
				}
			}
			return resp, pages < maxCheckLookupPages, nil
		})
		if err != nil {
			return 0, fmt.Errorf("list check runs (filter=%s) on %s: %w", filter, cr.HeadSHA, err)
		}
		if id != 0 {
			return id, nil
		}
		if rest {
			a.log.WarnContext(ctx, "github check run lookup stopped at its bound; creating the run, which may duplicate an older one",
				"repo", owner+"/"+repo, "sha", cr.HeadSHA, "name", cr.Name, "external_id", cr.ExternalID,
				"runs_read", pages*100)
		}
	}
	return 0, nil
}

func (a *App) writeCheckRun(ctx context.Context, gh *github.Client, owner, repo string, cr pullwright.CheckRun) (int64, error) {
	b := checkRunBody{
		Name:       cr.Name,
		Status:     cr.Status,
		Conclusion: cr.Conclusion,
		ExternalID: cr.ExternalID,
		DetailsURL: cr.DetailsURL,
		Actions:    []checkActionJSON{},
	}
	for _, ac := range cr.Actions {
		b.Actions = append(b.Actions, checkActionJSON(ac))
	}
	if cr.Title != "" {
		b.Output = &checkRunOutput{
			Title:   cr.Title,
			Summary: fitBytes(cr.Summary, MaxCheckOutputChars, checkTruncatedNote),
			Text:    fitBytes(cr.Text, MaxCheckOutputChars, checkTruncatedNote),
		}
	}
	method, u := http.MethodPost, fmt.Sprintf("repos/%s/%s/check-runs", owner, repo)
	if cr.ID != 0 {
		method, u = http.MethodPatch, fmt.Sprintf("%s/%d", u, cr.ID)
	} else {
		b.HeadSHA = cr.HeadSHA
	}
	req, err := gh.NewRequest(ctx, method, u, b)
	if err != nil {
		return 0, err
	}
	var out github.CheckRun
	if _, err := gh.Do(req, &out); err != nil {
		return 0, err
	}
	if out.GetID() == 0 {
		return 0, errors.New("GitHub returned no check run id")
	}
	return out.GetID(), nil
}

// GetCheckRun reads a check run.
func (a *App) GetCheckRun(ctx context.Context, r pullwright.Repo, id int64) (pullwright.CheckRunState, error) {
	inst, owner, repo := r.InstallationID, r.Owner, r.Name
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	gh, err := a.client(inst)
	if err != nil {
		return pullwright.CheckRunState{}, fmt.Errorf("get check run %d of %s/%s: %w", id, owner, repo, err)
	}
	cr, _, err := gh.Checks.GetCheckRun(ctx, owner, repo, id)
	if err != nil {
		return pullwright.CheckRunState{}, fmt.Errorf("get check run %d of %s/%s: %w", id, owner, repo, err)
	}
	return pullwright.CheckRunState{
		HeadSHA: cr.GetHeadSHA(), ExternalID: cr.GetExternalID(),
		Status: cr.GetStatus(), Conclusion: cr.GetConclusion(), App: cr.GetApp().GetSlug(),
	}, nil
}
