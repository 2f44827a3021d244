package bench

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestTreeCPU(t *testing.T) {
	t.Parallel()
	a1, a2, a3 := procKey{101, 1}, procKey{102, 2}, procKey{103, 3}
	reused := procKey{101, 9} // pid 101 again, another process
	for _, tc := range []struct {
		name string
		a, b tree
		want time.Duration
	}{
		{
			name: "parent alone",
			a:    tree{self: 10},
			b:    tree{self: 35},
			want: 250 * time.Millisecond,
		},
		{
			name: "children alive throughout count their difference",
			a:    tree{self: 10, children: map[procKey]int64{a1: 100, a2: 50}},
			b:    tree{self: 10, children: map[procKey]int64{a1: 130, a2: 60}},
			want: 400 * time.Millisecond,
		},
		{
			name: "a child started during the run counts from zero",
			a:    tree{children: map[procKey]int64{a1: 100}},
			b:    tree{children: map[procKey]int64{a1: 100, a3: 7}},
			want: 70 * time.Millisecond,
		},
		{
			name: "a child that ended counts what it used after the first snapshot",
			// a2 used 50 ticks before a and 20 after, then was reaped:
			// its 70 moved to the parent's reaped time.
			a:    tree{reaped: 1000, children: map[procKey]int64{a1: 100, a2: 50}},
			b:    tree{reaped: 1070, children: map[procKey]int64{a1: 100}},
			want: 200 * time.Millisecond,
		},
		{
			name: "a child that started and ended during the run counts whole",
			a:    tree{reaped: 1000},
			b:    tree{reaped: 1040},
			want: 400 * time.Millisecond,
		},
		{
			name: "a reused pid is another process",
			a:    tree{reaped: 0, children: map[procKey]int64{a1: 100}},
			b:    tree{reaped: 110, children: map[procKey]int64{reused: 5}},
			want: 150 * time.Millisecond,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, treeCPU(tc.a, tc.b))
		})
	}
}

// TestSnapshotTree finds a child of this process among all processes.
func TestSnapshotTree(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("cat") // waits for its stdin to close
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() {
		stdin.Close()
		require.NoError(t, cmd.Wait())
	}()
	s, err := snapshotTree(os.Getpid())
	require.NoError(t, err)
	found := false
	for k := range s.children {
		if k.pid == cmd.Process.Pid {
			found = true
		}
	}
	require.True(t, found, "child %d not among %v", cmd.Process.Pid, s.children)
	cpu, err := processCPU(os.Getpid())
	require.NoError(t, err)
	require.GreaterOrEqual(t, cpu, ticksToDuration(s.self), "CPU read after the snapshot")
}

func TestPeakRSS(t *testing.T) {
	t.Parallel()
	n, err := peakRSS(os.Getpid())
	require.NoError(t, err)
	require.Positive(t, n)
	_, err = peakRSS(-1)
	require.Error(t, err)
}
