package console

import (
	"net/http"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/approval"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

// parsed is a page's HTML as a tree.
func parsed(t *testing.T, page string) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// find is the first element under n that match says yes to, or nil.
func find(n *html.Node, match func(*html.Node) bool) *html.Node {
	for d := range n.Descendants() {
		if d.Type == html.ElementNode && match(d) {
			return d
		}
	}
	return nil
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

func hasClass(n *html.Node, class string) bool {
	for c := range strings.FieldsSeq(attr(n, "class")) {
		if c == class {
			return true
		}
	}
	return false
}

// button is the button named name.
func button(name string) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.Data == "button" && attr(n, "name") == name }
}

// within reports whether n has an ancestor that match says yes to.
func within(n *html.Node, match func(*html.Node) bool) bool {
	for a := n.Parent; a != nil; a = a.Parent {
		if a.Type == html.ElementNode && match(a) {
			return true
		}
	}
	return false
}

func byID(id string) func(*html.Node) bool {
	return func(n *html.Node) bool { return attr(n, "id") == id }
}

// The approval view's buttons differ by consequence: Approve is the
// primary button, Reject a secondary one beside it, and Cancel, which
// ends the whole task, is set apart from the request's answers, marked
// as destructive and behind a confirmation of its own. A task that has
// ended offers no cancel.
func TestApprovalViewButtonsDifferByConsequence(t *testing.T) {
	f := newFixture(t)
	alice := f.signIn(t, "alice")
	page := f.serve(t, "GET", "/console/tasks/"+itoa(f.ids["hostile"]), nil, []*http.Cookie{alice}, nil).Body.String()
	doc := parsed(t, page)
	approve, reject, cancel := find(doc, button("approve")), find(doc, button("reject")), find(doc, button("cancel"))
	if approve == nil || reject == nil || cancel == nil {
		t.Fatalf("the page lacks a button: approve %v, reject %v, cancel %v", approve != nil, reject != nil, cancel != nil)
	}
	tests := []struct {
		name       string
		b          *html.Node
		class      string
		inPending  bool
		inAnswers  bool
		inDanger   bool
		inConfirm  bool
		wantLabels string
	}{
		{"approve", approve, "primary", true, true, false, false, "Approve"},
		{"reject", reject, "secondary", true, true, false, false, "Reject"},
		{"cancel", cancel, "danger", false, false, true, true, "Yes, cancel task #" + itoa(f.ids["hostile"])},
	}
	for _, tt := range tests {
		if !hasClass(tt.b, tt.class) {
			t.Errorf("%s: class %q, want %q", tt.name, attr(tt.b, "class"), tt.class)
		}
		if got := within(tt.b, byID("pending")); got != tt.inPending {
			t.Errorf("%s: in the request's section = %v, want %v", tt.name, got, tt.inPending)
		}
		if got := within(tt.b, func(n *html.Node) bool { return hasClass(n, "answers") }); got != tt.inAnswers {
			t.Errorf("%s: among the answers = %v, want %v", tt.name, got, tt.inAnswers)
		}
		if got := within(tt.b, func(n *html.Node) bool { return n.Data == "section" && hasClass(n, "danger") }); got != tt.inDanger {
			t.Errorf("%s: in the danger section = %v, want %v", tt.name, got, tt.inDanger)
		}
		if got := within(tt.b, func(n *html.Node) bool { return n.Data == "details" && !hasAttr(n, "open") }); got != tt.inConfirm {
			t.Errorf("%s: behind a closed confirmation = %v, want %v", tt.name, got, tt.inConfirm)
		}
		if got := strings.TrimSpace(text(tt.b)); got != tt.wantLabels {
			t.Errorf("%s: label %q, want %q", tt.name, got, tt.wantLabels)
		}
	}
	if s := find(doc, func(n *html.Node) bool { return n.Data == "summary" && hasClass(n, "danger-button") }); s == nil || !strings.Contains(text(s), "Cancel this task") {
		t.Error("the cancel's confirmation has no closed summary naming it")
	}

	ended := f.add(t, &task.Task{State: task.Done, Issue: 90})
	page = f.serve(t, "GET", "/console/tasks/"+itoa(ended.ID), nil, []*http.Cookie{alice}, nil).Body.String()
	if strings.Contains(page, "/cancel") {
		t.Error("a done task's page offers to cancel it")
	}
}

