package fakegithub

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pullwright/pullwright/internal/gitserver"
)

type contentJSON struct {
	Type     string `json:"type"`
	Encoding string `json:"encoding"`
	Content  string `json:"content"`
	Size     int    `json:"size"`
	Name     string `json:"name"`
	Path     string `json:"path"`
	SHA      string `json:"sha"`
	Target   string `json:"target"`
	URL      string `json:"url"`
}

func TestContents(t *testing.T) {
	s := New(t)
	s.AddInstallation(1, "acme/widgets")
	s.AddInstallation(2, "acme/other")
	auth, other := mintToken(t, s, 1), mintToken(t, s, 2)

	long := bytes.Repeat([]byte("0123456789"), 10) // 100 bytes: 136 base64 characters
	big := bytes.Repeat([]byte("x"), maxInlineContent+1)
	s.SetFile("acme", "widgets", "main", ".github/pullwright.yml", []byte("version: 1\n"))
	s.SetFile("acme", "widgets", "main", "long.txt", long)
	s.SetFile("acme", "widgets", "main", "big.bin", big)
	s.SetFile("acme", "widgets", "main", "empty", nil)
	s.SetFile("acme", "widgets", "refs/heads/dev", ".github/pullwright.yml", []byte("version: 2\n"))
	s.SetFile("acme", "widgets", "trunk", "only-on-trunk", []byte("t"))
	s.SetSymlink("acme", "widgets", "main", "docs/config.yml", "../.github/pullwright.yml")
	s.SetSymlink("acme", "widgets", "main", "dangling", "nowhere")
	s.SetSymlink("acme", "widgets", "main", "absolute", "/etc/passwd")

	get := func(t *testing.T, auth, path string) (int, []byte) {
		t.Helper()
		resp, body := do(t, "GET", s.URL+"/repos/acme/widgets/contents/"+path, auth, "")
		return resp.StatusCode, []byte(body)
	}

	t.Run("file", func(t *testing.T) {
		status, body := get(t, auth, ".github/pullwright.yml?ref=main")
		var c contentJSON
		if err := json.Unmarshal(body, &c); status != 200 || err != nil {
			t.Fatalf("%d %s (%v)", status, body, err)
		}
		// git hash-object of "version: 1\n".
		want := contentJSON{Type: "file", Encoding: "base64", Content: "dmVyc2lvbjogMQo=\n", Size: 11, Name: "pullwright.yml",
			Path: ".github/pullwright.yml", SHA: "b82551848c644f63b8517a7bdf8be9a992e6f4da",
			URL: s.URL + "/repos/acme/widgets/contents/.github/pullwright.yml?ref=main"}
		if c != want {
			t.Errorf("got  %+v\nwant %+v", c, want)
		}
	})

	t.Run("content is wrapped every 60 characters", func(t *testing.T) {
		_, body := get(t, auth, "long.txt")
		var c contentJSON
		_ = json.Unmarshal(body, &c)
		lines := strings.Split(c.Content, "\n")
		if len(lines) != 4 || len(lines[0]) != 60 || len(lines[1]) != 60 || len(lines[2]) != 16 || lines[3] != "" {
			t.Errorf("content lines %q", lines)
		}
		if got, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(c.Content, "\n", "")); err != nil || !bytes.Equal(got, long) {
			t.Errorf("content decodes to %q, %v", got, err)
		}
	})

	tests := []struct {
		name, auth, path string
		status           int
		typ, content     string // content decoded
		encoding         string
		wantPath         string
	}{
		{name: "default branch is main", auth: auth, path: ".github/pullwright.yml", status: 200, typ: "file", content: "version: 1\n", encoding: "base64"},
		{name: "other ref", auth: auth, path: ".github/pullwright.yml?ref=dev", status: 200, typ: "file", content: "version: 2\n", encoding: "base64"},
		{name: "full ref name", auth: auth, path: ".github/pullwright.yml?ref=refs/heads/dev", status: 200, typ: "file", content: "version: 2\n", encoding: "base64"},
		{name: "empty file", auth: auth, path: "empty", status: 200, typ: "file", encoding: "base64"},
		{name: "over 1 MB: no inline content", auth: auth, path: "big.bin", status: 200, typ: "file", encoding: "none"},
		{name: "link to a file is followed", auth: auth, path: "docs/config.yml", status: 200, typ: "file", content: "version: 1\n", encoding: "base64", wantPath: ".github/pullwright.yml"},
		{name: "dangling link", auth: auth, path: "dangling", status: 200, typ: "symlink"},
		{name: "absolute link", auth: auth, path: "absolute", status: 200, typ: "symlink"},
		{name: "missing file", auth: auth, path: "nope.yml", status: 404},
		{name: "missing ref", auth: auth, path: ".github/pullwright.yml?ref=nope", status: 404},
		{name: "file only on another branch", auth: auth, path: "only-on-trunk", status: 404},
		{name: "other installation's token", auth: other, path: ".github/pullwright.yml", status: 404},
		{name: "no token", auth: "", path: ".github/pullwright.yml", status: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := get(t, tt.auth, tt.path)
			if status != tt.status {
				t.Fatalf("status %d (%s), want %d", status, body, tt.status)
			}
			if status == 404 {
				if !strings.Contains(string(body), `"message":"Not Found"`) {
					t.Errorf("404 body %s", body)
				}
				return
			}
			if status != 200 {
				return
			}
			var c contentJSON
			if err := json.Unmarshal(body, &c); err != nil {
				t.Fatalf("%s: %v", body, err)
			}
			got, err := base64.StdEncoding.DecodeString(c.Content)
			if c.Type != tt.typ || c.Encoding != tt.encoding || err != nil || string(got) != tt.content {
				t.Errorf("type %q encoding %q content %q (%v), want %q %q %q", c.Type, c.Encoding, got, err, tt.typ, tt.encoding, tt.content)
			}
			if tt.wantPath != "" && c.Path != tt.wantPath {
				t.Errorf("path %q, want %q", c.Path, tt.wantPath)
			}
		})
	}

	t.Run("symlink object", func(t *testing.T) {
		_, body := get(t, auth, "dangling")
		var c contentJSON
		_ = json.Unmarshal(body, &c)
		if c.Target != "nowhere" || c.Path != "dangling" || c.Content != "" || c.Size != len("nowhere") {
			t.Errorf("symlink answered %s", body)
		}
	})

	t.Run("big file reports its size", func(t *testing.T) {
		_, body := get(t, auth, "big.bin")
		var c contentJSON
		_ = json.Unmarshal(body, &c)
		if c.Size != len(big) || c.Content != "" || c.SHA != blobSHA(big) {
			t.Errorf("big file: size %d content %d bytes sha %s", c.Size, len(c.Content), c.SHA)
		}
	})

	t.Run("directory listing", func(t *testing.T) {
		for _, dir := range []string{"", ".github", "docs/"} {
			status, body := get(t, auth, dir)
			var list []contentJSON
			if err := json.Unmarshal(body, &list); status != 200 || err != nil {
				t.Fatalf("%q: %d %s (%v)", dir, status, body, err)
			}
			var got []string
			for _, c := range list {
				if c.Content != "" {
					t.Errorf("listing carries content: %+v", c)
				}
				got = append(got, c.Type+":"+c.Path)
			}
			// Sorted by name in byte order.
			want := map[string]string{
				"":        "dir:.github symlink:absolute file:big.bin symlink:dangling dir:docs file:empty file:long.txt",
				".github": "file:.github/pullwright.yml",
				"docs/":   "symlink:docs/config.yml",
			}[dir]
			if strings.Join(got, " ") != want {
				t.Errorf("listing of %q = %v, want %s", dir, got, want)
			}
		}
	})

	t.Run("default branch", func(t *testing.T) {
		s.SetDefaultBranch("acme", "widgets", "trunk")
		defer s.SetDefaultBranch("acme", "widgets", "main")
		if status, body := get(t, auth, "only-on-trunk"); status != 200 {
			t.Errorf("default branch trunk: %d %s", status, body)
		}
		if status, _ := get(t, auth, ".github/pullwright.yml"); status != 404 {
			t.Errorf("main's file found on trunk: %d", status)
		}
	})

	// Every request is recorded, with its query.
	var n int
	for _, r := range s.Requests() {
		if r.Method == "GET" && r.Path == "/repos/acme/widgets/contents/.github/pullwright.yml" && r.Query == "ref=dev" && r.Status == 200 {
			n++
		}
	}
	if n != 1 {
		t.Errorf("recorded %d GETs of the dev config, want 1", n)
	}
}

