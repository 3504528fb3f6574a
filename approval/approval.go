// Package approval is what a person approves: one execution request as it
// is shown, built once from the facts of whoever asks (a task of `serve`
// or the Action, or `bot run`), with a digest of exactly that value.
//
// Every surface renders this value and nothing else: the request comment
// and the approval check run (task/render.go), the console's page and its
// API's `pending` (console), and the terminal of `bot run` (Text). The
// sentences that explain it, the warnings among them, are written once
// here as spans of plain text, code and emphasis, so that each surface
// only chooses the markup. Every answer given outside a comment names the
// digest it was shown, and one that no longer matches is refused.
//
// It decides nothing (whether a request may run is policy's and task's),
// and it does no I/O.
//
// Import rule: only pullwright, policy, untrusted and internal/words.
package approval

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/words"
)

// Request is one execution request as a person is asked to approve it.
// Its fields are the facts shown; Digest is the hash of all of them.
type Request struct {
	// ID is what "/approve <id>" names: "<task id>-<sequence>" for a task,
	// a sequence number for `bot run`.
	ID      string `json:"id"`
	Command string `json:"command"`
	// Reason is the agent's own words: shown as text, never as markup.
	Reason string `json:"reason,omitempty"`
	// Commit is the commit whose tree runs; Branch is the branch it is
	// on, when it is pushed to one. For `bot run` Commit is the tree of
	// the workspace as a commit would hold it.
	Commit string `json:"commit"`
	Branch string `json:"branch,omitempty"`
	// Files are the files the run's tree changes against the work's
	// start, as far as they could be read.
	Files []pullwright.FileStat `json:"files,omitempty"`
	// FilesUnknown is why Files could not be read, if they could not.
	FilesUnknown string `json:"files_unknown,omitempty"`
	// Where is where the command would run.
	Where Where `json:"where"`
	// Fork is set when the tree holds code from a fork.
	Fork *Fork `json:"fork,omitempty"`
	// Setup is set when the repository's setup runs first with manifests
	// that are not the base's (or that could not be compared).
	Setup *Setup `json:"setup,omitempty"`
	// AutoApprove is set when the repository has auto_approve rules.
	AutoApprove *AutoApprove `json:"auto_approve,omitempty"`
	// Tool is set when the request is a call of an MCP tool rather than
	// a command: Command is then its Line, and nothing runs in a
	// sandbox (no Where, Setup, Files or AutoApprove: no rule answers a
	// tool call).
	Tool *pullwright.ToolCall `json:"tool,omitempty"`
	// ServerHost is the host of Tool's server, as the operator set it.
	ServerHost string `json:"server_host,omitempty"`
	// KeepChanges is true when what the command changes in the
	// repository comes back into the agent's work (the agent asked for
	// it): a file the command writes is then the agent's change. Left
	// out of the value when false, so that a request sealed before it
	// existed keeps its digest.
	KeepChanges bool `json:"keep_changes,omitempty"`
	// Fetch is set when the command runs with network, through the fence,
	// as the repository's setup does (a dependency command, such as go get
	// or npm install --package-lock-only): instead of the setup, on the
	// files' own manifests, into a cache of its own. Its changes are kept.
	Fetch *Fetch `json:"fetch,omitempty"`
	// Digest is the hex SHA-256 of the value with Digest empty (Seal).
	Digest string `json:"digest"`
}

// Where is where an approved command would run.
type Where struct {
	// Sandbox is false when the command runs on the machine itself
	// (BOT_RUNNER=local, `bot run --runner local`).
	Sandbox bool `json:"sandbox"`
	// Image is the sandbox's image, when one is named.
	Image string `json:"image,omitempty"`
	// Network is true when the sandbox has network access.
	Network bool `json:"network,omitempty"`
	// Local is true for `bot run`: the machine is the person's own.
	Local bool `json:"local,omitempty"`
}

// Fork is the pull request from a fork whose code a request would run.
type Fork struct {
	Pull     int    `json:"pull"`
	HeadRepo string `json:"head_repo"`
	Author   string `json:"author"`
}

// Setup is the repository's setup that runs before the command, with the
// run's own dependency manifests.
type Setup struct {
	// Base is what the manifests are compared with (a branch, or HEAD).
	Base string `json:"base"`
	// Manifests are those the run's files change against Base.
	Manifests []pullwright.FileStat `json:"manifests,omitempty"`
	// Diff is their unified diff, possibly cut (the cut says so).
	Diff string `json:"diff,omitempty"`
	// Unknown is why the manifests could not be compared, if they could
	// not: the setup may then run with the files' own manifests.
	Unknown string `json:"unknown,omitempty"`
	// Private is true when Base is not the default branch: the setup runs
	// on the files' own manifests into a cache of the task's own, changed
	// or not, since only the default branch fills the caches tasks share.
	Private bool `json:"private,omitempty"`
}

