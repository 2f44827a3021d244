package queue

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

const benchBatch = 1000

// benchBackends runs f against miniredis and, when REDIS_URL is set, a real
// Redis.
func benchBackends(b *testing.B, f func(b *testing.B, be backend)) {
	b.Run("miniredis", func(b *testing.B) { f(b, newMini(b)) })
	b.Run("redis", func(b *testing.B) {
		url := os.Getenv("REDIS_URL")
		if url == "" {
			b.Skip("REDIS_URL not set")
		}
		f(b, newReal(b, url))
	})
}

// BenchmarkReceive measures Receive+Ack of batches of 1000 outcomes; one op
// is one batch.
func BenchmarkReceive(b *testing.B) {
	benchBackends(b, func(b *testing.B, be backend) {
		ctx := context.Background()
		r := be.newRedis(b, "bench", refresh.NewVirtualClock(t0))
		batch := make([]any, benchBatch)
		for i := range batch {
			batch[i] = outcomeJSON(b, refresh.Outcome{
				ModelID: fmt.Sprintf("model-%06d", i), AttemptUID: fmt.Sprintf("d0v1q2k3m4n5p6r7s8t%05d", i),
				Type: refresh.OutcomeFailure, Kind: "http_503", Message: "upstream answered 503",
			})
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			require.NoError(b, be.client.LPush(ctx, be.keys.outcomesKey(), batch...).Err())
			b.StartTimer()
			outs, err := r.Receive(ctx, benchBatch, 0)
			if err != nil || len(outs) != benchBatch {
				b.Fatalf("received %d outcomes: %v", len(outs), err)
			}
			if err := r.Ack(ctx, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "msgs/s")
	})
}

// BenchmarkPush measures Push of 1000 jobs; one op is one batch.
func BenchmarkPush(b *testing.B) {
	benchBackends(b, func(b *testing.B, be backend) {
		ctx := context.Background()
		r := be.newRedis(b, "bench", refresh.NewVirtualClock(t0))
		jobs := make([]refresh.Job, benchBatch)
		for i := range jobs {
			jobs[i] = refresh.Job{
				ModelID: fmt.Sprintf("model-%06d", i), AttemptUID: fmt.Sprintf("d0v1q2k3m4n5p6r7s8t%05d", i),
				AttemptNo: 1, Queue: "tables", Payload: []byte(`{"input_url":"https://example.com/data.csv"}`),
				StartedAt: t0, DeadlineAt: t0.Add(time.Hour),
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if err := r.Push(ctx, jobs); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			require.NoError(b, be.client.Del(ctx, be.keys.jobsKey("tables")).Err())
			b.StartTimer()
		}
		b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "msgs/s")
	})
}

// BenchmarkWorker measures a worker with a no-op handler and 256 handlers
// taking, running and answering batches of 1000 jobs; one op is one batch.
func BenchmarkWorker(b *testing.B) {
	benchBackends(b, func(b *testing.B, be backend) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		w, err := NewWorker(be.client, WorkerOptions{Prefix: be.prefix, Queue: testQueue, Concurrency: 256, Logger: quiet},
			func(context.Context, Job) error { return nil })
		require.NoError(b, err)
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()
		sched := be.newRedis(b, "bench", refresh.SystemClock{})
		jobs := make([]refresh.Job, benchBatch)
		for i := range jobs {
			jobs[i] = refresh.Job{ModelID: fmt.Sprintf("model-%06d", i), AttemptUID: fmt.Sprintf("d0v1q2k3m4n5p6r7s8t%05d", i),
				AttemptNo: 1, Queue: testQueue, Payload: []byte(`{"input_url": "https://example.com/a.csv"}`),
				StartedAt: time.Now(), DeadlineAt: time.Now().Add(time.Hour)}
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			require.NoError(b, sched.Push(ctx, jobs))
			for got := 0; got < benchBatch; {
				outs, err := sched.Receive(ctx, benchBatch-got, time.Second)
				require.NoError(b, err)
				got += len(outs)
			}
			require.NoError(b, sched.Ack(ctx, nil))
		}
		b.StopTimer()
		b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "jobs/s")
		cancel()
		require.NoError(b, <-done)
	})
}
