package action

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// actionYML is the part of action.yml these tests read.
type actionYML struct {
	Inputs map[string]struct {
		Required bool    `yaml:"required"`
		Default  *string `yaml:"default"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Value string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string `yaml:"using"`
		Steps []struct {
			ID    string            `yaml:"id"`
			Shell string            `yaml:"shell"`
			Env   map[string]string `yaml:"env"`
			Run   string            `yaml:"run"`
			Uses  string            `yaml:"uses"`
		} `yaml:"steps"`
	} `yaml:"runs"`
}

func readActionYML(t *testing.T) actionYML {
	t.Helper()
	b, err := os.ReadFile("../action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var a actionYML
	if err := yaml.Unmarshal(b, &a); err != nil {
		t.Fatalf("parse action.yml: %v", err)
	}
	return a
}

// inputVariables maps each input to the variable action.yml's bot step
// passes it as (env: VAR: ${{ inputs.NAME }}).
func inputVariables(t *testing.T, a actionYML) map[string]string {
	t.Helper()
	ref := regexp.MustCompile(`^\$\{\{\s*inputs\.([a-z0-9-]+)\s*\}\}$`)
	vars := map[string]string{}
	for _, s := range a.Runs.Steps {
		if s.ID != "bot" {
			continue
		}
		for v, val := range s.Env {
			if m := ref.FindStringSubmatch(val); m != nil {
				vars[m[1]] = v
			}
		}
	}
	return vars
}

type docInput struct{ def, variable string }

// docInputs reads docs/action.md's table of inputs: the rows under the
// header "| input | default | variable | what |", each cell's backticks
// removed.
func docInputs(t *testing.T) map[string]docInput {
	t.Helper()
	f, err := os.Open("../docs/action.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string]docInput{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "| input | default | variable |") {
			in = true
			continue
		}
		if !in {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		if strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 3 {
			t.Fatalf("docs/action.md: input row %q has fewer than 3 cells", line)
		}
		clean := func(s string) string { return strings.Trim(strings.TrimSpace(s), "`") }
		rows[clean(cells[0])] = docInput{def: clean(cells[1]), variable: clean(cells[2])}
	}
	if len(rows) == 0 {
		t.Fatal("docs/action.md has no table of inputs (| input | default | variable | what |)")
	}
	return rows
}

// TestActionInputsAreDocumented keeps action.yml and docs/action.md's table
// in step: the same inputs, the same defaults, and the variable each is
// passed as.
func TestActionInputsAreDocumented(t *testing.T) {
	a := readActionYML(t)
	docs := docInputs(t)
	vars := inputVariables(t, a)
	for name, in := range a.Inputs {
		d, ok := docs[name]
		if !ok {
			t.Errorf("input %s of action.yml is not in docs/action.md's table", name)
			continue
		}
		want := ""
		switch {
		case in.Required:
			want = "required"
		case in.Default != nil:
			want = *in.Default
		}
		if d.def != want {
			t.Errorf("input %s: docs/action.md says the default is %q, action.yml %q", name, d.def, want)
		}
		if d.variable != vars[name] {
			t.Errorf("input %s: docs/action.md says it is passed as %q, action.yml passes it as %q", name, d.variable, vars[name])
		}
	}
	for name := range docs {
		if _, ok := a.Inputs[name]; !ok {
			t.Errorf("docs/action.md documents input %s, which action.yml does not have", name)
		}
	}
}

// TestActionRunsTheReleasedBinary checks the shape of the action: a
// composite action whose steps install the release's binary and run it,
// and compile nothing.
func TestActionRunsTheReleasedBinary(t *testing.T) {
	a := readActionYML(t)
	if a.Runs.Using != "composite" {
		t.Fatalf("runs.using = %q, want composite", a.Runs.Using)
	}
	var ids []string
	for _, s := range a.Runs.Steps {
		ids = append(ids, s.ID)
		if s.Uses != "" {
			t.Errorf("step %s uses %s: the action runs no other action", s.ID, s.Uses)
		}
		if s.Shell != "bash" {
			t.Errorf("step %s: shell %q, want bash (install.sh is a bash script)", s.ID, s.Shell)
		}
		for _, compile := range []string{"go run", "go build", "go install", "docker build"} {
			if strings.Contains(s.Run, compile) {
				t.Errorf("step %s runs %q: the action must run the released binary, not build one", s.ID, compile)
			}
		}
	}
	if !slices.Equal(ids, []string{"install", "bot"}) {
		t.Fatalf("steps %v, want install then bot", ids)
	}
	if run := a.Runs.Steps[0].Run; !strings.Contains(run, `"$GITHUB_ACTION_PATH/action/install.sh"`) {
		t.Errorf("the install step runs %q, not action/install.sh", run)
	}
	if fi, err := os.Stat("install.sh"); err != nil || fi.Mode()&0o111 == 0 {
		t.Errorf("action/install.sh must exist and be executable: %v", err)
	}
	bot := a.Runs.Steps[1]
	if bot.Env["BOT"] != "${{ steps.install.outputs.bot }}" || strings.TrimSpace(bot.Run) != `"$BOT" action` {
		t.Errorf("the bot step runs %q with BOT=%q; want the installed binary's `action`", bot.Run, bot.Env["BOT"])
	}
	// The outputs are the ones cmd/bot's report writes to GITHUB_OUTPUT.
	for _, name := range []string{"outcome", "task-id", "pull-request-url"} {
		if got, want := a.Outputs[name].Value, "${{ steps.bot.outputs."+name+" }}"; got != want {
			t.Errorf("output %s: value %q, want %q", name, got, want)
		}
	}
}