// Unshown are the Manifests whose changes Diff does not show: a long diff
// is cut (a lockfile's is often long), and what comes after the cut is
// not shown. A surface that names the manifests says which of them its diff leaves
// out, so that the list and the diff never disagree without a word. A
// file's part of the diff starts with git's "diff --git a/P b/P" line,
// which no line of a file's content can be (those start with a space, a
// plus, a minus or a backslash), so a file's content cannot pass for
// another file's part. Nil when there is no diff.
func (s *Setup) Unshown() []string {
	if s == nil || s.Diff == "" {
		return nil
	}
	var unshown []string
	for _, m := range s.Manifests {
		if !diffShows(s.Diff, m.Path) {
			unshown = append(unshown, m.Path)
		}
	}
	return unshown
}

// diffShows reports whether the unified diff d has a part of path's:
// its header names path as the file before or after.
func diffShows(d, path string) bool {
	for line := range strings.Lines(d) {
		rest, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "diff --git ")
		if !ok {
			continue
		}
		if rest == "a/"+path+" b/"+path || strings.HasPrefix(rest, "a/"+path+" b/") || strings.HasSuffix(rest, " b/"+path) {
			return true
		}
	}
	return false
}

// Fetch is the network a dependency command may reach: the hosts the
// fence allows by name, and whether the hosts the image's package
// managers are configured with are allowed as well.
type Fetch struct {
	Hosts      []string `json:"hosts,omitempty"`
	Toolchains bool     `json:"toolchains,omitempty"`
}

// AutoApprove is the repository's auto_approve rules as they bear on the
// request: it is shown because no rule answered it.
type AutoApprove struct {
	// Rules are the repository's rules as written: a command, or
	// "pattern <regexp>".
	Rules []string `json:"rules"`
	// Matched is the rule that matches the command, if one does; Why is
	// why it does not answer this request (a fork's code, changed
	// manifests).
	Matched string `json:"matched,omitempty"`
	Why     string `json:"why,omitempty"`
}

// Answers reports whether a rule answers the request without asking: one
// matches, and nothing keeps it from answering (a fork's code, changed
// manifests).
func (a *AutoApprove) Answers() bool { return a != nil && a.Matched != "" && a.Why == "" }

// Seal sets r's Digest from every other field and returns r.
func Seal(r Request) Request {
	r.Digest = ""
	b, err := json.Marshal(r)
	if err != nil {
		// Plain strings, numbers and slices of them always marshal.
		panic(fmt.Sprintf("approval: marshal a request: %v", err))
	}
	sum := sha256.Sum256(b)
	r.Digest = hex.EncodeToString(sum[:])
	return r
}

// Sealed reports whether r's Digest is the digest of its fields: a value
// read back from a store or a form is what was sealed.
func (r Request) Sealed() bool { return r.Digest != "" && Seal(r).Digest == r.Digest }

// ShortDigest is the digest as people compare it by eye.
func (r Request) ShortDigest() string {
	if len(r.Digest) > 12 {
		return r.Digest[:12]
	}
	return r.Digest
}

// Matches reports whether digest, as an answer names it, is r's: the
// whole digest or, for a person typing it, its first twelve characters.
func (r Request) Matches(digest string) bool {
	digest = strings.ToLower(strings.TrimSpace(digest))
	return r.Digest != "" && (digest == r.Digest || len(digest) >= 12 && strings.HasPrefix(r.Digest, digest))
}

// A Span is a piece of a sentence: our own words (Text), a value shown
// as code (Code: a path, a command, a branch), a person's login (Login),
// or our own words stressed (Strong). Every surface renders each kind
// with its own markup and escaping.
type Span struct {
	Text   string `json:"text"`
	Code   bool   `json:"code,omitempty"`
	Login  bool   `json:"login,omitempty"`
	Strong bool   `json:"strong,omitempty"`
}

// Sentence kinds. A warning is what a person must know before approving
// beyond "this command runs on these files in a closed sandbox".
const (
	KindFork         = "fork"
	KindWhere        = "where"
	KindNoSandbox    = "no_sandbox"
	KindNetwork      = "network"
	KindAutoApprove  = "auto_approve"
	KindSetup        = "setup"
	KindSetupAnyway  = "setup_unknown"
	KindSetupPrivate = "setup_private"
	KindFilesAnyway  = "files_unknown"
	KindTool         = "tool"
	KindKeep         = "keep_changes"
	KindFetch        = "fetch"
)

