package fakegithub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
)

// The fake understands one GraphQL operation: the mutation
// markPullRequestReadyForReview(input: {pullRequestId: …}), with the id given
// inline ("PR_…"), as a variable ($id), or as a whole input variable
// (input: $input with {"pullRequestId": …}).
var (
	reMarkReady = regexp.MustCompile(`\bmutation\b[\s\S]*\bmarkPullRequestReadyForReview\s*\(`)
	reInlineID  = regexp.MustCompile(`pullRequestId\s*:\s*(?:"([^"]*)"|\$(\w+))`)
	reInputVar  = regexp.MustCompile(`markPullRequestReadyForReview\s*\(\s*input\s*:\s*\$(\w+)`)
)

func graphQLErrors(w http.ResponseWriter, typ, msg string) {
	e := map[string]any{"message": msg}
	if typ != "" {
		e["type"] = typ
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": nil, "errors": []any{e}})
}

func (s *Server) graphql(w http.ResponseWriter, r *http.Request) {
	info := infoOf(r)
	switch info.auth {
	case "token":
	case "none":
		errorJSON(w, http.StatusUnauthorized, "This endpoint requires you to be authenticated.")
		return
	default:
		errorJSON(w, http.StatusUnauthorized, "Bad credentials")
		return
	}
	var in struct {
		Query     string         `json:"query"`
		Variables map[string]any `json:"variables"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.graphqlFaults) > 0 {
		msg := s.graphqlFaults[0]
		s.graphqlFaults = s.graphqlFaults[1:]
		graphQLErrors(w, "", msg)
		return
	}
	if in.Query == "" {
		graphQLErrors(w, "", "A query attribute must be specified and must be a string.")
		return
	}
	if !reMarkReady.MatchString(in.Query) {
		graphQLErrors(w, "", "fakegithub: only the markPullRequestReadyForReview mutation is supported")
		return
	}
	var id string
	if m := reInputVar.FindStringSubmatch(in.Query); m != nil {
		input, _ := in.Variables[m[1]].(map[string]any)
		id, _ = input["pullRequestId"].(string)
	} else if m := reInlineID.FindStringSubmatch(in.Query); m != nil {
		id = m[1]
		if m[2] != "" {
			id, _ = in.Variables[m[2]].(string)
		}
	}
	if id == "" {
		graphQLErrors(w, "", "Argument 'pullRequestId' on InputObject 'MarkPullRequestReadyForReviewInput' is required.")
		return
	}
	p, repo := s.pullByNodeLocked(id)
	if p == nil || !s.installations[info.installation][repo] {
		// Like GitHub, a node the token cannot see does not exist.
		graphQLErrors(w, "NOT_FOUND", fmt.Sprintf("Could not resolve to a node with the global id of '%s'", id))
		return
	}
	p.Draft = false
	writeJSON(w, http.StatusOK, json.RawMessage(`{"data":{"markPullRequestReadyForReview":{"pullRequest":{"isDraft":false}}}}`))
}

// pullByNodeLocked finds a pull request by node id, and its repo key.
func (s *Server) pullByNodeLocked(id string) (*pullRequest, string) {
	for k, ps := range s.pulls {
		for _, p := range ps {
			if p.NodeID == id {
				return p, k
			}
		}
	}
	return nil, ""
}
