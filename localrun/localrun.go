// Package localrun owns `bot run`: the agent of the GitHub App working on a
// local checkout, with any OpenAI-compatible endpoint and no GitHub at all.
// Execution requests are asked at the terminal (or answered from a --yes-to
// allow-list), approved commands run in the Docker sandbox (or, on request,
// unsandboxed on this machine), and the work ends as a commit on a new local
// branch of the user's repository.
//
// It never touches the user's current branch or working tree: the agent
// works in a shallow clone of HEAD in a temporary directory, and the result
// is pushed back into the user's repository as a new branch, never forced.
// It must not read the environment: cmd/bot turns flags and variables into
// Options.
//
// Import rule: none of ghapp, app, webhook or console.
package localrun

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/http/httpproxy"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/agent"
	"github.com/pullwright/pullwright/fence"
	"github.com/pullwright/pullwright/internal/words"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/runner"
	"github.com/pullwright/pullwright/task"
)

// DefaultModel is the model when neither Options nor the repository's
// configuration names one.
const DefaultModel = "gpt-4.1-mini"

// Runner kinds of Options.Runner.
const (
	RunnerDocker = "docker"
	RunnerLocal  = "local"
)

// BranchPrefix starts the names of the branches bot run creates.
const BranchPrefix = "pullwright/"

// DefaultCallTimeout bounds one model call, retries included: local models
// can be slow, so it is longer than the service's.
const DefaultCallTimeout = 10 * time.Minute

// saveTimeout bounds committing and pushing the work after the run ended,
// also when it ended because the context was cancelled (Ctrl-C).
const saveTimeout = 2 * time.Minute

// ErrNotTerminal is returned, before anything is done, when standard input
// is not a terminal and no command may run without asking.
var ErrNotTerminal = errors.New("standard input is not a terminal, so execution requests cannot be asked: " +
	"run bot run from a terminal, or name the commands that may run with --yes-to CMD (repeatable, exact match; " +
	"every other command is then rejected)")

// Options is what one run does. Repo, Instructions, Stdin, Stdout and Stderr
// are required.
type Options struct {
	// Repo is a directory of the user's checkout (any directory inside it).
	Repo string
	// Instructions are what the agent is asked to do.
	Instructions string
	// Branch names the new branch. Empty derives pullwright/<slug of the
	// instructions>, with a numbered suffix if that name is taken; a name
	// given here that is taken is an error.
	Branch string

	// BaseURL, APIKey and Model select the OpenAI-compatible endpoint;
	// BaseURL "" is OpenAI's, and APIKey may be empty for endpoints that
	// need none (Ollama). Model "" means the repository configuration's
	// model, else DefaultModel.
	BaseURL, APIKey, Model string
	// APIType and APIVersion select Azure OpenAI (agent.Config.APIType,
	// APIVersion); "" is OpenAI's API.
	APIType, APIVersion string
	// CallTimeout bounds one model call, retries included; zero means
	// DefaultCallTimeout.
	CallTimeout time.Duration
	// LLMRetries is how often a failed model call is retried (see
	// agent.Config.MaxRetries): 0 means the agent's default, negative none.
	LLMRetries int
	// Prices are USD per million tokens by model, as the operator file
	// of bot serve sets them: the report and the status line show what
	// the run cost at the model's price, or that the cost is unknown.
	Prices map[string]pullwright.Price

	// Runner is RunnerDocker (the default) or RunnerLocal (no isolation).
	Runner string
	// Path is the PATH of commands run with RunnerLocal: the user's own,
	// so that their toolchains are found (default runner.DefaultPath).
	Path string
	// Image is the sandbox image of every command; it wins over the
	// repository's sandbox.image. DefaultImage is used when neither names
	// one; when that is empty too, the image is chosen by language.
	Image, DefaultImage string

	// YesTo are commands that run without asking (exact match, spaces at
	// the ends aside). When Stdin is not a terminal, every other command
	// is rejected without asking.
	YesTo []string
	// YesToSetup lets YesTo also approve a command whose setup runs on
	// dependency manifests the agent changed (go.mod, a lockfile): that
	// setup installs them with network, through the fence, without
	// anyone reading their diff first (it is printed). Off, such a
	// command is asked at a terminal and rejected without one. It needs
	// YesTo.
	YesToSetup bool

	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// IsTerminal reports whether Stdin or Stderr is an interactive
	// terminal; nil means the real check on *os.File values.
	IsTerminal func(f any) bool
	// FenceHosts are hosts the repository's setup may reach beyond those
	// the image's toolchains are configured with (the operator file's
	// fence.hosts of bot serve, and the cap of the repository's
	// setup_hosts); FenceNets the non-public ranges it may reach (a
	// mirror on a private address), in CIDR form.
	FenceHosts, FenceNets []string
	// Forwarder is the binary the fenced setup's sandbox gets (see
	// setup.Forwarder): "" is this program, however it was linked.
	// Without one, commands run without setup, and bot run says so.
	Forwarder string
	// Resolver resolves the hosts setup asks for; nil is the system's.
	Resolver fence.Resolver
	// CABundle is a PEM file of certificates the Docker sandbox trusts
	// (runner.DockerConfig.CABundle), for a network that inspects TLS.
	CABundle string
	// ProxyEnv is the user's HTTPS_PROXY, HTTP_PROXY and NO_PROXY: the
	// network's own proxy, which the setup's fence goes out through.
	ProxyEnv httpproxy.Config

	// TempDir is where the workspace and the copies the runner makes are
	// created; "" means os.TempDir().
	TempDir string
	// Verbose logs at Info level instead of Warn.
	Verbose bool
}

