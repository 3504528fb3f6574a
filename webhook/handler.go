// Package webhook receives GitHub's webhook deliveries. It owns the HTTP
// handler — the body size limit, the HMAC signature check, event parsing,
// delivery de-duplication (through the store) and comment command parsing —
// and hands what a delivery asks for to package task as at most one queued
// task. It must not call the LLM, clone, or wait on anything slow: a delivery
// is answered as soon as it is committed to the store, and never before.
//
// Import rule: none of agent, repo, runner, setup or ghapp.
package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pullwright/pullwright/task"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/pullwright/pullwright/tracing"
)

// Recorder commits a delivery and, when t is not nil, enqueues t, in one
// transaction. task.Store satisfies it.
type Recorder interface {
	Record(ctx context.Context, d task.Delivery, t *task.Task) error
}

// Config configures a Handler.
type Config struct {
	// Secret is the webhook's HMAC secret. Required: go-github's
	// ValidatePayload skips the check on an empty secret, we refuse to.
	Secret []byte
	// Command is the comment command word; DefaultCommand when empty.
	Command string
	// BotLogin is the app's own login ("slug[bot]"); its comments are ignored.
	BotLogin string
	// AllowedBots lists the bots whose comments are read like a person's, by
	// login ("renovate[bot]", any case). Listing a bot only lets its comments
	// be parsed: whether it may ask for anything is still decided by the
	// permission API, as for anyone. Every other bot is ignored, and BotLogin
	// never counts as listed, so the bot cannot answer itself.
	AllowedBots []string
	// Serves reports whether the bot works for an installation (0 when the
	// delivery names none) and the login of the repository's owner, as
	// GitHub spells it; nil serves everyone. It runs before the answer is
	// written, so it must be quick and do no I/O. A delivery it refuses is
	// acknowledged and recorded like any ignored one, and starts nothing.
	Serves func(installationID int64, owner string) bool
	// OneToken is true when the bot acts with a single token whatever the
	// installation (a GitHub Actions step with the job's token), so events
	// that name no installation, as a workflow's do, are acted on.
	OneToken bool
	// Recorder is where deliveries and tasks go (a task.Store). Required.
	Recorder Recorder
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
	// MaxBody is the largest body accepted, in bytes; DefaultMaxBody when 0.
	MaxBody int64
	// Observe, when set, is told of every delivery once it is answered
	// (for metrics): the X-GitHub-Event header as sent, which is not
	// verified when the signature was bad and so must be bounded by the
	// caller, and the outcome that is logged, one of a fixed set of words
	// ("fix", "approve", "no_command", "bad_signature", "duplicate", …;
	// see outcomes), or "other".
	Observe func(event, outcome string)
	// Tracer, when set, traces each delivery that records a task: its
	// span is the root of the task's trace (task.Task.Trace), so the
	// trace runs from the delivery to the task's end. Nil traces nothing.
	Tracer trace.Tracer
}

// DefaultMaxBody is GitHub's payload cap: larger events are never delivered.
const DefaultMaxBody = 25 << 20

// Marker starts the hidden HTML comment the bot puts in everything it posts;
// a comment holding it is never read as a command.
const Marker = "<!-- pullwright:"

const (
	// recordTimeout bounds the store write; GitHub gives up after 10 seconds.
	recordTimeout = 8 * time.Second
	// maxDeliveryID bounds the X-GitHub-Delivery header (a GUID in practice).
	maxDeliveryID = 200
)

// Handler answers GitHub's webhook deliveries. It is safe for concurrent use.
type Handler struct {
	secret   []byte
	word     string
	botLogin string
	// botSlug is the app's slug, which GitHub names in a comment's
	// performed_via_github_app when the app posts on someone's behalf.
	botSlug string
	// allowedBots holds the lower-cased logins of Config.AllowedBots.
	allowedBots map[string]bool
	serves      func(installationID int64, owner string) bool
	oneToken    bool
	rec         Recorder
	observe     func(event, outcome string)
	tracer      trace.Tracer
	log         *slog.Logger
	now         func() time.Time
	maxBody     int64
}

