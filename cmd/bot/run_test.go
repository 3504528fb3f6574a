package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"golang.org/x/net/http/httpproxy"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/botproc"
	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/localrun"
)

func TestRunOptions(t *testing.T) {
	base := map[string]string{"OPENAI_API_KEY": "sk-test"}
	// bot serve's operator file: bot run takes its prices.
	dir := t.TempDir()
	config, badConfig := filepath.Join(dir, "operator.yml"), filepath.Join(dir, "bad.yml")
	os.WriteFile(config, []byte("prices:\n  gpt-4.1: {input: 2, output: 8, cached_input: 0.5}\nrate:\n  tasks_per_hour: 3\n"), 0o600)
	os.WriteFile(badConfig, []byte("prices:\n  gpt-4.1: {input: -2}\n"), 0o600)
	prices := map[string]pullwright.Price{"gpt-4.1": {Input: 2, Output: 8, CachedInput: 0.5}}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    localrun.Options
		wantErr string
	}{
		{
			name: "defaults",
			args: []string{"fix", "the", "typo"},
			env:  base,
			want: localrun.Options{Repo: ".", Runner: "docker", Instructions: "fix the typo", APIKey: "sk-test", CallTimeout: localrun.DefaultCallTimeout},
		},
		{
			name: "environment",
			args: []string{"fix it"},
			env: map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1", "BOT_MODEL": "qwen2.5-coder",
				"BOT_RUNNER": "local", "BOT_SANDBOX_IMAGE": "golang:1.26", "BOT_SANDBOX_CA_BUNDLE": "/etc/corp/ca.pem",
				"HTTPS_PROXY": "http://proxy.corp.test:3128", "no_proxy": ".corp.test"},
			want: localrun.Options{Repo: ".", Runner: "local", Instructions: "fix it", BaseURL: "http://localhost:11434/v1",
				Model: "qwen2.5-coder", DefaultImage: "golang:1.26", CallTimeout: localrun.DefaultCallTimeout,
				CABundle: "/etc/corp/ca.pem", ProxyEnv: httpproxy.Config{HTTPSProxy: "http://proxy.corp.test:3128", NoProxy: ".corp.test"}},
		},
		{
			name: "flags before, between and after the instructions",
			args: []string{"--repo", "/src", "fix", "--yes-to", "go test ./...", "the typo", "--runner=local", "--yes-to", "make",
				"--model", "m", "--base-url", "http://h/v1", "--image", "img", "--branch", "b", "--call-timeout", "1m", "-v", "--ca-bundle", "ca.pem"},
			env: map[string]string{"BOT_MODEL": "env-model", "BOT_RUNNER": "docker"},
			want: localrun.Options{Repo: "/src", Runner: "local", Instructions: "fix the typo", YesTo: []string{"go test ./...", "make"},
				Model: "m", BaseURL: "http://h/v1", Image: "img", Branch: "b", CallTimeout: time.Minute, Verbose: true, CABundle: "ca.pem"},
		},
		{
			name: "-- ends the flags",
			args: []string{"--runner", "local", "--", "explain", "--runner", "-v"},
			env:  base,
			want: localrun.Options{Repo: ".", Runner: "local", Instructions: "explain --runner -v", APIKey: "sk-test", CallTimeout: localrun.DefaultCallTimeout},
		},
		{
			name: "azure",
			args: []string{"fix it"},
			env: map[string]string{"OPENAI_API_KEY": "k", "OPENAI_API_TYPE": "azure", "OPENAI_API_VERSION": "2024-10-21",
				"OPENAI_BASE_URL": "https://r.openai.azure.com"},
			want: localrun.Options{Repo: ".", Runner: "docker", Instructions: "fix it", APIKey: "k", APIType: "azure", APIVersion: "2024-10-21",
				BaseURL: "https://r.openai.azure.com", CallTimeout: localrun.DefaultCallTimeout},
		},
		{
			name: "prices from the operator file",
			args: []string{"fix it"},
			env:  map[string]string{"OPENAI_API_KEY": "sk-test", "BOT_CONFIG": config},
			want: localrun.Options{Repo: ".", Runner: "docker", Instructions: "fix it", APIKey: "sk-test", CallTimeout: localrun.DefaultCallTimeout, Prices: prices},
		},
		{
			name: "prices from --config",
			args: []string{"--config", config, "fix it"},
			env:  base,
			want: localrun.Options{Repo: ".", Runner: "docker", Instructions: "fix it", APIKey: "sk-test", CallTimeout: localrun.DefaultCallTimeout, Prices: prices},
		},
		{
			name: "--yes-to-setup",
			args: []string{"--yes-to", "go test ./...", "--yes-to-setup", "bump x/text"},
			env:  base,
			want: localrun.Options{Repo: ".", Runner: "docker", Instructions: "bump x/text", APIKey: "sk-test", CallTimeout: localrun.DefaultCallTimeout,
				YesTo: []string{"go test ./..."}, YesToSetup: true},
		},
		{name: "an invalid operator file", args: []string{"--config", badConfig, "fix it"}, env: base, wantErr: "operator configuration " + badConfig},
		{name: "no operator file", args: []string{"--config", filepath.Join(dir, "none.yml"), "fix it"}, env: base, wantErr: "read the operator configuration"},
		{name: "azure without a version", args: []string{"--api-type", "azure", "--base-url", "https://r.openai.azure.com", "fix it"}, env: base,
			wantErr: "OPENAI_API_VERSION is not set"},
		{name: "unknown api type", args: []string{"--api-type", "bedrock", "fix it"}, env: base, wantErr: `OPENAI_API_TYPE: API type "bedrock"`},
		{name: "no instructions", args: []string{"--runner", "local"}, env: base, wantErr: "no instructions"},
		{name: "no key and no endpoint", args: []string{"fix it"}, wantErr: "OPENAI_API_KEY is not set"},
		{name: "unknown flag", args: []string{"--frobnicate", "fix it"}, env: base, wantErr: "frobnicate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			got, err := runOptions(tt.args, func(k string) string { return tt.env[k] }, &stderr)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one about %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("options\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestRunLocalHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := runLocal(context.Background(), []string{"-h"}, func(string) string { return "" }, strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"usage: bot run", "-yes-to", "-runner", "Ollama",
		"-yes-to-setup", "with network through the fence", "approves that only with --yes-to-setup"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, stderr.String())
		}
	}
}