// Result is what a run left behind.
type Result struct {
	// Repo is the top directory of the user's checkout; Base the commit the
	// work started from.
	Repo, Base string
	// Branch is the new branch in the user's repository, "" if nothing was
	// committed; Commits the commits on it (the last one is its tip).
	Branch  string
	Commits []string
	// Files is the change, per file.
	Files []pullwright.FileStat
	// Finished reports that the agent called finish, with Title and
	// Summary; otherwise Stopped says why the run ended early.
	Finished       bool
	Title, Summary string
	Stopped        string
	// OutOfBudget says which budget ran out, when one did: either the
	// agent finished on its last turn (Finished), or Stopped says so and
	// Summary is the bot's account of its plan and steps
	// (task.BudgetSummary), not the agent's.
	OutOfBudget   string
	Turns, Tokens int
	// Spend is what the model calls used and cost, by model, at Prices.
	Spend pullwright.Spend
	// Workspace is the temporary clone, kept only when the work could not
	// be pushed into the user's repository; "" once removed.
	Workspace string

	// Runs is the record of every execution request, as bot serve keeps
	// it for a pull request. bot run commits once, at the end, so a
	// record's SHA is the tree the command ran on, not a commit.
	Runs []task.RunRecord
	// Final is the commit the work ended on: the branch's tip, or Base
	// when nothing was committed. Verification is what Runs show of it:
	// the work is verified only when commands ran on its files and the
	// last result of each passed.
	Final        string
	Verification task.Verification
}

// Unverified says why the work is not verified, as a sentence to follow
// "not verified: "; "" when it is.
func (r Result) Unverified() string {
	return r.Verification.Unverified(finalCommit(&r))
}

