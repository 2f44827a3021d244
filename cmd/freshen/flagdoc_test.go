package main

import (
	"bytes"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every flag of serve is in the configuration reference.
func TestServeFlagsDocumented(t *testing.T) {
	var usage bytes.Buffer
	m := NewMain(&usage)
	require.Error(t, m.ParseFlags([]string{"-h"}))
	names := regexp.MustCompile(`(?m)^\s+-([a-z0-9-]+)`).FindAllStringSubmatch(usage.String(), -1)
	require.Greater(t, len(names), 30, "the usage lists the flags")
	doc, err := os.ReadFile("../../docs/configuration.md")
	require.NoError(t, err)
	var missing []string
	for _, n := range names {
		if !bytes.Contains(doc, []byte("`--"+n[1]+"`")) {
			missing = append(missing, "--"+n[1])
		}
	}
	require.Empty(t, missing, "flags of serve missing from docs/configuration.md")
}
