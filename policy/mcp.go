package policy

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pullwright/pullwright"
)

// MCP is the operator's list of Model Context Protocol servers whose
// tools the agent may be given. Only the operator names a server: a
// repository may ask for one of these by name (Config.MCP), within
// Repositories, and never add one, widen its tools or mark one read-only.
type MCP struct {
	Servers map[string]MCPServer `yaml:"servers" json:"servers"`
}

// MCPServer is one remote MCP server, reached over the streamable HTTP
// transport.
type MCPServer struct {
	// URL is the server's endpoint: https, or http to a loopback address
	// (a server beside the bot).
	URL string `yaml:"url" json:"url"`
	// HeadersFromEnv name, by HTTP header, the variable of the bot's
	// environment that holds the header's value ("Authorization:
	// DOCS_MCP_AUTH", the variable holding "Bearer …"). The values are
	// read when a tool is called, so they are never in this file, a
	// task's stored settings, the model's context or a sandbox.
	HeadersFromEnv map[string]string `yaml:"headers_from_env" json:"headers_from_env,omitempty"`
	// Tools are the tools of the server the agent may be offered, by
	// name; "*" offers every tool the server lists.
	Tools []string `yaml:"tools" json:"tools"`
	// ReadOnly are the tools among Tools that only read, which run as
	// soon as the agent calls them; "*" marks them all. The server's
	// own hints are not trusted.
	ReadOnly []string `yaml:"read_only" json:"read_only,omitempty"`
	// Repositories are the repositories that may use the server:
	// "owner/name", "owner/*", or "*" for every repository served.
	Repositories []string `yaml:"repositories" json:"repositories"`
	// Timeout bounds one call (default 30s, at most 10m).
	Timeout Duration `yaml:"timeout" json:"timeout,omitempty"`
}

// ToolServer is an MCP server as one task may use it
// (pullwright.ToolServer).
type ToolServer = pullwright.ToolServer

// DefaultMCPTimeout bounds a call when the operator sets no timeout.
const DefaultMCPTimeout = 30 * time.Second

const maxMCPTimeout = 10 * time.Minute

// mcpNameRE is a server's name: short, and safe in a tool name the model
// sees ("<server>__<tool>") and in a log line.
var mcpNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,29}$`)

// headerNameRE is an HTTP header's name (RFC 9110's token).
var headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// envNameRE is an environment variable's name as a shell writes it.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// repoPatternRE is "owner/name", "owner/*" or "*".
var repoPatternRE = regexp.MustCompile(`^(\*|[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/(\*|[A-Za-z0-9._-]{1,100}))$`)

func (o *Operator) validateMCP(errs *Errors, at func(string) int) {
	for _, name := range slices.Sorted(maps.Keys(o.MCP.Servers)) {
		s, k := o.MCP.Servers[name], "mcp.servers["+strconv.Quote(name)+"]"
		if !mcpNameRE.MatchString(name) {
			errs.add(at(k), k, "%q is not a server name: lower-case letters, digits and '-', at most 30", shorten(name, 40))
		}
		if p := mcpURLProblem(s.URL); p != "" {
			errs.add(at(k+".url"), k+".url", "%s", p)
		}
		for _, h := range slices.Sorted(maps.Keys(s.HeadersFromEnv)) {
			v, hk := s.HeadersFromEnv[h], k+".headers_from_env["+strconv.Quote(h)+"]"
			switch {
			case !headerNameRE.MatchString(h):
				errs.add(at(hk), hk, "%q is not an HTTP header name", shorten(h, 40))
			case !envNameRE.MatchString(v):
				// A value that is no variable's name is most likely the
				// credential itself, pasted in: never echo it.
				errs.add(at(hk), hk, "must name an environment variable that holds the header's value (like DOCS_MCP_AUTH), not the value itself")
			case strings.EqualFold(h, "Host") || strings.EqualFold(h, "Content-Length") || strings.HasPrefix(strings.ToLower(h), "mcp-"):
				errs.add(at(hk), hk, "%s is set by the bot's MCP client, not by configuration", h)
			}
		}
		if len(s.Tools) == 0 {
			errs.add(at(k), k+".tools", "is missing: list the tools the agent may be offered, or \"*\" for all the server lists")
		}
		for i, t := range append(slices.Clone(s.Tools), s.ReadOnly...) {
			key := fmt.Sprintf("%s.tools[%d]", k, i)
			if i >= len(s.Tools) {
				key = fmt.Sprintf("%s.read_only[%d]", k, i-len(s.Tools))
			}
			if t != "*" && !toolNameRE.MatchString(t) {
				errs.add(at(key), key, "%q is not a tool name", shorten(t, 64))
			}
		}
		for i, t := range s.ReadOnly {
			if t != "*" && !(ToolServer{Tools: s.Tools}).Offers(t) {
				key := fmt.Sprintf("%s.read_only[%d]", k, i)
				errs.add(at(key), key, "%s is not among the server's tools", t)
			}
		}
		if len(s.Repositories) == 0 {
			errs.add(at(k), k+".repositories", "is missing: list the repositories that may use the server (\"owner/name\", \"owner/*\", or \"*\")")
		}
		for i, r := range s.Repositories {
			if key := fmt.Sprintf("%s.repositories[%d]", k, i); !repoPatternRE.MatchString(r) {
				errs.add(at(key), key, "%q is not \"owner/name\", \"owner/*\" or \"*\"", shorten(r, 80))
			}
		}
		if d := s.Timeout.D(); d < 0 || d > maxMCPTimeout {
			errs.add(at(k+".timeout"), k+".timeout", "must be between 0 (the default, %s) and %s", DefaultMCPTimeout, maxMCPTimeout)
		}
	}
}

// toolNameRE is an MCP tool's name as this bot offers it: what model APIs
// take in a function's name, less room for the server's prefix.
var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,30}$`)

