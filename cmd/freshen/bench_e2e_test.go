package main

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// freshen bench e2e with --events=-started,-succeeded is followed on
// serve's metrics (the stream carries neither name) and ends with the
// bytes per model and per history row on its RESULT line.
func TestBenchE2EEventsAndBytes(t *testing.T) {
	t.Parallel()
	if os.Getenv("DATABASE_URL") == "" || os.Getenv("REDIS_URL") == "" {
		t.Skip("DATABASE_URL and REDIS_URL are not set; run under scripts/with-servers.sh")
	}
	var out, errOut bytes.Buffer
	cmd := exec.Command(freshenBinary(t), "bench", "e2e", "-n", "300", "--events=-started,-succeeded")
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Run(), "stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	result := regexp.MustCompile(`(?m)^RESULT .*$`).FindString(out.String())
	require.NotEmpty(t, result, out.String())
	fields := map[string]string{}
	for _, kv := range strings.Fields(result)[1:] {
		k, v, _ := strings.Cut(kv, "=")
		fields[k] = v
	}
	require.Equal(t, "300", fields["n"])
	require.Equal(t, "-started,-succeeded", fields["events"])
	for _, k := range []string{"pg_bytes_per_model", "pg_bytes_per_attempt"} {
		n, err := strconv.Atoi(fields[k])
		require.NoError(t, err, k)
		require.Greater(t, n, 100, "%s: a model and a history row take some bytes", k)
	}
	require.Contains(t, out.String(), "bytes per column of models, average: id ")
}
