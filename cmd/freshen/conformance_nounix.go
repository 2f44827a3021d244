//go:build !unix

package main

import (
	"context"
	"fmt"
	"io"
)

// runConformance is `freshen conformance`, which needs process groups and
// signals: it runs on Unix-like systems only.
func runConformance(_ context.Context, _ []string, _ io.Reader, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "freshen conformance: runs on Unix-like systems only")
	return 2
}
