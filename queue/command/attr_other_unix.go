//go:build unix && !linux

package command

import "syscall"

// processAttr puts a command in a process group of its own. (Only Linux
// can also have it killed when the worker dies.)
func processAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