// TestActionInputsReachFromEnv runs FromEnv on what the action's bot step
// would set: every variable action.yml passes an input as must be one
// FromEnv reads, into the setting the input is for.
func TestActionInputsReachFromEnv(t *testing.T) {
	a := readActionYML(t)
	vars := inputVariables(t, a)
	tests := map[string]struct {
		value string
		got   func(Env) string
	}{
		"github-token":       {"token-1", func(e Env) string { return e.Token }},
		"openai-api-key":     {"key-1", func(e Env) string { return e.OpenAIKey }},
		"openai-base-url":    {"https://r.openai.azure.com", func(e Env) string { return e.OpenAIBaseURL }},
		"openai-api-type":    {"azure", func(e Env) string { return e.OpenAIAPIType }},
		"openai-api-version": {"2024-10-21", func(e Env) string { return e.OpenAIAPIVersion }},
		"model":              {"model-1", func(e Env) string { return e.Model }},
		"command":            {"/bot", func(e Env) string { return e.Command }},
		"runner":             {"docker", func(e Env) string { return e.Runner }},
		"sandbox-image":      {"example/image:1", func(e Env) string { return e.SandboxImage }},
		"state-key":          {strings.Repeat("s", MinStateKey), func(e Env) string { return string(e.StateKey) }},
		"approval-timeout":   {"5h", func(e Env) string { return e.ApprovalTimeout.String() }},
		"prices": {"m-1: {input: 2, output: 8}", func(e Env) string {
			return fmt.Sprintf("m-1: {input: %v, output: %v}", e.Prices["m-1"].Input, e.Prices["m-1"].Output)
		}},
	}
	event := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(event, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"GITHUB_EVENT_NAME": "issue_comment", "GITHUB_EVENT_PATH": event,
		"GITHUB_REPOSITORY": "octo/widgets", "GITHUB_RUN_ID": "7",
	}
	for name, v := range vars {
		tc, ok := tests[name]
		if !ok {
			t.Errorf("input %s (passed as %s) has no case in this test", name, v)
			continue
		}
		env[v] = tc.value
	}
	e, err := FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("FromEnv with the action's variables: %v", err)
	}
	for name, tc := range tests {
		v, ok := vars[name]
		if !ok {
			t.Errorf("action.yml does not pass input %s to the bot", name)
			continue
		}
		want := tc.value
		if name == "approval-timeout" {
			want = (5 * time.Hour).String()
		}
		if got := tc.got(e); got != want {
			t.Errorf("input %s as %s=%q: FromEnv read %q", name, v, tc.value, got)
		}
	}
}

// release is a repository with releases as install.sh sees it, under a
// file:// server URL: ROOT/owner/name.git (a bare repository, for git
// ls-remote) and ROOT/owner/name/releases/download/TAG/ASSET.
type release struct {
	t              *testing.T
	root, bare     string
	released, head string // commits
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// newRelease makes the repository: commit 1 tagged v0.9.0 (annotated),
// v0.10.0 (lightweight, so version order, not text order, picks it) and
// the moving tag v0; commit 2 on main, released nowhere. Each release has
// bot-linux-amd64 and SHA256SUMS.
func newRelease(t *testing.T) *release {
	for _, tool := range []string{"bash", "git", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("install.sh needs %s: %v", tool, err)
		}
	}
	r := &release{t: t, root: t.TempDir()}
	work := filepath.Join(r.root, "work")
	r.bare = filepath.Join(r.root, "octo", "bot.git")
	git(t, r.root, "init", "-q", "-b", "main", work)
	git(t, work, "commit", "-q", "--allow-empty", "-m", "one")
	r.released = git(t, work, "rev-parse", "HEAD")
	git(t, work, "tag", "-a", "v0.9.0", "-m", "v0.9.0")
	git(t, work, "tag", "v0.10.0")
	git(t, work, "tag", "v0")
	git(t, work, "commit", "-q", "--allow-empty", "-m", "two")
	r.head = git(t, work, "rev-parse", "HEAD")
	git(t, r.root, "clone", "-q", "--bare", work, r.bare)
	for _, tag := range []string{"v0.9.0", "v0.10.0"} {
		r.publish(tag, "bot-linux-amd64", []byte("#!/bin/sh\necho "+tag+"\n"))
	}
	return r
}

