package runner

import (
	"syscall"
	"unsafe"
)

// pPID is waitid's idtype for "the process with this pid" (P_PID).
const pPID = 1

// waitExited blocks until the process pid has exited, without reaping it.
// While the zombie exists its pid, and so its process group id, cannot be
// reused, so the group can then be killed without hitting an unrelated one.
func waitExited(pid int) error {
	var info [128]byte // siginfo_t, not read
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch errno {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		default:
			return errno
		}
	}
}
