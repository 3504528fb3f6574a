package action

import (
	"bufio"
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
