package main

// Tests that the guides work before the first release: what they give to
// copy names no release CHANGELOG.md does not list as published, and the
// Action's guide gives a workflow that builds the bot from its source and
// that the bot accepts as written.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/pullwright/pullwright/action"
)

// releaseHeading is a release's section of CHANGELOG.md: "## vX.Y.Z — DATE",
// or "— unreleased" before it is published.
var releaseHeading = regexp.MustCompile(`(?m)^## (v\d+\.\d+\.\d+) — (.+)$`)

// published are the releases CHANGELOG.md lists with a date.
func published(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	ms := releaseHeading.FindAllStringSubmatch(string(b), -1)
	if len(ms) == 0 {
		t.Fatal("CHANGELOG.md has no release section (## vX.Y.Z — DATE or — unreleased)")
	}
	for _, m := range ms {
		if !strings.Contains(m[2], "unreleased") {
			out[m[1]] = true
		}
	}
	return out
}

// releaseRef is what in a command fetches a release: the Action by its
// tag, the module at a tag, the chart's image at a tag.
var releaseRef = regexp.MustCompile(`(?:pullwright/pullwright@|/cmd/bot@|image\.tag[= ]|version: )(v\d+\.\d+\.\d+)\b`)

// A command a guide gives to copy (a line of code) names no release that
// is not published: copied as written, it would fail.
func TestDocsCommandsNameOnlyPublishedReleases(t *testing.T) {
	pub := published(t)
	for _, g := range guides(t) {
		if g.name == "CHANGELOG.md" {
			continue
		}
		for _, b := range blocks(g.text) {
			if b.kind != codeLine {
				continue
			}
			for _, m := range releaseRef.FindAllStringSubmatch(b.text, -1) {
				if !pub[m[1]] {
					t.Errorf("%s:%d: %q names %s, which CHANGELOG.md does not list as published: say how to run from source instead", g.name, b.line, b.text, m[1])
				}
			}
		}
	}
}

// yamlBlock is a fenced yaml block of a Markdown file.
type yamlBlock struct {
	line int
	text string
}

var yamlFence = regexp.MustCompile("(?ms)^```ya?ml\n(.*?)^```")

func yamlBlocks(md string) []yamlBlock {
	var out []yamlBlock
	for _, m := range yamlFence.FindAllStringSubmatchIndex(md, -1) {
		out = append(out, yamlBlock{line: strings.Count(md[:m[2]], "\n") + 1, text: md[m[2]:m[3]]})
	}
	return out
}

// workflowStep is what the test reads of a step.
type workflowStep struct {
	Uses             string            `yaml:"uses"`
	With             map[string]any    `yaml:"with"`
	Env              map[string]string `yaml:"env"`
	Run              string            `yaml:"run"`
	WorkingDirectory string            `yaml:"working-directory"`
}

// with is the step's input name, as text.
func (s workflowStep) with(name string) string {
	if v, ok := s.With[name]; ok && v != nil {
		return fmt.Sprint(v)
	}
	return ""
}

type workflow struct {
	On   any `yaml:"on"`
	Jobs map[string]struct {
		Steps []workflowStep `yaml:"steps"`
	} `yaml:"jobs"`
	Steps []workflowStep `yaml:"steps"` // a fragment: the steps of a job
}

// goRun is a `go run` of the bot: a package path or module@version, and
// the bot's subcommand.
var goRun = regexp.MustCompile(`^go run (\S+) (\w[\w-]*)$`)

// expression stands for what the runner puts in place of ${{ … }}.
var expression = regexp.MustCompile(`\$\{\{[^}]*\}\}`)

