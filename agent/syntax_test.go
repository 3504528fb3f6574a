package agent

import (
	"fmt"
	"strings"
	"testing"
)

func TestCheckSyntax(t *testing.T) {
	tests := []struct {
		name     string
		path     string
		src      string
		wantLine int    // 0: no error expected
		wantCol  int    // 0: not checked
		wantMsg  string // substring of the message; "" not checked
	}{
		// Go
		{"go valid", "pkg/a.go", "package a\n\nfunc F[T any](x T) T {\n\tfor i := range 3 {\n\t\t_ = i\n\t}\n\treturn x\n}\n", 0, 0, ""},
		{"go missing brace", "pkg/a.go", "package a\n\nfunc F() {\n\tif true {\n\t\treturn\n}\n", 6, 3, "expected '}'"},
		{"go stray token", "a.go", "package a\n\nfunc F() int {\n\treturn 1 +\n}\n", 5, 1, "expected operand"},
		{"go no package", "main.go", "func main() {}\n", 1, 1, "expected 'package'"},

		// JSON
		{"json valid", "package.json", "{\n  \"name\": \"x\",\n  \"dependencies\": {\"a\": \"^1.0.0\"}\n}\n", 0, 0, ""},
		{"json valid with BOM", "data/a.json", "\xEF\xBB\xBF{\"a\": 1}\n", 0, 0, ""},
		{"json trailing comma", "package.json", "{\n  \"name\": \"x\",\n  \"version\": \"1.0.0\",\n}\n", 4, 1, "invalid character '}'"},
		{"json missing comma", "config/app.json", "{\n  \"a\": 1\n  \"b\": 2\n}\n", 3, 3, "after object key:value pair"},
		{"json comment in plain json", "data.json", "{\n  // no\n  \"a\": 1\n}\n", 2, 3, "invalid character '/'"},
		{"json unclosed", "a.json", "[1, 2,\n", 2, 1, "unexpected end"},
		{"jsonc tsconfig comments and trailing commas", "tsconfig.json", "{\n  // strict mode\n  \"compilerOptions\": {\n    \"strict\": true, /* yes */\n    \"paths\": {\"@/*\": [\"src/*\"],},\n  },\n}\n", 0, 0, ""},
		{"jsonc tsconfig.base", "packages/web/tsconfig.base.json", "{\n  \"extends\": \"../../tsconfig.json\", // shared\n}\n", 0, 0, ""},
		{"jsonc vscode settings", ".vscode/settings.json", "{\n  /* editor */\n  \"editor.tabSize\": 2,\n}\n", 0, 0, ""},
		{"jsonc devcontainer", ".devcontainer/devcontainer.json", "// Dev container\n{\"image\": \"golang:1.26\",}\n", 0, 0, ""},
		{"jsonc eslintrc", ".eslintrc.json", "{\"rules\": {\"no-unused-vars\": \"warn\", // later\n}}\n", 0, 0, ""},
		{"jsonc nx project", "apps/web/project.json", "{\n  // targets\n  \"name\": \"web\",\n}\n", 0, 0, ""},
		{"jsonc file", "x/config.jsonc", "{\"url\": \"http://a//b\", /* c */ \"s\": \"/* not a comment */\"}", 0, 0, ""},
		{"jsonc still checked", "tsconfig.json", "{\n  // ok\n  \"compilerOptions\": {\n    \"strict\": true\n    \"noEmit\": true\n  }\n}\n", 5, 5, "after object key:value pair"},

		// YAML
		{"yaml valid workflow", ".github/workflows/ci.yml", "name: ci\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - run: echo ${{ github.sha }}\n", 0, 0, ""},
		{"yaml multi-document valid", "k8s/app.yaml", "apiVersion: v1\nkind: Service\n---\napiVersion: apps/v1\nkind: Deployment\n", 0, 0, ""},
		{"yaml bad indentation", "config.yaml", "server:\n  port: 8080\n   host: x\n", 3, 0, "mapping values are not allowed"},
		{"yaml error in second document", "k8s/app.yaml", "a: 1\n---\nb: [1, 2\nc: 3\n", 3, 0, "expected ',' or ']'"},
		{"yaml unclosed mapping", "a.yaml", "{a: 1\n", 2, 0, "expected ',' or '}'"},
		{"yaml block mapping", "a.yaml", "a:\n  b: 1\n c: 2\n", 3, 0, "did not find expected key"},
		{"yaml control character", "a.yaml", "a: 1\nb: \x01\n", 2, 0, "control characters"},
		{"yaml tab indentation", "c.yml", "a:\n\tb: 1\n", 2, 0, "cannot start any token"},
		{"helm template", "charts/app/templates/deployment.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ include \"app.fullname\" . }}\n  labels:\n    {{- include \"app.labels\" . | nindent 4 }}\n", 0, 0, ""},
		{"templates dir without template is checked", "templates/a.yaml", "a: [1\n", 2, 0, "expected ',' or ']'"},

		// TOML
		{"toml valid", "pyproject.toml", "[project]\nname = \"x\"\ndependencies = [\n  \"requests>=2\",\n]\n\n[tool.ruff]\nline-length = 100\n", 0, 0, ""},
		{"toml unclosed string", "Cargo.toml", "[package]\nname = \"x\nversion = \"0.1.0\"\n", 2, 10, "newlines"},
		{"toml duplicate key", "config.toml", "[a]\nb = 1\nb = 2\n", 3, 0, "already been defined"},
		{"toml missing value", "a.toml", "[a]\nb =\n", 2, 0, ""},

		// JavaScript and TypeScript
		{"js valid top-level await", "src/main.mjs", "import fs from 'node:fs/promises';\nconst data = await fs.readFile('x');\nexport default data;\n", 0, 0, ""},
		{"js commonjs", "index.cjs", "const x = require('x');\nmodule.exports = { x, y: x?.y ?? 1 };\n", 0, 0, ""},
		{"js with JSX", "src/App.js", "export function App() {\n  return <div className=\"a\">{items.map(i => <p key={i}>{i}</p>)}</div>;\n}\n", 0, 0, ""},
		{"js with hashbang", "bin/cli.js", "#!/usr/bin/env node\n'use strict';\nconsole.log(process.argv.slice(2));\n", 0, 0, ""},
		{"js flow annotations are not checked", "src/a.js", "// @flow\nexport function f(x: number): string { return String(x); }\n", 0, 0, ""},
		{"ts declaration file", "types/index.d.ts", "declare module 'x' {\n  export function f(a?: string): void;\n  export default interface I { readonly [k: string]: unknown }\n}\n", 0, 0, ""},
		{"cts import require", "a.cts", "import fs = require('fs');\nexport = fs;\n", 0, 0, ""},
		{"jsx valid", "src/App.jsx", "const A = () => <>\n  <B {...props} />\n</>;\n", 0, 0, ""},
		{"js unclosed brace", "src/a.js", "function f(a) {\n  if (a) {\n    return 1;\n  }\n", 5, 1, "end of file"},
		{"js bad token", "lib/b.js", "const a = 1;\nconst b = a +* 2;\n", 2, 14, ""},
		{"ts valid generics and decorators", "src/svc.ts", "@Injectable()\nexport class Svc<T extends object = {}> {\n  constructor(private readonly repo: Repo<T>) {}\n  async get<K extends keyof T>(k: K): Promise<T[K] | undefined> {\n    return (await this.repo.load())?.[k] as T[K];\n  }\n}\nconst v = await new Svc<{a: number}>(r).get('a');\nexport const cfg = { a: 1 } satisfies Record<string, number>;\n", 0, 0, ""},
		{"ts enum and namespace", "a.mts", "export enum E { A = 1, B }\nexport namespace N { export const x: number = 1 }\nlet f = <T,>(x: T): T => x;\n", 0, 0, ""},
		{"ts missing paren", "src/a.ts", "export function f(x: number {\n  return x;\n}\n", 1, 29, "Expected \")\""},
		{"tsx valid", "src/C.tsx", "export const C = <T,>({ items }: { items: T[] }) => (\n  <ul>{items.map((x, i) => <li key={i}>{String(x)}</li>)}</ul>\n);\n", 0, 0, ""},
		{"tsx unclosed tag", "src/C.tsx", "export const C = () => (\n  <div>\n    <span>hi\n  </div>\n);\n", 4, 5, ""},

		// Python
		{"python valid modern", "app/main.py", "type Pair[T] = tuple[T, T]\n\nasync def main(xs: list[int]) -> None:\n    if (n := len(xs)) > 1:\n        print(f\"{n=} {xs[0]!r}\")\n    match xs:\n        case [first, *_]:\n            pass\n", 0, 0, ""},
		{"python stub", "pkg/a.pyi", "def f(x: int, /) -> str: ...\n", 0, 0, ""},
		{"python missing colon", "app/main.py", "import os\n\ndef f(x)\n    return x\n", 3, 1, "invalid syntax"},
		{"python stray operator", "app/util.py", "x = 1\ny = = 2\n", 2, 5, "invalid syntax"},

		// Not checked
		{"unknown extension", "README.md", "{{{ not ] anything", 0, 0, ""},
		{"no extension", "Makefile", "all:\n\t@echo {", 0, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := checkSyntax(tt.path, []byte(tt.src))
			if tt.wantLine == 0 {
				if got != nil {
					t.Fatalf("checkSyntax(%q) = %q, want no error", tt.path, got.String())
				}
				return
			}
			if got == nil {
				t.Fatalf("checkSyntax(%q) = nil, want an error at line %d", tt.path, tt.wantLine)
			}
			if got.Line != tt.wantLine || (tt.wantCol != 0 && got.Column != tt.wantCol) {
				t.Errorf("checkSyntax(%q) at line %d, column %d (%s), want line %d, column %d",
					tt.path, got.Line, got.Column, got.Message, tt.wantLine, tt.wantCol)
			}
			if !strings.Contains(got.Message, tt.wantMsg) {
				t.Errorf("message %q, want it to contain %q", got.Message, tt.wantMsg)
			}
			if got.Language != checkedLanguage(tt.path) {
				t.Errorf("language %q, want %q", got.Language, checkedLanguage(tt.path))
			}
		})
	}
}

