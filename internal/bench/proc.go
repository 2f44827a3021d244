package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/procfs"
	"github.com/redis/go-redis/v9"
)

// userHZ is the unit of the CPU times of /proc/<pid>/stat (USER_HZ, 100
// on Linux).
const userHZ = 100

func ticksToDuration(t int64) time.Duration { return time.Duration(t) * time.Second / userHZ }

// LoadAverage returns the 1, 5 and 15 minute load average of the machine,
// or "?" if it cannot be read.
func LoadAverage() string {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return "?"
	}
	l, err := fs.LoadAvg()
	if err != nil {
		return "?"
	}
	return fmt.Sprintf("%.2f %.2f %.2f", l.Load1, l.Load5, l.Load15)
}

// processCPU returns the user and system CPU time process pid has used.
func processCPU(pid int) (time.Duration, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, fmt.Errorf("CPU of process %d: %w", pid, err)
	}
	s, err := p.Stat()
	if err != nil {
		return 0, fmt.Errorf("CPU of process %d: %w", pid, err)
	}
	return ticksToDuration(int64(s.UTime + s.STime)), nil
}

// peakRSS returns the peak resident set size (VmHWM) of process pid, in
// bytes.
func peakRSS(pid int) (int64, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, fmt.Errorf("peak RSS: %w", err)
	}
	s, err := p.NewStatus()
	if err != nil {
		return 0, fmt.Errorf("peak RSS: %w", err)
	}
	if s.VmHWM == 0 {
		return 0, fmt.Errorf("peak RSS: no VmHWM in /proc/%d/status", pid)
	}
	return int64(s.VmHWM), nil
}

// procKey names a process across a run: a pid that is reused is another
// process, with another start time.
type procKey struct {
	pid   int
	start uint64
}

// tree is the CPU, in ticks, of a server process and its children at one
// instant.
type tree struct {
	self     int64 // utime + stime of the parent
	reaped   int64 // cutime + cstime: its children that exited and were waited for
	children map[procKey]int64
}

// snapshotTree reads the CPU of process pid and of each of its children.
func snapshotTree(pid int) (tree, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return tree{}, err
	}
	s, err := p.Stat()
	if err != nil {
		return tree{}, err
	}
	t := tree{
		self:     int64(s.UTime + s.STime),
		reaped:   int64(s.CUTime + s.CSTime),
		children: map[procKey]int64{},
	}
	all, err := procfs.AllProcs()
	if err != nil {
		return tree{}, err
	}
	for _, c := range all {
		cs, err := c.Stat()
		if err != nil || cs.PPID != pid {
			continue // gone meanwhile, or not a child
		}
		t.children[procKey{c.PID, cs.Starttime}] = int64(cs.UTime + cs.STime)
	}
	return t, nil
}

// treeCPU returns the CPU time a process and its children used between
// snapshots a and b, counting the children that started or ended between
// them: a child that ended was reaped, so its whole time moved to the
// parent's reaped time, from which the part before a is taken off.
func treeCPU(a, b tree) time.Duration {
	t := (b.self - a.self) + (b.reaped - a.reaped)
	for k, v := range b.children {
		t += v - a.children[k]
	}
	for k, v := range a.children {
		if _, alive := b.children[k]; !alive {
			t -= v
		}
	}
	return ticksToDuration(t)
}

// postmasterPID returns the pid of the postmaster of the server conn is
// connected to, found as the parent of conn's backend, or an error if the
// server does not run on this machine.
func postmasterPID(ctx context.Context, conn *pgx.Conn) (int, error) {
	var backend int
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		return 0, err
	}
	s, err := procStat(backend, "postgres")
	if err != nil {
		return 0, fmt.Errorf("PostgreSQL does not run on this machine: %w", err)
	}
	if _, err := procStat(s.PPID, "postgres"); err != nil {
		return 0, fmt.Errorf("PostgreSQL does not run on this machine: %w", err)
	}
	return s.PPID, nil
}

// redisServerPID returns the pid of the Redis server, from INFO server, or an
// error if the server does not run on this machine.
func redisServerPID(ctx context.Context, rdb *redis.Client) (int, error) {
	info, err := rdb.InfoMap(ctx, "server").Result()
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(info["Server"]["process_id"])
	if err != nil {
		return 0, fmt.Errorf("INFO server: process_id: %w", err)
	}
	if _, err := procStat(pid, "redis-server"); err != nil {
		return 0, fmt.Errorf("Redis does not run on this machine: %w", err)
	}
	return pid, nil
}

// procStat returns the stat of process pid, or an error if there is no
// such process or its command is not comm.
func procStat(pid int, comm string) (procfs.ProcStat, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return procfs.ProcStat{}, err
	}
	s, err := p.Stat()
	if err != nil {
		return procfs.ProcStat{}, err
	}
	if s.Comm != comm {
		return s, fmt.Errorf("process %d is %q, not %q", pid, s.Comm, comm)
	}
	return s, nil
}