// New checks cfg and builds a Handler.
func New(cfg Config) (*Handler, error) {
	if len(cfg.Secret) == 0 {
		return nil, errors.New("webhook: a secret is required")
	}
	if cfg.Recorder == nil {
		return nil, errors.New("webhook: a recorder is required")
	}
	word := cfg.Command
	if word == "" {
		word = DefaultCommand
	}
	if strings.ContainsAny(word, " \t\r\n") {
		return nil, fmt.Errorf("webhook: command word %q contains whitespace", word)
	}
	if cfg.MaxBody < 0 {
		return nil, fmt.Errorf("webhook: negative MaxBody %d", cfg.MaxBody)
	}
	h := &Handler{
		secret:      append([]byte(nil), cfg.Secret...),
		word:        word,
		botLogin:    cfg.BotLogin,
		allowedBots: make(map[string]bool, len(cfg.AllowedBots)),
		serves:      cfg.Serves,
		oneToken:    cfg.OneToken,
		rec:         cfg.Recorder,
		observe:     cfg.Observe,
		tracer:      cfg.Tracer,
		log:         cfg.Logger,
		now:         cfg.Now,
		maxBody:     cfg.MaxBody,
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	if slug, ok := strings.CutSuffix(strings.ToLower(cfg.BotLogin), "[bot]"); ok {
		h.botSlug = slug
	}
	for _, login := range cfg.AllowedBots {
		login = strings.TrimSpace(login)
		if login == "" || strings.ContainsAny(login, " \t\r\n,") {
			return nil, fmt.Errorf("webhook: allowed bot %q is not a login", login)
		}
		if h.isSelf(login) {
			// Listing it would let the bot answer its own comments.
			h.log.Warn("the app's own login is listed in the allowed bots; its comments stay ignored", "login", login)
			continue
		}
		h.allowedBots[strings.ToLower(login)] = true
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.maxBody == 0 {
		h.maxBody = DefaultMaxBody
	}
	return h, nil
}

// outcomes are the words outcome.what may hold: Config.Observe gets one of
// them, or "other", so that a metric labelled by them stays bounded.
var outcomes = map[string]bool{
	// Refused before the delivery is known to be GitHub's, or not recorded.
	"bad_method": true, "too_large": true, "bad_body": true, "bad_signature": true,
	"bad_headers": true, "bad_payload": true, "duplicate": true, "store_failed": true,
	// Recorded, nothing to do.
	"ping": true, "event_ignored": true, "not_served": true, "no_installation": true,
	"comment_not_created": true, "comment_incomplete": true, "comment_by_self": true,
	"review_comment_not_created": true, "review_comment_incomplete": true,
	"comment_has_marker": true, "comment_by_bot": true, "no_command": true, "unknown_verb": true,
	"check_run_ignored": true, "check_run_incomplete": true, "action_by_bot": true,
	"check_run_not_ours": true, "unknown_action": true,
	// Recorded with a task.
	"fix": true, "cancel": true, "status": true, "approve": true, "reject": true, "help": true,
	"reply": true, "locked": true, "fix_without_instructions": true, "already_active": true,
	"review": true, "review_not_on_pull": true,
	"button_approve": true, "button_reject": true,
	// issues deliveries: recorded, nothing to do.
	"issue_event_ignored": true, "issue_event_incomplete": true, "issue_event_by_self": true,
	"issue_event_by_bot": true, "assigned_to_other": true, "issue_locked": true,
	// issues deliveries recorded with a task the worker weighs.
	"label_added": true, "label_removed": true, "assigned": true,
}

// outcome collects what is logged once per delivery.
type outcome struct {
	status       int
	what         string
	deliveryID   string
	event        string
	action       string
	installation int64
	owner        string
	repo         string
	issue        int
	taskID       int64
	kind         task.Kind
	err          error
}

func (o *outcome) attrs() []slog.Attr {
	a := []slog.Attr{
		slog.String("delivery_id", o.deliveryID),
		slog.String("event", o.event),
		slog.String("action", o.action),
		slog.Int64("installation_id", o.installation),
		slog.String("owner", o.owner),
		slog.String("repo", o.repo),
		slog.Int("issue", o.issue),
		slog.String("outcome", o.what),
		slog.Int("status", o.status),
	}
	if o.taskID != 0 {
		a = append(a, slog.Int64("task_id", o.taskID), slog.String("kind", string(o.kind)))
	}
	if o.err != nil {
		a = append(a, slog.String("error", o.err.Error()))
	}
	return a
}

// ServeHTTP handles one delivery: method, size, signature, headers and JSON
// are checked in that order; the delivery (and the task it asks for, if any)
// is committed to the store before the answer is written.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o := &outcome{}
	defer func() {
		level := slog.LevelInfo
		switch {
		case o.status >= 500:
			level = slog.LevelError
		case o.status >= 400:
			level = slog.LevelWarn
		}
		h.log.LogAttrs(r.Context(), level, "webhook delivery", o.attrs()...)
		if h.observe != nil {
			what := o.what
			if !outcomes[what] {
				what = "other"
			}
			h.observe(r.Header.Get("X-GitHub-Event"), what)
		}
	}()
	reply := func(status int, what, body string) {
		o.status, o.what = status, what
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(status)
		io.WriteString(w, body+"\n")
	}
	// Headers are logged only once the signature is known to be good.

	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		reply(http.StatusMethodNotAllowed, "bad_method", "method not allowed")
		return
	}
	if r.ContentLength > h.maxBody {
		reply(http.StatusRequestEntityTooLarge, "too_large", "payload too large")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			reply(http.StatusRequestEntityTooLarge, "too_large", "payload too large")
			return
		}
		o.err = err
		reply(http.StatusBadRequest, "bad_body", "cannot read body")
		return
	}
	if !h.validSignature(body, r.Header.Get("X-Hub-Signature-256")) {
		reply(http.StatusUnauthorized, "bad_signature", "missing or invalid X-Hub-Signature-256")
		return
	}

	o.event = r.Header.Get("X-GitHub-Event")
	o.deliveryID = r.Header.Get("X-GitHub-Delivery")
	if o.event == "" || o.deliveryID == "" {
		reply(http.StatusBadRequest, "bad_headers", "missing X-GitHub-Event or X-GitHub-Delivery")
		return
	}
	if len(o.deliveryID) > maxDeliveryID {
		reply(http.StatusBadRequest, "bad_headers", "X-GitHub-Delivery too long")
		return
	}
	payload, err := jsonPayload(r.Header.Get("Content-Type"), body)
	if err != nil {
		o.err = err
		reply(http.StatusBadRequest, "bad_payload", err.Error())
		return
	}
	var p event
	if err := json.Unmarshal(payload, &p); err != nil {
		// A field of an unexpected type only matters where we act on it: there
		// a field left at its zero value (a sender's type, say) could change
		// the decision. Other events are recorded with whatever did decode.
		var typeErr *json.UnmarshalTypeError
		if !errors.As(err, &typeErr) || h.actor(o.event) != nil {
			o.err = err
			reply(http.StatusBadRequest, "bad_payload", "invalid JSON payload")
			return
		}
	}
	o.action = p.Action
	if p.Installation != nil {
		o.installation = p.Installation.ID
	}
	if p.Repository != nil {
		o.owner, o.repo = p.Repository.Owner.Login, p.Repository.FullName
	}
	switch {
	case p.Issue != nil:
		o.issue = p.Issue.Number
	case p.PullRequest != nil:
		o.issue = p.PullRequest.Number
	}

	now := h.now()
	d := task.Delivery{ID: o.deliveryID, Event: o.event, Action: p.Action, ReceivedAt: now}
	t, why := h.decide(d, &p)
	d.Head = h.headPush(d, &p)

	ctx, cancel := context.WithTimeout(r.Context(), recordTimeout)
	defer cancel()
	var span trace.Span
	if t != nil && h.tracer != nil {
		ctx, span = h.tracer.Start(ctx, "webhook "+d.Event, trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", http.MethodPost), attribute.String("http.route", r.URL.Path),
				attribute.String("github.event", d.Event), attribute.String("github.delivery", d.ID),
				attribute.String("pullwright.task.kind", string(t.Kind))))
		t.Trace = tracing.Parent(ctx)
	}
	t, why, err = Record(ctx, h.rec, d, t, why)
	if span != nil {
		if t != nil && err == nil {
			span.SetAttributes(attribute.Int64("pullwright.task.id", t.ID))
		}
		tracing.End(span, err)
	}
	switch {
	case errors.Is(err, task.ErrDuplicate):
		reply(http.StatusOK, "duplicate", "duplicate delivery")
	case err != nil:
		o.err = err
		reply(http.StatusServiceUnavailable, "store_failed", "cannot record delivery; please redeliver")
	case t != nil:
		o.taskID, o.kind = t.ID, t.Kind
		reply(http.StatusAccepted, why, "accepted")
	case o.event == "ping":
		reply(http.StatusOK, why, "pong")
	default:
		reply(http.StatusOK, why, "ignored")
	}
}

