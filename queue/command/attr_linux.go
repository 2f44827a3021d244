package command

import "syscall"

// processAttr puts a command in a process group of its own, and has the
// kernel kill it if the worker dies.
func processAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