// Sentence is one statement about a request, in the order surfaces show
// them.
type Sentence struct {
	Kind    string `json:"kind"`
	Warning bool   `json:"warning"`
	Spans   []Span `json:"spans"`
}

func text(s string) Span   { return Span{Text: s} }
func code(s string) Span   { return Span{Text: s, Code: true} }
func strong(s string) Span { return Span{Text: s, Strong: true} }
func login(s string) Span  { return Span{Text: s, Login: true} }

// Sentences are what every surface says of r, beyond the command and the
// reason: the fork, where it runs, the auto_approve rules, the setup.
func (r Request) Sentences() []Sentence {
	if c := r.Tool; c != nil {
		// Nothing runs here: the server acts, with the operator's
		// credentials, on whatever the tool reaches.
		spans := []Span{strong("This calls a tool that may change things outside this repository."), text(" It calls "),
			code(c.Tool), text(" of the MCP server "), code(c.Server)}
		if r.ServerHost != "" {
			spans = append(spans, text(" ("), code(r.ServerHost), text(")"))
		}
		spans = append(spans, text(", with the credentials the operator gave it and exactly the arguments above; the operator did not mark this tool read-only. Its answer goes to the agent."))
		return []Sentence{{Kind: KindTool, Warning: true, Spans: spans}}
	}
	var out []Sentence
	if f := r.Fork; f != nil {
		out = append(out, Sentence{Kind: KindFork, Warning: true, Spans: []Span{
			strong("This runs code from a fork."),
			text(fmt.Sprintf(" Pull request #%d comes from ", f.Pull)), code(f.HeadRepo), text(" by "), login(f.Author),
			text(": nobody with write access here wrote it, and the command runs it. Read the change before you approve."),
		}})
	}
	out = append(out, r.where())
	if a := r.AutoApprove; a != nil && len(a.Rules) > 0 {
		spans := []Span{text("Auto-approve is "), strong("on"), text(" in this repository for ")}
		for i, rule := range a.Rules {
			if i > 0 {
				spans = append(spans, text(", "))
			}
			spans = append(spans, ruleSpans(rule)...)
		}
		switch {
		case a.Answers():
			spans = append(spans, text("; the rule "))
			spans = append(spans, ruleSpans(a.Matched)...)
			spans = append(spans, text(" answers this command, so it runs without a person's answer."))
		case a.Matched != "":
			spans = append(spans, text("; the rule "))
			spans = append(spans, ruleSpans(a.Matched)...)
			spans = append(spans, text(" matches this command but does not answer it: "+a.Why+", so it needs an answer."))
		default:
			spans = append(spans, text("; this command matched none of them, so it needs an answer."))
		}
		out = append(out, Sentence{Kind: KindAutoApprove, Spans: spans})
	}
	if s := r.Setup; s != nil {
		if s.Private {
			out = append(out, Sentence{Kind: KindSetupPrivate, Warning: true, Spans: []Span{
				strong("The repository's setup runs first, on these files' own manifests,"), text(" into a cache of this task's own: "),
				code(s.Base), text(" is not the default branch, whose files alone fill the caches other tasks share. It fetches what the manifests name, running their code with network only to the hosts allowed for it. Approving covers both."),
			}})
		}
		switch {
		case s.Private && len(s.Manifests) == 0 && s.Unknown == "":
		case s.Unknown != "":
			out = append(out, Sentence{Kind: KindSetupAnyway, Warning: true, Spans: []Span{
				strong("The dependency manifests could not be compared"), text(" with "), code(s.Base),
				text(", so the repository's setup may run first with the files' own manifests, with network only to the hosts allowed for it."),
			}})
		default:
			spans := []Span{strong("The repository's setup runs first, with these manifests."), text(" The files to run change ")}
			for i, m := range s.Manifests {
				if i == maxManifestsNamed {
					spans = append(spans, text(fmt.Sprintf(" and %d more", len(s.Manifests)-i)))
					break
				}
				if i > 0 {
					spans = append(spans, text(", "))
				}
				spans = append(spans, code(m.Path), text(fmt.Sprintf(" (+%d −%d)", m.Added, m.Deleted)))
			}
			spans = append(spans, text(" against "), code(s.Base),
				text(", so before the command the setup fetches the dependencies they name (unless it already did for these very files), running their code with network only to the hosts allowed for it. Approving covers both: read those changes first."))
			out = append(out, Sentence{Kind: KindSetup, Warning: true, Spans: spans})
		}
	}
	if f := r.Fetch; f != nil {
		spans := []Span{strong("This command may reach the network, through the fence:"), text(" only ")}
		for i, h := range f.Hosts {
			if i == maxHostsNamed {
				spans = append(spans, text(fmt.Sprintf(" and %d more", len(f.Hosts)-i)))
				break
			}
			if i > 0 {
				spans = append(spans, text(", "))
			}
			spans = append(spans, code(h))
		}
		switch {
		case f.Toolchains && len(f.Hosts) > 0:
			spans = append(spans, text(" and the hosts the image's package managers are configured with"))
		case f.Toolchains:
			spans = append(spans, text("the hosts the image's package managers are configured with"))
		case len(f.Hosts) == 0:
			spans = append(spans, text("no host at all, as none is allowed for the repository's setup"))
		}
		spans = append(spans, text(", as the repository's setup may, with a cache of its own. It runs instead of the setup, with the files' own manifests, so their code may run too."))
		out = append(out, Sentence{Kind: KindFetch, Warning: true, Spans: spans})
	}
	if r.KeepChanges {
		out = append(out, Sentence{Kind: KindKeep, Warning: true, Spans: []Span{
			strong("This command may change files in the repository; what it changes is kept."),
			text(" Files it adds, changes or deletes become the agent's change, and go into the pull request unless the agent changes them again; links it makes, "),
			code(".git"), text(" and the paths protected from the agent are not kept."),
		}})
	}
	if r.FilesUnknown != "" {
		out = append(out, Sentence{Kind: KindFilesAnyway, Warning: true, Spans: []Span{
			strong("The files this runs could not be compared with the start of the work"), text(": " + r.FilesUnknown + "."),
		}})
	}
	// Warnings first, in every rendering alike: what calls for care comes
	// before the agent's reason and the rest.
	slices.SortStableFunc(out, func(a, b Sentence) int {
		switch {
		case a.Warning == b.Warning:
			return 0
		case a.Warning:
			return -1
		}
		return 1
	})
	return out
}