// validSignature checks header against the HMAC-SHA256 of body, in constant time.
func (h *Handler) validSignature(body []byte, header string) bool {
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	mac := hmac.New(sha256.New, h.secret)
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

// jsonPayload returns the JSON document of a body, which a hook may send as
// application/json or as the "payload" field of a form.
func jsonPayload(contentType string, body []byte) ([]byte, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt != "application/x-www-form-urlencoded" {
		return body, nil
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, errors.New("invalid form body")
	}
	if !form.Has("payload") {
		return nil, errors.New("form body without payload")
	}
	return []byte(form.Get("payload")), nil
}

// decide turns a verified delivery into at most one task, and says why.
func (h *Handler) decide(d task.Delivery, p *event) (*task.Task, string) {
	act := h.actor(d.Event)
	switch {
	case d.Event == "ping":
		return nil, "ping"
	case act == nil:
		return nil, "event_ignored"
	case !h.served(p):
		// Checked here rather than in each actor, so that an event handled
		// later cannot forget it.
		return nil, "not_served"
	}
	return act(d, p)
}

// headPush is the commit a pull_request delivery brought the pull
// request's head to, with GitHub's time of it, for the fork checks: nil
// for every other delivery, and for one that lacks what it takes.
func (h *Handler) headPush(d task.Delivery, p *event) *task.HeadPush {
	if d.Event != "pull_request" || p.PullRequest == nil || p.Repository == nil || !h.served(p) {
		return nil
	}
	switch d.Action {
	case "opened", "reopened", "synchronize":
	default:
		return nil
	}
	pr := p.PullRequest
	at, err := time.Parse(time.RFC3339, pr.UpdatedAt)
	if err != nil || pr.Number <= 0 || !isSHA(pr.Head.SHA) {
		return nil
	}
	return &task.HeadPush{PullKey: task.PullKey(p.repo(), pr.Number), SHA: pr.Head.SHA, At: at.UTC()}
}

// isSHA reports whether s is a full lower-case hex commit SHA.
func isSHA(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// actor returns what turns an event into a task; nil for the events the
// handler only records.
func (h *Handler) actor(name string) func(task.Delivery, *event) (*task.Task, string) {
	switch name {
	case "issue_comment":
		return h.issueComment
	case "pull_request_review_comment":
		return h.reviewComment
	case "check_run":
		return h.checkRun
	case "issues":
		return h.issues
	}
	return nil
}

// served asks Config.Serves about the delivery's installation and owner.
func (h *Handler) served(p *event) bool {
	if h.serves == nil {
		return true
	}
	var (
		installationID int64
		owner          string
	)
	if p.Installation != nil {
		installationID = p.Installation.ID
	}
	if p.Repository != nil {
		owner = p.Repository.Owner.Login
	}
	return h.serves(installationID, owner)
}

// isSelf reports whether login is the app's own.
func (h *Handler) isSelf(login string) bool {
	return h.botLogin != "" && strings.EqualFold(login, h.botLogin)
}

// isBot reports whether u is an app. The "[bot]" suffix counts as well as
// the type: no person's login can hold brackets, and a payload that says
// "User" for an app must not open a loop.
func isBot(u *user) bool {
	return u != nil && (u.Type == "Bot" || strings.HasSuffix(strings.ToLower(u.Login), "[bot]"))
}

// listed reports whether u is a person or a bot of Config.AllowedBots.
func (h *Handler) listed(u *user) bool {
	return !isBot(u) || h.allowedBots[strings.ToLower(u.Login)]
}

// wroteSelf reports whether the app wrote c: as its author, or through a
// person's token (performed_via_github_app), which GitHub shows as theirs.
func (h *Handler) wroteSelf(sender *user, c *comment) bool {
	if h.isSelf(sender.Login) || (c.User != nil && h.isSelf(c.User.Login)) {
		return true
	}
	return h.botSlug != "" && c.PerformedVia != nil && strings.EqualFold(c.PerformedVia.Slug, h.botSlug)
}

// issueComment reads a comment on an issue or on a pull request's
// conversation.
func (h *Handler) issueComment(d task.Delivery, p *event) (*task.Task, string) {
	switch {
	case p.Action != "created":
		return nil, "comment_not_created"
	case p.Comment == nil || p.Issue == nil || p.Repository == nil || p.Sender == nil:
		return nil, "comment_incomplete"
	}
	return h.command(d, p, ask{
		commentID: p.Comment.ID,
		number:    p.Issue.Number,
		title:     p.Issue.Title,
		body:      p.Issue.Body,
		locked:    p.Issue.Locked,
		isPR:      p.Issue.PullRequest != nil,
	})
}

// reviewComment reads a review (line) comment on a pull request's diff.
func (h *Handler) reviewComment(d task.Delivery, p *event) (*task.Task, string) {
	switch {
	case p.Action != "created":
		return nil, "review_comment_not_created"
	case p.Comment == nil || p.PullRequest == nil || p.Repository == nil || p.Sender == nil:
		return nil, "review_comment_incomplete"
	case p.Comment.ID == 0:
		// GitHub's review comments always have an id; without one the
		// task could neither react to the comment nor reply in its thread.
		return nil, "review_comment_incomplete"
	}
	c := p.Comment
	return h.command(d, p, ask{
		// A review comment's reactions and replies go through other
		// endpoints than an issue comment's: the task reaches it through
		// Review, and a comment id here would be read as an issue comment's.
		commentID: 0,
		number:    p.PullRequest.Number,
		title:     p.PullRequest.Title,
		locked:    p.PullRequest.Locked,
		isPR:      true,
		review: &task.ReviewRef{
			CommentID: c.ID,
			InReplyTo: c.InReplyTo,
			Path:      c.Path,
			Line:      c.Line,
			StartLine: c.StartLine,
			Side:      c.Side,
			DiffHunk:  c.DiffHunk,
			CommitID:  c.CommitID,
			Body:      c.Body,
			URL:       c.HTMLURL,
		},
	})
}

// ask is what command needs to know of the conversation a comment was
// written in, whichever event brought the comment.
type ask struct {
	commentID int64
	number    int
	title     string
	// body is the issue's description, which an empty fix on an issue
	// works from.
	body   string
	locked bool
	isPR   bool
	review *task.ReviewRef
}

// command turns p.Comment into a task, with the same protections and verbs
// for every kind of comment. The caller has checked that the comment, the
// repository and the sender are present.
func (h *Handler) command(d task.Delivery, p *event, a ask) (*task.Task, string) {
	switch {
	case h.wroteSelf(p.Sender, p.Comment):
		return nil, "comment_by_self"
	case strings.Contains(p.Comment.Body, Marker):
		// Whoever posted it: a bot quoting the bot's reply, or a person
		// pasting it, must not turn one task into the next.
		return nil, "comment_has_marker"
	case !h.listed(p.Sender) || !h.listed(p.Comment.User):
		return nil, "comment_by_bot"
	}
	res := Parse(h.word, p.Comment.Body)
	if res.Ignored() {
		return nil, "no_command"
	}
	if !h.oneToken && (p.Installation == nil || p.Installation.ID == 0) {
		// Without an installation there is no token to act with.
		return nil, "no_installation"
	}

	t := &task.Task{
		State:      task.Queued,
		DeliveryID: d.ID,
		Repo:       p.repo(),
		Issue:      a.number,
		IsPR:       a.isPR,
		Review:     a.review,
		CommentID:  a.commentID,
		Requester:  task.Person{Login: p.Sender.Login, ID: p.Sender.ID},
		IssueTitle: a.title,
		CreatedAt:  d.ReceivedAt,
		RunAfter:   d.ReceivedAt,
	}
	if at, err := time.Parse(time.RFC3339, p.Comment.CreatedAt); err == nil {
		t.AskedAt = at.UTC()
	}
	if res.Reply != "" {
		return h.replyTask(t, res.Reply), "reply"
	}
	c := res.Command
	switch c.Verb {
	case Fix:
		switch {
		case a.locked:
			return h.replyTask(t, "This conversation is locked, so I won't work on it here. Unlock it, or ask again in an open conversation."), "locked"
		case c.Args == "" && !a.isPR && strings.TrimSpace(a.body) == "":
			// On a pull request an empty fix has work to go on: the
			// unresolved review comments, or the one it was asked in.
			return h.replyTask(t, fmt.Sprintf(
				"What should I fix? The issue has no description and the command none either: write the instructions after `%s fix`, or describe the problem in the issue and ask again.\n\n%s",
				h.word, Usage(h.word))), "fix_without_instructions"
		}
		t.Kind, t.Instructions, t.Mode = task.KindFix, c.Args, task.Mode(c.Mode)
	case Review:
		switch {
		case !a.isPR:
			return h.replyTask(t, fmt.Sprintf("`%s review` works on a pull request: ask it in the pull request's conversation.", h.word)), "review_not_on_pull"
		case a.locked:
			return h.replyTask(t, "This conversation is locked, so I won't review it here. Unlock it, or ask again in an open conversation."), "locked"
		}
		t.Kind, t.Instructions = task.KindReview, c.Args
	case Help:
		return h.replyTask(t, Usage(h.word)), "help"
	case Cancel:
		t.Kind, t.Instructions = task.KindCancel, c.Args
	case Status:
		t.Kind, t.Instructions = task.KindStatus, c.Args
	case Approve:
		t.Kind, t.Answering.RequestID = task.KindApprove, c.Args
	case Reject:
		t.Kind, t.Instructions = task.KindReject, c.Args
	default:
		return nil, "unknown_verb"
	}
	return t, string(c.Verb)
}

// checkRun turns a press of the approval check run's Approve or Reject
// button into an answer task. The request it answers is the run's
// external_id, bound to the commit the run is on.
func (h *Handler) checkRun(d task.Delivery, p *event) (*task.Task, string) {
	switch {
	case p.Action != "requested_action":
		return nil, "check_run_ignored"
	case p.CheckRun == nil || p.RequestedAction == nil || p.Repository == nil || p.Sender == nil:
		return nil, "check_run_incomplete"
	case isBot(p.Sender) || h.isSelf(p.Sender.Login):
		// Buttons are pressed by people; AllowedBots is about comments.
		return nil, "action_by_bot"
	case !h.oneToken && (p.Installation == nil || p.Installation.ID == 0):
		return nil, "no_installation"
	case p.CheckRun.ExternalID == "":
		return nil, "check_run_not_ours"
	}
	t := &task.Task{
		State:      task.Queued,
		DeliveryID: d.ID,
		Repo:       p.repo(),
		Requester:  task.Person{Login: p.Sender.Login, ID: p.Sender.ID},
		Answering:  task.AnswerRef{RequestID: p.CheckRun.ExternalID, SHA: p.CheckRun.HeadSHA, Run: p.CheckRun.ID},
		CreatedAt:  d.ReceivedAt,
		RunAfter:   d.ReceivedAt,
	}
	switch p.RequestedAction.Identifier {
	case "approve":
		t.Kind = task.KindApprove
	case "reject":
		t.Kind, t.Instructions = task.KindReject, "rejected with the check run's button"
	default:
		return nil, "unknown_action"
	}
	return t, "button_" + p.RequestedAction.Identifier
}

// issues turns the issue events that may start or stop a fix into a
// trigger task: a label added or removed, the bot assigned. Whether a label
// is the repository's is written in its configuration, which only the
// worker reads, so every label by a person becomes a task, and who may ask
// is checked there too, as for a comment. A pull request's labels come as
// pull_request events, which start nothing: "/agent fix" on the pull
// request does that.
func (h *Handler) issues(d task.Delivery, p *event) (*task.Task, string) {
	var name, why string
	switch p.Action {
	case task.TriggerLabeled, task.TriggerUnlabeled:
		if p.Label == nil || p.Label.Name == "" {
			return nil, "issue_event_incomplete"
		}
		name = p.Label.Name
		why = map[string]string{task.TriggerLabeled: "label_added", task.TriggerUnlabeled: "label_removed"}[p.Action]
	case task.TriggerAssigned:
		// Unassigning the bot cancels nothing: it also happens when
		// someone tidies the assignees, and "/agent cancel" or the label
		// says "stop" unmistakably.
		if p.Assignee == nil || !h.isSelf(p.Assignee.Login) {
			return nil, "assigned_to_other"
		}
		why = "assigned"
	default:
		return nil, "issue_event_ignored"
	}
	switch {
	case p.Issue == nil || p.Repository == nil || p.Sender == nil:
		return nil, "issue_event_incomplete"
	case h.isSelf(p.Sender.Login):
		// The bot labelling or assigning for a task of its own must not
		// start the next one.
		return nil, "issue_event_by_self"
	case !h.listed(p.Sender):
		return nil, "issue_event_by_bot"
	case p.Issue.PullRequest != nil:
		return nil, "issue_event_ignored"
	case p.Issue.Locked && p.Action != task.TriggerUnlabeled:
		// Removing the label still stops a task, as "/agent cancel" on a
		// locked issue does.
		return nil, "issue_locked"
	case !h.oneToken && (p.Installation == nil || p.Installation.ID == 0):
		return nil, "no_installation"
	}
	t := &task.Task{
		Kind:       task.KindTrigger,
		State:      task.Queued,
		DeliveryID: d.ID,
		Repo:       p.repo(),
		Issue:      p.Issue.Number,
		IssueTitle: p.Issue.Title,
		Requester:  task.Person{Login: p.Sender.Login, ID: p.Sender.ID},
		Trigger:    &task.TriggerRef{Action: p.Action, Label: name},
		CreatedAt:  d.ReceivedAt,
		RunAfter:   d.ReceivedAt,
	}
	// GitHub dates the label's change as the issue's update: the worker
	// orders a removal and a fix by it, not by when deliveries arrived.
	if at, err := time.Parse(time.RFC3339, p.Issue.UpdatedAt); err == nil {
		t.AskedAt = at.UTC()
	}
	return t, why
}

// replyTask makes a KindReply task that posts text on t's conversation.
func (h *Handler) replyTask(t *task.Task, text string) *task.Task {
	r := *t
	r.ID = 0
	r.Kind = task.KindReply
	r.Instructions = ""
	r.Reply = text
	return &r
}
