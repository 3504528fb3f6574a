package tasktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/task"
)

// Turn is one scripted turn of the Agent: the files it writes into the
// workspace (an empty content deletes the file), then what it answers.
type Turn struct {
	Write    map[string]string
	Progress task.Progress
	// Err is returned instead of Progress (after the writes).
	Err error
	// During runs while the turn runs: what a person does meanwhile.
	During func()
}

// Agent is a scripted fake of task.Agent: each Turn takes the next of
// Script. The conversation is a string the fake grows, so that a test can
// see that the task kept it.
type Agent struct {
	mu sync.Mutex
	// Script are the turns still to come.
	Script []Turn
	// StartErr and ResolveErr fail Start and Resolve.
	StartErr, ResolveErr error

	Briefs   []pullwright.Brief
	Outcomes []task.Outcome
	// Conversations are those each Turn was given.
	Conversations []string
	Workdirs      []string
	turns         int
}

// ErrScriptEnded is what Turn returns when the script has no more turns.
var ErrScriptEnded = errors.New("the agent's script has no more turns")

func (a *Agent) Start(b pullwright.Brief) ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.Briefs = append(a.Briefs, b)
	if a.StartErr != nil {
		return nil, a.StartErr
	}
	return []byte("start"), nil
}

// Turn writes the next scripted turn's files into workdir and returns its
// Progress, with the conversation grown and Turns counted when the script
// leaves them out.
func (a *Agent) Turn(ctx context.Context, repo string, conversation []byte, workdir string) (task.Progress, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.Conversations = append(a.Conversations, string(conversation))
	a.Workdirs = append(a.Workdirs, workdir)
	if len(a.Script) == 0 {
		return task.Progress{}, task.Fatal("the model endpoint refused the request", ErrScriptEnded)
	}
	turn := a.Script[0]
	a.Script = a.Script[1:]
	if turn.During != nil {
		turn.During()
	}
	for p, c := range turn.Write {
		full := filepath.Join(workdir, filepath.FromSlash(p))
		if c == "" {
			if err := os.Remove(full); err != nil {
				return task.Progress{}, err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return task.Progress{}, err
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			return task.Progress{}, err
		}
	}
	if turn.Err != nil {
		return task.Progress{}, turn.Err
	}
	a.turns++
	p := turn.Progress
	if p.Conversation == nil {
		p.Conversation = fmt.Appendf(conversation, "|turn %d", a.turns)
	}
	if p.Turns == 0 {
		p.Turns = a.turns
	}
	return p, nil
}

// Resolve records the outcome and adds it to the conversation. When the
// outcome has a workspace (Outcome.Workdir), the run's changes are
// written into it as they came, and said kept: the rules the real agent
// keeps them under are its own, tested in agent.
func (a *Agent) Resolve(conversation []byte, o task.Outcome) (task.Resolved, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.Outcomes = append(a.Outcomes, o)
	if a.ResolveErr != nil {
		return task.Resolved{}, a.ResolveErr
	}
	r := task.Resolved{Conversation: fmt.Appendf(conversation, "|%s", o.Verdict)}
	if o.Workdir == "" || o.Result == nil {
		return r, nil
	}
	if o.Result.KeptNote != "" {
		r.KeptNote = o.Result.KeptNote
		return r, nil
	}
	for _, c := range o.Result.Changes {
		p := filepath.Join(o.Workdir, filepath.FromSlash(c.Path))
		st := pullwright.FileStat{Path: c.Path}
		if c.Deleted {
			if err := os.Remove(p); err != nil {
				return task.Resolved{}, err
			}
		} else {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return task.Resolved{}, err
			}
			mode := os.FileMode(0o644)
			if c.Executable {
				mode = 0o755
			}
			if err := os.WriteFile(p, c.Content, mode); err != nil {
				return task.Resolved{}, err
			}
			if err := os.Chmod(p, mode); err != nil {
				return task.Resolved{}, err
			}
			st.Added = bytes.Count(c.Content, []byte("\n"))
		}
		r.Kept = append(r.Kept, st)
	}
	return r, nil
}
