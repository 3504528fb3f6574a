// Package untrusted owns what of other people's text reaches the model,
// and how. Visible keeps of an issue, a pull request or a comment only
// what a human reader of GitHub sees. Block, Neutralise, OneLine, Login
// and Cut put such text, and anything else the model did not write (file
// contents, command output, paths, logins), into a prompt: inside the
// delimited <untrusted-…> blocks, where no tag of ours can open or close,
// or on one bounded line.
//
// It is a security boundary, so it stays small and pure: functions of
// strings to strings. It must not do I/O, read configuration, log, or
// know about GitHub, tasks or the model; how much of a text to pass and
// which block it goes in are the callers' to decide.
//
// Import rule: no package of this module.
package untrusted
