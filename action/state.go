package action

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pullwright/pullwright/task"
)

// Between two runs, a task waiting for an answer lives in the repository
// itself, in two parts:
//
//   - its work so far on the pushed work branch, as for any task;
//   - its state (conversation, pending request, settings) as a sealed
//     document in a commit under StateRefPrefix, one ref per task, named
//     for its issue and id.
//
// A ref outside refs/heads is not a branch: it shows in no branch list,
// no clone fetches it, a push to it starts no workflow, and the workflow's
// own token (contents: write) can write it, with no storage of our own and
// no size limit such as a comment's 65,536 characters. It is readable by
// whoever can read the repository, so it holds nothing the issue and the
// branch do not already show to them, and no credential.
//
// The document is sealed with HMAC-SHA256 under the state-key secret:
// anyone may be able to push to the ref, but without the key nobody can
// write a state the next run accepts, so a forged conversation or pending
// command is refused, not run. The seal covers the repository, so a state
// copied from another repository fails too.

// StateRefPrefix is where states are kept.
const StateRefPrefix = "refs/pullwright/state/"

// StateFile is the name of the document in the state commit.
const StateFile = "state.json"

// StateFormat and StateVersion identify the document. A version this
// binary does not know is refused with a message, never guessed at.
const (
	StateFormat  = "pullwright-action-state"
	StateVersion = 1
)

// StateRef is the ref of a task's state.
func StateRef(issue int, taskID int64) string {
	return fmt.Sprintf("%sissue-%d-task-%d", StateRefPrefix, issue, taskID)
}

var stateRefRE = regexp.MustCompile(`^` + regexp.QuoteMeta(StateRefPrefix) + `issue-([0-9]+)-task-([0-9]+)$`)

// ParseStateRef reads a StateRef back.
func ParseStateRef(ref string) (issue int, taskID int64, ok bool) {
	m := stateRefRE.FindStringSubmatch(ref)
	if m == nil {
		return 0, 0, false
	}
	i, err1 := strconv.Atoi(m[1])
	id, err2 := strconv.ParseInt(m[2], 10, 64)
	return i, id, err1 == nil && err2 == nil
}

// state is the sealed part of the document.
type state struct {
	Format  string          `json:"format"`
	Version int             `json:"version"`
	Repo    string          `json:"repo"`
	Issue   int             `json:"issue"`
	TaskID  int64           `json:"task_id"`
	Branch  string          `json:"branch"`
	Request string          `json:"request"`
	SHA     string          `json:"sha"`
	SavedAt time.Time       `json:"saved_at"`
	Task    json.RawMessage `json:"task"`
}

// document is what the ref holds: the state exactly as sealed, and its seal.
type document struct {
	State json.RawMessage `json:"state"`
	Seal  string          `json:"seal"`
}

const sealScheme = "hmac-sha256:"

var (
	// ErrStateTampered means the seal does not match: the state was changed,
	// or sealed with another key or for another repository.
	ErrStateTampered = errors.New("the saved state failed its integrity check")
	// ErrStateReplayed means the state is genuine but not the task's
	// latest: the request it waits on was answered since, or is no longer
	// shown. Someone put an older state back.
	ErrStateReplayed = errors.New("the saved state is not the task's latest: its request is no longer waiting")
	// ErrStateVersion means the state was written by a Pullwright whose
	// format this one does not read.
	ErrStateVersion = errors.New("the saved state has a format this version does not read")
)

func seal(key []byte, repo string, raw []byte) string {
	m := hmac.New(sha256.New, key)
	// The repository is part of what is sealed: the same key may serve
	// several repositories.
	m.Write([]byte(StateFormat + "\x00" + strings.ToLower(repo) + "\x00"))
	m.Write(raw)
	return sealScheme + hex.EncodeToString(m.Sum(nil))
}

// Seal makes the document that keeps t, which waits for an answer, until the
// next run.
func Seal(key []byte, t *task.Task, now time.Time) ([]byte, error) {
	if len(key) < MinStateKey {
		return nil, errors.New("seal state: the state key is too short")
	}
	j, ok := t.Job()
	if !ok || j.Request == nil {
		return nil, fmt.Errorf("seal state of task %d: it has no request", t.ID)
	}
	body, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("seal state of task %d: %w", t.ID, err)
	}
	raw, err := json.Marshal(state{
		Format: StateFormat, Version: StateVersion,
		Repo: t.Repo.FullName(), Issue: t.Issue, TaskID: t.ID,
		Branch: j.Branch, Request: j.Request.ID, SHA: j.Request.SHA,
		SavedAt: now.UTC(), Task: body,
	})
	if err != nil {
		return nil, fmt.Errorf("seal state of task %d: %w", t.ID, err)
	}
	out, err := json.MarshalIndent(document{State: raw, Seal: seal(key, t.Repo.FullName(), raw)}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("seal state of task %d: %w", t.ID, err)
	}
	return out, nil
}

// Open checks a document's seal against key and repo, then returns the task
// it keeps. Nothing of the document is trusted before the seal is checked.
func Open(key []byte, repo string, data []byte) (*task.Task, error) {
	var doc document
	if err := json.Unmarshal(data, &doc); err != nil || len(doc.State) == 0 {
		return nil, fmt.Errorf("open state: %w", ErrStateTampered)
	}
	// The version is read before the seal only to word the refusal: a
	// newer format may be sealed differently. Either way nothing is used.
	var head struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
	}
	if json.Unmarshal(doc.State, &head) == nil && (head.Format != StateFormat || head.Version != StateVersion) {
		return nil, fmt.Errorf("open state: %q version %d: %w", head.Format, head.Version, ErrStateVersion)
	}
	// The document is indented for people who look at it; the seal is over
	// the compact form, which indenting does not change.
	var compact bytes.Buffer
	if err := json.Compact(&compact, doc.State); err != nil {
		return nil, fmt.Errorf("open state: %w", ErrStateTampered)
	}
	doc.State = compact.Bytes()
	want := seal(key, repo, doc.State)
	if !hmac.Equal([]byte(doc.Seal), []byte(want)) {
		return nil, fmt.Errorf("open state: %w", ErrStateTampered)
	}
	var st state
	if err := json.Unmarshal(doc.State, &st); err != nil {
		return nil, fmt.Errorf("open state: decode: %w", err)
	}
	if st.Format != StateFormat || st.Version != StateVersion {
		return nil, fmt.Errorf("open state: %q version %d: %w", st.Format, st.Version, ErrStateVersion)
	}
	t := new(task.Task)
	if err := json.Unmarshal(st.Task, t); err != nil {
		return nil, fmt.Errorf("open state: decode task: %w", err)
	}
	// The envelope's fields repeat the task's so that a reader can see what
	// a ref holds; a mismatch cannot come from Seal.
	switch {
	case !strings.EqualFold(st.Repo, repo) || !strings.EqualFold(t.Repo.FullName(), repo):
		return nil, fmt.Errorf("open state: it belongs to %s, not %s: %w", st.Repo, repo, ErrStateTampered)
	}
	j, ok := t.Job()
	if !ok || t.ID != st.TaskID || t.Issue != st.Issue || j.Request == nil || j.Request.ID != st.Request || j.Request.SHA != st.SHA || j.Branch != st.Branch {
		return nil, fmt.Errorf("open state: %w", ErrStateTampered)
	}
	return t, nil
}
