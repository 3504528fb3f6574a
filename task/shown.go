package task

import (
	"fmt"
	"slices"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/approval"
	"github.com/pullwright/pullwright/policy"
)

// Shown is what a surface knows of an execution request when it asks:
// the facts the one value every surface shows (approval.Request) is built
// from, by Request. serve and the Action fill it from a task
// (ShowRequest), bot run from its workspace (localrun). The warnings'
// rules (a setup on changed or unknown manifests, a private cache, an
// auto_approve rule that may not answer) live here alone, so that no
// surface can ask with a value another would show differently.
type Shown struct {
	ID      string
	Command string
	Reason  string
	// Commit is the commit (bot run: the tree) whose files run; Branch
	// the branch it is pushed to, if any.
	Commit string
	Branch string
	// Where is where the command would run. Without a sandbox it has no
	// image and no network of one, and no setup runs.
	Where approval.Where
	// Files are the files the run changes against the work's start;
	// FilesUnknown is why they could not be read, if they could not.
	Files        []pullwright.FileStat
	FilesUnknown string
	// Fork is the pull request from a fork whose code would run.
	Fork *approval.Fork
	// SetupBase is what the repository's setup compares the manifests
	// with (a branch, or HEAD), and Manifests what the comparison found:
	// zero when no setup runs.
	SetupBase string
	Manifests ManifestChanges
	// Detailed is true when the person asked may read why a comparison
	// failed (bot run's own user, on their own machine): its error is
	// shown as why the manifests are unknown, or in place of a diff that
	// could not be made. serve keeps errors to its logs, and says only
	// that the comparison failed.
	Detailed bool
	// AutoApprove are the repository's auto_approve rules (none for bot
	// run, which asks or takes --yes-to instead).
	AutoApprove []policy.AutoRule
	// Tool is set when the request calls an MCP tool (Command is its
	// Line); ServerHost is its server's host, as the operator set it.
	Tool       *pullwright.ToolCall
	ServerHost string
	// KeepChanges is true when what the command changes in the
	// repository comes back into the work (approval.Request.KeepChanges).
	KeepChanges bool
	// Fetch is set when the command runs with the setup's network
	// (approval.Request.Fetch); its changes are then kept.
	Fetch *approval.Fetch
}

// Request is the value every surface shows of s, sealed.
func (s Shown) Request() approval.Request {
	if s.Tool != nil {
		// Nothing runs in a sandbox, no setup, no files: and no rule
		// answers a call, whatever it matches.
		tool := *s.Tool
		return approval.Seal(approval.Request{ID: s.ID, Command: tool.Line(), Reason: s.Reason, Commit: s.Commit, Branch: s.Branch,
			Tool: &tool, ServerHost: s.ServerHost})
	}
	v := approval.Request{ID: s.ID, Command: s.Command, Reason: s.Reason, Commit: s.Commit, Branch: s.Branch,
		Files: s.Files, FilesUnknown: s.FilesUnknown, Where: s.Where, Fork: s.Fork, KeepChanges: s.KeepChanges}
	if !v.Where.Sandbox {
		v.Where.Image, v.Where.Network = "", false
	}
	v.Setup = s.setup()
	if f := s.Fetch; f != nil && v.Where.Sandbox {
		// It runs in the setup's place: no setup runs before it.
		v.Fetch = &approval.Fetch{Hosts: slices.Clone(f.Hosts), Toolchains: f.Toolchains}
		v.Setup, v.KeepChanges = nil, true
	}
	v.AutoApprove = s.autoApprove(v)
	return approval.Seal(v)
}

// setup is what the request says of the repository's setup: nothing when
// none runs, or when it would run on the base's own manifests into a
// shared cache, which is the sandbox's usual case.
func (s Shown) setup() *approval.Setup {
	if !s.Where.Sandbox {
		return nil
	}
	m := s.Manifests
	switch {
	case len(m.Files) > 0:
		diff := m.Diff
		if diff == "" && m.Err != nil && s.Detailed {
			diff = fmt.Sprintf("(the diff could not be made: %v)\n", m.Err)
		}
		return &approval.Setup{Base: s.SetupBase, Manifests: m.Files, Diff: diff, Private: m.Private}
	case m.Err != nil:
		why := "the comparison failed"
		if s.Detailed {
			why = m.Err.Error()
		}
		return &approval.Setup{Base: s.SetupBase, Unknown: why, Private: m.Private}
	case m.Private:
		return &approval.Setup{Base: s.SetupBase, Private: true}
	}
	return nil
}

