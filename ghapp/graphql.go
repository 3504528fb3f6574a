package ghapp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/google/go-github/v88/github"

	"github.com/pullwright/pullwright"
)

// maxGraphQLResponse bounds the GraphQL answer read into memory.
const maxGraphQLResponse = 4 << 20

// graphQLURL returns the GraphQL endpoint for a REST base URL:
// https://api.github.com → https://api.github.com/graphql,
// https://HOST/api/v3 (GitHub Enterprise Server) → https://HOST/api/graphql,
// anything else → base + "/graphql".
func graphQLURL(base string) string {
	if b, ok := strings.CutSuffix(base, "/api/v3"); ok {
		return b + "/api/graphql"
	}
	return base + "/graphql"
}

// GraphQLError is one entry of a GraphQL "errors" array.
type GraphQLError struct {
	Type    string `json:"type"` // e.g. "NOT_FOUND", "FORBIDDEN"; may be empty
	Message string `json:"message"`
	Path    []any  `json:"path"`
}

// GraphQLErrors is a GraphQL answer that carried errors (GitHub answers
// them with 200 OK).
type GraphQLErrors []GraphQLError

func (e GraphQLErrors) Error() string {
	msgs := make([]string, 0, len(e))
	for _, g := range e {
		m := g.Message
		if g.Type != "" {
			m = g.Type + ": " + m
		}
		msgs = append(msgs, m)
	}
	return "GraphQL: " + strings.Join(msgs, "; ")
}

// graphQL POSTs {query, variables} to the GraphQL endpoint with the
// installation's client (same auth, retries and rate-limit handling as REST)
// and decodes "data" into out. A non-2xx answer is a go-github error (so
// StatusCode works); an "errors" array is a GraphQLErrors.
func (a *App) graphQL(ctx context.Context, gh *github.Client, query string, vars map[string]any, out any) error {
	payload, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, graphQLURL(a.base), bytes.NewReader(payload))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	resp, err := gh.Client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := github.CheckResponse(resp); err != nil {
		return err
	}
	var res struct {
		Data   json.RawMessage `json:"data"`
		Errors GraphQLErrors   `json:"errors"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxGraphQLResponse)).Decode(&res); err != nil {
		return fmt.Errorf("decode GraphQL answer: %w", err)
	}
	if len(res.Errors) > 0 {
		return res.Errors
	}
	if out != nil {
		if len(res.Data) == 0 || string(res.Data) == "null" {
			return errors.New("GraphQL answer has no data")
		}
		if err := json.Unmarshal(res.Data, out); err != nil {
			return fmt.Errorf("decode GraphQL data: %w", err)
		}
	}
	return nil
}

const markReadyMutation = `mutation($id: ID!) {
  markPullRequestReadyForReview(input: {pullRequestId: $id}) {
    pullRequest { isDraft }
  }
}`

// MarkReadyForReview turns a draft pull request into one ready for review.
// REST cannot do this: the pull request's node id is read with
// GET /repos/{o}/{r}/pulls/{n}, then the GraphQL mutation
// markPullRequestReadyForReview is sent. A pull request that is already
// ready is a success without a mutation; so is one that turned ready while
// the mutation failed.
func (a *App) MarkReadyForReview(ctx context.Context, r pullwright.Repo, number int) error {
	inst, owner, repo := r.InstallationID, r.Owner, r.Name
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	err := func() error {
		gh, err := a.client(inst)
		if err != nil {
			return err
		}
		p, _, err := gh.PullRequests.Get(ctx, owner, repo, number)
		if err != nil {
			return fmt.Errorf("get pull request: %w", err)
		}
		if !p.GetDraft() {
			return nil
		}
		if p.GetNodeID() == "" {
			return errors.New("GitHub returned no node id for the pull request")
		}
		var out struct {
			Mark *struct {
				PullRequest struct {
					IsDraft bool `json:"isDraft"`
				} `json:"pullRequest"`
			} `json:"markPullRequestReadyForReview"`
		}
		err = a.graphQL(ctx, gh, markReadyMutation, map[string]any{"id": p.GetNodeID()}, &out)
		if err != nil {
			// Someone else may have marked it ready meanwhile.
			if again, _, gerr := gh.PullRequests.Get(ctx, owner, repo, number); gerr == nil && !again.GetDraft() {
				return nil
			}
			return fmt.Errorf("markPullRequestReadyForReview: %w", err)
		}
		if out.Mark == nil || out.Mark.PullRequest.IsDraft {
			return errors.New("markPullRequestReadyForReview: the pull request is still a draft")
		}
		return nil
	}()
	if err != nil {
		return fmt.Errorf("mark pull request %s/%s#%d ready for review: %w", owner, repo, number, err)
	}
	return nil
}
