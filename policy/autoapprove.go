package policy

import (
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// textHint shows an auto_approve entry written as bare text ("- npm
// test") in the form it takes: the command as a command entry, written
// so that it reads back as the same text.
func (AutoRule) textHint(text string) string {
	b, err := yaml.Marshal(map[string]string{"command": text})
	if err != nil || len(text) > 200 || strings.Count(string(b), "\n") != 1 {
		return `write each entry as - command: THE COMMAND (the exact command) or - pattern: REGEXP (a regular expression for the whole command)`
	}
	return "write it as - " + strings.TrimSpace(string(b)) + " (the exact command), or as - pattern: REGEXP (a regular expression for the whole command)"
}

// compileRule anchors a pattern at both ends: "go test .*" must describe
// the whole command, not any command that contains "go test".
// The pattern must compile on its own first: "go test)|(.*" is not a
// regular expression, but pasted into the anchors it would become one that
// matches every command.
func compileRule(pattern string) (*regexp.Regexp, error) {
	if _, err := regexp.Compile(pattern); err != nil {
		return nil, err
	}
	return regexp.Compile(`^(?:` + pattern + `)$`)
}

// shellMeta are the characters and sequences with which one command line
// runs more than one command, or runs one the text does not show. A
// pattern that admits arguments (".*") would admit them too, so a command
// containing any of them is never approved by a pattern, however it is
// quoted: telling quoted from unquoted is the shell's job, and getting it
// wrong here would run code nobody approved.
var shellMeta = []string{"\n", "\r", ";", "&", "|", "`", "$(", "${", ">", "<"}

// hasShellMeta reports shellMeta, and any other control character (a NUL
// or a vertical tab is not something anyone means to approve).
func hasShellMeta(cmd string) bool {
	for _, m := range shellMeta {
		if strings.Contains(cmd, m) {
			return true
		}
	}
	return strings.IndexFunc(cmd, func(r rune) bool {
		return (r < ' ' && r != '\t') || r == 0x7f || r == '\u2028' || r == '\u2029'
	}) >= 0
}

// AutoApproved reports whether cmd runs without asking, and if so which
// rule allowed it, in words for the status comment. A command rule
// approves exactly its command (surrounding spaces aside). A pattern rule
// approves a command it matches whole, and only a simple command: see
// shellMeta.
func (s Settings) AutoApproved(cmd string) (rule string, ok bool) {
	c := strings.TrimSpace(cmd)
	if c == "" {
		return "", false
	}
	for _, r := range s.AutoApprove {
		if r.Command != "" && r.Pattern == "" && strings.TrimSpace(r.Command) == c {
			return "command " + codeSpan(strings.TrimSpace(r.Command)), true
		}
	}
	if hasShellMeta(c) {
		return "", false
	}
	for _, r := range s.AutoApprove {
		if r.Pattern == "" || r.Command != "" {
			continue
		}
		re, err := compileRule(r.Pattern)
		if err != nil {
			continue // Load refuses it; Settings stored by an older version might not have
		}
		if re.MatchString(c) {
			return "pattern " + codeSpan(re.String()), true
		}
	}
	return "", false
}

// Cost is what a model call costs in USD, from the model's price per
// million tokens.
func (s Settings) Cost(promptTokens, completionTokens int) float64 {
	return (float64(promptTokens)*s.Price.Input + float64(completionTokens)*s.Price.Output) / 1e6
}