// Run works on o.Instructions in a clone of o.Repo's HEAD and leaves the
// result on a new branch of o.Repo. Progress and questions go to o.Stderr,
// the final report to o.Stdout. It returns an error when the run could not
// start, when the agent did not finish (the work so far is still committed
// and pushed, and Result says where) or when the work could not be saved.
// Work the agent finished is no error even when nothing verifies it:
// Result.Verification says, as the report does. Cancelling ctx stops the
// run as soon as possible and saves the work so far.
func Run(ctx context.Context, o Options) (Result, error) {
	if err := o.check(); err != nil {
		return Result{}, err
	}
	isTerm := o.IsTerminal
	if isTerm == nil {
		isTerm = IsTerminal
	}
	interactive := isTerm(o.Stdin)
	if !interactive && len(o.YesTo) == 0 {
		return Result{}, ErrNotTerminal
	}
	d := newDisplay(o.Stderr, isTerm(o.Stderr))
	defer d.done()
	// A long wait (a setup, a command, the model) shows for how long.
	defer d.keepTime()()
	level := slog.LevelWarn
	if o.Verbose {
		level = slog.LevelInfo
	}
	log := slog.New(newTerminalLog(d, level, o.Verbose))

	src, err := openCheckout(o.Repo)
	if err != nil {
		return Result{}, err
	}
	res := Result{Repo: src.top, Base: src.head}
	settings, notes, drift, err := resolveSettings(src, o.Model, o.FenceHosts, o.FenceNets)
	if err != nil {
		return res, err
	}
	guidance, guidanceFrom, err := src.guidance(settings.InstructionFiles())
	if err != nil {
		return res, err
	}
	if line := guidanceNote(guidance, guidanceFrom); line != "" {
		notes = append(notes, line)
	}
	model := cmp.Or(o.Model, settings.Model, DefaultModel)
	a, err := agent.New(agent.Config{
		BaseURL:     o.BaseURL,
		APIKey:      o.APIKey,
		APIType:     o.APIType,
		APIVersion:  o.APIVersion,
		Model:       model,
		CallTimeout: cmp.Or(o.CallTimeout, DefaultCallTimeout),
		MaxRetries:  o.LLMRetries,
		Logger:      log.With("component", "agent"),
	})
	if err != nil {
		return res, err
	}
	sb, err := newSandbox(ctx, o, log)
	if err != nil {
		return res, err
	}
	defer sb.close()

	branch, err := src.freeBranch(o.Branch, o.Instructions)
	if err != nil {
		return res, err
	}
	r := &run{
		o: o, d: d, log: log, src: src, settings: settings, guidance: guidance, agent: a, sb: sb,
		model: model, branch: branch, res: &res, who: localUser(),
		ask: newAsker(o.Stdin, interactive, o.YesTo, d),
	}
	r.ask.setupToo = o.YesToSetup
	r.ask.asking = func() { r.status("waiting for your answer") }
	defer r.ask.close()

	base, err := os.MkdirTemp(o.TempDir, "pullwright-run-")
	if err != nil {
		return res, fmt.Errorf("create the workspace: %w", err)
	}
	removeBase := true
	defer func() {
		if removeBase {
			if err := os.RemoveAll(base); err != nil {
				d.printf("warning: could not remove the workspace %s: %v\n", base, err)
			}
		}
	}()
	d.status("cloning " + src.top)
	ws, err := src.clone(ctx, base)
	if err != nil {
		return res, err
	}
	if err := ws.CreateBranch(branch); err != nil {
		return res, err
	}
	r.ws, r.base = ws, base
	// One image for the whole run, chosen from HEAD's files and checked
	// now, before any model call: a missing one would fail every command.
	var why string
	r.image, why = sandboxImage(ws.Dir(), o.Image, settings.Sandbox.Image, o.DefaultImage)
	if err := sb.checkImage(ctx, r.image, why); err != nil {
		return res, err
	}
	d.status("looking for uncommitted changes in " + src.top)
	r.banner(notes, drift)

	r.work(ctx)
	if err := r.save(ctx); err != nil {
		removeBase = false
		res.Workspace = ws.Dir()
		return res, fmt.Errorf("%w\nThe work is still in %s (branch %s).", err, ws.Dir(), branch)
	}
	r.report()
	if r.failure != nil {
		return res, r.failure
	}
	if !res.Finished {
		return res, fmt.Errorf("the agent did not finish: %s", res.Stopped)
	}
	return res, nil
}

func (o *Options) check() error {
	switch {
	case strings.TrimSpace(o.Instructions) == "":
		return errors.New("no instructions: say what the agent should do")
	case o.Stdin == nil || o.Stdout == nil || o.Stderr == nil:
		return errors.New("localrun: Stdin, Stdout and Stderr are required")
	case o.CallTimeout < 0:
		return errors.New("the model call timeout must not be negative")
	}
	if o.Repo == "" {
		o.Repo = "."
	}
	if o.Runner == "" {
		o.Runner = RunnerDocker
	}
	if o.Runner != RunnerDocker && o.Runner != RunnerLocal {
		return fmt.Errorf("runner %q: want %s or %s", o.Runner, RunnerDocker, RunnerLocal)
	}
	var yes []string
	for _, c := range o.YesTo {
		if c = strings.TrimSpace(c); c != "" && !slices.Contains(yes, c) {
			yes = append(yes, c)
		}
	}
	o.YesTo = yes
	if o.YesToSetup && len(o.YesTo) == 0 {
		return errors.New("--yes-to-setup lets the --yes-to list approve a setup on changed manifests, and no command is on the list: name them with --yes-to CMD")
	}
	return nil
}