func TestContentsFilesHook(t *testing.T) {
	git := gitserver.New(t, gitserver.Options{})
	git.CreateRepo(t, "acme", "widgets", "master", map[string]string{
		".github/pullwright.yml": "from git\n",
		"stored.txt":             "from git\n",
	})
	s := New(t)
	s.AddInstallation(1, "acme/widgets")
	s.SetDefaultBranch("acme", "widgets", "master")
	s.SetFile("acme", "widgets", "master", "stored.txt", []byte("from SetFile\n"))
	var calls atomic.Int32
	s.Files = func(owner, repo, ref, path string) ([]byte, bool, error) {
		calls.Add(1)
		if path == "broken" {
			return nil, false, errors.New("disk on fire")
		}
		return git.File(owner, repo, ref, path)
	}
	auth := mintToken(t, s, 1)

	tests := []struct {
		path    string
		status  int
		content string
	}{
		{".github/pullwright.yml", 200, "from git\n"},
		{".github/pullwright.yml?ref=master", 200, "from git\n"},
		{"stored.txt", 200, "from SetFile\n"}, // SetFile wins over the hook
		{".github", 404, ""},                  // the hook serves regular files only
		{"missing", 404, ""},
		{".github/pullwright.yml?ref=nope", 404, ""},
		{"broken", 500, ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, body := do(t, "GET", s.URL+"/repos/acme/widgets/contents/"+tt.path, auth, "")
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, body, tt.status)
			}
			if tt.status != 200 {
				return
			}
			var c contentJSON
			_ = json.Unmarshal([]byte(body), &c)
			got, _ := base64.StdEncoding.DecodeString(c.Content)
			if string(got) != tt.content || c.SHA != blobSHA([]byte(tt.content)) {
				t.Errorf("content %q sha %s, want %q", got, c.SHA, tt.content)
			}
		})
	}
	// The fake's blob sha is git's.
	want, err := git.Git("acme", "widgets", "rev-parse", "master:.github/pullwright.yml")
	if err != nil {
		t.Fatal(err)
	}
	if got := blobSHA([]byte("from git\n")); got != strings.TrimSpace(want) {
		t.Errorf("blobSHA = %s, git says %s", got, want)
	}
	if calls.Load() == 0 {
		t.Error("hook never called")
	}
}

