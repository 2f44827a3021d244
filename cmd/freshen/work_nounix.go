//go:build !unix

package main

import (
	"context"
	"fmt"
	"io"
)

// runWork is `freshen work`, which needs process groups and signals: it runs
// on Unix-like systems only.
func runWork(_ context.Context, _ []string, _ io.Reader, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "freshen work: runs on Unix-like systems only")
	return 2
}