// runTestGit runs git in dir, isolated from the machine's configuration.
func runTestGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// runTestRepo is a checkout on main holding the skeleton issue's typo.
func runTestRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	runTestGit(t, dir, "init", "-q", "-b", "main")
	runTestGit(t, dir, "config", "user.name", "Test User")
	runTestGit(t, dir, "config", "user.email", "test@example.com")
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# Hello-World\n\nRemember to comitt your work.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runTestGit(t, dir, "add", ".")
	runTestGit(t, dir, "commit", "-q", "-m", "Start")
	return dir
}

func runTestCall(name string, v any) fakellm.ToolCall {
	b, _ := json.Marshal(v)
	return fakellm.ToolCall{Name: name, Arguments: string(b)}
}

// The command line end to end: piped input with --yes-to runs the listed
// command, rejects the other one, and leaves the work on a new branch.
func TestRunLocalWithYesTo(t *testing.T) {
	dir := runTestRepo(t)
	llm := fakellm.New(t,
		fakellm.Step{ToolCalls: []fakellm.ToolCall{runTestCall("read_file", map[string]string{"path": "README.md"})}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{runTestCall("edit_file", map[string]string{"path": "README.md", "old_text": "comitt", "new_text": "commit"})}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{runTestCall("run", map[string]string{"command": "cat README.md", "reason": "check"})}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{runTestCall("run", map[string]string{"command": "echo not listed", "reason": "say hello"})}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{runTestCall("finish", map[string]string{"title": "Fix the typo", "summary": "comitt → commit"})}},
	)
	getenv := func(k string) string {
		return map[string]string{"OPENAI_BASE_URL": llm.URL, "BOT_MODEL": "test-model"}[k]
	}
	var stdout, stderr bytes.Buffer
	args := []string{"--repo", dir, "fix", "the", "typo", "--runner", "local", "--yes-to", "cat README.md"}
	if err := runLocal(context.Background(), args, getenv, strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if got := runTestGit(t, dir, "show", "pullwright/fix-the-typo:README.md"); !strings.Contains(got, "commit your work") {
		t.Errorf("README.md on the branch:\n%s", got)
	}
	if got := runTestGit(t, dir, "rev-parse", "--abbrev-ref", "HEAD"); got != "main" {
		t.Errorf("the checkout is on %s", got)
	}
	reqs := llm.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d model requests, want 5", len(reqs))
	}
	results := func(r openai.ChatCompletionRequest) string {
		var b strings.Builder
		for _, m := range r.Messages {
			if m.Role == openai.ChatMessageRoleTool {
				b.WriteString(m.Content + "\n")
			}
		}
		return b.String()
	}
	if got := results(reqs[3]); !strings.Contains(got, "Remember to commit your work.") {
		t.Errorf("the model did not see the output of cat:\n%s", got)
	}
	if got := results(reqs[4]); !strings.Contains(got, "not on the --yes-to list") {
		t.Errorf("the model did not see why echo was rejected:\n%s", got)
	}
	if !strings.Contains(stdout.String(), "New branch pullwright/fix-the-typo") || strings.Contains(stderr.String(), "Run it") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	// The list approved and rejected, and the output says so: nobody
	// was asked, and no approval of anyone's is spoken of.
	all := stderr.String() + stdout.String()
	for _, want := range []string{"only when on the --yes-to list", "(approved by --yes-to)", "), approved by --yes-to\n", "rejected by --yes-to (not on the --yes-to list)"} {
		if !strings.Contains(all, want) {
			t.Errorf("the output does not say %q:\n%s", want, all)
		}
	}
	for _, dont := range []string{"your approval", "waiting for your answer"} {
		if strings.Contains(all, dont) {
			t.Errorf("the output says %q:\n%s", dont, all)
		}
	}
}