func TestTeamMembership(t *testing.T) {
	s := New(t)
	s.AddInstallation(1, "acme/widgets")
	s.AddInstallation(2, "other/thing")
	s.AddTeamMember("acme", "maintainers", "Alice")
	s.InviteTeamMember("acme", "maintainers", "bob")
	s.AddTeamMember("acme", "maintainers", "carol")
	s.RemoveTeamMember("acme", "maintainers", "carol")
	auth, other := mintToken(t, s, 1), mintToken(t, s, 2)

	tests := []struct {
		name, auth, path string
		status           int
		state            string
	}{
		{"active member", auth, "acme/teams/maintainers/memberships/alice", 200, "active"},
		{"case-insensitive", auth, "ACME/teams/Maintainers/memberships/ALICE", 200, "active"},
		{"invited member", auth, "acme/teams/maintainers/memberships/bob", 200, "pending"},
		{"removed member", auth, "acme/teams/maintainers/memberships/carol", 404, ""},
		{"stranger", auth, "acme/teams/maintainers/memberships/mallory", 404, ""},
		{"no such team", auth, "acme/teams/nope/memberships/alice", 404, ""},
		{"token of another organisation", other, "acme/teams/maintainers/memberships/alice", 404, ""},
		{"no token", "", "acme/teams/maintainers/memberships/alice", 401, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := do(t, "GET", s.URL+"/orgs/"+tt.path, tt.auth, "")
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, body, tt.status)
			}
			var m struct{ State, Role string }
			_ = json.Unmarshal([]byte(body), &m)
			if tt.status == 200 && (m.State != tt.state || m.Role != "member") {
				t.Errorf("answered %s, want state %q", body, tt.state)
			}
		})
	}
	last := s.Requests()[len(s.Requests())-1]
	if last.Path != "/orgs/acme/teams/maintainers/memberships/alice" || last.Status != 401 || last.Auth != "none" {
		t.Errorf("last request recorded as %+v", last)
	}
}

func TestTokenPrefix(t *testing.T) {
	s := New(t)
	s.AddInstallation(1, "acme/widgets")
	s.AddIssue("acme", "widgets", Issue{Number: 1, Title: "t"})
	plain := strings.TrimPrefix(mintToken(t, s, 1), "token ")
	if !strings.HasPrefix(plain, "ghs_") || len(plain) != len("ghs_")+36 {
		t.Errorf("default token %q", plain)
	}
	s.SetTokenPrefix("ghs_PWSECRET")
	a, b := mintToken(t, s, 1), mintToken(t, s, 1)
	for _, tok := range []string{a, b} {
		if !strings.HasPrefix(tok, "token ghs_PWSECRET") || len(tok) <= len("token ghs_PWSECRET") {
			t.Errorf("token %q lacks the prefix", tok)
		}
		if resp, body := do(t, "GET", s.URL+"/repos/acme/widgets/issues/1", tok, ""); resp.StatusCode != 200 {
			t.Errorf("prefixed token refused: %d %s", resp.StatusCode, body)
		}
	}
	if a == b {
		t.Error("two tokens are equal")
	}
	var n int
	for _, tok := range s.IssuedTokens() {
		if strings.HasPrefix(tok, "ghs_PWSECRET") {
			n++
		}
	}
	if n != 2 {
		t.Errorf("IssuedTokens has %d prefixed tokens, want 2", n)
	}
	for _, bad := range []string{"", "a.b", "a b", "é"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("SetTokenPrefix(%q) did not panic", bad)
				}
			}()
			s.SetTokenPrefix(bad)
		}()
	}
}
