package console

import (
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/approval"
	"github.com/pullwright/pullwright/internal/words"
	"github.com/pullwright/pullwright/task"
)

// funcs are the templates' helpers. None returns template.HTML: every
// value a page shows is escaped by html/template.
var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	// shown writes what does not show as itself as its code point, as
	// the request comment and the terminal do (approval.Escape).
	"shown": approval.Escape,
	// line is shown for a value within a line (a path, a name).
	"line":       approval.Line,
	"stateWords": stateWords,
	"duration":   duration,
	"count":      pullwright.Thousands,
	"modelCost":  modelCost,
	"short":      words.Short,
	"run":        func(r task.RunRecord) record { return record{RunRecord: r} },
	"call":       func(r task.RunRecord) record { return record{RunRecord: r, Call: true} },
}

// record is a RunRecord as the task page shows it: the end of a run, or
// of a call of a tool (Call), which the page shows with less.
type record struct {
	task.RunRecord
	Call bool
}

// stateWords is a task's state as a person reads it; the API and the
// pages' classes keep the state's name.
func stateWords(s task.State) string {
	switch s {
	case task.AwaitingApproval:
		return "waiting for approval"
	case task.Running:
		return "running a command"
	case task.Preparing:
		return "preparing the workspace"
	}
	return strings.ReplaceAll(string(s), "_", " ")
}

// duration is d rounded as a person says it: 52ms, 3.2s, 4m 10s, 1h 5m.
func duration(d time.Duration) string {
	switch {
	case d < 0:
		return "—"
	case d < time.Millisecond:
		return "under 1ms"
	case d < time.Second-time.Millisecond/2:
		return fmt.Sprintf("%dms", d.Round(time.Millisecond).Milliseconds())
	case d < time.Minute-50*time.Millisecond:
		s := fmt.Sprintf("%.1f", d.Round(100*time.Millisecond).Seconds())
		return strings.TrimSuffix(s, ".0") + "s"
	case d < time.Hour-time.Second/2:
		d = d.Round(time.Second)
		m, s := int(d/time.Minute), int(d%time.Minute/time.Second)
		if s == 0 {
			return fmt.Sprintf("%dm", m)
		}
		return fmt.Sprintf("%dm %ds", m, s)
	}
	d = d.Round(time.Minute)
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	if m == 0 {
		return fmt.Sprintf("%dh", h)
	}
	return fmt.Sprintf("%dh %dm", h, m)
}
