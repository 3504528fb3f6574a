package ghapp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/fakegithub"
	"github.com/pullwright/pullwright/internal/gitserver"
	"github.com/pullwright/pullwright/internal/testclock"
)

// newClock is a settable Config.Now.
func newClock() *testclock.Clock {
	return testclock.New(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
}

func TestFile(t *testing.T) {
	e := newEnv(t)
	e.fake.AddInstallation(8, "acme/gadgets")
	big := bytes.Repeat([]byte("x"), maxFileSize+1)
	binary := []byte("a\x00b\xff\n")
	e.fake.SetFile(owner, repo, "main", ".github/pullwright.yml", []byte("version: 1\n"))
	e.fake.SetFile(owner, repo, "dev", ".github/pullwright.yml", []byte("version: 2\n"))
	e.fake.SetFile(owner, repo, "main", "docs/guide.md", []byte("# Guide\n"))
	e.fake.SetFile(owner, repo, "main", "bin/data", binary)
	e.fake.SetFile(owner, repo, "main", "big.yml", big)
	e.fake.SetFile(owner, repo, "main", "empty", nil)
	e.fake.SetFile(owner, repo, "main", "docs/a b#c?.md", []byte("odd name\n"))
	e.fake.SetSymlink(owner, repo, "main", "linked.yml", ".github/pullwright.yml")
	e.fake.SetSymlink(owner, repo, "main", "dangling.yml", "../elsewhere.yml")
	e.fake.SetFile("acme", "gadgets", "main", "secret", []byte("s"))

	tests := []struct {
		name, repo, ref, path string
		want                  []byte
		notFound              bool
		wantErr               string
	}{
		{name: "file", repo: repo, ref: "main", path: ".github/pullwright.yml", want: []byte("version: 1\n")},
		{name: "other ref", repo: repo, ref: "dev", path: ".github/pullwright.yml", want: []byte("version: 2\n")},
		{name: "default branch", repo: repo, ref: "", path: ".github/pullwright.yml", want: []byte("version: 1\n")},
		{name: "binary", repo: repo, ref: "main", path: "bin/data", want: binary},
		{name: "empty", repo: repo, ref: "main", path: "empty", want: []byte{}},
		{name: "name to escape", repo: repo, ref: "main", path: "docs/a b#c?.md", want: []byte("odd name\n")},
		{name: "link to a file", repo: repo, ref: "main", path: "linked.yml", want: []byte("version: 1\n")},
		{name: "missing file", repo: repo, ref: "main", path: "nope.yml", notFound: true,
			wantErr: "read nope.yml at main of acme/widgets: not found"},
		{name: "missing ref", repo: repo, ref: "gone", path: ".github/pullwright.yml", notFound: true},
		{name: "repository outside the installation", repo: "gadgets", ref: "main", path: "secret", notFound: true},
		{name: "directory", repo: repo, ref: "main", path: "docs", wantErr: "read docs at main of acme/widgets: it is a directory"},
		{name: "root", repo: repo, ref: "main", path: "/", wantErr: "empty file path"},
		{name: "dangling link", repo: repo, ref: "main", path: "dangling.yml", wantErr: `symbolic link to "../elsewhere.yml"`},
		{name: "over 1 MiB", repo: repo, ref: "main", path: "big.yml", wantErr: fmt.Sprintf("the file is %d bytes; files over 1 MiB are not read", len(big))},
		{name: "dot-dot", repo: repo, ref: "main", path: "../x", wantErr: "read ../x at main of acme/widgets:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.app.File(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: tt.repo}, tt.ref, tt.path)
			if tt.wantErr == "" && !tt.notFound {
				if err != nil || !bytes.Equal(got, tt.want) {
					t.Fatalf("File = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("File = %q, want an error", got)
			}
			if errors.Is(err, pullwright.ErrNoFile) != tt.notFound {
				t.Errorf("errors.Is(%v, pullwright.ErrNoFile) = %v, want %v", err, !tt.notFound, tt.notFound)
			}
			if tt.notFound && StatusCode(err) != http.StatusNotFound {
				t.Errorf("StatusCode(%v) = %d, want 404", err, StatusCode(err))
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q lacks %q", err, tt.wantErr)
			}
		})
	}

	// The ref travels as ?ref=, and nothing is asked when there is none.
	var queries []string
	for _, r := range e.fake.Requests() {
		if r.Path == "/repos/acme/widgets/contents/.github/pullwright.yml" {
			queries = append(queries, r.Query)
		}
	}
	if strings.Join(queries, ",") != "ref=main,ref=dev,,ref=gone" {
		t.Errorf("queries = %q", queries)
	}

	// An error other than 404 is not pullwright.ErrNoFile.
	e.fake.FailNext("GET", "/repos/acme/widgets/contents/", 1, http.StatusForbidden, nil)
	_, err := e.app.File(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, "main", ".github/pullwright.yml")
	if err == nil || errors.Is(err, pullwright.ErrNoFile) || StatusCode(err) != http.StatusForbidden {
		t.Errorf("403: %v, want a 403 error that is not pullwright.ErrNoFile", err)
	}
}

// TestFileFromGitServer serves the contents API from a real repository.
func TestFileFromGitServer(t *testing.T) {
	git := gitserver.New(t, gitserver.Options{})
	git.CreateRepo(t, owner, repo, "master", map[string]string{".github/pullwright.yml": "version: 1\n"})
	sha := git.Push(t, owner, repo, "master", map[string]string{".github/pullwright.yml": "version: 2\n"}, "Bump")
	e := newEnv(t)
	e.fake.Files = git.File
	e.fake.SetDefaultBranch(owner, repo, "master")

	for ref, want := range map[string]string{"": "version: 2\n", "master": "version: 2\n", sha + "~1": "version: 1\n"} {
		got, err := e.app.File(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, ref, ".github/pullwright.yml")
		if err != nil || string(got) != want {
			t.Errorf("File at %q = %q, %v; want %q", ref, got, err, want)
		}
	}
	if _, err := e.app.File(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, "master", "missing.yml"); !errors.Is(err, pullwright.ErrNoFile) {
		t.Errorf("missing file: %v, want pullwright.ErrNoFile", err)
	}
}

func TestTeamMember(t *testing.T) {
	e := newEnv(t)
	e.fake.AddInstallation(8, "other/thing")
	e.fake.AddTeamMember(owner, "maintainers", "alice")
	e.fake.InviteTeamMember(owner, "maintainers", "bob")
	tests := []struct {
		name       string
		inst       int64
		org, team  string
		user       string
		want       bool
		wantStatus int // of the error; 0: no error
	}{
		{name: "active member", inst: inst, org: owner, team: "maintainers", user: "alice", want: true},
		{name: "pending member", inst: inst, org: owner, team: "maintainers", user: "bob"},
		{name: "not a member", inst: inst, org: owner, team: "maintainers", user: "mallory"},
		{name: "no such team", inst: inst, org: owner, team: "nobody", user: "alice"},
		{name: "installation on another organisation", inst: 8, org: owner, team: "maintainers", user: "alice"},
		{name: "unknown installation", inst: 99, org: owner, team: "maintainers", user: "alice", wantStatus: http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.app.TeamMember(context.Background(), pullwright.Repo{InstallationID: tt.inst}, tt.org, tt.team, tt.user)
			if tt.wantStatus != 0 {
				if err == nil || StatusCode(err) != tt.wantStatus || !strings.Contains(err.Error(), "membership of alice in team acme/maintainers") {
					t.Errorf("TeamMember = %v, %v; want a %d error", got, err, tt.wantStatus)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("TeamMember = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	if n := e.count("GET", "/orgs/acme/teams/maintainers/memberships/alice"); n != 2 {
		t.Errorf("alice asked %d times, want 2 (once per installation)", n)
	}

	// A refusal (no "Members: read" permission) is an error, never false.
	e.fake.AddTeamMember(owner, "maintainers", "carol")
	e.fake.FailNext("GET", "/orgs/", 1, http.StatusForbidden, nil)
	if got, err := e.app.TeamMember(context.Background(), pullwright.Repo{InstallationID: inst}, owner, "maintainers", "carol"); StatusCode(err) != http.StatusForbidden {
		t.Errorf("403 answered: %v, %v; want a 403 error", got, err)
	}
	if got, err := e.app.TeamMember(context.Background(), pullwright.Repo{InstallationID: inst}, owner, "maintainers", "carol"); err != nil || !got {
		t.Errorf("after the 403: %v, %v; want true (the error was not cached)", got, err)
	}
}

func TestAnswerCache(t *testing.T) {
	clk := newClock()
	e := newEnv(t, func(c *Config) { c.Now = clk.Now })
	ctx := context.Background()
	e.fake.SetPermission(owner, repo, "alice", "write")
	e.fake.AddTeamMember(owner, "maintainers", "alice")
	perm := func(o, r, user string) string {
		t.Helper()
		p, err := e.app.Permission(ctx, pullwright.Repo{InstallationID: inst, Owner: o, Name: r}, user)
		if err != nil {
			t.Fatalf("Permission: %v", err)
		}
		return p
	}
	member := func(org, team, user string) bool {
		t.Helper()
		m, err := e.app.TeamMember(ctx, pullwright.Repo{InstallationID: inst}, org, team, user)
		if err != nil {
			t.Fatalf("TeamMember: %v", err)
		}
		return m
	}

	if p, m := perm(owner, repo, "alice"), member(owner, "maintainers", "alice"); p != "write" || !m {
		t.Fatalf("first answers %q, %v", p, m)
	}
	before := len(e.fake.Requests())

	// Revoked on GitHub, but within the TTL the answers are reused, whatever
	// the case of the names.
	e.fake.SetPermission(owner, repo, "alice", "read")
	e.fake.RemoveTeamMember(owner, "maintainers", "alice")
	clk.Advance(defaultPermissionTTL - time.Second)
	if p, m := perm("ACME", "Widgets", "Alice"), member("Acme", "MAINTAINERS", "ALICE"); p != "write" || !m {
		t.Errorf("within the TTL: %q, %v; want the cached write, true", p, m)
	}
	if after := e.fake.Requests(); len(after) != before {
		t.Errorf("cached calls made requests: %+v", after[before:])
	}

	// After the TTL GitHub is asked again and the change is seen.
	clk.Advance(time.Second)
	if p, m := perm(owner, repo, "alice"), member(owner, "maintainers", "alice"); p != "read" || m {
		t.Errorf("after the TTL: %q, %v; want read, false", p, m)
	}
	if n := e.count("GET", "/repos/acme/widgets/collaborators/alice/permission"); n != 2 {
		t.Errorf("permission asked %d times, want 2", n)
	}
	// "none" (404) and false (404) are answers, cached like the others.
	perm(owner, repo, "stranger")
	member(owner, "maintainers", "stranger")
	perm(owner, repo, "stranger")
	member(owner, "maintainers", "stranger")
	if n := e.count("GET", "/repos/acme/widgets/collaborators/stranger/permission") + e.count("GET", "/orgs/acme/teams/maintainers/memberships/stranger"); n != 2 {
		t.Errorf("stranger asked %d times, want once per endpoint", n)
	}

	// Errors are not cached.
	e.fake.SetPermission(owner, repo, "bob", "admin")
	e.fake.FailNext("GET", "/repos/acme/widgets/collaborators/bob", 1, http.StatusForbidden, nil)
	if _, err := e.app.Permission(ctx, pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, "bob"); err == nil {
		t.Fatal("403 answered: no error")
	}
	if p := perm(owner, repo, "bob"); p != "admin" {
		t.Errorf("after an error: %q, want admin", p)
	}

	// Another installation asks for itself.
	e.fake.AddInstallation(8, owner+"/"+repo)
	if p, err := e.app.Permission(ctx, pullwright.Repo{InstallationID: 8, Owner: owner, Name: repo}, "alice"); err != nil || p != "read" {
		t.Errorf("installation 8: %q, %v", p, err)
	}
	if n := e.count("GET", "/repos/acme/widgets/collaborators/alice/permission"); n != 3 {
		t.Errorf("permission asked %d times, want 3", n)
	}

	// A clock that goes back does not make an old answer young.
	clk.Advance(-time.Hour)
	e.fake.SetPermission(owner, repo, "alice", "admin")
	if p := perm(owner, repo, "alice"); p != "admin" {
		t.Errorf("after the clock went back: %q, want a fresh admin", p)
	}
}

func TestPermissionTTL(t *testing.T) {
	tests := []struct {
		name string
		ttl  time.Duration
		want time.Duration
	}{
		{"default", 0, defaultPermissionTTL},
		{"shorter", 5 * time.Second, 5 * time.Second},
		{"one minute", time.Minute, time.Minute},
		{"an hour is clamped", time.Hour, time.Minute},
		{"negative disables", -1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			e := newEnv(t, func(c *Config) { c.PermissionTTL, c.Now = tt.ttl, clk.Now })
			if e.app.answers.ttl != tt.want {
				t.Fatalf("ttl = %s, want %s", e.app.answers.ttl, tt.want)
			}
			if clamped := strings.Contains(e.logs.String(), "permission cache TTL lowered"); clamped != (tt.ttl > time.Minute) {
				t.Errorf("clamp logged = %v; logs %s", clamped, e.logs.String())
			}
			e.fake.SetPermission(owner, repo, "alice", "write")
			ask := func() {
				t.Helper()
				if _, err := e.app.Permission(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, "alice"); err != nil {
					t.Fatal(err)
				}
			}
			ask()
			ask()
			wantAsked := 1
			if tt.want < 0 {
				wantAsked = 2
			}
			if n := e.count("GET", "/repos/acme/widgets/collaborators/alice/permission"); n != wantAsked {
				t.Errorf("asked %d times within the TTL, want %d", n, wantAsked)
			}
			// Just past the effective TTL (never more than a minute) GitHub is asked again.
			clk.Advance(max(tt.want, 0) + time.Nanosecond)
			ask()
			if n := e.count("GET", "/repos/acme/widgets/collaborators/alice/permission"); n != wantAsked+1 {
				t.Errorf("asked %d times after the TTL, want %d", n, wantAsked+1)
			}
		})
	}
}

func TestAnswerCacheBounded(t *testing.T) {
	clk := newClock()
	c := newAnswerCache(time.Minute, clk.Now, 3)
	key := func(i int) answerKey {
		return answerKey{kind: "permission", inst: 1, scope: "o/r", user: fmt.Sprint("u", i)}
	}
	for i := range 10 {
		c.put(key(i), "write", clk.Now())
		clk.Advance(time.Second)
		if n := c.len(); n > 3 {
			t.Fatalf("after %d puts: %d entries, want at most 3", i+1, n)
		}
	}
	// The newest answers stay; the oldest made room.
	for i := range 10 {
		_, ok := c.get(key(i))
		if want := i >= 7; ok != want {
			t.Errorf("u%d cached = %v, want %v", i, ok, want)
		}
	}
	// Expired entries are swept on insert, not only when full.
	c = newAnswerCache(time.Minute, clk.Now, 100)
	for i := range 5 {
		c.put(key(i), "read", clk.Now())
	}
	clk.Advance(2 * time.Minute)
	c.put(key(99), "read", clk.Now())
	if n := c.len(); n != 1 {
		t.Errorf("%d entries after the others expired, want 1", n)
	}
}

func TestAnswerCacheConcurrent(t *testing.T) {
	e := newEnv(t)
	for _, u := range []string{"a", "b", "c"} {
		e.fake.SetPermission(owner, repo, u, "write")
		e.fake.AddTeamMember(owner, "t", u)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 60)
	for i := range 30 {
		wg.Go(func() {
			u := []string{"a", "b", "c"}[i%3]
			if p, err := e.app.Permission(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, u); err != nil || p != "write" {
				errs <- fmt.Errorf("Permission(%s) = %q, %v", u, p, err)
			}
			if m, err := e.app.TeamMember(context.Background(), pullwright.Repo{InstallationID: inst}, owner, "t", u); err != nil || !m {
				errs <- fmt.Errorf("TeamMember(%s) = %v, %v", u, m, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := e.app.answers.len(); n != 6 {
		t.Errorf("%d cached answers, want 6", n)
	}
}

// TestFakeTokenPrefix checks that the App uses a prefixed fake token like
// any other: the prefix is what leak tests search for.
func TestFakeTokenPrefix(t *testing.T) {
	fake := fakegithub.New(t)
	fake.SetTokenPrefix("ghs_PWSECRET")
	e := newEnvOn(t, fake)
	tok, err := e.app.Token(context.Background(), inst)
	if err != nil || !strings.HasPrefix(tok, "ghs_PWSECRET") {
		t.Fatalf("Token = %q, %v", tok, err)
	}
	e.fake.SetFile(owner, repo, "main", "a", []byte("a"))
	if _, err := e.app.File(context.Background(), pullwright.Repo{InstallationID: inst, Owner: owner, Name: repo}, "main", "a"); err != nil {
		t.Fatal(err)
	}
}
