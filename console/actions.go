package console

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode"

	"github.com/pullwright/pullwright/task"
)

// Approve, Reject and Cancel from the console are deliveries of the
// console's own: each records the same task a "/approve" button press, a
// "Reject" button press or "/agent cancel" records, under a delivery id
// of its own, and a worker then decides it by the very rules those do
// (the repository's approvers, the requester rule, the request's commit
// and check run, GitHub's permission API asked with the app's token). The
// console decides nothing the bot would not; it only refuses early those
// whose own token shows no write access, so that they see no buttons and
// a forged form changes nothing.

// maxReason bounds a rejection's reason, as a comment would be read.
const maxReason = 1000

// actionErr is a refusal the caller is told.
type actionErr struct {
	status int
	msg    string
	// changed is set when the request the caller answered is no longer
	// the one waiting: they are shown the task's current request instead.
	changed *task.Task
}

func (e *actionErr) Error() string { return e.msg }

// canAct reports whether who may press the console's buttons on tasks of
// t's repository: their own token must show write access (write, maintain
// or admin) to the repository the task is of.
func (c *Console) canAct(ctx context.Context, who *caller, t *task.Task) (bool, error) {
	role, id, err := c.gh.role(ctx, who.token, t.Repo.FullName())
	if err != nil {
		return false, fmt.Errorf("%w: %w", errGitHub, err)
	}
	if t.Repo.ID != 0 && id != t.Repo.ID {
		return false, nil
	}
	return role == "write" || role == "maintain" || role == "admin", nil
}

// act records the task of one console action on task id (a decimal id)
// and returns the id of the task recorded. verb is approve, reject or
// cancel; requestID names the request approve and reject answer.
//
// digest is the digest of the request as the caller was shown it
// (approval.Request): an answer to any other value, a request asked
// since included, is refused with the request that waits now.
func (c *Console) act(ctx context.Context, who *caller, idText, verb, requestID, digest, reason string) (int64, error) {
	t, err := c.one(ctx, who, idText)
	if err != nil {
		return 0, err
	}
	if c.demo {
		return 0, &actionErr{status: http.StatusForbidden, msg: "this is a demo: its tasks are recorded ones, and answers go nowhere"}
	}
	ok, err := c.canAct(ctx, who, t)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, &actionErr{status: http.StatusForbidden, msg: "you need write access to " + t.Repo.FullName() + " to " + verb + " here"}
	}
	now := c.now()
	a := &task.Task{
		State:     task.Queued,
		Repo:      t.Repo,
		Requester: task.Person{Login: who.Login, ID: who.ID},
		CreatedAt: now,
		RunAfter:  now,
	}
	switch verb {
	case "cancel":
		if t.State.Terminal() {
			return 0, &actionErr{status: http.StatusConflict, msg: fmt.Sprintf("task %d has ended (%s)", t.ID, t.State)}
		}
		a.Kind, a.Issue, a.IsPR = task.KindCancel, t.Issue, t.IsPR
	case "approve", "reject":
		r := t.CurrentRequest()
		waiting := t.State == task.AwaitingApproval && r != nil && r.Answer == nil && r.Asked
		switch {
		case waiting && r.ID != requestID:
			return 0, &actionErr{status: http.StatusConflict, changed: t,
				msg: fmt.Sprintf("request %s is no longer the one waiting; the task now asks request %s", requestID, r.ID)}
		case !waiting || r.ID != requestID:
			return 0, &actionErr{status: http.StatusConflict, msg: fmt.Sprintf("request %s is not waiting for an answer", requestID)}
		case r.Shown == nil:
			return 0, &actionErr{status: http.StatusConflict, msg: fmt.Sprintf("request %s was asked by an earlier release, which kept no copy of it as shown; answer it on GitHub", r.ID)}
		case digest == "":
			return 0, &actionErr{status: http.StatusBadRequest, msg: "an answer names the digest of the request it answers"}
		case !r.Shown.Matches(digest):
			return 0, &actionErr{status: http.StatusConflict, changed: t,
				msg: fmt.Sprintf("request %s changed since it was shown to you; here is the new one", r.ID)}
		case r.CheckRunID == 0:
			// The console's answer is a press of that check run's
			// button; without one, the answer is given on GitHub.
			return 0, &actionErr{status: http.StatusConflict, msg: fmt.Sprintf("request %s has no approval check run; answer it on GitHub", r.ID)}
		}
		a.Kind = task.KindApprove
		a.Answering = task.AnswerRef{RequestID: r.ID, SHA: r.SHA, Run: r.CheckRunID, Digest: r.Shown.Digest}
		if verb == "reject" {
			a.Kind, a.Instructions = task.KindReject, cleanReason(reason)
			if a.Instructions == "" {
				a.Instructions = "rejected in the console"
			}
		}
	default:
		return 0, &actionErr{status: http.StatusNotFound, msg: "no such action"}
	}
	d := task.Delivery{ID: "console-" + rand.Text(), Event: "console", Action: verb, ReceivedAt: now}
	a.DeliveryID = d.ID
	err = c.cfg.Store.Record(ctx, d, a)
	if errors.Is(err, task.ErrActive) {
		return 0, &actionErr{status: http.StatusConflict, msg: "the issue already has an active task"}
	}
	if err != nil {
		return 0, fmt.Errorf("record console %s: %w", verb, err)
	}
	c.log.InfoContext(ctx, "console: action recorded", "login", who.Login, "verb", verb, "task_id", t.ID, "request", requestID, "answer_task_id", a.ID)
	return a.ID, nil
}