func TestRunLocalRefusesPipedInputWithoutYesTo(t *testing.T) {
	dir := runTestRepo(t)
	llm := fakellm.New(t)
	getenv := func(k string) string { return map[string]string{"OPENAI_BASE_URL": llm.URL}[k] }
	err := runLocal(context.Background(), []string{"--repo", dir, "--runner", "local", "fix it"}, getenv,
		strings.NewReader("y\n"), io.Discard, io.Discard)
	if !errors.Is(err, localrun.ErrNotTerminal) {
		t.Fatalf("run: %v, want ErrNotTerminal", err)
	}
	if got := runTestGit(t, dir, "branch", "--format=%(refname:short)"); got != "main" {
		t.Errorf("branches: %q", got)
	}
	if llm.Calls() != 0 {
		t.Errorf("the model was called")
	}
}

// The exit status of the bot run process tells a script whether the
// work is verified: 0 only when a command passed on the final commit, 3
// when the agent finished and nothing verifies its work, 1 when the run
// stopped early.
func TestRunLocalExitStatus(t *testing.T) {
	bin, err := botproc.Binary()
	if err != nil {
		t.Fatal(err)
	}
	step := func(name string, v any) fakellm.Step {
		return fakellm.Step{ToolCalls: []fakellm.ToolCall{runTestCall(name, v)}}
	}
	edit := step("edit_file", map[string]string{"path": "README.md", "old_text": "comitt", "new_text": "commit"})
	check := func(cmd string) fakellm.Step {
		return step("run", map[string]string{"command": cmd, "reason": "check"})
	}
	done := step("finish", map[string]string{"title": "Fix the typo", "summary": "Fixed; all tests pass."})
	tests := []struct {
		name   string
		steps  []fakellm.Step
		budget string // .github/pullwright.yml's budget, if any
		status int
		want   string // on stderr
	}{
		{name: "verified", steps: []fakellm.Step{edit, check("grep -q commit README.md"), done}},
		{name: "the command fails", steps: []fakellm.Step{edit, check("grep -q comitt README.md"), done}, status: exitNotVerified,
			want: "bot: run: the work is not verified: `grep -q comitt README.md` failed (exit code 1) on the final commit"},
		{name: "nothing ran", steps: []fakellm.Step{edit, done}, status: exitNotVerified,
			want: "bot: run: the work is not verified: no command ran while the agent worked"},
		{name: "stopped early", steps: []fakellm.Step{edit, check("grep -q commit README.md")}, budget: "max_turns: 2", status: 1,
			want: "the agent did not finish"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := runTestRepo(t)
			if tt.budget != "" {
				if err := os.MkdirAll(filepath.Join(dir, ".github"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, ".github", "pullwright.yml"), []byte("budget:\n  "+tt.budget+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				runTestGit(t, dir, "add", ".")
				runTestGit(t, dir, "commit", "-q", "-m", "Budget")
			}
			llm := fakellm.New(t, tt.steps...)
			cmd := exec.Command(bin, "run", "--repo", dir, "--runner", "local",
				"--yes-to", "grep -q commit README.md", "--yes-to", "grep -q comitt README.md", "fix the typo")
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + t.TempDir(),
				"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
				"OPENAI_BASE_URL=" + llm.URL, "BOT_MODEL=test-model"}
			var stdout, stderr bytes.Buffer
			cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, &stdout, &stderr // stdin is the null device
			err := cmd.Run()
			status := 0
			if exit, ok := errors.AsType[*exec.ExitError](err); ok {
				status = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if status != tt.status {
				t.Errorf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", status, tt.status, stdout.String(), stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr does not say %q:\n%s", tt.want, stderr.String())
			}
		})
	}
}
