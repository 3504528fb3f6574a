package task

import (
	"errors"
	"fmt"
)

// Error is a step failure that knows what the user may be told. Msg is shown
// on the issue; Err, with its internal details, only reaches the logs.
type Error struct {
	Msg string
	// Permanent failures are not retried: trying again cannot help.
	Permanent bool
	Err       error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return e.Msg
	}
	return e.Msg + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// ErrBudget is wrapped by the agent's error when a task spent its turns,
// tokens or money: the task stops, keeping its work, rather than retrying.
var ErrBudget = errors.New("budget spent")

// Retry wraps a failure that may pass on a later try (a network error, a 5xx).
func Retry(msg string, err error) error { return &Error{Msg: msg, Err: err} }

// Fatal wraps a failure no retry can fix (a budget spent, a refusal).
func Fatal(msg string, err error) error { return &Error{Msg: msg, Permanent: true, Err: err} }

// Permanent reports whether err must not be retried.
func Permanent(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Permanent
}

// UserMessage is the part of err that may be shown on GitHub.
func UserMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Msg
	}
	return "an internal error stopped the task"
}

// retryf is Retry with a formatted message.
func retryf(err error, format string, args ...any) error {
	return Retry(fmt.Sprintf(format, args...), err)
}
