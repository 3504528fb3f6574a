// Package pullwright is the project's one vocabulary: the plain data types
// and errors that the packages around a task speak. ghapp returns them from
// GitHub, repo and runner from git and the sandbox, agent reads them in its
// brief, and task's ports (task/ports.go) are written in them, so that
// ghapp, repo, runner and agent satisfy those ports without adapters that
// copy fields.
//
// It holds data and nothing that acts: no I/O, no GitHub or model wire
// format, and it stands below every other package of the module. A new
// field of a piece of GitHub data is one edit here and one where ghapp
// fills it. See docs/architecture.md for the map of the rooms that speak
// it.
//
// Import rule: no package of this module.
package pullwright
