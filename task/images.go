package task

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/images"
	"github.com/pullwright/pullwright/untrusted"
)

// Bounds of the pictures a brief carries: they travel in the agent's
// saved state, and every model call sends them again (the agent holds the
// same bounds).
const (
	maxPictures      = 4
	maxPictureBytes  = 5 << 20
	maxPicturesBytes = 8 << 20
	// picturesTimeout bounds the fetching of all of a brief's pictures;
	// each fetch has ghapp's own deadline too.
	picturesTimeout = 2 * time.Minute
)

// Pictured counts the pictures the text of a task's issue showed: given
// to the agent, or left out (the agent was told which and why).
type Pictured struct {
	Given   int `json:"given,omitempty"`
	LeftOut int `json:"left_out,omitempty"`
}

// line is the status comment's sentence of p, for a task on an issue
// or a pull request (what).
func (p *Pictured) line(what string) string {
	shown := p.Given + p.LeftOut
	switch {
	case p.LeftOut == 0 && shown == 1:
		return "The agent was given the picture the " + what + " shows."
	case p.LeftOut == 0:
		return fmt.Sprintf("The agent was given the %d pictures the %s shows.", shown, what)
	case p.Given == 0 && shown == 1:
		return "The picture the " + what + " shows was left out of what the agent reads; it was told why."
	case p.Given == 0:
		return fmt.Sprintf("The %d pictures the %s shows were left out of what the agent reads; it was told why.", shown, what)
	}
	return fmt.Sprintf("The agent was given %d of the %d pictures the %s shows; it was told why the others were left out.", p.Given, shown, what)
}

// pictureSource is a text whose pictures may reach the model, and how the
// brief names it.
type pictureSource struct{ name, text string }

// pictures fetches the pictures that the issue's body (or the pull
// request's description) and the maintainer's comment that asked show, for a model
// whose profile takes images, and says in plain words which were left
// out and why, naming each by its place, never by its link. Only what a
// reader sees counts (untrusted.Visible), and only those texts: the other
// comments' pictures are not fetched. Links to hosts that are not
// GitHub's are never asked (the port refuses them).
func (f *Flow) pictures(ctx context.Context, t Job, vision bool, model string, issue pullwright.Issue) ([]pullwright.Image, []string, error) {
	where := "the issue's body"
	if t.Pull != nil {
		where = "the pull request's description"
	}
	// The comment that asked, whole: a picture may come before the
	// command's line, which Instructions starts after. Its author is the
	// requester, who was admitted. A review comment is not among the
	// issue's comments: its instructions stand in.
	asked := t.Instructions
	for _, c := range issue.Comments {
		if t.CommentID != 0 && t.Review == nil && c.ID == t.CommentID {
			asked = c.Body
		}
	}
	sources := []pictureSource{{where, issue.Body}, {"the maintainer's request", asked}}
	ctx, cancel := context.WithTimeout(ctx, picturesTimeout)
	defer cancel()
	var (
		given []pullwright.Image
		left  []string
		tried int
		total int
		seen  = map[string]bool{}
	)
	for _, src := range sources {
		for i, ref := range images.Find(untrusted.Visible(src.text)) {
			if seen[ref.URL] {
				continue
			}
			seen[ref.URL] = true
			name := fmt.Sprintf("image %d of %s", i+1, src.name)
			why := ""
			switch {
			case !vision && model == "":
				why = "the model this task runs on is not set up to take images"
			case !vision:
				why = fmt.Sprintf("the model this task runs on (%s) is not set up to take images", untrusted.OneLine(model, 80))
			case f.Pictures == nil:
				why = "this bot does not fetch pictures"
			case tried == maxPictures:
				why = fmt.Sprintf("only the first %d pictures are fetched", maxPictures)
			}
			if why != "" {
				left = append(left, name+": "+why)
				continue
			}
			limit := min(maxPictureBytes, maxPicturesBytes-total)
			data, kind, err := f.Pictures.Image(ctx, t.Repo, ref.URL, int64(limit))
			if err == nil {
				tried++
				total += len(data)
				given = append(given, pullwright.Image{Where: name, Type: kind, Data: data})
				continue
			}
			if cerr := context.Cause(ctx); cerr != nil && !errors.Is(cerr, context.DeadlineExceeded) {
				// The step was stopped: try it again rather than go on
				// without the pictures.
				return nil, nil, retryf(err, "fetching the pictures of #%d was interrupted", t.Issue)
			}
			if !errors.Is(err, pullwright.ErrNotGitHubs) {
				tried++
			}
			why = pictureRefusal(err, limit)
			f.Logger.InfoContext(ctx, "a picture is left out of the brief", "task_id", t.ID, "picture", name, "why", why, "err", err)
			left = append(left, name+": "+why)
		}
	}
	return given, left, nil
}

// pictureRefusal says why a picture could not be fetched, in the agent's
// brief: plain words, no link (a signed URL's query is a credential).
func pictureRefusal(err error, limit int) string {
	switch {
	case errors.Is(err, pullwright.ErrNotGitHubs):
		return "it is on a site that is not GitHub's, which the bot does not fetch from"
	case errors.Is(err, pullwright.ErrTooLarge) && limit < maxPictureBytes:
		return fmt.Sprintf("it would take the pictures past %d MiB together", maxPicturesBytes>>20)
	case errors.Is(err, pullwright.ErrTooLarge):
		return fmt.Sprintf("it is larger than %d MiB", maxPictureBytes>>20)
	case errors.Is(err, pullwright.ErrNotAnImage):
		return "it is not a picture the model can take (a video, another kind of file, a broken image or a one-pixel beacon)"
	case errors.Is(err, pullwright.ErrGone):
		return "GitHub has no such file for this repository"
	case errors.Is(err, pullwright.ErrNotPermitted):
		return "GitHub refused the bot access to it"
	case errors.Is(err, context.DeadlineExceeded):
		return "fetching it took too long"
	}
	return "fetching it failed"
}
