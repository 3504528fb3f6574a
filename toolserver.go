package pullwright

import (
	"maps"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// ToolServer is an MCP server as one task may use it: the operator's
// entry (policy.MCPServer) that the repository asked for, resolved. It
// travels with the task's rules (Limits.ToolServers); it holds the names
// of the variables with credentials, never their values.
type ToolServer struct {
	Name           string            `json:"name"`
	URL            string            `json:"url"`
	HeadersFromEnv map[string]string `json:"headers_from_env,omitempty"`
	// Tools are the tools the agent may be offered ("*": all the server
	// lists), ReadOnly those among them that run without asking.
	Tools    []string      `json:"tools"`
	ReadOnly []string      `json:"read_only,omitempty"`
	Timeout  time.Duration `json:"timeout"`
}

// ToolServerNamed is the server of servers named name, if one is.
func ToolServerNamed(servers []ToolServer, name string) (ToolServer, bool) {
	i := slices.IndexFunc(servers, func(s ToolServer) bool { return s.Name == name })
	if i < 0 {
		return ToolServer{}, false
	}
	return servers[i], true
}

// Host is the host (and port) of the server's URL, as a request shows
// it; "" when the URL does not parse.
func (s ToolServer) Host() string {
	u, err := url.Parse(s.URL)
	if err != nil {
		return ""
	}
	return u.Host
}

// Offers reports whether the server's tool may be offered to the agent.
func (s ToolServer) Offers(tool string) bool { return listed(s.Tools, tool) }

// IsReadOnly reports whether the operator marked the tool read-only: its
// calls run without asking.
func (s ToolServer) IsReadOnly(tool string) bool {
	return s.Offers(tool) && listed(s.ReadOnly, tool)
}

func listed(list []string, name string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, name)
}

// HeaderValues are the server's headers with their values from getenv,
// and the names of variables that are unset or empty: a call without
// its credential would fail at the server with a less clear message.
func (s ToolServer) HeaderValues(getenv func(string) string) (http.Header, []string) {
	h := http.Header{}
	var missing []string
	for _, name := range slices.Sorted(maps.Keys(s.HeadersFromEnv)) {
		v := getenv(s.HeadersFromEnv[name])
		if v == "" {
			missing = append(missing, s.HeadersFromEnv[name])
			continue
		}
		h.Set(name, v)
	}
	return h, missing
}

// ToolCall is a call of an MCP tool that the operator did not mark
// read-only: an execution request like a command, shown, approved and
// recorded as such. Arguments is the JSON object the server is sent,
// exactly: compact, keys sorted, every character outside printable
// ASCII escaped, so that what a person reads is what is sent.
type ToolCall struct {
	Server    string `json:"server"`
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
}

// Line is the call as a request shows it where a command would be:
// "server/tool {arguments}".
func (c ToolCall) Line() string { return c.Server + "/" + c.Tool + " " + c.Arguments }
