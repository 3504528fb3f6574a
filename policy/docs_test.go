package policy

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

const (
	docsFile   = "../docs/configuration.md"
	schemaFile = "../docs/pullwright.schema.json"
)

// docExample is one fenced yaml block of docs/configuration.md:
// "```yaml operator" marks the operator's file, plain "```yaml" a
// repository's.
type docExample struct {
	line     int
	operator bool
	text     string
}

func docExamples(t testing.TB) []docExample {
	t.Helper()
	data, err := os.ReadFile(docsFile)
	if err != nil {
		t.Fatal(err)
	}
	var out []docExample
	var cur *docExample
	var body strings.Builder
	for i, l := range strings.Split(string(data), "\n") {
		switch {
		case cur == nil && (l == "```yaml" || l == "```yaml operator"):
			cur = &docExample{line: i + 1, operator: l == "```yaml operator"}
			body.Reset()
		case cur != nil && l == "```":
			cur.text = body.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			body.WriteString(l + "\n")
		}
	}
	if cur != nil {
		t.Fatalf("%s:%d: unterminated code block", docsFile, cur.line)
	}
	return out
}

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	sch, err := jsonschema.NewCompiler().Compile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// validateYAML validates a YAML document against the schema, as an editor
// would: through its JSON form. An empty document is an empty object,
// which is what Load makes of it.
func validateYAML(t *testing.T, sch *jsonschema.Schema, text string) error {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("yaml: %v", err)
	}
	if v == nil {
		v = map[string]any{}
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return sch.Validate(inst)
}

func TestDocExamples(t *testing.T) {
	sch := compileSchema(t)
	examples := docExamples(t)
	var operators []*Operator
	var repos, ops int
	for _, ex := range examples {
		if !ex.operator {
			continue
		}
		ops++
		o, err := LoadOperator([]byte(ex.text))
		if err != nil {
			t.Errorf("%s:%d: operator example: %v", docsFile, ex.line, err)
			continue
		}
		if _, err := o.Resolve(nil); err != nil {
			t.Errorf("%s:%d: operator example does not resolve a repository without a file: %v", docsFile, ex.line, err)
		}
		operators = append(operators, o)
	}
	for _, ex := range examples {
		if ex.operator {
			continue
		}
		repos++
		if err := validateYAML(t, sch, ex.text); err != nil {
			t.Errorf("%s:%d: schema: %v", docsFile, ex.line, err)
		}
		c, err := Load([]byte(ex.text))
		if err != nil {
			t.Errorf("%s:%d: Load: %v", docsFile, ex.line, err)
			continue
		}
		// The default installation, or one of the operator examples
		// (the full example needs a model and network the default does
		// not allow).
		_, err = DefaultOperator().Resolve(c)
		for _, o := range operators {
			if err == nil {
				break
			}
			_, err = o.Resolve(c)
		}
		if err != nil {
			t.Errorf("%s:%d: Resolve against the default and every operator example: %v", docsFile, ex.line, err)
		}
	}
	if repos < 3 || ops < 2 {
		t.Errorf("found %d repository and %d operator examples; the docs promise several of each", repos, ops)
	}
}