// autoApprove is the repository's rules as they bear on v: the rule that
// matches its command, and why it may not answer (a fork's code, a setup
// on manifests that are not the default branch's as they stand).
func (s Shown) autoApprove(v approval.Request) *approval.AutoApprove {
	if len(s.AutoApprove) == 0 {
		return nil
	}
	a := &approval.AutoApprove{}
	for _, rule := range s.AutoApprove {
		shown := oneLine(rule.Command)
		if rule.Command == "" {
			shown = "pattern " + oneLine(rule.Pattern)
		}
		a.Rules = append(a.Rules, shown)
		if _, ok := (policy.Settings{AutoApprove: []policy.AutoRule{rule}}).AutoApproved(s.Command); ok && a.Matched == "" {
			a.Matched = shown
		}
	}
	switch {
	case a.Matched == "":
	case v.Fork != nil:
		a.Why = "a rule never answers for a fork's code"
	case v.KeepChanges:
		// What such a command writes becomes the agent's change: a
		// person decides each time.
		a.Why = "a rule never answers a command whose changes are kept"
	case v.Setup != nil && v.Setup.Private && len(v.Setup.Manifests) == 0 && v.Setup.Unknown == "":
		a.Why = "a rule never answers when the setup would run on files whose base is not the default branch"
	case v.Setup != nil:
		a.Why = "a rule never answers when the setup would run with changed dependency manifests"
	}
	return a
}

// fetchOf is the network a dependency command may reach under set: the
// setup's. The toolchains' hosts count only in an image the operator
// trusts, which is not known here: the request may say more than the
// fence then allows, never less.
func fetchOf(set *policy.Settings) *approval.Fetch {
	if set == nil {
		return &approval.Fetch{}
	}
	return &approval.Fetch{Hosts: set.SetupHosts(), Toolchains: set.ToolchainHosts()}
}

// ShowRequest is t's current request as it is shown (approval.Request),
// sealed: changes are the files changed so far, manifests the dependency
// manifests they change against the base a shared cache is filled from
// (see requests.manifestChanges), and unisolated says the command would
// run on the bot's own machine.
func ShowRequest(t Job, changes []pullwright.FileStat, manifests ManifestChanges, unisolated bool) approval.Request {
	return showing(t, changes, manifests, unisolated).Request()
}

// showing is what a task knows of its current request when it asks.
func showing(t Job, changes []pullwright.FileStat, manifests ManifestChanges, unisolated bool) Shown {
	r := t.Request
	s := Shown{ID: r.ID, Command: r.Command, Reason: r.Reason, Commit: r.SHA, Files: changes,
		Where: approval.Where{Sandbox: !unisolated}, SetupBase: t.prBase(), Manifests: manifests, KeepChanges: r.KeepChanges}
	if r.Fetch {
		s.Fetch = fetchOf(t.Settings)
	}
	if t.PushedSHA != "" || t.onHead() {
		s.Branch = t.Branch
	}
	if set := t.Settings; set != nil {
		s.Where.Image, s.Where.Network = set.Sandbox.Image, set.Sandbox.Network == "bridge"
		s.AutoApprove = set.AutoApprove
	}
	if p := t.Pull; p != nil && p.Info.Fork {
		s.Fork = &approval.Fork{Pull: t.Issue, HeadRepo: p.Info.HeadRepo, Author: p.Info.Author}
	}
	if c := r.Tool; c != nil {
		s.Tool = c
		if set := t.Settings; set != nil {
			if m, ok := pullwright.ToolServerNamed(set.MCP, c.Server); ok {
				s.ServerHost = m.Host()
			}
		}
	}
	return s
}
