//go:build !linux

package runner

import "errors"

// waitExited is only implemented on Linux; elsewhere the process group is
// killed after the shell has been reaped, as a best effort.
func waitExited(int) error { return errors.ErrUnsupported }
