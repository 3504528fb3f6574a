package fakegithub

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// The fake understands two GraphQL operations:
//
//   - the mutation markPullRequestReadyForReview(input: {pullRequestId: …}),
//     with the id given inline ("PR_…"), as a variable ($id), or as a whole
//     input variable (input: $input with {"pullRequestId": …});
//   - the query repository(owner:, name:) { pullRequest(number:) {
//     reviewThreads(first:, after:) { … } } }, arguments inline or as
//     variables, answered with pageInfo {hasNextPage endCursor} and nodes
//     {id isResolved isOutdated path line comments(first:) {nodes {id
//     databaseId body author {login}}}}, whatever the query selects.
var (
	reMarkReady = regexp.MustCompile(`\bmutation\b[\s\S]*\bmarkPullRequestReadyForReview\s*\(`)
	reInlineID  = regexp.MustCompile(`pullRequestId\s*:\s*(?:"([^"]*)"|\$(\w+))`)
	reInputVar  = regexp.MustCompile(`markPullRequestReadyForReview\s*\(\s*input\s*:\s*\$(\w+)`)

	reReviewThreads = regexp.MustCompile(`\breviewThreads\s*\(`)
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
	if !authAs(w, info.auth, "token", "This endpoint requires you to be authenticated.") {
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
	if reReviewThreads.MatchString(in.Query) && !reMarkReady.MatchString(in.Query) {
		s.reviewThreadsLocked(w, info, in.Query, in.Variables)
		return
	}
	if !reMarkReady.MatchString(in.Query) {
		graphQLErrors(w, "", "fakegithub: only the markPullRequestReadyForReview mutation and the reviewThreads query are supported")
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

// gqlArg is the value of argument name in the first "field(...)" of query:
// a string or number given inline, or the variable it names (nil when the
// variable is absent or null). ok is false when the argument is not there.
func gqlArg(query, field, name string, vars map[string]any) (v any, ok bool) {
	re := regexp.MustCompile(`\b` + regexp.QuoteMeta(field) + `\s*\(([^)]*)\)`)
	m := re.FindStringSubmatch(query)
	if m == nil {
		return nil, false
	}
	arg := regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\s*:\s*("(?:[^"\\]|\\.)*"|\$\w+|-?\d+|null)`)
	a := arg.FindStringSubmatch(m[1])
	if a == nil {
		return nil, false
	}
	switch lit := a[1]; {
	case strings.HasPrefix(lit, "$"):
		return vars[lit[1:]], true
	case strings.HasPrefix(lit, `"`):
		s, err := strconv.Unquote(lit)
		if err != nil {
			return nil, false
		}
		return s, true
	case lit == "null":
		return nil, true
	default:
		n, _ := strconv.Atoi(lit)
		return float64(n), true // as encoding/json decodes variables
	}
}

func gqlString(v any) string { s, _ := v.(string); return s }

func gqlInt(v any) (int, bool) {
	f, ok := v.(float64)
	return int(f), ok && f == float64(int(f))
}

func threadCursor(i int) string {
	return base64.StdEncoding.EncodeToString([]byte("cursor:v2:" + strconv.Itoa(i)))
}

// reviewThreadsLocked answers the reviewThreads query: the threads of a
// pull request in the order their first comments were made, resolved or
// not, 100 at most per page, like GitHub.
func (s *Server) reviewThreadsLocked(w http.ResponseWriter, info *reqInfo, query string, vars map[string]any) {
	ownerV, _ := gqlArg(query, "repository", "owner", vars)
	nameV, _ := gqlArg(query, "repository", "name", vars)
	owner, name := gqlString(ownerV), gqlString(nameV)
	numV, _ := gqlArg(query, "pullRequest", "number", vars)
	number, okNum := gqlInt(numV)
	firstV, hasFirst := gqlArg(query, "reviewThreads", "first", vars)
	first, okFirst := gqlInt(firstV)
	afterV, _ := gqlArg(query, "reviewThreads", "after", vars)
	after := gqlString(afterV)
	perThread := -1
	if v, ok := gqlArg(query[reReviewThreads.FindStringIndex(query)[1]:], "comments", "first", vars); ok {
		perThread, _ = gqlInt(v)
	}
	switch {
	case owner == "" || name == "":
		graphQLErrors(w, "", "fakegithub: repository(owner:, name:) is required")
		return
	case !okNum:
		graphQLErrors(w, "", "fakegithub: pullRequest(number:) is required")
		return
	case !hasFirst || !okFirst || first < 0:
		graphQLErrors(w, "", "You must provide a `first` or `last` value to properly paginate the `reviewThreads` connection.")
		return
	case first > 100:
		graphQLErrors(w, "", fmt.Sprintf("Requesting %d records on the `reviewThreads` connection exceeds the `first` limit of 100 records.", first))
		return
	}
	k := repoKey(owner, name)
	if !s.installations[info.installation][k] && !s.public[k] {
		writeJSON(w, http.StatusOK, map[string]any{
			"data": map[string]any{"repository": nil},
			"errors": []any{map[string]any{
				"type": "NOT_FOUND", "path": []string{"repository"},
				"message": fmt.Sprintf("Could not resolve to a Repository with the name '%s/%s'.", owner, name),
			}},
		})
		return
	}
	p := s.pullByNumberLocked(k, number)
	if p == nil {
		writeJSON(w, http.StatusOK, map[string]any{
			"data": map[string]any{"repository": map[string]any{"pullRequest": nil}},
			"errors": []any{map[string]any{
				"type": "NOT_FOUND", "path": []string{"repository", "pullRequest"},
				"message": fmt.Sprintf("Could not resolve to a PullRequest with the number of %d.", number),
			}},
		})
		return
	}

	var roots []int64
	replies := map[int64][]int64{}
	for _, id := range s.reviewOrder[pullKey(k, number)] {
		if c := s.review[id]; c.InReplyTo == 0 {
			roots = append(roots, id)
		} else {
			replies[c.InReplyTo] = append(replies[c.InReplyTo], id)
		}
	}
	start := 0
	if after != "" {
		b, err := base64.StdEncoding.DecodeString(after)
		i, err2 := strconv.Atoi(strings.TrimPrefix(string(b), "cursor:v2:"))
		if err != nil || err2 != nil || !strings.HasPrefix(string(b), "cursor:v2:") {
			graphQLErrors(w, "", fmt.Sprintf("`%s` does not appear to be a valid cursor.", after))
			return
		}
		start = i + 1
	}
	start = min(start, len(roots))
	end := min(start+first, len(roots))
	nodes := []any{}
	for _, root := range roots[start:end] {
		rc := s.review[root]
		ids := append([]int64{root}, replies[root]...)
		if perThread >= 0 {
			ids = ids[:min(perThread, len(ids))]
		}
		comments := []any{}
		for _, id := range ids {
			c := s.review[id]
			comments = append(comments, map[string]any{
				"id":         fmt.Sprintf("PRRC_%d", id),
				"databaseId": id,
				"body":       c.Body,
				"author":     map[string]any{"login": c.Author},
			})
		}
		var line any
		if !rc.Outdated && rc.Line != 0 {
			line = rc.Line
		}
		nodes = append(nodes, map[string]any{
			"id":         fmt.Sprintf("PRRT_%d", root),
			"isResolved": s.resolved[root],
			"isOutdated": rc.Outdated,
			"path":       rc.Path,
			"line":       line,
			"comments":   map[string]any{"totalCount": 1 + len(replies[root]), "nodes": comments},
		})
	}
	var endCursor any
	if end > start {
		endCursor = threadCursor(end - 1)
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{
		"repository": map[string]any{"pullRequest": map[string]any{"reviewThreads": map[string]any{
			"totalCount": len(roots),
			"pageInfo":   map[string]any{"hasNextPage": end < len(roots), "endCursor": endCursor},
			"nodes":      nodes,
		}}},
	}})
}
