package task

import (
	"context"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/policy"
)

// GuidanceUsed is what of the repository's instruction files (AGENTS.md
// and the like) a fix gave its agent, as the status comment shows it.
type GuidanceUsed struct {
	// SHA is the default branch's commit the files were read at.
	SHA   string         `json:"sha"`
	Files []GuidanceNote `json:"files,omitempty"`
	// More counts the files found beyond the bound on their number.
	More int `json:"more,omitempty"`
}

// GuidanceNote is one instruction file: given whole, cut short, or left
// out (Skipped says why).
type GuidanceNote struct {
	Path    string `json:"path"`
	Cut     bool   `json:"cut,omitempty"`
	Skipped string `json:"skipped,omitempty"`
}

// readGuidance reads the repository's instruction files for the agent, and
// records in t which were used. They come from the default branch alone:
// for an issue that is what ws was cloned from (t.BaseSHA); for a pull
// request, also one from the same repository, its tip is fetched beside
// the head, so that whoever opened the pull request cannot steer the agent
// by changing AGENTS.md in it. Not the pull request's base branch either:
// the configuration comes from the default branch, and the guidance ranks
// with it.
func readGuidance(ctx context.Context, rm remote, t Job, ws Workspace, in policy.Instructions) (pullwright.Guidance, error) {
	t.Guidance = nil
	if len(in) == 0 {
		return pullwright.Guidance{}, nil
	}
	sha := t.BaseSHA
	if t.Pull != nil {
		token, err := rm.token(ctx, t.Task)
		if err != nil {
			return pullwright.Guidance{}, err
		}
		gctx, cancel := rm.gitCtx(ctx)
		defer cancel()
		if sha, err = ws.FetchBranch(gctx, token, t.Repo.DefaultBranch); err != nil {
			return pullwright.Guidance{}, retryf(err, "fetching the default branch %s for the repository's instructions failed", t.Repo.DefaultBranch)
		}
	}
	files, more, err := ws.ReadTree(sha, in.Match, policy.MaxInstructionFiles, policy.MaxInstructionBytes)
	if err != nil {
		return pullwright.Guidance{}, retryf(err, "reading the repository's instructions failed")
	}
	g := in.Guidance(files, more)
	if len(g.Files) > 0 || g.More > 0 {
		used := &GuidanceUsed{SHA: sha, More: g.More}
		for _, f := range g.Files {
			used.Files = append(used.Files, GuidanceNote{Path: f.Path, Cut: f.Cut, Skipped: f.Skipped})
		}
		t.Guidance = used
	}
	return g, nil
}