// TestSchemaAgreesWithLoad: the schema and Load accept and refuse the
// same files, for mistakes either can see.
func TestSchemaAgreesWithLoad(t *testing.T) {
	sch := compileSchema(t)
	tests := []struct {
		yml   string
		valid bool
	}{
		{"", true},
		{"model: gpt-4.1-mini\n", true},
		{"sandbox: {memory: 2g, cpus: 0.5, timeout: 1h30m, network: bridge}\n", true},
		{"sandbox: {memory: 512MiB}\n", true},
		{"sandbox: {disk: 1GiB, memory: 2g}\n", true},
		{"auto_approve: [{command: make}, {pattern: 'go .*'}]\n", true},
		{"branch_prefix: bots/pw-\n", true},
		{"label: 'agent: fix'\n", true},
		{"label: ' bot'\n", false},
		{"label: ''\n", false},
		{"label: \"a\\tb\"\n", false},
		{"label: " + strings.Repeat("x", 51) + "\n", false},
		{"trigger: {users: ['renovate[bot]'], teams: [acme/core, core]}\n", true},
		{"setup: []\n", true},
		{"setup: [go mod download, \"npm ci --ignore-scripts\\tx\", \"a &&\\n  b\"]\n", true},
		{"setup: [a, b, c, d, e, f, g, h, i, j]\n", true},
		{"setup_hosts: [mirror.test, '*.mirror.test:8443', 10.0.0.5, '10.0.0.5:3000', '[fd00::5]:80', 'fd00::5', MIRROR.test, 'a.test:080']\n", true},
		{"setup_hosts: []\n", true},
		{"setup_toolchain_hosts: false\n", true},
		{"setup_toolchain_hosts: true\n", true},
		{"instructions: []\n", true},
		{"instructions: [AGENTS.md, docs/agents.md, /CLAUDE.md, .github/copilot-instructions.md, ...md]\n", true},

		{"colour: blue\n", false},                             // unknown key
		{"sandbox: {memroy: 2GiB}\n", false},                  // unknown nested key
		{"approve: {exclude_requestor: true}\n", false},       // unknown key beside inline ones
		{"trigger: {users: alice}\n", false},                  // string for a list
		{"model: 5\n", false},                                 // number for text
		{"sandbox: {cpus: two}\n", false},                     // text for a number
		{"sandbox: {cpus: 0}\n", false},                       // out of range
		{"budget: {max_turns: 1.5}\n", false},                 // not an integer
		{"budget: {max_turns: 0}\n", false},                   // out of range
		{"budget: {max_cost_usd: -1}\n", false},               // negative
		{"approve: {exclude_requester: 'yes'}\n", false},      // text for a boolean
		{"trigger: {permission: owner}\n", false},             // not a role
		{"sandbox: {network: host}\n", false},                 // not a network
		{"sandbox: {memory: lots}\n", false},                  // not a size
		{"sandbox: {disk: lots}\n", false},                    // not a size
		{"sandbox: {disk: 2048}\n", false},                    // a number, not a size
		{"sandbox: {dsik: 2GiB}\n", false},                    // unknown nested key
		{"sandbox: {timeout: '600'}\n", false},                // not a duration
		{"sandbox: {timeout: -5m}\n", false},                  // negative
		{"auto_approve: [{command: a, pattern: b}]\n", false}, // both
		{"auto_approve: [{}]\n", false},                       // neither
		{"auto_approve: [{cmd: a}]\n", false},                 // unknown key
		{"branch_prefix: -x\n", false},
		{"branch_prefix: 'a b'\n", false},
		{"branch_prefix: a..b\n", false},
		{"branch_prefix: a/.b\n", false},
		{"trigger: {users: ['@alice']}\n", false},
		{"- model: x\n", false}, // not a mapping
		{"model: ''\n", false},
		{"branch_prefix: ''\n", false},
		{"sandbox: {network: '', image: ''}\n", false},
		{"trigger: {permission: ''}\n", false},
		{"setup: go mod download\n", false},                                      // text for a list
		{"setup: [a, b, c, d, e, f, g, h, i, j, k]\n", false},                    // too many
		{"setup: ['']\n", false},                                                 // empty
		{"setup: [' ']\n", false},                                                // blank
		{"setup: [7]\n", false},                                                  // not text
		{"setup: [\"make\\u202e deps\"]\n", false},                               // bidirectional override
		{"setup: [\"make\\u200bdeps\"]\n", false},                                // zero-width space
		{"setup: [\"echo \\e[2J\"]\n", false},                                    // escape
		{"setup: [\"a\\rb\"]\n", false},                                          // carriage return
		{"setup: ['" + strings.Repeat("x\n\n", 2049) + "']\n", false},            // over 4096 bytes
		{"setup_hosts: mirror.test\n", false},                                    // text for a list
		{"setup_hosts: ['https://mirror.test/']\n", false},                       // a URL
		{"setup_hosts: ['*']\n", false},                                          // a wildcard with no domain
		{"setup_hosts: ['mirror.test:0']\n", false},                              // port out of range
		{"setup_hosts: ['mirror.test:65536']\n", false},                          // port out of range
		{"setup_hosts: ['mirror.test.']\n", false},                               // final dot
		{"setup_hosts: ['a b']\n", false},                                        // a space
		{"setup_hosts: ['']\n", false},                                           // empty
		{"setup_hosts: ['-a.test']\n", false},                                    // label starting with -
		{"setup_hosts: ['[mirror.test]:80']\n", false},                           // brackets round a name
		{"setup_hosts: ['a.*.test']\n", false},                                   // wildcard inside
		{"setup_hosts: [7]\n", false},                                            // not text
		{"setup_hosts: [" + strings.Repeat("a.test, ", 20) + "b.test]\n", false}, // too many
		{"setup_toolchain_hosts: 'no'\n", false},                                 // text for a boolean
		{"setup_toolchain_hosts: [false]\n", false},                              // a list
		{"instructions: AGENTS.md\n", false},                                     // text for a list
		{"instructions: ['']\n", false},                                          // empty
		{"instructions: ['docs/*.md']\n", false},                                 // a glob
		{"instructions: ['../AGENTS.md']\n", false},                              // out of the root
		{"instructions: ['a/./AGENTS.md']\n", false},                             // not clean
		{"instructions: ['docs/']\n", false},                                     // a directory
		{"instructions: ['a\\\\b.md']\n", false},                                 // a backslash
		{"instructions: [" + strings.Repeat("a.md, ", 20) + "b.md]\n", false},    // too many
	}
	for _, tt := range tests {
		schemaErr := validateYAML(t, sch, tt.yml)
		_, loadErr := Load([]byte(tt.yml))
		if (schemaErr == nil) != tt.valid {
			t.Errorf("schema on %q: %v; want valid=%v", tt.yml, schemaErr, tt.valid)
		}
		if (loadErr == nil) != tt.valid {
			t.Errorf("Load(%q): %v; want valid=%v", tt.yml, loadErr, tt.valid)
		}
	}
}

