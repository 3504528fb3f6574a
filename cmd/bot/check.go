package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/app"
	"github.com/pullwright/pullwright/deps"
	"github.com/pullwright/pullwright/internal/words"
	"github.com/pullwright/pullwright/policy"
)

const checkUsage = `usage: bot check [flags] [FILE]

Checks a repository's configuration file as the bot reads it: with the
same parser and the same messages, one problem a line (FILE:LINE: key:
problem), every problem at once. FILE defaults to .github/pullwright.yml
in the working tree of the git repository around the current directory,
as it is now: committed or not (the bot and bot run read it from a
commit; this reads the file).

With --config FILE (the operator file of bot serve --config), the file is
checked against that installation's caps, allowed models and hosts, as a
task would be; without it, against bot serve's built-in defaults.

Exit status: 0 when the file is valid, with a summary of what it allows;
1 with every problem.

flags:`

// check is "bot check": the repository file, loaded and resolved as a
// task resolves it (policy.Load, Operator.Resolve, Operator.ToolServers),
// its problems rendered as every other surface of the bot renders them.
func check(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("check", flag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.Usage = func() {
		fmt.Fprintln(stderr, checkUsage)
		flags.PrintDefaults()
	}
	config, repoName := checkFlags(flags, getenv)
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if flags.NArg() > 1 {
		flags.Usage()
		return errors.New("check: one file at a time")
	}
	path, top, err := checkPath(flags.Arg(0))
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	model := orDefault(getenv("BOT_MODEL"), app.DefaultModel)
	op := policy.DefaultOperator()
	op.Models.Default = model
	against := "bot serve's built-in defaults (--config FILE checks it against an operator file)"
	if *config != "" {
		if op, err = operatorFile(*config, model); err != nil {
			return fmt.Errorf("check: %w", err)
		}
		against = "the operator file " + *config
	}

	data, err := readConfig(path)
	missing := errors.Is(err, fs.ErrNotExist) && flags.NArg() == 0
	if err != nil && !missing {
		return fmt.Errorf("check: %w", err)
	}
	var c *policy.Config
	if !missing {
		c, err = policy.Load(data)
		if err != nil {
			return checkProblems(path, err)
		}
	}
	s, err := op.Resolve(c)
	if err != nil {
		return checkProblems(path, err)
	}
	var notes []string
	if c != nil && len(c.MCP) > 0 {
		name := *repoName
		if name == "" {
			name = originRepo(top)
		}
		if name == "" {
			notes = append(notes, "mcp: not checked against the installation's servers: name the repository with --repo OWNER/NAME")
		} else if s.MCP, err = op.ToolServers(name, c); err != nil {
			return checkProblems(path, err)
		}
	}

	w := stdout
	if missing {
		fmt.Fprintf(w, "ok: there is no %s in %s, so the defaults apply, checked against %s:\n", policy.Path, top, against)
	} else {
		fmt.Fprintf(w, "ok: %s is valid, checked against %s. It allows:\n", path, against)
	}
	for _, l := range allows(s, top) {
		fmt.Fprintf(w, "  %s\n", l)
	}
	for _, n := range notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	return nil
}

// checkFlags declares bot check's flags on flags.
func checkFlags(flags *flag.FlagSet, getenv func(string) string) (config, repo *string) {
	config = flags.String("config", getenv("BOT_CONFIG"), "the operator file of bot serve --config, whose caps apply (env BOT_CONFIG)")
	repo = flags.String("repo", "", "the repository as owner/name, for an operator's MCP servers offered to some repositories only (default: from the origin remote)")
	return config, repo
}

// checkPath is the file to check and the top of the working tree around
// it ("" outside one): the argument as given, or the repository file of
// the working tree around the current directory.
func checkPath(arg string) (path, top string, err error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", "", err
	}
	if arg != "" {
		abs, err := filepath.Abs(arg)
		if err != nil {
			return "", "", err
		}
		return arg, workTree(filepath.Dir(abs)), nil
	}
	top = workTree(wd)
	if top == "" {
		return "", "", fmt.Errorf("%s is not in a git working tree: name the file, bot check path/to/pullwright.yml", wd)
	}
	path = filepath.Join(top, filepath.FromSlash(policy.Path))
	// Named as the bot names it when the command runs at the top.
	if rel, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(rel, "..") {
		path = rel
	}
	return path, top, nil
}

// workTree is the top of the git working tree dir is in: the nearest
// directory holding .git (a directory, or the file of a linked worktree);
// "" when there is none.
func workTree(dir string) string {
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// maxConfigBytes is what the bot reads of the file from GitHub: a bigger
// file is not read at all.
const maxConfigBytes = 1 << 20

// readConfig reads the file as the bot would find it: a regular file of
// at most maxConfigBytes.
func readConfig(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (a directory or a symbolic link): the bot does not read it", path)
	}
	if fi.Size() > maxConfigBytes {
		return nil, fmt.Errorf("%s has %d bytes: the bot reads files of at most 1 MiB", path, fi.Size())
	}
	return os.ReadFile(path)
}

