package task_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/task/tasktest"
)

const gh = "https://github.com/user-attachments/assets/"

var png = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")

// pictureHost is GitHub's side of the Pictures port as ghapp keeps it:
// links off github.com are refused unasked, the others answered from
// files, each fetch recorded.
type pictureHost struct {
	mu    sync.Mutex
	files map[string][]byte
	asked []string
}

func (p *pictureHost) Image(_ context.Context, _ pullwright.Repo, link string, limit int64) ([]byte, string, error) {
	if !strings.HasPrefix(link, "https://github.com/") {
		return nil, "", fmt.Errorf("image: %w", pullwright.ErrNotGitHubs)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, strings.TrimPrefix(link, gh))
	b, ok := p.files[link]
	switch {
	case !ok:
		return nil, "", fmt.Errorf("image: %w", pullwright.ErrGone)
	case int64(len(b)) > limit:
		return nil, "", fmt.Errorf("image: %w", pullwright.ErrTooLarge)
	case !strings.HasPrefix(string(b), string(png)):
		return nil, "", fmt.Errorf("image: %w", pullwright.ErrNotAnImage)
	}
	return b, "image/png", nil
}

// The pictures the issue's body and the maintainer's request show reach a
// model that takes images, as far as the bounds allow; the agent is told
// in plain words which were left out and why; pictures in hidden markup,
// on other sites or in other comments are never fetched.
func TestThePicturesOfAnIssueReachTheBrief(t *testing.T) {
	big := append(append([]byte(nil), png...), make([]byte, 5<<20)...)
	cases := []struct {
		name         string
		vision       bool
		noPort       bool
		body, instr  string
		comment      string // the comment that asked, when the issue's comments hold it
		files        map[string][]byte
		given, asked []string
		left         []string
		status       string
	}{
		{
			name:   "a vision model gets the visible pictures of the body and the request",
			vision: true,
			body: "It breaks:\n\n![shot](" + gh + "a)\n<!-- ![hidden](" + gh + "hidden) -->\n<img src=\"https://example.com/x.png\">\n" +
				"<details><summary>more</summary>\n\n" + gh + "b\n</details>\n```\n![code](" + gh + "code)\n```",
			instr:  "like this ![again](" + gh + "a) ![mine](" + gh + "c)",
			files:  map[string][]byte{gh + "a": png, gh + "b": png, gh + "c": png, gh + "hidden": png, gh + "code": png},
			given:  []string{"image 1 of the issue's body", "image 3 of the issue's body", "image 2 of the maintainer's request"},
			asked:  []string{"a", "b", "c"},
			left:   []string{"image 2 of the issue's body: it is on a site that is not GitHub's, which the bot does not fetch from"},
			status: "The agent was given 3 of the 4 pictures the issue shows; it was told why the others were left out.",
		},
		{
			name:    "the whole comment that asked counts, before the command's line too",
			vision:  true,
			body:    "README says widgte.",
			instr:   "fix it",
			comment: "Here it is: ![before](" + gh + "before)\n\n/agent fix it\n![after](" + gh + "after)",
			files:   map[string][]byte{gh + "before": png, gh + "after": png},
			given:   []string{"image 1 of the maintainer's request", "image 2 of the maintainer's request"},
			asked:   []string{"before", "after"},
			status:  "The agent was given the 2 pictures the issue shows.",
		},
		{
			name:  "a text model gets none, and none is fetched",
			body:  "![a](" + gh + "a) ![b](" + gh + "b)",
			files: map[string][]byte{gh + "a": png, gh + "b": png},
			left: []string{
				"image 1 of the issue's body: the model this task runs on (gpt-4.1-mini) is not set up to take images",
				"image 2 of the issue's body: the model this task runs on (gpt-4.1-mini) is not set up to take images",
			},
			status: "The 2 pictures the issue shows were left out of what the agent reads; it was told why.",
		},
		{
			name:   "bounds, and what is not a picture",
			vision: true,
			body:   "![](" + gh + "big) ![](" + gh + "page) ![](" + gh + "gone) ![](" + gh + "1) ![](" + gh + "2) ![](https://example.com/3.png)",
			files:  map[string][]byte{gh + "big": big, gh + "page": []byte("<html>"), gh + "1": png, gh + "2": png},
			given:  []string{"image 4 of the issue's body"},
			asked:  []string{"big", "page", "gone", "1"},
			left: []string{
				"image 1 of the issue's body: it is larger than 5 MiB",
				"image 2 of the issue's body: it is not a picture the model can take (a video, another kind of file, a broken image or a one-pixel beacon)",
				"image 3 of the issue's body: GitHub has no such file for this repository",
				"image 5 of the issue's body: only the first 4 pictures are fetched",
				"image 6 of the issue's body: only the first 4 pictures are fetched",
			},
			status: "The agent was given 1 of the 6 pictures the issue shows; it was told why the others were left out.",
		},
		{
			name:   "a bot without the port fetches nothing",
			vision: true,
			noPort: true,
			body:   "![](" + gh + "a)",
			left:   []string{"image 1 of the issue's body: this bot does not fetch pictures"},
			status: "The picture the issue shows was left out of what the agent reads; it was told why.",
		},
		{
			name:   "no pictures, no line",
			vision: true,
			body:   "README says widgte.",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			op := policy.DefaultOperator()
			op.Models.Profiles = map[string]pullwright.ModelProfile{op.Models.Default: {Images: tc.vision}}
			w.flow.Operator = op
			host := &pictureHost{files: tc.files}
			if !tc.noPort {
				w.flow.Pictures = host
			}
			is := w.gh.Issues[1]
			is.Body = tc.body
			is.Comments = append(is.Comments,
				pullwright.Comment{Author: "mallory", Body: "![theirs](" + gh + "mallory)"},
				pullwright.Comment{Author: "alice", Body: "![a writer's](" + gh + "alice)"})
			if tc.comment != "" {
				is.Comments = append(is.Comments, pullwright.Comment{ID: 11, Author: "alice", Body: tc.comment})
			}
			w.gh.Issues[1] = is
			w.agent.Script = []tasktest.Turn{finish("Fix it", map[string]string{"README.md": "# widget!\n"})}
			fix := w.fix(tc.instr)
			w.drain()
			if len(w.agent.Briefs) != 1 {
				t.Fatalf("the agent started %d times: %s", len(w.agent.Briefs), w.get(fix.ID).Error)
			}
			b := w.agent.Briefs[0]
			var given []string
			for _, im := range b.Images {
				given = append(given, im.Where)
				if im.Type != "image/png" || len(im.Data) == 0 {
					t.Errorf("%s: %s, %d bytes", im.Where, im.Type, len(im.Data))
				}
			}
			if !slices.Equal(given, tc.given) {
				t.Errorf("given %q, want %q", given, tc.given)
			}
			if !slices.Equal(b.ImagesLeftOut, tc.left) {
				t.Errorf("left out:\n%s\nwant:\n%s", strings.Join(b.ImagesLeftOut, "\n"), strings.Join(tc.left, "\n"))
			}
			if !slices.Equal(host.asked, tc.asked) {
				t.Errorf("asked for %q, want %q", host.asked, tc.asked)
			}
			status := w.status(w.get(fix.ID)).Text()
			if tc.status == "" && strings.Contains(status, "picture") || !strings.Contains(status, tc.status) {
				t.Errorf("the status comment lacks %q:\n%s", tc.status, status)
			}
		})
	}
}

