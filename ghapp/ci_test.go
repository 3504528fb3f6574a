package ghapp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/fakegithub"
)

const headSHA = "3484a3fb816e0859fd6e1cea078d76385ff50625" // workflow_job.completed.failure.json's head_sha

func TestFailingChecks(t *testing.T) {
	e := newEnv(t)
	e.app.pageSize = 2 // the seven runs below take four pages
	add := func(cr fakegithub.CheckRun) int64 {
		if cr.HeadSHA == "" {
			cr.HeadSHA = headSHA
		}
		return e.fake.AddCheckRun(owner, repo, cr)
	}
	// Oldest first: filter=latest hides the failure a re-run fixed.
	add(fakegithub.CheckRun{App: fakegithub.ActionsApp, Name: "test", Conclusion: "failure"})
	add(fakegithub.CheckRun{App: fakegithub.ActionsApp, Name: "test", Conclusion: "success"})
	lint := add(fakegithub.CheckRun{App: fakegithub.ActionsApp, Name: "linters", Conclusion: "failure",
		Title: "Run yarn run format-check", Summary: "Process completed with exit code 1."})
	other := add(fakegithub.CheckRun{App: "octocoders-linter", Name: "Octocoders-linter", Conclusion: "timed_out",
		Summary: "took too long", Annotations: []fakegithub.Annotation{{Path: "a.go", Level: "warning", Message: "m"}}})
	add(fakegithub.CheckRun{App: fakegithub.ActionsApp, Name: "docs", Conclusion: "cancelled"})
	add(fakegithub.CheckRun{App: fakegithub.ActionsApp, Name: "slow", Status: "in_progress"})
	add(fakegithub.CheckRun{App: fakegithub.ActionsApp, Name: "elsewhere", Conclusion: "failure", HeadSHA: "other"})

	got, err := e.app.FailingChecks(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, headSHA)
	if err != nil {
		t.Fatal(err)
	}
	// Newest first, as GitHub lists them.
	want := []pullwright.CheckFailure{
		{ID: other, Name: "Octocoders-linter", App: "octocoders-linter", Conclusion: "timed_out",
			URL: fmt.Sprintf("https://github.com/acme/widgets/runs/%d", other), Summary: "took too long", AnnotationCount: 1},
		{ID: lint, Name: "linters", App: "github-actions", Conclusion: "failure", JobID: lint,
			URL:   fmt.Sprintf("https://github.com/acme/widgets/runs/%d", lint),
			Title: "Run yarn run format-check", Summary: "Process completed with exit code 1."},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FailingChecks =\n%+v\nwant\n%+v", got, want)
	}
	pages := 0
	for _, r := range e.fake.Requests() {
		if r.Path != "/repos/acme/widgets/commits/"+headSHA+"/check-runs" {
			continue
		}
		pages++
		if q, _ := url.ParseQuery(r.Query); q.Get("filter") != "latest" {
			t.Errorf("check runs asked with %q, want filter=latest", r.Query)
		}
	}
	if pages != 3 {
		t.Errorf("read %d pages of check runs, want 3 (6 runs at 2 a page)", pages)
	}
}

func TestCheckAnnotations(t *testing.T) {
	e := newEnv(t)
	e.app.pageSize = 2
	var anns []fakegithub.Annotation
	for i := 1; i <= 5; i++ {
		anns = append(anns, fakegithub.Annotation{Path: fmt.Sprintf("f%d.js", i), StartLine: i, EndLine: i + 1, Level: "failure", Title: "t", Message: fmt.Sprintf("m%d", i)})
	}
	id := e.fake.AddCheckRun(owner, repo, fakegithub.CheckRun{App: fakegithub.ActionsApp, Name: "linters", HeadSHA: headSHA, Conclusion: "failure", Annotations: anns})
	r := pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}
	tests := []struct {
		max, want int
	}{{3, 3}, {5, 5}, {10, 5}, {1, 1}}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.max), func(t *testing.T) {
			got, err := e.app.CheckAnnotations(context.Background(), r, id, tt.max)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.want {
				t.Fatalf("got %d annotations, want %d", len(got), tt.want)
			}
			if w := (pullwright.CheckAnnotation{Path: "f1.js", StartLine: 1, EndLine: 2, Level: "failure", Title: "t", Message: "m1"}); got[0] != w {
				t.Errorf("first annotation %+v, want %+v", got[0], w)
			}
		})
	}
}

