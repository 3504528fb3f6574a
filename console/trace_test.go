package console

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/pullwright/pullwright/task"
)

// A traced task's page links its trace in the operator's tracing UI and
// the API gives its id; an untraced task shows neither.
func TestTheTaskPageLinksTheTrace(t *testing.T) {
	f := newFixture(t)
	const id = "4bf92f3577b34da6a3ce929d0e0e4736"
	if err := f.store.Rewrite(f.ids["private"], func(tk *task.Task) { tk.Trace = "00-" + id + "-00f067aa0ba902b7-01" }); err != nil {
		t.Fatal(err)
	}
	alice := f.signIn(t, "alice")
	page := f.serve(t, "GET", "/console/tasks/"+itoa(f.ids["private"]), nil, []*http.Cookie{alice}, nil).Body.String()
	if want := `<a href="https://traces.example/trace/` + id + `"><code>` + id + `</code></a>`; !strings.Contains(page, want) {
		t.Errorf("the page lacks %s", want)
	}
	w := f.serve(t, "GET", "/api/tasks/"+itoa(f.ids["private"]), nil, []*http.Cookie{alice}, nil)
	loadOpenAPI(t).check(t, "GET /api/tasks/{id}", w)
	var v taskView
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || v.TraceID != id {
		t.Errorf("API trace_id %q (%v), want %s", v.TraceID, err, id)
	}
	other := f.serve(t, "GET", "/console/tasks/"+itoa(f.ids["hostile"]), nil, []*http.Cookie{alice}, nil).Body.String()
	if strings.Contains(other, "<dt>Trace</dt>") {
		t.Error("an untraced task shows a trace")
	}
}

func TestATraceURLMustHoldTheID(t *testing.T) {
	for _, bad := range []string{"https://traces.example/trace/", "javascript:alert(1)//{trace_id}", "traces.example/{trace_id}"} {
		_, err := New(Config{Store: struct{ Store }{}, TraceURL: bad, PublicURL: "https://console.example", ClientID: "c", ClientSecret: "s",
			SessionKey: []byte(strings.Repeat("k", 32))})
		if err == nil || !strings.Contains(err.Error(), "BOT_TRACE_URL") {
			t.Errorf("TraceURL %q: err %v, want a BOT_TRACE_URL refusal", bad, err)
		}
	}
}