// On a pull request, the pictures of its description count, named as
// such.
func TestThePicturesOfAPullRequestsDescription(t *testing.T) {
	w, _ := pullWorld(t, false, map[string]string{"feature.go": "package feature\n"})
	op := policy.DefaultOperator()
	op.Models.Profiles = map[string]pullwright.ModelProfile{op.Models.Default: {Images: true}}
	w.flow.Operator = op
	host := &pictureHost{files: map[string][]byte{gh + "pr": png}}
	w.flow.Pictures = host
	is := w.gh.Issues[7]
	is.Body = "It adds a feature, which looks like this:\n\n![after](" + gh + "pr)"
	w.gh.Issues[7] = is
	w.agent.Script = []tasktest.Turn{finish("Rename x", map[string]string{"feature.go": "package feature // fixed\n"})}
	fix := w.fixPull("rename x", nil)
	w.drain()
	if len(w.agent.Briefs) != 1 {
		t.Fatalf("the agent started %d times: %s", len(w.agent.Briefs), w.get(fix.ID).Error)
	}
	if b := w.agent.Briefs[0]; len(b.Images) != 1 || b.Images[0].Where != "image 1 of the pull request's description" || len(b.ImagesLeftOut) != 0 {
		t.Errorf("brief images %+v, left out %q", b.Images, b.ImagesLeftOut)
	}
	c := w.gh.Comment(7, fmt.Sprintf("task-%d-status", fix.ID))
	if c == nil || !strings.Contains(c.Text(), "The agent was given the picture the pull request shows.") {
		t.Errorf("status comment %+v", c)
	}
}
