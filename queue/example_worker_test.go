package queue_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
)

// A worker refreshes models of the queue "tables"; the scheduler's side
// pushes a job and receives the outcome.
func ExampleNewWorker() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	client, err := queue.NewClient(queue.ClientConfig{URL: "redis://" + mr.Addr()})
	if err != nil {
		panic(err)
	}
	defer client.Close()
	clock := refresh.NewVirtualClock(time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC))
	logger := slog.New(slog.DiscardHandler)

	worker, err := queue.NewWorker(client, queue.WorkerOptions{Queue: "tables", Concurrency: 4, Clock: clock, Logger: logger},
		func(ctx context.Context, job queue.Job) error {
			if err := job.Status(ctx, "downloading"); err != nil {
				return err
			}
			// A failure the customer can fix: no retry, and a message for them.
			return queue.UserMessage(queue.Permanent(queue.Fail("validation", "row 3: no date")),
				"Row 3 of your file has no date.")
		})
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- worker.Run(ctx) }()

	sched, _ := queue.New(client, queue.Options{Consumer: "scheduler-1", Clock: clock, Logger: logger})
	now := clock.Now()
	_ = sched.Push(ctx, []refresh.Job{{ModelID: "bigtable-1", AttemptUID: "d0v1q2", AttemptNo: 1, Queue: "tables",
		StartedAt: now, DeadlineAt: now.Add(time.Hour)}})
	for n := 0; n < 2; {
		outs, _ := sched.Receive(ctx, 10, 5*time.Second)
		for _, o := range outs {
			fmt.Printf("%s %s kind=%q message=%q user_message=%q\n", o.ModelID, o.Type, o.Kind, o.Message, o.UserMessage)
		}
		n += len(outs)
	}
	_ = sched.Ack(ctx, nil)
	stop()
	<-done
	// Output:
	// bigtable-1 status kind="" message="downloading" user_message=""
	// bigtable-1 failure kind="validation" message="row 3: no date" user_message="Row 3 of your file has no date."
}