// mcpURLProblem says why u cannot be a server's endpoint, or "".
func mcpURLProblem(u string) string {
	if u == "" {
		return "is missing: the server's streamable HTTP endpoint, like https://mcp.example/mcp"
	}
	p, err := url.Parse(u)
	if err != nil || p.Host == "" || p.Opaque != "" {
		return "is not an absolute http(s) URL"
	}
	if p.User != nil {
		return "holds credentials; put them in the environment and name the variable in headers_from_env"
	}
	if p.RawQuery != "" || p.Fragment != "" {
		return "has a query or fragment; a credential belongs in headers_from_env"
	}
	switch p.Scheme {
	case "https":
	case "http":
		if ip := net.ParseIP(p.Hostname()); ip == nil || !ip.IsLoopback() {
			if p.Hostname() != "localhost" {
				return "is plain http to another machine; use https (plain http only to a loopback address)"
			}
		}
	default:
		return "must be https (or http to a loopback address)"
	}
	return ""
}

// ToolServers are the MCP servers a task of repo ("owner/name") may
// use: those its configuration asks for (Config.MCP), each of which the
// operator must allow for it. Asking for one it may not use is an error
// naming the line, as asking above a cap is: silently running without
// the tools would leave a maintainer guessing.
func (o *Operator) ToolServers(repo string, c *Config) ([]ToolServer, error) {
	if c == nil || len(c.MCP) == 0 {
		return nil, nil
	}
	if o == nil {
		o = DefaultOperator()
	}
	errs := &Errors{File: Path}
	var out []ToolServer
	for i, name := range c.MCP {
		key := fmt.Sprintf("mcp[%d]", i)
		// One message whether the server exists or is another's: a
		// repository learns only the servers it may use.
		s, ok := o.MCP.Servers[name]
		if !ok || !repoAllowed(s.Repositories, repo) {
			errs.add(c.Line(key), key, "this installation does not offer an MCP server %q to %s%s", shorten(name, 40), repo, offered(o, repo))
			continue
		}
		if slices.ContainsFunc(out, func(t ToolServer) bool { return t.Name == name }) {
			continue
		}
		timeout := s.Timeout.D()
		if timeout == 0 {
			timeout = DefaultMCPTimeout
		}
		out = append(out, ToolServer{Name: name, URL: s.URL, HeadersFromEnv: maps.Clone(s.HeadersFromEnv),
			Tools: slices.Clone(s.Tools), ReadOnly: slices.Clone(s.ReadOnly), Timeout: timeout})
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return out, nil
}

// offered lists the servers repo may ask for, for an error's end.
func offered(o *Operator, repo string) string {
	var names []string
	for _, n := range slices.Sorted(maps.Keys(o.MCP.Servers)) {
		if repoAllowed(o.MCP.Servers[n].Repositories, repo) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return " (it offers none to this repository)"
	}
	return " (it offers: " + strings.Join(names, ", ") + ")"
}

// repoAllowed reports whether repo matches one of patterns; GitHub's
// names are case-insensitive.
func repoAllowed(patterns []string, repo string) bool {
	owner, _, _ := strings.Cut(repo, "/")
	for _, p := range patterns {
		switch {
		case p == "*":
			return true
		case strings.HasSuffix(p, "/*"):
			if strings.EqualFold(strings.TrimSuffix(p, "/*"), owner) {
				return true
			}
		case strings.EqualFold(p, repo):
			return true
		}
	}
	return false
}