// text is the text under n.
func text(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return b.String()
}

// A plan item's status is shown in the status comment's words, its name
// kept for the class.
func TestPlanItemsReadAsWords(t *testing.T) {
	f := newFixture(t)
	alice := f.signIn(t, "alice")
	tk := &task.Task{Kind: task.KindFix, State: task.Working, Issue: 91}
	tasktest.Job(tk).Plan = []pullwright.PlanItem{
		{Title: "Find the bug", Status: pullwright.PlanDone},
		{Title: "Fix it", Status: pullwright.PlanInProgress},
		{Title: "Test it", Status: pullwright.PlanPending},
	}
	f.add(t, tk)
	page := f.serve(t, "GET", "/console/tasks/"+itoa(tk.ID), nil, []*http.Cookie{alice}, nil).Body.String()
	for _, want := range []string{
		`<li class="plan-done">Find the bug <small>(done)</small></li>`,
		`<li class="plan-in_progress">Fix it <small>(in progress)</small></li>`,
		`<li class="plan-pending">Test it <small>(pending)</small></li>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page has no %s", want)
		}
	}
	if strings.Contains(page, "(in_progress)") {
		t.Error("the page shows a status's name")
	}
}

// The manifests the request names and the diff it shows agree: a
// manifest whose changes the diff leaves out (a long diff is cut) is
// named under it, with where its changes are.
func TestSetupDiffAgreesWithItsManifests(t *testing.T) {
	part := func(p string) string {
		return "diff --git a/" + p + " b/" + p + "\n--- a/" + p + "\n+++ b/" + p + "\n@@ -1 +1,2 @@\n x\n+y\n"
	}
	tests := []struct {
		name    string
		diff    string
		unshown string // "" when the page names none
	}{
		{"both shown", part("go.mod") + part("go.sum"), ""},
		{"the lockfile cut", part("go.mod") + "[… 9000 more bytes: the whole diff is in the commit to approve]\n", "go.sum"},
	}
	f := newFixture(t)
	alice := f.signIn(t, "alice")
	for i, tt := range tests {
		tk := &task.Task{Kind: task.KindFix, State: task.AwaitingApproval, Issue: 100 + i}
		rq := &task.ExecRequest{ID: itoa(int64(100+i)) + "-1", Command: "go test ./...", SHA: strings.Repeat("b", 40), Asked: true, CheckRunID: 5}
		shown := approval.Seal(approval.Request{ID: rq.ID, Command: rq.Command, Commit: rq.SHA, Where: approval.Where{Sandbox: true},
			Setup: &approval.Setup{Base: "main", Manifests: []pullwright.FileStat{{Path: "go.mod", Added: 1}, {Path: "go.sum", Added: 2}}, Diff: tt.diff}})
		rq.Shown = &shown
		tasktest.Job(tk).Request = rq
		f.add(t, tk)
		doc := parsed(t, f.serve(t, "GET", "/console/tasks/"+itoa(tk.ID), nil, []*http.Cookie{alice}, nil).Body.String())
		if find(doc, func(n *html.Node) bool { return n.Data == "pre" && hasClass(n, "diff") }) == nil {
			t.Fatalf("%s: the page shows no diff", tt.name)
		}
		note := find(doc, byID("unshown"))
		switch {
		case tt.unshown == "" && note != nil:
			t.Errorf("%s: the page says %q", tt.name, text(note))
		case tt.unshown != "" && note == nil:
			t.Errorf("%s: the page does not say the diff leaves out %s", tt.name, tt.unshown)
		case note != nil && (!strings.Contains(text(note), tt.unshown) || !strings.Contains(text(note), "bbbbbbbbbbbb")):
			t.Errorf("%s: the page says %q", tt.name, text(note))
		}
	}
}