// resolveSettings reads .github/pullwright.yml at HEAD, if any, and resolves
// it as the service would, with the user as the operator: the repository
// may ask for a network and name its model, and no cost budget applies
// (bot run's prices, if any, only show the cost). notes say what was set
// aside.
//
// drift says how the working tree's file differs from HEAD's, which is
// the one used: an edit that is not committed yet would otherwise be
// ignored without a word.
func resolveSettings(src *checkout, model string, fenceHosts, fenceNets []string) (s policy.Settings, notes []string, drift string, err error) {
	data, found, err := src.file(policy.Path)
	if err != nil {
		return policy.Settings{}, nil, "", err
	}
	drift = configDrift(src, data, found)
	var c *policy.Config
	if found {
		if c, err = policy.Load(data); err != nil {
			if drift != "" {
				err = fmt.Errorf("%w\n(%s)", err, drift)
			}
			return policy.Settings{}, nil, "", fmt.Errorf("the repository configuration at HEAD is invalid:\n%w", err)
		}
		if c.Budget.MaxCostUSD > 0 {
			notes = append(notes, fmt.Sprintf("%s: budget.max_cost_usd is not enforced by bot run, whose prices only show what a run cost", policy.Path))
			c.Budget.MaxCostUSD = 0
		}
		if len(c.AutoApprove) > 0 {
			notes = append(notes, fmt.Sprintf("%s: auto_approve is not used by bot run; name commands with --yes-to", policy.Path))
		}
	}
	op := policy.DefaultOperator()
	op.Caps.Network = runner.NetworkBridge
	op.Models.Default = cmp.Or(model, DefaultModel)
	op.Fence.Hosts, op.Fence.AllowedNets = fenceHosts, fenceNets
	if c != nil && c.Model != "" {
		op.Models.Allowed = append(op.Models.Allowed, c.Model)
	}
	s, err = op.Resolve(c)
	if err != nil {
		return policy.Settings{}, nil, "", fmt.Errorf("the repository configuration at HEAD asks for more than bot run allows:\n%w", err)
	}
	return s, notes, drift, nil
}

// configDrift says how the working tree's repository file differs from
// HEAD's (head, found), in a sentence for a warning; "" when it does not,
// or when the working tree's cannot be read (the warning of uncommitted
// changes still names it).
func configDrift(src *checkout, head []byte, found bool) string {
	at := words.Short(src.head)
	b, err := os.ReadFile(filepath.Join(src.top, filepath.FromSlash(policy.Path)))
	switch {
	case errors.Is(err, fs.ErrNotExist) && found:
		return fmt.Sprintf("%s is deleted in the working tree, but bot run reads it from HEAD (%s): commit the deletion to run without it", policy.Path, at)
	case err != nil:
		return ""
	case !found:
		return fmt.Sprintf("%s is not committed, so it is not used: bot run reads the configuration from HEAD (%s), which has none; "+
			"commit it to use it (bot check checks the file as it is now)", policy.Path, at)
	case bytes.Equal(b, head):
		return ""
	}
	return fmt.Sprintf("uncommitted changes to %s are not used: bot run reads it from HEAD (%s); "+
		"commit them to use them (bot check checks the file as it is now)", policy.Path, at)
}

// sandboxImage is the image of a run's commands, and who chose it: the
// --image flag, then the repository's sandbox.image, then the default
// image (BOT_SANDBOX_IMAGE), and otherwise the language of the files in
// dir, as the runner would choose it.
func sandboxImage(dir, flag, repo, def string) (image, why string) {
	switch {
	case flag != "":
		return flag, "--image"
	case repo != "":
		return repo, "the repository's sandbox.image"
	case def != "":
		return def, "the default image, BOT_SANDBOX_IMAGE"
	}
	return runner.ImageFor(dir, "", ""), "chosen by the repository's language"
}

// localUser is the name the agent is told answered its requests.
func localUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "local-user"
}
