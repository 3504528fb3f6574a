package localrun

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"sync"

	"github.com/pullwright/pullwright/approval"
)

// Rejection reasons the agent is given when nobody was asked.
const (
	reasonNotListed = "not on the --yes-to list"
	reasonNoInput   = "not on the --yes-to list, and it could not be asked: the input ended"
	reasonEOF       = "no answer: the input ended"
	reasonManifests = "it needs the repository's setup to run with the dependency manifests the agent changed, " +
		"which the --yes-to list approves only with --yes-to-setup, and with input that is not a terminal nobody can be asked"
)

// Who answered, in the record of runs, when the list did rather than a
// person: the flags themselves, so that a report or a commit message
// never says a person approved what nobody saw.
const (
	byList      = "--yes-to"
	byListSetup = "--yes-to and --yes-to-setup"
)

// verdict is the answer to one execution request.
type verdict struct {
	approved bool
	// how says why it runs without a question (approvals), or is the
	// reason handed to the agent (rejections).
	how string
	// by is who answered when it was not the person at the terminal:
	// byList or byListSetup; "" for the person.
	by string
}

// asker answers execution requests: from the --yes-to list, from the
// commands approved with "a" earlier in the run, or by asking at the
// terminal.
type asker struct {
	interactive bool
	yes         map[string]bool
	// setupToo lets the list approve a command whose setup runs on
	// manifests the agent changed (--yes-to-setup).
	setupToo bool
	// asking, when set, is called before a question is put at the
	// terminal, and only then: the status says a person is waited for
	// only when one is.
	asking func()
	always map[string]bool
	in     *lineReader
	d      *display
	eof    bool // the input ended: nothing more is asked
}

func newAsker(in io.Reader, interactive bool, yesTo []string, d *display) *asker {
	a := &asker{interactive: interactive, yes: map[string]bool{}, always: map[string]bool{}, in: newLineReader(in), d: d}
	for _, c := range yesTo {
		a.yes[c] = true
	}
	return a
}

func (a *asker) close() { a.in.close() }

// question is what the user sees of a request: the value the request
// comment of serve would show (approval.Request), and where it runs.
type question struct {
	shown approval.Request
	where string // "in the Docker sandbox", "UNSANDBOXED on this machine"
}

// decide answers q. Its error is only ctx's.
func (a *asker) decide(ctx context.Context, q question) (verdict, error) {
	cmd := strings.TrimSpace(q.shown.Command)
	// A setup on manifests the agent changed (or that could not be
	// compared) is answered by the list only when the user said so
	// (--yes-to-setup), and never by an earlier "a": as in serve, where
	// a changed manifest is never auto-approved.
	plain := q.shown.Setup == nil
	switch {
	case plain && a.yes[cmd]:
		return verdict{approved: true, how: "approved by --yes-to", by: byList}, nil
	case a.yes[cmd] && a.setupToo:
		// Nobody reads it as it runs, so the log holds what was
		// approved: the same value a question shows, manifests' diff
		// and all.
		a.d.printf("\n%s", approval.Text(q.shown))
		return verdict{approved: true, how: "approved by " + byListSetup + ": the setup installs the changed manifests first", by: byListSetup}, nil
	case plain && a.always[cmd]:
		return verdict{approved: true, how: "approved with \"a\" earlier in this run"}, nil
	case !a.interactive && !plain && a.yes[cmd]:
		return verdict{how: reasonManifests, by: byList}, nil
	case !a.interactive:
		return verdict{how: reasonNotListed, by: byList}, nil
	case a.eof:
		return verdict{how: reasonNoInput}, nil
	}
	if a.asking != nil {
		a.asking()
	}
	// The same value, sentences and escaping as the request comment.
	a.d.printf("\n%s", approval.Text(q.shown))
	for {
		a.d.prompt("Run it " + q.where + "? [y] yes  [n REASON] no, telling the agent why  [a] yes, also to this exact command later: ")
		line, err := a.in.next(ctx)
		a.d.answered(strings.TrimSpace(line))
		if errors.Is(err, io.EOF) {
			a.eof = true
			return verdict{how: reasonEOF}, nil
		}
		if err != nil {
			return verdict{}, err
		}
		word, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch strings.ToLower(word) {
		case "y", "yes":
			return verdict{approved: true, how: "approved"}, nil
		case "a", "always":
			a.always[cmd] = true
			return verdict{approved: true, how: "approved for the rest of this run"}, nil
		case "n", "no":
			reason := strings.TrimSpace(strings.TrimLeft(rest, " :,-"))
			if reason == "" {
				a.d.prompt("Why not? The agent is told (Enter for no reason): ")
				line, err := a.in.next(ctx)
				a.d.answered(strings.TrimSpace(line))
				if errors.Is(err, io.EOF) {
					a.eof = true
				} else if err != nil {
					return verdict{}, err
				}
				reason = strings.TrimSpace(line)
			}
			return verdict{how: reason}, nil
		}
		a.d.printf("Answer y, n followed by a reason, or a.\n")
	}
}

// lineReader reads lines from the input in a goroutine of its own, one
// per call of next, so that a question can be abandoned when ctx ends
// (Ctrl-C) while the read goes on. The goroutine ends with close, or, if
// it is blocked reading a terminal then, when that read returns (at the
// latest when the process exits).
type lineReader struct {
	r       *bufio.Reader
	req     chan struct{}
	out     chan lineResult
	stop    chan struct{}
	start   sync.Once
	stopped sync.Once
	eof     bool
}

type lineResult struct {
	line string
	err  error
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReader(r), req: make(chan struct{}), out: make(chan lineResult, 1), stop: make(chan struct{})}
}

// next returns the next line without its line ending, or io.EOF at the end
// of the input, or ctx's error.
func (l *lineReader) next(ctx context.Context) (string, error) {
	if l.eof {
		return "", io.EOF
	}
	l.start.Do(func() { go l.loop() })
	select {
	case l.req <- struct{}{}:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	select {
	case r := <-l.out:
		if errors.Is(r.err, io.EOF) {
			l.eof = true
			if r.line != "" {
				return r.line, nil
			}
		}
		return r.line, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (l *lineReader) loop() {
	for {
		select {
		case <-l.stop:
			return
		case <-l.req:
		}
		s, err := l.r.ReadString('\n')
		l.out <- lineResult{line: strings.TrimRight(s, "\r\n"), err: err}
	}
}

func (l *lineReader) close() { l.stopped.Do(func() { close(l.stop) }) }
