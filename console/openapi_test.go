package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/pullwright/pullwright/internal/fakegithub"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// openAPI is docs/openapi.yaml, read once per test, with its schemas.
type openAPI struct {
	doc      map[string]any
	compiler *jsonschema.Compiler
}

const openAPIFile = "../docs/openapi.yaml"

func loadOpenAPI(t *testing.T) *openAPI {
	t.Helper()
	raw, err := os.ReadFile(openAPIFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", openAPIFile, err)
	}
	// Through JSON: the schema library reads JSON's values.
	js, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("file:///openapi.json", inst); err != nil {
		t.Fatal(err)
	}
	return &openAPI{doc: doc, compiler: c}
}

// operations are the spec's endpoints as the mux writes them, "GET /api/tasks/{id}".
func (o *openAPI) operations() []string {
	var out []string
	for path, ops := range o.doc["paths"].(map[string]any) {
		for method := range ops.(map[string]any) {
			out = append(out, strings.ToUpper(method)+" "+path)
		}
	}
	slices.Sort(out)
	return out
}

// pointer escapes a JSON pointer token.
func pointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// check validates a handler's answer to operation (as operations names it)
// against the spec: the status must be one the operation declares, and a
// JSON body must match the response's schema.
func (o *openAPI) check(t *testing.T, operation string, w *httptest.ResponseRecorder) {
	t.Helper()
	method, path, _ := strings.Cut(operation, " ")
	op, ok := o.doc["paths"].(map[string]any)[path].(map[string]any)[strings.ToLower(method)].(map[string]any)
	if !ok {
		t.Fatalf("%s is not in %s", operation, openAPIFile)
	}
	status := strconvItoa(w.Code)
	resp, ok := op["responses"].(map[string]any)[status].(map[string]any)
	if !ok {
		t.Fatalf("%s answered %d, which %s does not declare: %s", operation, w.Code, openAPIFile, w.Body.String())
	}
	loc := "#/paths/" + pointer(path) + "/" + strings.ToLower(method) + "/responses/" + status
	if ref, ok := resp["$ref"].(string); ok {
		loc = ref
		resp = o.doc["components"].(map[string]any)["responses"].(map[string]any)[strings.TrimPrefix(ref, "#/components/responses/")].(map[string]any)
	}
	content, _ := resp["content"].(map[string]any)
	if _, ok := content["application/json"]; !ok {
		return
	}
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s %d: Content-Type %q, want JSON", operation, w.Code, ct)
	}
	sch, err := o.compiler.Compile("file:///openapi.json" + loc + "/content/" + pointer("application/json") + "/schema")
	if err != nil {
		t.Fatalf("compile the schema of %s %s: %v", operation, status, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(w.Body.Bytes()))
	if err != nil {
		t.Fatalf("%s %d: body is not JSON: %v", operation, w.Code, err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("%s %d: the body does not match %s: %v\n%s", operation, w.Code, openAPIFile, err, w.Body.String())
	}
}

func strconvItoa(n int) string { return itoa(int64(n)) }

// Every route of the API is in the spec, and every operation of the spec
// is a route.
func TestOpenAPIListsEveryRoute(t *testing.T) {
	o := loadOpenAPI(t)
	f := newFixture(t)
	var served []string
	for pattern := range f.c.apiRoutes() {
		served = append(served, pattern)
	}
	slices.Sort(served)
	if spec := o.operations(); !slices.Equal(spec, served) {
		t.Errorf("%s describes\n  %v\nthe console serves\n  %v", openAPIFile, spec, served)
	}
}

// The handlers' answers, good and bad, are what the spec says.
func TestOpenAPIDescribesTheAnswers(t *testing.T) {
	o := loadOpenAPI(t)
	f := newFixture(t)
	alice, carol := f.signIn(t, "alice"), f.signIn(t, "carol")
	session := func(ck *http.Cookie) []*http.Cookie { return []*http.Cookie{ck} }
	csrf := func(ck *http.Cookie) http.Header { return http.Header{"X-Csrf-Token": {f.csrfOf(t, ck)}} }
	bearer := http.Header{"Authorization": {"Bearer " + f.gh.UserToken("alice")}, "Content-Type": {"application/json"}}
	hostile, secret, readonly := itoa(f.ids["hostile"]), itoa(f.ids["secret"]), itoa(f.ids["readonly"])
	f.gh.AddIssue("o", "private", fakegithub.Issue{Number: 5, Title: "Crash", Body: "It crashes."})
	tests := []struct {
		operation string
		method    string
		target    string
		cookies   []*http.Cookie
		header    http.Header
		body      string
		want      int
	}{
		{"GET /api/tasks", "GET", "/api/tasks", session(alice), nil, "", 200},
		{"GET /api/tasks", "GET", "/api/tasks?state=" + url.QueryEscape("awaiting_approval"), session(alice), nil, "", 200},
		{"GET /api/tasks", "GET", "/api/tasks?state=bogus", session(alice), nil, "", 400},
		{"GET /api/tasks", "GET", "/api/tasks", nil, nil, "", 401},
		{"GET /api/tasks/{id}", "GET", "/api/tasks/" + hostile, session(alice), nil, "", 200},
		{"GET /api/spend", "GET", "/api/spend?since=2026-01-01", session(alice), nil, "", 200},
		{"GET /api/spend", "GET", "/api/spend?until=soon", session(alice), nil, "", 400},
		{"GET /api/spend", "GET", "/api/spend", nil, nil, "", 401},
		{"GET /api/tasks/{id}", "GET", "/api/tasks/" + secret, session(alice), nil, "", 404},
		{"GET /api/tasks/{id}/events", "GET", "/api/tasks/" + secret + "/events", session(alice), nil, "", 404},
		{"POST /api/requests/{id}/reject", "POST", "/api/requests/4-2/reject", nil, bearer, `{"reason": 7}`, 400},
		{"POST /api/requests/{id}/approve", "POST", "/api/requests/4-9/approve", nil, bearer, "", 409},
		{"POST /api/requests/{id}/approve", "POST", "/api/requests/4-2/approve", session(alice), nil, "", 403},
		{"POST /api/requests/{id}/approve", "POST", "/api/requests/4-2/approve", nil, bearer, `{"digest":"` + f.digest + `"}`, 202},
		{"POST /api/requests/{id}/reject", "POST", "/api/requests/x-2/reject", nil, bearer, "", 404},
		{"POST /api/tasks", "POST", "/api/tasks", nil, bearer, `{"repository":"o/private","issue":5,"instructions":"fix it"}`, 202},
		{"POST /api/tasks", "POST", "/api/tasks", nil, bearer, `{"repository":"o/private","issue":5}`, 409},
		{"POST /api/tasks", "POST", "/api/tasks", nil, bearer, `{"repository":"o/private"}`, 422},
		{"POST /api/tasks", "POST", "/api/tasks", nil, bearer, `{"repo":"o/private"}`, 400},
		{"POST /api/tasks", "POST", "/api/tasks", session(carol), csrf(carol), `{"repository":"o/readonly","issue":1}`, 403},
		{"POST /api/tasks/{id}/cancel", "POST", "/api/tasks/" + readonly + "/cancel", session(carol), csrf(carol), "", 403},
		{"POST /api/tasks/{id}/cancel", "POST", "/api/tasks/" + hostile + "/cancel", session(alice), csrf(alice), "", 202},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(tt.method, "https://console.example"+tt.target, strings.NewReader(tt.body))
		for k, vs := range tt.header {
			r.Header[k] = vs
		}
		for _, ck := range tt.cookies {
			r.AddCookie(ck)
		}
		w := httptest.NewRecorder()
		f.c.Handler().ServeHTTP(w, r)
		if w.Code != tt.want {
			t.Errorf("%s %s = %d, want %d: %s", tt.method, tt.target, w.Code, tt.want, w.Body.String())
			continue
		}
		o.check(t, tt.operation, w)
	}
}

// An answer that names a stale digest gets the changed answer the spec
// describes (components/responses/Changed): the error, and the request
// that waits now, whole, to be read before it is answered.
func TestOpenAPIDescribesTheChangedAnswer(t *testing.T) {
	o := loadOpenAPI(t)
	f := newFixture(t)
	bearer := http.Header{"Authorization": {"Bearer " + f.gh.UserToken("alice")}, "Content-Type": {"application/json"}}
	tests := []struct {
		operation, target, body string
	}{
		{"POST /api/requests/{id}/approve", "/api/requests/4-2/approve", `{"digest":"` + strings.Repeat("0", 64) + `"}`},
		{"POST /api/requests/{id}/reject", "/api/requests/4-2/reject", `{"digest":"000000000000","reason":"not that"}`},
	}
	for _, tt := range tests {
		w := f.serveJSON(t, tt.target, tt.body, bearer)
		if w.Code != http.StatusConflict {
			t.Errorf("%s with a stale digest = %d: %s", tt.target, w.Code, w.Body.String())
			continue
		}
		o.check(t, tt.operation, w)
		var out struct {
			Error   string           `json:"error"`
			Pending *json.RawMessage `json:"pending"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || out.Error == "" || out.Pending == nil ||
			!strings.Contains(string(*out.Pending), `"digest":"`+f.digest+`"`) {
			t.Errorf("%s: the changed answer lacks the request that waits: %s", tt.target, w.Body.String())
		}
	}
	if got := f.recorded(t); len(got) != 0 {
		t.Errorf("answers with a stale digest recorded %d tasks", len(got))
	}
}