func TestFileSyntaxErrorString(t *testing.T) {
	tests := []struct {
		e    fileSyntaxError
		want string
	}{
		{fileSyntaxError{Line: 12, Column: 5, Message: "expected ';', found 'EOF'", Language: "Go"},
			"Go syntax error at line 12, column 5: expected ';', found 'EOF'"},
		{fileSyntaxError{Line: 3, Message: "mapping values are not allowed in this context", Language: "YAML"},
			"YAML syntax error at line 3: mapping values are not allowed in this context"},
	}
	for _, tt := range tests {
		if got := tt.e.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestCheckedLanguage(t *testing.T) {
	tests := map[string]string{
		"a.go": "Go", "x/Y.JSON": "JSON", "tsconfig.json": "JSON with comments",
		".vscode/launch.json": "JSON with comments", "a.jsonc": "JSON with comments",
		"a.yml": "YAML", "a.yaml": "YAML", "Cargo.toml": "TOML",
		"a.js": "JavaScript", "a.mjs": "JavaScript", "a.cjs": "JavaScript", "a.jsx": "JavaScript",
		"a.ts": "TypeScript", "a.tsx": "TypeScript", "a.mts": "TypeScript", "a.cts": "TypeScript",
		"a.py": "Python", "a.pyi": "Python",
		"README.md": "", "Makefile": "", "a.go.orig": "", "go.mod": "",
	}
	for p, want := range tests {
		if got := checkedLanguage(p); got != want {
			t.Errorf("checkedLanguage(%q) = %q, want %q", p, got, want)
		}
	}
}

// TestCheckSyntaxBounds: pathological files end quickly with no false error
// from a parser's own limits, and files over the size bound are not checked.
func TestCheckSyntaxBounds(t *testing.T) {
	tests := []struct {
		name string
		path string
		src  string
		want bool // an error is expected
	}{
		{"deep json", "a.json", strings.Repeat("[", 100000) + strings.Repeat("]", 100000), false},
		{"deep yaml flow", "a.yaml", "a: " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "\n", false},
		{"too large", "a.json", "[" + strings.Repeat(" ", maxSyntaxCheckBytes) + "x", false},
		{"just under the bound", "a.json", "[" + strings.Repeat(" ", maxSyntaxCheckBytes-3) + "x", true},
		{"long line message clipped", "a.ts", "const a = " + strings.Repeat("b", 5000) + " c;\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := checkSyntax(tt.path, []byte(tt.src))
			if (got != nil) != tt.want {
				t.Fatalf("checkSyntax = %v, want an error: %v", got, tt.want)
			}
			if got != nil && len(got.Message) > maxSyntaxMessage+len("…") {
				t.Errorf("message of %d bytes, want at most %d", len(got.Message), maxSyntaxMessage)
			}
		})
	}
}

func FuzzCheckSyntax(f *testing.F) {
	seeds := []struct{ path, src string }{
		{"a.go", "package a\nfunc f() {"},
		{"a.json", `{"a": [1, 2, {"b": null}]}`},
		{"tsconfig.json", "{/* c */ \"a\": 1, // d\n}"},
		{"a.yaml", "a: &x [1]\nb: *x\n---\nc: {d: e}\n"},
		{"templates/a.yaml", "a: {{ .Values.a }}\n"},
		{"a.toml", "[a]\nb = \"c\"\n[[d]]\ne = 1979-05-27T07:32:00Z\n"},
		{"a.js", "const a = <div>{b}</div>;"},
		{"a.tsx", "let a = <T,>(x: T) => x;"},
		{"a.py", "def f(x):\n    return x +\n"},
	}
	for _, s := range seeds {
		f.Add(s.path, []byte(s.src))
	}
	f.Fuzz(func(t *testing.T, p string, src []byte) {
		se, _ := checkSyntax(p, src)
		if se == nil {
			return
		}
		if se.Line < 1 || se.Column < 0 || se.Message == "" || se.Language == "" {
			t.Errorf("checkSyntax(%q) = %+v: want a line, a message and a language", p, *se)
		}
	})
}

// BenchmarkCheckSyntax measures the cost a check adds to an edit of a
// 2,000-line file (Go, JavaScript, Python).
func BenchmarkCheckSyntax(b *testing.B) {
	var goSrc, jsSrc strings.Builder
	goSrc.WriteString("package bench\n\nimport \"fmt\"\n\n")
	jsSrc.WriteString("import { format } from './format.js';\n\n")
	var pySrc strings.Builder
	for i := range 2000 / 8 {
		fmt.Fprintf(&goSrc, "// F%d formats a value.\nfunc F%d(xs []int, s string) (string, error) {\n\tif len(xs) == 0 {\n\t\treturn \"\", fmt.Errorf(\"empty %%s\", s)\n\t}\n\treturn fmt.Sprint(xs[0]+%d, s), nil\n}\n\n", i, i, i)
		fmt.Fprintf(&pySrc, "def f%d(xs: list[int], s: str) -> str:\n    \"\"\"Formats a value.\"\"\"\n    if not xs:\n        raise ValueError(f\"empty {s}\")\n    total = sum(x + %d for x in xs)\n    return f\"{total}: {s!r}\"\n\n\n", i, i)
		fmt.Fprintf(&jsSrc, "// f%d formats a value.\nexport async function f%d(xs, s) {\n  if (xs.length === 0) {\n    throw new Error(`empty ${s}`);\n  }\n  return format(xs.map((x) => x + %d), { s, n: xs?.length ?? 0 });\n}\n\n", i, i, i)
	}
	for _, c := range []struct{ name, path, src string }{
		{"go", "bench.go", goSrc.String()},
		{"js", "bench.js", jsSrc.String()},
		{"python", "bench.py", pySrc.String()},
	} {
		b.Run(c.name, func(b *testing.B) {
			data := []byte(c.src)
			if se, skipped := checkSyntax(c.path, data); se != nil || skipped != "" {
				b.Fatalf("benchmark input has an error: %v %s", se, skipped)
			}
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				checkSyntax(c.path, data)
			}
		})
	}
}
