//go:build unix && !linux

package botproc

import "syscall"

// sysProcAttr puts the bot in a process group of its own.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