// checkProblems is err, the bot's own list of problems, named after the
// file checked, with a first line saying how many.
func checkProblems(path string, err error) error {
	var list *policy.Errors
	if !errors.As(err, &list) {
		return fmt.Errorf("check %s: %w", path, err)
	}
	list.File = path
	n := len(list.List) + list.More
	return fmt.Errorf("check: %s has %s:\n%w", path, words.Count(n, "problem", "problems"), list)
}

// originRepo is owner/name of the origin remote of the working tree at
// top, as GitHub names repositories; "" when it has none.
func originRepo(top string) string {
	if top == "" {
		return ""
	}
	out, err := exec.Command("git", "-C", top, "config", "--get", "remote.origin.url").Output()
	if err != nil {
		return ""
	}
	u := strings.TrimSuffix(strings.TrimSpace(string(out)), ".git")
	u = strings.ReplaceAll(u, ":", "/")
	parts := strings.Split(strings.TrimRight(u, "/"), "/")
	if len(parts) < 2 || parts[len(parts)-2] == "" || parts[len(parts)-1] == "" {
		return ""
	}
	return parts[len(parts)-2] + "/" + parts[len(parts)-1]
}

// allows says what the resolved settings let a task do, a line a topic.
func allows(s policy.Settings, top string) []string {
	var out []string
	out = append(out, "start a task: "+who(s.Trigger)+", or by adding the label "+quote(s.TriggerLabel()))
	approve := "approve commands: " + who(s.Approve.Who)
	if s.Approve.ExcludeRequester {
		approve += ", not the person who asked for the task"
	}
	out = append(out, approve)
	if len(s.AutoApprove) == 0 {
		out = append(out, "run without asking: nothing (every command waits for an approval)")
	} else {
		var rules []string
		for _, r := range s.AutoApprove {
			if r.Pattern != "" {
				rules = append(rules, "pattern "+quote(r.Pattern))
			} else {
				rules = append(rules, "command "+quote(strings.TrimSpace(r.Command)))
			}
		}
		out = append(out, "run without asking: "+strings.Join(rules, ", "))
	}
	if s.RequirePassing != "" {
		out = append(out, "must pass before the pull request is ready: "+quote(s.RequirePassing))
	}
	image := "chosen by language"
	if s.Sandbox.Image != "" {
		image = s.Sandbox.Image
	}
	out = append(out, fmt.Sprintf("sandbox: image %s, network %s, memory %s, disk %s, %s CPUs, %s a command",
		image, s.Sandbox.Network, s.Sandbox.Memory, s.Sandbox.Disk, trimFloat(s.Sandbox.CPUs), shortDuration(s.Sandbox.Timeout.D())))
	out = append(out, "setup: "+setupLine(s, top))
	if hosts := s.SetupHosts(); len(hosts) > 0 {
		out = append(out, "setup may also reach: "+strings.Join(hosts, ", "))
	}
	budget := fmt.Sprintf("budget: %d turns, %s tokens, %s", s.MaxTurns, pullwright.Thousands(s.MaxTokens), shortDuration(s.MaxWallTime))
	if s.MaxCostUSD > 0 {
		budget += fmt.Sprintf(", $%.2f", s.MaxCostUSD)
	}
	out = append(out, budget+"; model "+s.Model)
	out = append(out, "protected paths: "+strings.Join(s.Protected, ", "))
	if s.TestCommand != "" {
		out = append(out, "test command (a hint for the agent): "+quote(s.TestCommand))
	}
	if len(s.MCP) > 0 {
		var names []string
		for _, m := range s.MCP {
			names = append(names, m.Name)
		}
		out = append(out, "MCP servers: "+strings.Join(names, ", "))
	}
	out = append(out, "branches: "+s.BranchPrefix+"…")
	return out
}

// setupLine says what setup runs: the file's commands, none, or the
// defaults for the ecosystems in the working tree.
func setupLine(s policy.Settings, top string) string {
	switch {
	case s.Setup != nil && len(s.Setup) == 0:
		return "none"
	case s.Setup != nil:
		return strings.Join(quoteAll(s.Setup), ", ")
	case top == "":
		return "the defaults for the ecosystems found"
	}
	plan, err := deps.Detect(os.DirFS(top), "", nil)
	switch {
	case errors.Is(err, fs.ErrNotExist) || err == nil && len(plan.Steps) == 0:
		return "none: no ecosystem with a default was found in " + top
	case err != nil:
		return fmt.Sprintf("the defaults for the ecosystems found, which cannot be planned for %s now: %v", top, err)
	}
	return strings.Join(quoteAll(plan.Steps), ", ") + " (the defaults for the files in " + top + ")"
}

// who is a trigger or approve rule in words.
func who(w policy.Who) string {
	s := "people with " + w.Permission + " permission or more"
	var only []string
	if len(w.Users) > 0 {
		only = append(only, "users "+strings.Join(w.Users, ", "))
	}
	if len(w.Teams) > 0 {
		only = append(only, "teams "+strings.Join(w.Teams, ", "))
	}
	if len(only) > 0 {
		s += " among " + strings.Join(only, " and ")
	}
	return s
}

func quote(s string) string { return "`" + words.Clip(strings.Join(strings.Fields(s), " "), 120) + "`" }

func quoteAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = quote(s)
	}
	return out
}

func trimFloat(f float64) string { return strings.TrimSuffix(fmt.Sprintf("%g", f), ".0") }

// shortDuration writes 1h rather than 1h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
