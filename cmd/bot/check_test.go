package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bot check validates a repository file with the bot's own parser and
// messages: every problem at once, against an operator file's caps when
// one is given, and a summary of what a valid file allows.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	node := write("node.yml", "auto_approve:\n  - command: npm test\n  - pattern: 'npx eslint [\\w./-]+'\ntest_command: npm test\nsandbox:\n  memory: 6GiB\n")
	broken := write("broken.yml", "auto_approve:\n  - npm test\nsandbox:\n  memroy: 2GiB\n  cpus: 0\nbudget:\n  max_turns: lots\n")
	operator := write("operator.yml", "defaults:\n  memory: 2GiB\ncaps:\n  memory: 4GiB\n")
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr []string // every line of the error, "" when it succeeds
		wantOut []string
	}{
		{
			name:    "valid",
			args:    []string{node},
			wantOut: []string{"ok: " + node + " is valid, checked against bot serve's built-in defaults", "run without asking: command `npm test`, pattern `npx eslint [\\w./-]+`", "memory 6GiB", "test command (a hint for the agent): `npm test`"},
		},
		{
			name: "every mistake, in the bot's words",
			args: []string{broken},
			wantErr: []string{
				"check: " + broken + " has 4 problems:",
				broken + `:2: auto_approve[0]: expected keys and values, got the text "npm test": write it as - command: npm test (the exact command)`,
				broken + ":4: sandbox.memroy: unknown key; did you mean memory?",
				broken + ":5: sandbox.cpus: 0 is not a CPU quota: it must be more than 0 (e.g. 1.5)",
				broken + `:7: budget.max_turns: expected a whole number, got the text "lots"`,
			},
		},
		{
			name:    "against an operator file's caps",
			args:    []string{"--config", operator, node},
			wantErr: []string{node + ":6: sandbox.memory: 6GiB is above this installation's cap of 4GiB"},
		},
		{
			name:    "the operator file from BOT_CONFIG, as serve reads it",
			args:    []string{node},
			env:     map[string]string{"BOT_CONFIG": operator},
			wantErr: []string{"cap of 4GiB"},
		},
		{
			name:    "an invalid operator file",
			args:    []string{"--config", broken, node},
			wantErr: []string{"operator configuration " + broken},
		},
		{
			name:    "a file that is not there",
			args:    []string{filepath.Join(dir, "none.yml")},
			wantErr: []string{"none.yml"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), append([]string{"check"}, tt.args...), func(k string) string { return tt.env[k] }, &stdout, &stderr)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("check: %v\n%s", err, stderr.String())
				}
			} else {
				if err == nil {
					t.Fatalf("check succeeded:\n%s", stdout.String())
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("the error does not say %q:\n%v", w, err)
					}
				}
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("the output does not say %q:\n%s", w, stdout.String())
				}
			}
		})
	}
}

// With no argument, bot check reads .github/pullwright.yml from the
// working tree around the current directory, as it is now, committed or
// not; with none, the defaults apply.
func TestCheckReadsTheWorkingTree(t *testing.T) {
	dir := runTestRepo(t)
	t.Chdir(dir)
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"check"}, func(string) string { return "" }, &stdout, &bytes.Buffer{}); err != nil {
		t.Fatalf("check with no file: %v", err)
	}
	if !strings.Contains(stdout.String(), "ok: there is no .github/pullwright.yml in") || !strings.Contains(stdout.String(), "run without asking: nothing") {
		t.Errorf("output:\n%s", stdout.String())
	}
	if err := os.MkdirAll(filepath.Join(dir, ".github", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".github", "pullwright.yml"), []byte("budget:\n  max_turnz: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(dir, ".github", "sub"))
	err := run(context.Background(), []string{"check"}, func(string) string { return "" }, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), ".github/pullwright.yml:2: budget.max_turnz: unknown key; did you mean max_turns?") {
		t.Fatalf("check of the uncommitted file: %v", err)
	}
}