// publish writes an asset and its line of SHA256SUMS.
func (r *release) publish(tag, asset string, data []byte) {
	dir := filepath.Join(r.root, "octo", "bot", "releases", "download", tag)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, asset), data, 0o644); err != nil {
		r.t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	f, err := os.OpenFile(filepath.Join(dir, "SHA256SUMS"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(hex.EncodeToString(sum[:]) + "  " + asset + "\n"); err != nil {
		r.t.Fatal(err)
	}
}

// install runs install.sh as action.yml does, with env on top of the
// runner's variables; it returns the installed binary's path.
func (r *release) install(env map[string]string) (string, string, error) {
	temp := r.t.TempDir()
	base := map[string]string{
		"ACTION_REPOSITORY": "octo/bot", "SERVER_URL": "file://" + r.root,
		"RUNNER_OS": "Linux", "RUNNER_ARCH": "X64", "RUNNER_TEMP": temp,
	}
	for k, v := range env {
		base[k] = v
	}
	cmd := exec.Command("bash", "install.sh")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + temp, "GIT_CONFIG_NOSYSTEM=1"}
	for k, v := range base {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return strings.TrimSpace(stdout.String()), stderr.String(), err
}

func TestInstallRunsTheReleaseOfTheRef(t *testing.T) {
	r := newRelease(t)
	// A release whose binary is not the one SHA256SUMS names.
	r.publish("v0.11.0", "bot-linux-amd64", []byte("#!/bin/sh\necho v0.11.0\n"))
	tampered := filepath.Join(r.root, "octo", "bot", "releases", "download", "v0.11.0", "bot-linux-amd64")
	if err := os.WriteFile(tampered, []byte("#!/bin/sh\necho evil\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		env     map[string]string
		want    string // what the installed binary prints
		wantErr string
	}{
		{name: "a release tag", env: map[string]string{"ACTION_REF": "v0.9.0"}, want: "v0.9.0"},
		{name: "a moving tag is its commit's highest release", env: map[string]string{"ACTION_REF": "v0"}, want: "v0.10.0"},
		{name: "a release's commit", env: map[string]string{"ACTION_REF": r.released}, want: "v0.10.0"},
		{name: "the version input wins", env: map[string]string{"ACTION_REF": "main", "VERSION": "v0.9.0"}, want: "v0.9.0"},
		{name: "a branch at no release", env: map[string]string{"ACTION_REF": "main"}, wantErr: "is no release of octo/bot"},
		{name: "an unreleased commit", env: map[string]string{"ACTION_REF": r.head}, wantErr: "is no release of octo/bot"},
		{name: "no such ref", env: map[string]string{"ACTION_REF": "v7"}, wantErr: "has no tag or branch named v7"},
		{name: "no ref at all", env: map[string]string{}, wantErr: "set the action's version input"},
		{name: "a version that is no tag", env: map[string]string{"VERSION": "latest"}, wantErr: "is not a release tag"},
		{name: "a checksum that differs", env: map[string]string{"ACTION_REF": "v0.11.0"}, wantErr: "refusing to run it"},
		{name: "an asset the release lacks", env: map[string]string{"ACTION_REF": "v0.9.0", "RUNNER_ARCH": "ARM64"},
			wantErr: "download bot-linux-arm64 of octo/bot v0.9.0"},
		{name: "a runner with no binary", env: map[string]string{"ACTION_REF": "v0.9.0", "RUNNER_OS": "Windows"},
			wantErr: "no released binary for Windows runners"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path, stderr, err := r.install(tc.env)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("installed %s, want an error containing %q", path, tc.wantErr)
				}
				if !strings.Contains(stderr, "::error title=Pullwright::") || !strings.Contains(stderr, tc.wantErr) {
					t.Fatalf("stderr %q, want an error annotation containing %q", stderr, tc.wantErr)
				}
				if path != "" {
					t.Errorf("printed %q on failure", path)
				}
				return
			}
			if err != nil {
				t.Fatalf("install: %v\n%s", err, stderr)
			}
			out, err := exec.Command(path).Output()
			if err != nil {
				t.Fatalf("run the installed %s: %v", path, err)
			}
			if got := strings.TrimSpace(string(out)); got != tc.want {
				t.Errorf("installed the binary of %s, want %s", got, tc.want)
			}
		})
	}
	// The refused binary is not left where a later step could run it.
	temp := t.TempDir()
	if _, _, err := r.install(map[string]string{"ACTION_REF": "v0.11.0", "RUNNER_TEMP": temp}); err == nil {
		t.Fatal("installed the tampered binary")
	}
	left, _ := filepath.Glob(filepath.Join(temp, "pullwright-v0.11.0", "bot*"))
	if len(left) != 0 {
		t.Errorf("the refused binary is still there: %v", left)
	}
}

// TestWorkflowsLint runs actionlint over .github/workflows where it is
// installed (go install github.com/rhysd/actionlint/cmd/actionlint). It is
// a lint, not something the bot needs, so it skips without it, also in CI.
func TestWorkflowsLint(t *testing.T) {
	bin, err := exec.LookPath("actionlint")
	if err != nil {
		t.Skip("actionlint is not installed")
	}
	cmd := exec.Command(bin, "-no-color")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("actionlint: %v\n%s", err, out)
	}
}