func TestJobLogTail(t *testing.T) {
	long := strings.Repeat("2024-01-01T00:00:00.0000000Z step output line\n", 100) + "##[error]Process completed with exit code 1.\n"
	tests := []struct {
		name    string
		run     fakegithub.CheckRun
		deny    bool
		max     int
		want    string // suffix of the tail
		cut     bool
		wantErr error
	}{
		{name: "whole log", run: fakegithub.CheckRun{App: fakegithub.ActionsApp, Log: "ok\nfail\n"}, max: 100, want: "ok\nfail\n"},
		{name: "tail from a line", run: fakegithub.CheckRun{App: fakegithub.ActionsApp, Log: long}, max: 200, want: "\n##[error]Process completed with exit code 1.\n", cut: true},
		{name: "no actions: read", run: fakegithub.CheckRun{App: fakegithub.ActionsApp, Log: "x"}, deny: true, max: 100, wantErr: pullwright.ErrNotPermitted},
		{name: "logs expired", run: fakegithub.CheckRun{App: fakegithub.ActionsApp, Log: "x", LogExpired: true}, max: 100, wantErr: pullwright.ErrGone},
		{name: "not a job", run: fakegithub.CheckRun{App: "octocoders-linter"}, max: 100, wantErr: pullwright.ErrGone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			if tt.deny {
				e.fake.DenyActions(inst)
			}
			tt.run.Name, tt.run.HeadSHA, tt.run.Conclusion = "linters", headSHA, "failure"
			id := e.fake.AddCheckRun(owner, repo, tt.run)
			got, cut, err := e.app.JobLogTail(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, id, tt.max)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(got, tt.want) || len(got) > tt.max || cut != tt.cut {
				t.Errorf("tail = %q (%d bytes), cut %v; want …%q, at most %d bytes, cut %v", got, len(got), cut, tt.want, tt.max, tt.cut)
			}
			if tt.cut && !strings.HasPrefix(got, "2024-") {
				t.Errorf("tail %q does not start on a line", got[:min(len(got), 40)])
			}
			var api, download bool
			for _, r := range e.fake.Requests() {
				switch {
				case r.Path == fmt.Sprintf("/repos/acme/widgets/actions/jobs/%d/logs", id):
					api = r.Status == 302 && r.Auth == "token"
				case strings.HasPrefix(r.Path, "/_blob/"):
					// The download URL is authorised by its signature: the
					// installation's token must not go there.
					download = r.Status == 200 && r.Auth == "none"
				}
			}
			if !api || !download {
				t.Errorf("log read: API 302 with the token %v, download without it %v; requests %+v", api, download, e.fake.Requests())
			}
		})
	}
}

func TestReadTail(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		n, limit int
		want     string
		cut      bool
	}{
		{"short", "abc", 10, 100, "abc", false},
		{"exact", "abcd", 4, 100, "abcd", false},
		{"line boundary", "aaaa\nbbb\ncccccc\n", 10, 100, "cccccc\n", true},
		{"no line near", "aaaa\nbbbbbbb\ncc\n", 10, 100, "bbbbbb\ncc\n", true},
		{"long, read in pieces", strings.Repeat("x", 50) + "\nend\n", 6, 1000, "end\n", true},
		{"rune boundary", "ééééé", 5, 100, "éé", true},
		{"past the read limit", "0123456789abcdef", 4, 8, "4567", true},
		{"ends at the read limit", "01234567", 4, 8, "4567", true},
		{"whole at the read limit", "0123", 4, 4, "0123", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cut, err := readTail(iotest.OneByteReader(strings.NewReader(tt.in)), tt.n, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want || cut != tt.cut {
				t.Errorf("readTail = %q, %v; want %q, %v", got, cut, tt.want, tt.cut)
			}
		})
	}
}
