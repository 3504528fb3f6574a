package policy

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/pullwright/pullwright"
)

func TestInstructionsMatch(t *testing.T) {
	in := Instructions{"AGENTS.md", ".github/copilot-instructions.md", "/CLAUDE.md", "docs/agents.md"}
	tests := []struct {
		path string
		dir  string
		ok   bool
	}{
		{"AGENTS.md", "", true},
		{"pkg/AGENTS.md", "pkg", true},
		{"pkg/deep/AGENTS.md", "pkg/deep", true},
		{".github/copilot-instructions.md", "", true},
		{"sub/.github/copilot-instructions.md", "", false},
		{"CLAUDE.md", "", true},
		{"pkg/CLAUDE.md", "", false},
		{"docs/agents.md", "", true},
		{"x/docs/agents.md", "", false},
		{"AGENTS.md.bak", "", false},
		{"agents.md", "", false},
		// Other projects' code committed here speaks for itself.
		{"vendor/github.com/x/y/AGENTS.md", "", false},
		{"web/node_modules/lib/AGENTS.md", "", false},
		{"third_party/z/AGENTS.md", "", false},
		{"pkg/testdata/AGENTS.md", "", false},
		{"vendors/AGENTS.md", "vendors", true},
	}
	for _, tt := range tests {
		dir, _, ok := in.scope(tt.path)
		if ok != tt.ok || dir != tt.dir || in.Match(tt.path) != tt.ok {
			t.Errorf("scope(%q) = %q, %v; want %q, %v", tt.path, dir, ok, tt.dir, tt.ok)
		}
	}
	if got := (Settings{}).InstructionFiles(); !reflect.DeepEqual(got, DefaultInstructions()) {
		t.Errorf("no instructions key reads %q", got)
	}
	if got := (Settings{Instructions: []string{}}).InstructionFiles(); len(got) != 0 || Instructions(got).Match("AGENTS.md") {
		t.Errorf("instructions: [] reads %q", got)
	}
}

func TestGuidance(t *testing.T) {
	file := func(p, text string) pullwright.TreeFile {
		return pullwright.TreeFile{Path: p, Data: []byte(text), Size: int64(len(text))}
	}
	// summary is a file as the test compares it: path, dir, text length,
	// cut, and the reason it was skipped.
	summary := func(g pullwright.Guidance) []string {
		var out []string
		for _, f := range g.Files {
			out = append(out, fmt.Sprintf("%s@%s:%d:%v:%s", f.Path, f.Dir, len(f.Text), f.Cut, f.Skipped))
		}
		return out
	}
	long := strings.Repeat("a line of guidance\n", 1000) // 19000 bytes
	tests := []struct {
		name  string
		in    Instructions
		files []pullwright.TreeFile
		more  int
		want  []string
	}{
		{
			name: "whole-repository files first, in the list's order, then nested ones shallowest first",
			in:   DefaultInstructions(),
			files: []pullwright.TreeFile{
				file("AGENTS.md", "root\n"), file("CLAUDE.md", "claude\n"), file("a/AGENTS.md", "a\n"),
				file(".github/copilot-instructions.md", "copilot\n"), file("a/b/AGENTS.md", "ab\n"), file("z/AGENTS.md", "z\n"),
			},
			want: []string{"AGENTS.md@:5:false:", ".github/copilot-instructions.md@:8:false:", "CLAUDE.md@:7:false:",
				"a/AGENTS.md@a:2:false:", "z/AGENTS.md@z:2:false:", "a/b/AGENTS.md@a/b:3:false:"},
		},
		{
			name: "a file the reader cut ends on a line and says so",
			in:   Instructions{"AGENTS.md"},
			files: []pullwright.TreeFile{
				{Path: "AGENTS.md", Data: []byte(long[:MaxInstructionBytes]), Size: int64(len(long))},
			},
			want: []string{fmt.Sprintf("AGENTS.md@:%d:true:", MaxInstructionBytes/19*19)},
		},
		{
			name: "the total bound cuts one file and leaves the rest out",
			in:   Instructions{"AGENTS.md"},
			files: []pullwright.TreeFile{
				file("AGENTS.md", long[:15000]), file("a/AGENTS.md", long[:15000]), file("b/AGENTS.md", long[:15000]), file("c/AGENTS.md", "c\n"),
			},
			more: 3,
			want: []string{"AGENTS.md@:15000:false:", "a/AGENTS.md@a:15000:false:",
				fmt.Sprintf("b/AGENTS.md@b:%d:true:", (MaxGuidanceBytes-30000)/19*19),
				"c/AGENTS.md@c:0:false:the guidance's total bound of 32 KiB was reached"},
		},
		{
			name:  "links and binaries are named, not given",
			in:    Instructions{"AGENTS.md"},
			files: []pullwright.TreeFile{{Path: "AGENTS.md", Link: true}, file("x/AGENTS.md", "\xff\xfe\x00bin")},
			want:  []string{"AGENTS.md@:0:false:it is a symbolic link, which is not followed", "x/AGENTS.md@x:0:false:it is not UTF-8 text"},
		},
		{
			name:  "a character is never cut in two",
			in:    Instructions{"AGENTS.md"},
			files: []pullwright.TreeFile{{Path: "AGENTS.md", Data: []byte("héé")[:4], Size: 5}},
			want:  []string{"AGENTS.md@:3:true:"},
		},
		{
			name:  "files the list does not name are dropped",
			in:    Instructions{"/CLAUDE.md"},
			files: []pullwright.TreeFile{file("a/CLAUDE.md", "x")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.in.Guidance(tt.files, tt.more)
			if got := summary(g); !reflect.DeepEqual(got, tt.want) || g.More != tt.more {
				t.Errorf("Guidance =\n  %q, %d more\nwant\n  %q, %d more", got, g.More, tt.want, tt.more)
			}
		})
	}
}
