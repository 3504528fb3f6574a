package botproc

import "syscall"

// sysProcAttr puts the bot in a process group of its own and has the kernel
// kill it should this process die first (a test binary killed on timeout).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
