package console

import (
	"html/template"
	"time"

	"github.com/pullwright/pullwright/approval"
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
	"line": approval.Line,
	"short": func(sha string) string {
		if len(sha) > 12 {
			return sha[:12]
		}
		return sha
	},
}