// ruleSpans shows an auto_approve rule as written: a command, or a
// pattern.
func ruleSpans(rule string) []Span {
	if p, ok := strings.CutPrefix(rule, "pattern "); ok {
		return []Span{text("pattern "), code(p)}
	}
	return []Span{code(rule)}
}

// maxManifestsNamed bounds the manifests a sentence names; the diff
// shows them all (bounded by its own size).
const (
	maxManifestsNamed = 20
	maxHostsNamed     = 20
)

// Parts are r's sentences as every surface places them around the
// agent's reason: the warnings before it, the rest after.
func (r Request) Parts() (warnings, rest []Sentence) {
	for _, s := range r.Sentences() {
		if s.Warning {
			warnings = append(warnings, s)
		} else {
			rest = append(rest, s)
		}
	}
	return warnings, rest
}

// where says where the command runs: a warning when it runs without a
// sandbox or with network.
func (r Request) where() Sentence {
	spans := []Span{text("It would run on ")}
	if r.Where.Local {
		spans = append(spans, text("the files of the workspace (tree "), code(words.Short(r.Commit)), text(")"))
	} else {
		spans = append(spans, text("commit "), code(words.Short(r.Commit)))
	}
	if r.Branch != "" {
		spans = append(spans, text(" of branch "), code(r.Branch))
	}
	w := r.Where
	switch {
	case !w.Sandbox && w.Local:
		spans = append(spans, text(", "), strong("without a sandbox"),
			text(": on this machine, as you, with your network and files."))
		return Sentence{Kind: KindNoSandbox, Warning: true, Spans: spans}
	case !w.Sandbox:
		spans = append(spans, text(", "), strong("without a sandbox"),
			text(": this bot runs commands on its own machine ("), code("BOT_RUNNER=local"),
			text("), as its own user, with its network and files; a command can read the bot's own process, credentials included."))
		return Sentence{Kind: KindNoSandbox, Warning: true, Spans: spans}
	}
	spans = append(spans, text(", in a sandbox"))
	if w.Image != "" {
		spans = append(spans, text(" (image "), code(w.Image), text(")"))
	}
	credentials := " and none of the bot's credentials."
	if w.Local {
		credentials = " and none of your environment."
	}
	if w.Network {
		spans = append(spans, text(" with "), strong("network access"), text(" (this repository allows it)"+credentials))
		return Sentence{Kind: KindNetwork, Warning: true, Spans: spans}
	}
	spans = append(spans, text(" with no network"+credentials))
	return Sentence{Kind: KindWhere, Spans: spans}
}
