// Package command runs a command for each job of a queue: the engine of
// `freshen work`. A Runner is a queue.Handler: it starts the command in a
// process group of its own with the job's payload on stdin and the job's
// FRESHEN_* variables in its environment, posts the status lines it prints,
// stops it (SIGTERM, then SIGKILL a grace period later) at the job's
// deadline or when its attempt is revoked, and reports its exit status, or
// the outcome its last JSON line says, as the job's outcome.
//
// It runs on Unix-like systems only: New is not defined elsewhere.
package command