// docs/action.md's workflow, before a release, builds the bot from source:
// every yaml block parses, its `go run` runs the bot's package (from a
// checkout of it, or its module at a commit), `bot action` takes the
// step's variables as they are (with the runner's own), and actionlint,
// where installed, finds nothing in it.
func TestActionDocsWorkflowRunsFromSource(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "action.md"))
	if err != nil {
		t.Fatal(err)
	}
	pub := published(t)
	gomod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	module := ""
	if m := regexp.MustCompile(`(?m)^module (\S+)$`).FindSubmatch(gomod); m != nil {
		module = string(m[1])
	}
	blocks := yamlBlocks(string(b))
	if len(blocks) == 0 {
		t.Fatal("docs/action.md has no yaml block")
	}
	var fromSource, complete []yamlBlock
	for _, blk := range blocks {
		where := "docs/action.md:" + strconv.Itoa(blk.line)
		var w workflow
		if err := yaml.Unmarshal([]byte(blk.text), &w); err != nil {
			t.Errorf("%s: the yaml does not parse: %v", where, err)
			continue
		}
		steps := w.Steps
		if len(w.Jobs) > 0 {
			complete = append(complete, blk)
			for _, j := range w.Jobs {
				steps = append(steps, j.Steps...)
			}
		}
		// Where each checkout of the bot's repository put it.
		checkouts := map[string]bool{}
		for _, s := range steps {
			if strings.HasPrefix(s.Uses, "actions/checkout@") && s.with("repository") == "pullwright/pullwright" {
				checkouts[s.with("path")] = true
			}
		}
		for _, s := range steps {
			if rest, ok := strings.CutPrefix(s.Uses, "pullwright/pullwright@"); ok && len(w.Jobs) > 0 && !pub[rest] {
				t.Errorf("%s: the workflow uses the action at %s, which is no published release", where, rest)
			}
			if strings.HasPrefix(s.Uses, "actions/setup-go@") {
				if f := s.with("go-version-file"); f != "" && !checkouts[strings.TrimSuffix(f, "/go.mod")] {
					t.Errorf("%s: go-version-file %s is not the go.mod of a checkout of the bot", where, f)
				}
			}
			m := goRun.FindStringSubmatch(strings.TrimSpace(s.Run))
			if m == nil {
				if strings.Contains(s.Run, "go run") {
					t.Errorf("%s: %q: want `go run PACKAGE SUBCOMMAND`", where, s.Run)
				}
				continue
			}
			target, sub := m[1], m[2]
			switch {
			case strings.HasPrefix(target, "./"):
				if !checkouts[s.WorkingDirectory] {
					t.Errorf("%s: `go run %s` runs in %q, where no step checked out pullwright/pullwright", where, target, s.WorkingDirectory)
				}
				if target != "./cmd/bot" {
					t.Errorf("%s: `go run %s`: the bot's package is ./cmd/bot", where, target)
				}
			default:
				pkg, ref, _ := strings.Cut(target, "@")
				if pkg != module+"/cmd/bot" {
					t.Errorf("%s: `go run %s`: the bot's package is %s/cmd/bot", where, target, module)
				}
				if regexp.MustCompile(`^v\d`).MatchString(ref) && !pub[ref] {
					t.Errorf("%s: `go run %s`: %s is no published release", where, target, ref)
				}
				// go run PKG@VERSION refuses a module whose go.mod
				// replaces or excludes.
				if regexp.MustCompile(`(?m)^(replace|exclude)\b`).Match(gomod) {
					t.Errorf("%s: `go run %s` fails: go.mod has replace or exclude directives", where, target)
				}
			}
			if sub != "action" {
				t.Errorf("%s: `go run … %s`: a workflow runs `bot action`", where, sub)
				continue
			}
			fromSource = append(fromSource, blk)
			checkStepEnv(t, where, s.Env)
		}
	}
	if len(complete) == 0 {
		t.Fatal("docs/action.md has no complete workflow (on:, jobs:)")
	}
	if len(pub) == 0 && (len(fromSource) == 0 || fromSource[0] != complete[0]) {
		t.Errorf("no release is published, and the first workflow docs/action.md gives (line %d) does not build the bot from its source", complete[0].line)
	}
	lint(t, complete)
}

// checkStepEnv runs `bot action`'s reading of its settings over a step's
// variables, with the runner's own and an event: a variable the docs set
// that the bot does not read, or one it needs that the step lacks, fails.
func checkStepEnv(t *testing.T, where string, stepEnv map[string]string) {
	t.Helper()
	event := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(event, []byte(`{"action":"created"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{
		"GITHUB_EVENT_NAME": "issue_comment", "GITHUB_EVENT_PATH": event, "GITHUB_REPOSITORY": "octo/app",
		"GITHUB_RUN_ID": "4242", "GITHUB_RUN_ATTEMPT": "1", "RUNNER_TEMP": t.TempDir(),
	}
	read := codeEnv(t)
	for k, v := range stepEnv {
		if _, ok := read[k]; !ok && k != "CGO_ENABLED" {
			t.Errorf("%s: the step sets %s, which the bot does not read", where, k)
		}
		// A secret or the job's token: a value of the right shape.
		vars[k] = expression.ReplaceAllString(v, "0123456789abcdef0123456789abcdef")
	}
	e, err := action.FromEnv(func(k string) string { return vars[k] })
	if err != nil {
		t.Errorf("%s: bot action refuses the step's variables:\n%v", where, err)
		return
	}
	if want := stepEnv["BOT_RUNNER"]; want != "" && e.Runner != want {
		t.Errorf("%s: runner %q, the step sets %q", where, e.Runner, want)
	}
	// And the subcommand is the bot's: with nothing set, it names what
	// is missing rather than an unknown command.
	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"action"}, env(nil), &stderr, &stderr); err == nil || strings.Contains(err.Error(), "unknown command") {
		t.Errorf("bot action with nothing set: %v", err)
	}
}

// lint runs actionlint over the workflows where it is installed, as
// action's TestWorkflowsLint does over the repository's own.
func lint(t *testing.T, workflows []yamlBlock) {
	t.Helper()
	bin, err := exec.LookPath("actionlint")
	if err != nil {
		t.Log("actionlint is not installed: the workflows are parsed, not linted")
		return
	}
	dir := t.TempDir()
	wf := filepath.Join(dir, ".github", "workflows")
	if err := os.MkdirAll(wf, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"-no-color"}
	for _, w := range workflows {
		name := filepath.Join(wf, "doc-"+strconv.Itoa(w.line)+".yml")
		if err := os.WriteFile(name, []byte(w.text), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, name)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("actionlint over docs/action.md's workflows: %v\n%s", err, out)
	}
}
