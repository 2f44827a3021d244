package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var gcSink [][]byte

func gcMetric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// keepHeapGoal raises the collector's goal to the least heap size while
// the live heap is small, and gives GOGC back when stopped. Not parallel:
// it tunes the whole process.
func TestKeepHeapGoal(t *testing.T) {
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	const minHeap = 96 << 20
	stop := keepHeapGoal(minHeap)
	gcSink = make([][]byte, 0, 4096)
	for range 4096 {
		gcSink = append(gcSink, make([]byte, 1024)) // about 4 MB live
	}
	runtime.GC()
	// The goal is set by a finalizer after the cycle: wait for it.
	deadline := time.Now().Add(10 * time.Second)
	for gcMetric("/gc/gogc:percent") == 100 {
		require.True(t, time.Now().Before(deadline), "the percentage was never raised")
		runtime.Gosched()
	}
	goal := gcMetric("/gc/heap/goal:bytes")
	require.InDelta(t, float64(minHeap), float64(goal), 0.15*minHeap, "goal %d MB", goal>>20)

	stop()
	require.EqualValues(t, 100, gcMetric("/gc/gogc:percent"))
	runtime.GC()
	require.Less(t, gcMetric("/gc/heap/goal:bytes"), uint64(32<<20), "back to twice the live heap")
	gcSink = nil
}
