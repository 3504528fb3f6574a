package main

// Tests that the guides (README.md, docs/*.md) and the files an operator
// copies (action.yml, deploy/*) say what the code does: the variables and
// flags they name exist and every one the code reads is named, their
// links lead somewhere, the webhook events match the app's manifest, and
// docs/architecture.md maps every package of the module. Each reads the
// repository's files and parses Go source: no network, no Docker.

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the repository's root, seen from cmd/bot.
var repoRoot = filepath.Join("..", "..")

// A guide is one Markdown or configuration file, its path relative to the
// repository's root with slashes.
type guide struct {
	name string
	text string
}

// guides are README.md, CHANGELOG.md and docs/*.md.
func guides(t *testing.T) []guide {
	t.Helper()
	return readGuides(t, "README.md", "CHANGELOG.md", "docs/*.md")
}

// operatorFiles are what an operator copies and edits: the Action's
// metadata and the deployment examples, the Helm chart's files among them.
func operatorFiles(t *testing.T) []guide {
	t.Helper()
	return readGuides(t, "action.yml", "deploy/*")
}

// readGuides reads the files the patterns match; a directory matched stands
// for every file under it but Go source (the chart's test is code, not a
// guide).
func readGuides(t *testing.T, patterns ...string) []guide {
	t.Helper()
	var gs []guide
	for _, p := range patterns {
		matches, err := filepath.Glob(filepath.Join(repoRoot, filepath.FromSlash(p)))
		if err != nil || len(matches) == 0 {
			t.Fatalf("no file matches %s (%v)", p, err)
		}
		var names []string
		for _, m := range matches {
			err := filepath.WalkDir(m, func(n string, d fs.DirEntry, err error) error {
				switch {
				case err != nil:
					return err
				case d.IsDir() && n != m && skipDir(d.Name()):
					return filepath.SkipDir
				case !d.IsDir() && !strings.HasSuffix(n, ".go"):
					names = append(names, n)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		for _, n := range names {
			b, err := os.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(repoRoot, n)
			gs = append(gs, guide{name: filepath.ToSlash(rel), text: string(b)})
		}
	}
	return gs
}

// A block is one unit of a Markdown file as the checks read it: a
// paragraph (its lines joined, so that a code span or a link broken
// across lines stays whole), one table row, one line of code, or a
// heading.
type block struct {
	kind blockKind
	text string
	line int // of its first line
}

type blockKind int

const (
	prose blockKind = iota
	tableRow
	codeLine
	heading
)

var fenceRe = regexp.MustCompile("^ {0,3}(```|~~~)")

// blocks splits Markdown into blocks. Fenced code, and lines indented by
// four spaces or more after a blank line or another such line, are code;
// a code line ending in a backslash is joined with the next, as a shell
// reads it.
func blocks(md string) []block {
	var (
		out   []block
		para  []string
		start int
		fence string
		code  bool // the previous line was indented code
		blank = true
	)
	flush := func() {
		if len(para) > 0 {
			out = append(out, block{kind: prose, text: strings.Join(para, " "), line: start})
			para = nil
		}
	}
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		l, n := lines[i], i+1
		if m := fenceRe.FindStringSubmatch(l); m != nil {
			flush()
			switch {
			case fence == "":
				fence = m[1]
			case fence == m[1]:
				fence = ""
			}
			blank, code = false, false
			continue
		}
		indented := strings.HasPrefix(l, "    ") && strings.TrimSpace(l) != ""
		if fence != "" || indented && (blank || code) {
			flush()
			for strings.HasSuffix(l, `\`) && i+1 < len(lines) {
				i++
				l = strings.TrimSuffix(l, `\`) + " " + lines[i]
			}
			out = append(out, block{kind: codeLine, text: strings.TrimSpace(l), line: n})
			code, blank = fence == "", false
			continue
		}
		code = false
		trimmed := strings.TrimSpace(l)
		switch {
		case trimmed == "":
			flush()
			blank = true
			continue
		case strings.HasPrefix(trimmed, "|"):
			flush()
			out = append(out, block{kind: tableRow, text: trimmed, line: n})
		case strings.HasPrefix(l, "#"):
			flush()
			out = append(out, block{kind: heading, text: strings.TrimSpace(strings.TrimLeft(l, "#")), line: n})
		default:
			if len(para) == 0 {
				start = n
			}
			para = append(para, trimmed)
		}
		blank = false
	}
	flush()
	return out
}

var spanRe = regexp.MustCompile("`([^`]+)`")

// spans are the code spans of a prose block or table row.
func spans(text string) []string {
	var out []string
	for _, m := range spanRe.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// cells splits a table row into its cells, leaving "\|" inside a cell.
func cells(row string) []string {
	row = strings.Trim(strings.TrimSpace(row), "|")
	var out []string
	var b strings.Builder
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row) && row[i+1] == '|':
			b.WriteByte('|')
			i++
		case row[i] == '|':
			out = append(out, strings.TrimSpace(b.String()))
			b.Reset()
		default:
			b.WriteByte(row[i])
		}
	}
	return append(out, strings.TrimSpace(b.String()))
}

// A row is one row of a table: its cells and its line.
type row struct {
	cells []string
	line  int
}

// tables returns the rows of every table of md whose header's first cell
// is header, without the header and delimiter rows.
func tables(md, header string) []row {
	var rows []row
	in := false
	for _, b := range blocks(md) {
		if b.kind != tableRow {
			in = false
			continue
		}
		c := cells(b.text)
		switch {
		case !in && c[0] == header:
			in = true
		case in && strings.Trim(c[0], "-: ") == "":
		case in:
			rows = append(rows, row{c, b.line})
		}
	}
	return rows
}

// --- (a) environment variables and flags ---

var (
	envMention = regexp.MustCompile(`\b(?:BOT|GITHUB|OPENAI|PULLWRIGHT)_[A-Z0-9_]*[A-Z0-9]\b`)
	envLiteral = regexp.MustCompile(`^(?:BOT|GITHUB|OPENAI|PULLWRIGHT)_[A-Z0-9_]*[A-Z0-9]$`)
)

// notSettings are strings of the code shaped like variables that no one
// sets: each says why. The test fails when one is gone from the code.
var notSettings = map[string]string{
	"GITHUB_APP_OWNER":       "a key of BOT_APP_DIR/app.env, written and read by the bot (appmanifest)",
	"GITHUB_APP_SLUG":        "a key of BOT_APP_DIR/app.env, written and read by the bot (appmanifest)",
	"GITHUB_APP_URL":         "a key of BOT_APP_DIR/app.env, written and read by the bot (appmanifest)",
	"PULLWRIGHT_BENCH_TOKEN": "bench/clone hands its test token to its own child process",
}

// codeEnv returns the variables the module's code reads, each with where:
// in a program, every string literal shaped like one of ours (a name in a
// table, a constant, an argument of a getenv); in a test, the names given
// to os.Getenv or os.LookupEnv, directly or through a constant.
func codeEnv(t *testing.T) map[string]string {
	t.Helper()
	found := map[string]string{}
	constsOf := map[string]map[string]string{} // by directory
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != repoRoot && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, p)
		where := func(n ast.Node) string {
			return filepath.ToSlash(rel) + ":" + strconv.Itoa(fset.Position(n.Pos()).Line)
		}
		if !strings.HasSuffix(p, "_test.go") {
			ast.Inspect(f, func(n ast.Node) bool {
				if v, ok := stringLit(n); ok && envLiteral.MatchString(v) {
					found[v] = where(n)
				}
				return true
			})
			return nil
		}
		consts, ok := constsOf[filepath.Dir(p)]
		if !ok {
			consts = packageConsts(t, filepath.Dir(p))
			constsOf[filepath.Dir(p)] = consts
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 1 || !isCall(call, "os", "Getenv", "LookupEnv") {
				return true
			}
			v, ok := stringLit(call.Args[0])
			if id, isIdent := call.Args[0].(*ast.Ident); isIdent {
				v, ok = consts[id.Name]
			}
			if ok && envLiteral.MatchString(v) {
				found[v] = where(call)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The Action's shell is code too: its steps in action.yml and the
	// script they run read GitHub's variables by name.
	for _, name := range []string{"action.yml", "action/install.sh"} {
		data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			for _, m := range shellVar.FindAllStringSubmatch(line, -1) {
				if envLiteral.MatchString(m[1]) {
					found[m[1]] = name + ":" + strconv.Itoa(i+1)
				}
			}
		}
	}
	return found
}

// shellVar is a variable a shell line expands.
var shellVar = regexp.MustCompile(`\$\{?([A-Z][A-Z0-9_]*)`)

func skipDir(name string) bool {
	return name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

func stringLit(n ast.Node) (string, bool) {
	lit, ok := n.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	v, err := strconv.Unquote(lit.Value)
	return v, err == nil
}

// isCall reports whether call calls pkg.name for one of names.
func isCall(call *ast.CallExpr, pkg string, names ...string) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == pkg && slices.Contains(names, sel.Sel.Name)
}

// packageConsts are the string constants of the Go files in dir.
func packageConsts(t *testing.T, dir string) map[string]string {
	t.Helper()
	consts := map[string]string{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, name := range files {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			g, ok := n.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				return true
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if i < len(vs.Values) {
						if v, ok := stringLit(vs.Values[i]); ok {
							consts[id.Name] = v
						}
					}
				}
			}
			return true
		})
	}
	return consts
}

func TestDocsNameEveryVariableTheCodeReads(t *testing.T) {
	code := codeEnv(t)
	named := map[string]string{}
	for _, g := range append(guides(t), operatorFiles(t)...) {
		for i, line := range strings.Split(g.text, "\n") {
			for _, v := range envMention.FindAllString(line, -1) {
				if _, ok := named[v]; !ok {
					named[v] = g.name + ":" + strconv.Itoa(i+1)
				}
			}
		}
	}
	for _, v := range slices.Sorted(maps.Keys(named)) {
		if _, ok := code[v]; !ok {
			t.Errorf("%s: %s is named, but no code reads it", named[v], v)
		}
	}
	for _, v := range slices.Sorted(maps.Keys(code)) {
		if _, ok := named[v]; !ok && notSettings[v] == "" {
			t.Errorf("%s: the code reads %s, but neither README.md, docs/, action.yml nor deploy/ names it", code[v], v)
		}
	}
	for _, v := range slices.Sorted(maps.Keys(notSettings)) {
		if _, ok := code[v]; !ok {
			t.Errorf("notSettings lists %s, which the code no longer holds: remove it from the list", v)
		}
	}
}

// botFlags are the flags of each subcommand, from the code itself: serve's
// from settings, run's from its usage.
func botFlags(t *testing.T) map[string][]string {
	t.Helper()
	none := func(string) string { return "" }
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	settings(fs, none)
	var serve []string
	fs.VisitAll(func(f *flag.Flag) { serve = append(serve, f.Name) })

	var usage bytes.Buffer
	if _, err := runOptions([]string{"-h"}, none, &usage); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("bot run -h: %v, want flag.ErrHelp", err)
	}
	var run []string
	for _, m := range regexp.MustCompile(`(?m)^  -(\S+)`).FindAllStringSubmatch(usage.String(), -1) {
		run = append(run, m[1])
	}
	demo := flag.NewFlagSet("demo", flag.ContinueOnError)
	demoFlags(demo)
	var demoNames []string
	demo.VisitAll(func(f *flag.Flag) { demoNames = append(demoNames, f.Name) })
	check := flag.NewFlagSet("check", flag.ContinueOnError)
	checkFlags(check, none)
	var checkNames []string
	check.VisitAll(func(f *flag.Flag) { checkNames = append(checkNames, f.Name) })
	if len(serve) == 0 || len(run) == 0 {
		t.Fatalf("found no flags: serve %v, run %v", serve, run)
	}
	// action, healthcheck and version read the environment only.
	return map[string][]string{"serve": serve, "run": run, "demo": demoNames, "check": checkNames, "action": nil, "healthcheck": nil, "version": nil}
}

// otherTools are flags of other programs that the guides name in code
// spans of their own, and the program; every other such span naming a
// double-dash flag is taken for one of the bot's.
var otherTools = map[string]string{
	"api-key": "vllm", "enable-auto-tool-choice": "vllm", "tool-call-parser": "vllm",
	"read-only": "docker run", "group-add": "docker run", "hostname": "docker run",
	"ignore-scripts": "npm", "find-links": "pip", "mode": "yarn", "progress": "docker build",
}

var (
	// An invocation of the bot, in a code span or a line of code: its
	// subcommand and what follows.
	invocation = regexp.MustCompile(`(?:^|[\s/])(?:bot|pullwright)\s+(serve|run|check|action|healthcheck|version)\b(.*)`)
	// A span that starts with a subcommand and a flag: "serve --config FILE".
	bareInvocation = regexp.MustCompile(`^(serve|run)(\s+-.*)`)
	quoted         = regexp.MustCompile(`"[^"]*"|'[^']*'`)
)

// A flagMention is a flag of the bot's named in a guide.
type flagMention struct {
	where, sub, name string // sub is "" when the guide does not say which command
}

// invocationFlags are the flags of the command line after a subcommand,
// up to the end of the command (a pipe, a redirection, a comment).
func invocationFlags(rest string) []string {
	rest = quoted.ReplaceAllString(rest, "")
	if i := strings.IndexAny(rest, "|;<>#&)"); i >= 0 {
		rest = rest[:i]
	}
	var names []string
	for _, w := range strings.Fields(rest) {
		if len(w) > 1 && w[0] == '-' && w != "--" {
			name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
			names = append(names, name)
		}
	}
	return names
}

// flagMentions are the bot's flags the guides name: on a command line of
// the bot, in a table whose first column is "flag", or alone in a code
// span ("--yes-to CMD").
func flagMentions(gs []guide) []flagMention {
	var out []flagMention
	for _, g := range gs {
		for _, b := range blocks(g.text) {
			where := g.name + ":" + strconv.Itoa(b.line)
			texts := spans(b.text)
			if b.kind == codeLine {
				texts = []string{b.text}
			}
			for _, s := range texts {
				m := invocation.FindStringSubmatch(s)
				if m == nil {
					m = bareInvocation.FindStringSubmatch(s)
				}
				if m != nil {
					for _, name := range invocationFlags(m[2]) {
						out = append(out, flagMention{where, m[1], name})
					}
					continue
				}
				if b.kind != codeLine && strings.HasPrefix(s, "--") && len(s) > 2 {
					name, _, _ := strings.Cut(strings.Fields(s)[0][2:], "=")
					if otherTools[name] == "" {
						out = append(out, flagMention{where, "", name})
					}
				}
			}
		}
		for _, r := range tables(g.text, "flag") {
			for _, s := range spans(r.cells[0]) {
				if strings.HasPrefix(s, "-") {
					where := g.name + ":" + strconv.Itoa(r.line)
					out = append(out, flagMention{where, "", strings.TrimLeft(strings.Fields(s)[0], "-")})
				}
			}
		}
	}
	return out
}

func TestDocsFlagsAreTheBotsFlags(t *testing.T) {
	flags := botFlags(t)
	all := map[string]bool{"h": true, "help": true}
	for _, names := range flags {
		for _, n := range names {
			all[n] = true
		}
	}
	mentioned := map[string]bool{}
	for _, m := range flagMentions(append(guides(t), operatorFiles(t)...)) {
		mentioned[m.name] = true
		switch {
		case m.sub != "" && m.name != "h" && m.name != "help" && !slices.Contains(flags[m.sub], m.name):
			t.Errorf("%s: bot %s has no flag -%s (its flags: %v)", m.where, m.sub, m.name, flags[m.sub])
		case m.sub == "" && !all[m.name]:
			t.Errorf("%s: the bot has no flag --%s (if it is another program's, add it to otherTools)", m.where, m.name)
		}
	}
	// serve's flags stand for variables (GITHUB_APP_ID → --github-app-id),
	// which the guides name; any other flag must be named itself.
	env := codeEnv(t)
	for _, sub := range slices.Sorted(maps.Keys(flags)) {
		for _, n := range flags[sub] {
			_, isVariable := env[strings.ToUpper(strings.ReplaceAll(n, "-", "_"))]
			if !mentioned[n] && !(sub == "serve" && isVariable) {
				t.Errorf("bot %s -%s is named nowhere in README.md or docs/", sub, n)
			}
		}
	}
}

// --- (b) links ---

var (
	linkRe    = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	refLinkRe = regexp.MustCompile(`^\[[^\]]+\]:\s*(\S+)`)
	anchorRe  = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	// A link inside a heading's text counts as its text.
	inlineLinkRe = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// anchors are the fragments GitHub gives the headings of a Markdown file,
// and the HTML anchors it holds.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, b := range blocks(md) {
		if b.kind != heading {
			for _, m := range anchorRe.FindAllStringSubmatch(b.text, -1) {
				out[m[1]] = true
			}
			continue
		}
		s := slug(b.text)
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// slug is GitHub's fragment of a heading: the text as rendered, lower
// case, without punctuation or symbols except '-' and '_', spaces made
// hyphens.
func slug(h string) string {
	h = inlineLinkRe.ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestDocsLinksResolve(t *testing.T) {
	gs := guides(t)
	for _, g := range gs {
		for _, b := range blocks(g.text) {
			if b.kind == codeLine {
				continue
			}
			text := spanRe.ReplaceAllString(b.text, "code")
			var targets []string
			for _, m := range linkRe.FindAllStringSubmatch(text, -1) {
				targets = append(targets, m[1])
			}
			if m := refLinkRe.FindStringSubmatch(text); m != nil {
				targets = append(targets, m[1])
			}
			for _, target := range targets {
				if msg := checkLink(g.name, target); msg != "" {
					t.Errorf("%s:%d: link %s: %s", g.name, b.line, target, msg)
				}
			}
		}
	}
}

// checkLink says what is wrong with a link from the guide named from, or
// "" when it leads somewhere. Links to other sites are not followed.
func checkLink(from, target string) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "//") {
		return ""
	}
	p, frag, _ := strings.Cut(target, "#")
	file := from
	if p != "" {
		file = path.Clean(path.Join(path.Dir(from), p))
		if strings.HasPrefix(file, "../") {
			return "leaves the repository"
		}
	}
	b, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(file)))
	if err != nil {
		if fi, statErr := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(file))); statErr == nil && fi.IsDir() && frag == "" {
			return ""
		}
		return "no file " + file
	}
	if frag == "" || !strings.HasSuffix(file, ".md") {
		return ""
	}
	if !anchors(string(b))[frag] {
		return "no heading of " + file + " has the anchor #" + frag
	}
	return ""
}

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Behind an egress proxy, and a proxy that inspects TLS", "behind-an-egress-proxy-and-a-proxy-that-inspects-tls"},
		{"The operator file: `bot serve --config FILE`", "the-operator-file-bot-serve---config-file"},
		{"Setup: fetching dependencies", "setup-fetching-dependencies"},
		{"Without a terminal: `--yes-to`", "without-a-terminal---yes-to"},
		{"The rooms of `task`", "the-rooms-of-task"},
		{"`budget.max_wall_time` — and waits", "budgetmax_wall_time--and-waits"},
		{"See [the map](architecture.md)", "see-the-map"},
	} {
		if got := slug(tc.heading); got != tc.want {
			t.Errorf("slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

// --- (c) webhook events ---

// handledEvents are the events package webhook acts on: those its actor
// turns into tasks, and those it reads for a record without one (a
// comparison with a delivery's Event). GitHub's ping comes to every hook
// unasked, so it is no subscription.
func handledEvents(t *testing.T) []string {
	t.Helper()
	pkgs, err := parser.ParseDir(token.NewFileSet(), filepath.Join(repoRoot, "webhook"), func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	events := map[string]bool{}
	for _, f := range pkgs["webhook"].Files {
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "actor" {
				ast.Inspect(fn, func(n ast.Node) bool {
					if cc, ok := n.(*ast.CaseClause); ok {
						for _, e := range cc.List {
							if v, ok := stringLit(e); ok {
								events[v] = true
							}
						}
					}
					return true
				})
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			be, ok := n.(*ast.BinaryExpr)
			if !ok || (be.Op != token.EQL && be.Op != token.NEQ) {
				return true
			}
			for _, pair := range [][2]ast.Expr{{be.X, be.Y}, {be.Y, be.X}} {
				if sel, ok := pair[0].(*ast.SelectorExpr); ok && strings.EqualFold(sel.Sel.Name, "event") {
					if v, ok := stringLit(pair[1]); ok {
						events[v] = true
					}
				}
			}
			return true
		})
	}
	delete(events, "ping")
	delete(events, "") // a check that a delivery names its event
	if len(events) == 0 {
		t.Fatal("found no events in package webhook: has actor moved?")
	}
	return slices.Sorted(maps.Keys(events))
}

func TestDocsEventsAreTheHandlersEvents(t *testing.T) {
	want := handledEvents(t)

	b, err := os.ReadFile(filepath.Join(repoRoot, "app-manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		DefaultEvents []string `json:"default_events"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("app-manifest.json: %v", err)
	}
	if got := slices.Sorted(slices.Values(m.DefaultEvents)); !slices.Equal(got, want) {
		t.Errorf("app-manifest.json subscribes to %v; package webhook acts on %v", got, want)
	}

	b, err = os.ReadFile(filepath.Join(repoRoot, "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	var table []string
	for _, r := range tables(string(b), "event") {
		table = append(table, spans(r.cells[0])...)
	}
	if got := slices.Sorted(slices.Values(table)); !slices.Equal(got, want) {
		t.Errorf("docs/deploy.md's table of events lists %v; package webhook acts on %v", got, want)
	}
}

// --- (d) packages ---

// modulePackages are the directories of the module that hold a package,
// relative to the root; the root itself is ".".
func modulePackages(t *testing.T) []string {
	t.Helper()
	var pkgs []string
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if p != repoRoot && skipDir(d.Name()) {
			return filepath.SkipDir
		}
		if _, err := build.Default.ImportDir(p, 0); err != nil {
			if _, ok := errors.AsType[*build.NoGoError](err); ok {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(repoRoot, p)
		pkgs = append(pkgs, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

func TestArchitectureMapsEveryPackage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	mapped := map[string]bool{}
	for _, r := range tables(string(b), "package") {
		for _, s := range spans(r.cells[0]) {
			if s == "pullwright" {
				s = "." // the root package goes by its name
			}
			mapped[s] = true
		}
	}
	pkgs := modulePackages(t)
	for _, p := range pkgs {
		if !mapped[p] {
			t.Errorf("docs/architecture.md's table of packages does not list %s", p)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(mapped)) {
		if !slices.Contains(pkgs, p) {
			t.Errorf("docs/architecture.md's table of packages lists %s, which is no package of the module", p)
		}
	}
}
