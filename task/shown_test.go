package task_test

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/approval"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/task"
)

// The one builder of the value every surface shows (serve's comment and
// check run, the console, the API, bot run's terminal): each warning it
// gives, and what it keeps out of the value.
func TestShownRequest(t *testing.T) {
	gomod := []pullwright.FileStat{{Path: "go.mod", Added: 2, Deleted: 1}}
	files := append([]pullwright.FileStat{{Path: "main.go", Added: 1}}, gomod...)
	const diff = "+require evil.test/m v1.0.0\n"
	boxed := approval.Where{Sandbox: true, Image: "golang:1.26"}
	fork := &approval.Fork{Pull: 3, HeadRepo: "mallory/r", Author: "mallory"}
	rules := []policy.AutoRule{{Command: "make lint"}, {Pattern: "go test .*"}}
	tests := []struct {
		name     string
		shown    task.Shown
		warnings []string // the kinds of the warning sentences, in order
		where    approval.Where
		setup    *approval.Setup
		auto     *approval.AutoApprove
	}{
		{name: "in a closed sandbox", shown: task.Shown{Where: boxed, Files: files},
			where: boxed},
		{name: "a fork's code", shown: task.Shown{Where: boxed, Fork: fork},
			warnings: []string{approval.KindFork}, where: boxed},
		{name: "no sandbox", shown: task.Shown{Where: approval.Where{Image: "golang:1.26", Network: true}, SetupBase: "main",
			Manifests: task.ManifestChanges{Files: gomod, Diff: diff}},
			warnings: []string{approval.KindNoSandbox}},
		{name: "network", shown: task.Shown{Where: approval.Where{Sandbox: true, Network: true}},
			warnings: []string{approval.KindNetwork}, where: approval.Where{Sandbox: true, Network: true}},
		{name: "setup with changed manifests", shown: task.Shown{Where: boxed, Files: files, SetupBase: "main",
			Manifests: task.ManifestChanges{Files: gomod, Diff: diff}},
			warnings: []string{approval.KindSetup}, where: boxed,
			setup: &approval.Setup{Base: "main", Manifests: gomod, Diff: diff}},
		{name: "setup unknown", shown: task.Shown{Where: boxed, SetupBase: "main",
			Manifests: task.ManifestChanges{Err: errors.New("fetch from 10.0.0.7 failed")}},
			warnings: []string{approval.KindSetupAnyway}, where: boxed,
			setup: &approval.Setup{Base: "main", Unknown: "the comparison failed"}},
		{name: "setup unknown, told in detail", shown: task.Shown{Where: boxed, SetupBase: "HEAD", Detailed: true,
			Manifests: task.ManifestChanges{Err: errors.New("the files' setup could not be planned: bad")}},
			warnings: []string{approval.KindSetupAnyway}, where: boxed,
			setup: &approval.Setup{Base: "HEAD", Unknown: "the files' setup could not be planned: bad"}},
		{name: "the manifests' diff failed, told in detail", shown: task.Shown{Where: boxed, SetupBase: "HEAD", Detailed: true,
			Manifests: task.ManifestChanges{Files: gomod, Err: errors.New("bad object")}},
			warnings: []string{approval.KindSetup}, where: boxed,
			setup: &approval.Setup{Base: "HEAD", Manifests: gomod, Diff: "(the diff could not be made: bad object)\n"}},
		{name: "the manifests' diff failed", shown: task.Shown{Where: boxed, SetupBase: "main",
			Manifests: task.ManifestChanges{Files: gomod, Err: errors.New("bad object")}},
			warnings: []string{approval.KindSetup}, where: boxed,
			setup: &approval.Setup{Base: "main", Manifests: gomod}},
		{name: "a private base", shown: task.Shown{Where: boxed, SetupBase: "release-1", Manifests: task.ManifestChanges{Private: true}},
			warnings: []string{approval.KindSetupPrivate}, where: boxed,
			setup: &approval.Setup{Base: "release-1", Private: true}},
		{name: "its changes kept", shown: task.Shown{Where: boxed, KeepChanges: true},
			warnings: []string{approval.KindKeep}, where: boxed},
		{name: "a rule matches a command whose changes are kept", shown: task.Shown{Command: "make lint", Where: boxed, AutoApprove: rules, KeepChanges: true},
			warnings: []string{approval.KindKeep}, where: boxed,
			auto: &approval.AutoApprove{Rules: []string{"make lint", "pattern go test .*"}, Matched: "make lint",
				Why: "a rule never answers a command whose changes are kept"}},
		{name: "files unknown", shown: task.Shown{Where: boxed, FilesUnknown: "the diff against the work's start failed"},
			warnings: []string{approval.KindFilesAnyway}, where: boxed},
		{name: "a rule answers", shown: task.Shown{Command: "go test ./...", Where: boxed, AutoApprove: rules},
			where: boxed, auto: &approval.AutoApprove{Rules: []string{"make lint", "pattern go test .*"}, Matched: "pattern go test .*"}},
		{name: "no rule matches", shown: task.Shown{Command: "rm -rf /", Where: boxed, AutoApprove: rules},
			where: boxed, auto: &approval.AutoApprove{Rules: []string{"make lint", "pattern go test .*"}}},
		{name: "a rule matches a fork's code", shown: task.Shown{Command: "make lint", Where: boxed, Fork: fork, AutoApprove: rules},
			warnings: []string{approval.KindFork}, where: boxed,
			auto: &approval.AutoApprove{Rules: []string{"make lint", "pattern go test .*"}, Matched: "make lint",
				Why: "a rule never answers for a fork's code"}},
		{name: "a rule matches, with changed manifests", shown: task.Shown{Command: "make lint", Where: boxed, AutoApprove: rules,
			SetupBase: "main", Manifests: task.ManifestChanges{Files: gomod, Diff: diff}},
			warnings: []string{approval.KindSetup}, where: boxed, setup: &approval.Setup{Base: "main", Manifests: gomod, Diff: diff},
			auto: &approval.AutoApprove{Rules: []string{"make lint", "pattern go test .*"}, Matched: "make lint",
				Why: "a rule never answers when the setup would run with changed dependency manifests"}},
		{name: "a rule matches, with manifests unknown", shown: task.Shown{Command: "make lint", Where: boxed, AutoApprove: rules,
			SetupBase: "main", Manifests: task.ManifestChanges{Err: errors.New("x"), Private: true}},
			warnings: []string{approval.KindSetupPrivate, approval.KindSetupAnyway}, where: boxed,
			setup: &approval.Setup{Base: "main", Unknown: "the comparison failed", Private: true},
			auto: &approval.AutoApprove{Rules: []string{"make lint", "pattern go test .*"}, Matched: "make lint",
				Why: "a rule never answers when the setup would run with changed dependency manifests"}},
		{name: "a rule matches, on a private base", shown: task.Shown{Command: "make lint", Where: boxed, AutoApprove: rules,
			SetupBase: "release-1", Manifests: task.ManifestChanges{Private: true}},
			warnings: []string{approval.KindSetupPrivate}, where: boxed, setup: &approval.Setup{Base: "release-1", Private: true},
			auto: &approval.AutoApprove{Rules: []string{"make lint", "pattern go test .*"}, Matched: "make lint",
				Why: "a rule never answers when the setup would run on files whose base is not the default branch"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.shown.ID, tt.shown.Commit = "7-1", "0123456789abcdef"
			v := tt.shown.Request()
			if !v.Sealed() {
				t.Errorf("the value is not sealed: %+v", v)
			}
			var warnings []string
			for _, s := range v.Sentences() {
				if s.Warning {
					warnings = append(warnings, s.Kind)
				}
			}
			if !slices.Equal(warnings, tt.warnings) {
				t.Errorf("warnings %q, want %q", warnings, tt.warnings)
			}
			if v.Where != tt.where {
				t.Errorf("where %+v, want %+v", v.Where, tt.where)
			}
			if !reflect.DeepEqual(v.Setup, tt.setup) {
				t.Errorf("setup %+v, want %+v", v.Setup, tt.setup)
			}
			if !reflect.DeepEqual(v.AutoApprove, tt.auto) {
				t.Errorf("auto_approve %+v, want %+v", v.AutoApprove, tt.auto)
			}
			if v.Fork != tt.shown.Fork || v.FilesUnknown != tt.shown.FilesUnknown || !slices.Equal(v.Files, tt.shown.Files) || v.KeepChanges != tt.shown.KeepChanges {
				t.Errorf("the facts were not kept as given: %+v", v)
			}
		})
	}
}
