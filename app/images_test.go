package app_test

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/app"
	"github.com/pullwright/pullwright/internal/fakegithub"
	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/internal/testimage"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/task"
)

// withProfile runs the bot with the operator's profile of its model
// saying whether it takes images.
func withProfile(images bool) envOption {
	return func(c *app.Config) {
		op := policy.DefaultOperator()
		op.Models.Default = c.Model
		op.Models.Profiles = map[string]pullwright.ModelProfile{c.Model: {Images: images}}
		c.Operator = op
	}
}

var screenshot = testimage.PNG(4, 3)

// An issue with a screenshot, through the wired bot: a model whose
// profile takes images gets the picture as an image part of its first
// message, fetched from GitHub's attachment link with the installation's
// token and from the storage host without it; a text-only model gets a
// sentence saying it was left out, and nothing is fetched. A picture on
// another host and one in an HTML comment are never asked for.
func TestAnIssuesScreenshotReachesTheModel(t *testing.T) {
	t.Parallel()
	for _, vision := range []bool{true, false} {
		name := map[bool]string{true: "a model that takes images", false: "a text-only model"}[vision]
		t.Run(name, func(t *testing.T) {
			var elsewhere atomic.Int32
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				elsewhere.Add(1)
				w.Header().Set("Content-Type", "image/png")
				_, _ = w.Write(screenshot)
			}))
			t.Cleanup(other.Close)
			llm := fakellm.New(t, fixScript()...)
			e := newEnv(t, llm, withProfile(vision))
			shot := e.gh.AddAttachment(fakegithub.Attachment{Owner: owner, Repo: repoName, Data: screenshot, ContentType: "image/png"})
			hidden := e.gh.AddAttachment(fakegithub.Attachment{Owner: owner, Repo: repoName, Data: screenshot, ContentType: "image/png"})
			e.gh.AddIssue(owner, repoName, fakegithub.Issue{
				Number: 1,
				Title:  "Spelling error in the README file",
				Body: "The README says comitt, see:\n\n<img width=\"640\" alt=\"the README\" src=\"" + shot + "\" />\n\n" +
					"![from elsewhere](" + other.URL + "/x.png)\n<!-- ![hidden](" + hidden + ") -->\n",
				Author: owner,
			})
			if code := e.comment("d1", 1, owner, "/agent fix the typo"); code != http.StatusAccepted {
				t.Fatalf("fix answered %d", code)
			}
			tk := e.waitTask(1)
			if tk.State != task.Done {
				t.Fatalf("task ended %s: %s\nlogs:\n%s", tk.State, tk.Error, e.logs.String())
			}
			reqs := llm.Requests()
			if len(reqs) == 0 {
				t.Fatal("the model was never called")
			}
			first := reqs[0].Messages[1]
			var asked, storage int
			for _, r := range e.gh.Requests() {
				switch {
				case r.Path == strings.TrimPrefix(hidden, e.gh.WebURL):
					t.Errorf("the picture in an HTML comment was asked for")
				case r.Path == strings.TrimPrefix(shot, e.gh.WebURL):
					asked++
					if r.Auth != "token" {
						t.Errorf("the attachment link was asked with auth %q, want the installation's token", r.Auth)
					}
				}
			}
			for _, r := range e.gh.StorageRequests() {
				storage++
				if r.Authorization != "" {
					t.Errorf("the storage host got Authorization %q", r.Authorization)
				}
			}
			if n := elsewhere.Load(); n != 0 {
				t.Errorf("the other host was asked %d times", n)
			}
			status := e.waitComment(1, "✅ Done").Body
			if vision {
				if asked != 1 || storage != 1 {
					t.Errorf("the attachment was asked %d times and its storage %d, want once each", asked, storage)
				}
				want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(screenshot)
				if len(first.MultiContent) != 2 || first.MultiContent[1].Type != openai.ChatMessagePartTypeImageURL ||
					first.MultiContent[1].ImageURL == nil || first.MultiContent[1].ImageURL.URL != want {
					t.Fatalf("the first message's parts are %+v; want its text and the screenshot", first.MultiContent)
				}
				text := first.MultiContent[0].Text
				for _, s := range []string{"1. image 1 of the issue's body", "- image 2 of the issue's body: it is on a site that is not GitHub's"} {
					if !strings.Contains(text, s) {
						t.Errorf("the first message lacks %q:\n%s", s, text)
					}
				}
				for i, r := range reqs[1:] {
					if len(r.Messages[1].MultiContent) != 2 {
						t.Errorf("call %d does not carry the screenshot", i+2)
					}
				}
				if !strings.Contains(status, "The agent was given 1 of the 2 pictures the issue shows") {
					t.Errorf("the status comment does not count the pictures:\n%s", status)
				}
			} else {
				if asked != 0 || storage != 0 || len(first.MultiContent) != 0 {
					t.Errorf("for a text-only model: asked %d, storage %d, %d parts", asked, storage, len(first.MultiContent))
				}
				if !strings.Contains(first.Content, "- image 1 of the issue's body: the model this task runs on (test-model) is not set up to take images.") {
					t.Errorf("the first message does not say the screenshot was left out:\n%s", first.Content)
				}
				if !strings.Contains(status, "The 2 pictures the issue shows were left out of what the agent reads") {
					t.Errorf("the status comment does not count the pictures:\n%s", status)
				}
			}
			for _, r := range e.gh.StorageRequests() {
				if strings.Contains(e.logs.String(), r.Query) {
					t.Errorf("the logs hold the signed query")
				}
			}
		})
	}
}
