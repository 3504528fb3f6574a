// Package untrusted owns what of other people's text reaches the model:
// Visible keeps of an issue, a pull request or a comment only what a
// human reader of GitHub sees.
//
// It is a security boundary, so it stays small and pure: functions of
// strings to strings. It must not do I/O, read configuration, log, or
// know about GitHub, tasks or the model; callers decide what to pass in,
// and this package only decides what of it is shown.
package untrusted
