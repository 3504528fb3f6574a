package localrun_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/localrun"
)

// A model endpoint that fails is told at the terminal in sentences, not
// as a log line of key=value pairs.
func TestRunFailuresAreSentences(t *testing.T) {
	dir := newRepo(t, false, nil)
	llm := fakellm.New(t, readStep, fakellm.Step{Status: http.StatusBadRequest, Content: "the model is asleep"})
	o, _, stderr := options(t, dir, llm, strings.NewReader(""), true)
	_, err := localrun.Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "the model endpoint") {
		t.Fatalf("Run: %v, want the endpoint's failure", err)
	}
	out := stderr.String()
	mustContain(t, "stderr", out, "warning: model call failed: ", "the model is asleep")
	noLogLines(t, out)
}

// noLogLines fails if out holds a line of slog's text format.
func noLogLines(t *testing.T, out string) {
	t.Helper()
	if m := regexp.MustCompile(`(?m)(^|\s)(time|level|msg)=\S`).FindString(out); m != "" {
		t.Errorf("a raw log line (%q) reached the terminal:\n%s", m, out)
	}
}
