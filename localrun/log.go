package localrun

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/pullwright/pullwright/internal/words"
)

// terminalLog is the slog.Handler of a run's loggers (agent, runner,
// setup): the user at a terminal reads each record as one sentence,
// "warning: model call failed: <the error>.", never as a key=value log
// line. Attributes other than the error are details for -v only; what a
// failure means for the run is said by the run itself, in its output.
type terminalLog struct {
	w     io.Writer
	level slog.Level
	// details shows the attributes besides err (with -v).
	details bool
	attrs   []slog.Attr
	group   string
}

func newTerminalLog(w io.Writer, level slog.Level, details bool) *terminalLog {
	return &terminalLog{w: w, level: level, details: details}
}

func (h *terminalLog) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *terminalLog) Handle(_ context.Context, r slog.Record) error {
	attrs := slices.Clone(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		if h.group != "" {
			a.Key = h.group + "." + a.Key
		}
		attrs = append(attrs, a)
		return true
	})
	var cause string
	var details []string
	for _, a := range attrs {
		v := a.Value.Resolve()
		switch {
		case a.Key == "err" || a.Key == "error":
			cause = v.String()
		case a.Key == "component":
			// The message names its part already ("runner: …").
		case h.details:
			details = append(details, a.Key+" "+v.String())
		}
	}
	line := strings.TrimSpace(r.Message)
	if cause != "" {
		line += ": " + cause
	}
	line = strings.TrimRight(line, ".") + "."
	if len(details) > 0 {
		line += " (" + strings.Join(details, ", ") + ")"
	}
	_, err := fmt.Fprintf(h.w, "  %s: %s\n", levelWord(r.Level), words.Clip(oneLine(line), 400))
	return err
}

func (h *terminalLog) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = slices.Clone(h.attrs)
	for _, a := range attrs {
		if h.group != "" {
			a.Key = h.group + "." + a.Key
		}
		c.attrs = append(c.attrs, a)
	}
	return &c
}

func (h *terminalLog) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	if c.group != "" {
		name = c.group + "." + name
	}
	c.group = name
	return &c
}

// levelWord is how a record's level reads at the start of its line.
func levelWord(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "error"
	case l >= slog.LevelWarn:
		return "warning"
	}
	return "note"
}