// cleanReason keeps a reason to one paragraph of printable text, bounded.
func cleanReason(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return ' '
		case !unicode.IsPrint(r):
			return -1
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > maxReason {
		s = strings.ToValidUTF8(s[:maxReason], "")
	}
	return s
}

// actionPage handles the task page's forms: POST
// /console/tasks/{id}/{verb}, with the session's CSRF token.
func (c *Console) actionPage(w http.ResponseWriter, r *http.Request, who *caller) {
	if !c.csrfOK(r, who) {
		c.fail(w, r, http.StatusForbidden, "This form has expired or was not sent from the console. Reload the page and try again.")
		return
	}
	verb := r.PathValue("verb")
	_, err := c.act(r.Context(), who, r.PathValue("id"), verb, r.PostFormValue("request"), r.PostFormValue("digest"), r.PostFormValue("reason"))
	var ae *actionErr
	switch {
	case errors.As(err, &ae) && ae.changed != nil:
		// The page shows the request that waits now, to be read before
		// it is answered; nothing was sent.
		c.renderTask(w, r, who, ae.changed, http.StatusConflict, map[string]any{"Changed": ae.msg + "."})
		return
	case errors.As(err, &ae):
		c.fail(w, r, ae.status, "Not sent: "+ae.msg+".")
		return
	case err != nil:
		c.failed(w, r, err)
		return
	}
	http.Redirect(w, r, "/console/tasks/"+r.PathValue("id")+"?sent="+verb, http.StatusSeeOther)
}

// apiCSRF checks a session's state-changing API call: the CSRF token in
// X-CSRF-Token. A caller with its own token in Authorization has no
// ambient credential another site could use, and needs none.
func apiCSRF(r *http.Request, who *caller) bool {
	return who.viaToken || (who.csrf != "" && sameSecret(who.csrf, r.Header.Get("X-CSRF-Token")))
}

// apiCancel is POST /api/tasks/{id}/cancel.
func (c *Console) apiCancel(w http.ResponseWriter, r *http.Request, who *caller) {
	c.apiAct(w, r, who, r.PathValue("id"), "cancel", "")
}

// apiAnswer is POST /api/requests/{id}/approve and /reject; a request id
// is its task's id, a dash and a number.
func (c *Console) apiAnswer(verb string) func(http.ResponseWriter, *http.Request, *caller) {
	return func(w http.ResponseWriter, r *http.Request, who *caller) {
		rid := r.PathValue("id")
		idText, _, ok := strings.Cut(rid, "-")
		if _, err := strconv.ParseInt(idText, 10, 64); !ok || err != nil {
			apiError(w, http.StatusNotFound, "not found")
			return
		}
		c.apiAct(w, r, who, idText, verb, rid)
	}
}

func (c *Console) apiAct(w http.ResponseWriter, r *http.Request, who *caller, idText, verb, requestID string) {
	if !apiCSRF(r, who) {
		apiError(w, http.StatusForbidden, "missing or wrong X-CSRF-Token")
		return
	}
	var body struct {
		Digest string `json:"digest"`
		Reason string `json:"reason"`
	}
	if r.ContentLength != 0 && verb != "cancel" {
		if err := decodeJSON(r, &body); err != nil {
			apiError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	if verb == "approve" {
		body.Reason = ""
	}
	id, err := c.act(r.Context(), who, idText, verb, requestID, body.Digest, body.Reason)
	if c.apiRefused(w, r, err) {
		return
	}
	// Accepted, not done: a worker decides it as it decides a comment.
	writeJSON(w, http.StatusAccepted, map[string]any{"accepted": true, "task_id": id})
}

// apiRefused answers err, a refusal (actionErr) or a failure, and
// reports whether there was one.
func (c *Console) apiRefused(w http.ResponseWriter, r *http.Request, err error) bool {
	var ae *actionErr
	switch {
	case errors.As(err, &ae) && ae.changed != nil:
		// The request that waits now, as GET /api/tasks/{id} shows it.
		writeJSON(w, ae.status, map[string]any{"error": ae.msg, "pending": c.view(ae.changed, true).Pending})
	case errors.As(err, &ae):
		apiError(w, ae.status, ae.msg)
	case err != nil:
		c.apiFailed(w, r, err)
	default:
		return false
	}
	return true
}

// decodeJSON reads a small JSON body into v, refusing unknown fields.
func decodeJSON(r *http.Request, v any) error { return decodeJSONUpTo(r, v, 1<<16) }

// decodeJSONUpTo is decodeJSON for a body of at most limit bytes.
func decodeJSONUpTo(r *http.Request, v any, limit int64) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	return nil
}