// TestSchemaCoversConfig: every key of Config (by its yaml tags) is in the
// schema, and every property of the schema is a key of Config, so that the
// two cannot drift apart.
func TestSchemaCoversConfig(t *testing.T) {
	data, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatal(err)
	}
	if root["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %v, want draft 2020-12", root["$schema"])
	}
	deref := func(s map[string]any) map[string]any {
		for {
			ref, ok := s["$ref"].(string)
			if !ok {
				return s
			}
			name, ok := strings.CutPrefix(ref, "#/$defs/")
			if !ok {
				t.Fatalf("unexpected $ref %s", ref)
			}
			s = root["$defs"].(map[string]any)[name].(map[string]any)
		}
	}
	var walk func(path string, typ reflect.Type, s map[string]any)
	walk = func(path string, typ reflect.Type, s map[string]any) {
		s = deref(s)
		switch typ.Kind() {
		case reflect.Slice:
			items, ok := s["items"].(map[string]any)
			if !ok {
				t.Errorf("%s: the schema has no items", path)
				return
			}
			walk(path+"[]", typ.Elem(), items)
			return
		case reflect.Struct:
			if typ == reflect.TypeFor[Duration]() {
				return
			}
		default:
			return
		}
		// An object, or a oneOf of objects (auto_approve's entries),
		// whose properties together are the struct's keys.
		objects := []map[string]any{s}
		if alts, ok := s["oneOf"].([]any); ok {
			objects = nil
			for _, a := range alts {
				objects = append(objects, deref(a.(map[string]any)))
			}
		}
		props := map[string]map[string]any{}
		for _, o := range objects {
			if o["additionalProperties"] != false {
				t.Errorf("%s: additionalProperties is not false", path)
			}
			p, _ := o["properties"].(map[string]any)
			for k, v := range p {
				props[k] = v.(map[string]any)
			}
		}
		var keys []string
		for _, f := range yamlFields(typ) {
			keys = append(keys, f.name)
			sub, ok := props[f.name]
			if !ok {
				t.Errorf("%s: key %s of %s is not in the schema", path, f.name, typ)
				continue
			}
			if _, ok := deref(sub)["description"]; !ok {
				if _, ok := sub["description"]; !ok && f.name != "users" && f.name != "teams" {
					t.Errorf("%s.%s: no description in the schema", path, f.name)
				}
			}
			walk(strings.TrimPrefix(path+"."+f.name, "."), typ.FieldByIndex(f.index).Type, sub)
		}
		for k := range props {
			if !slices.Contains(keys, k) {
				t.Errorf("%s: the schema's property %s is not a key of %s", path, k, typ)
			}
		}
	}
	walk("", reflect.TypeFor[Config](), root)
}

// TestDocExamplesCoverTheLanguages: the Examples section of
// docs/configuration.md has a file for a Go, a Node and a Python project
// that works on an installation without an operator file, and whose
// auto_approve rules approve its own test command.
func TestDocExamplesCoverTheLanguages(t *testing.T) {
	data, err := os.ReadFile(docsFile)
	if err != nil {
		t.Fatal(err)
	}
	// The section's lines: from its heading to the next of its level.
	from, to := 0, 0
	for i, l := range strings.Split(string(data), "\n") {
		switch {
		case l == "### Examples":
			from = i + 1
		case from > 0 && to == 0 && (strings.HasPrefix(l, "### ") || strings.HasPrefix(l, "## ")):
			to = i + 1
		}
	}
	if from == 0 || to == 0 {
		t.Fatalf("%s has no ### Examples section", docsFile)
	}
	languages := []struct{ name, test string }{{"Go", "go test"}, {"Node", "npm test"}, {"Python", "pytest"}}
	for _, lang := range languages {
		found := false
		for _, ex := range docExamples(t) {
			if ex.operator || ex.line < from || ex.line > to {
				continue
			}
			c, err := Load([]byte(ex.text))
			if err != nil || !strings.HasPrefix(c.TestCommand, lang.test) {
				continue // TestDocExamples reports a file that does not load
			}
			s, err := DefaultOperator().Resolve(c)
			if err != nil {
				continue // the full example needs an operator's file
			}
			if _, ok := s.AutoApproved(c.TestCommand); !ok {
				t.Errorf("%s:%d: the %s example's auto_approve does not approve its test_command %q", docsFile, ex.line, lang.name, c.TestCommand)
				continue
			}
			found = true
		}
		if !found {
			t.Errorf("%s: the Examples section has no %s project's file (a test_command starting %q) that works without an operator file", docsFile, lang.name, lang.test)
		}
	}
}
