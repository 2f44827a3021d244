package queue

// DefaultPrefix is the key prefix used when Options.Prefix or
// WorkerOptions.Prefix is empty.
const DefaultPrefix = "freshen"

// DefaultQueue is the queue of a job whose Queue field is empty.
const DefaultQueue = "default"

// keys builds every Redis key of one prefix. All keys carry the prefix as
// a Redis Cluster hash tag ("freshen:{freshen}:jobs:q"), so they live in one
// slot and the Lua scripts and LMOVEs that span several of them stay legal
// on a cluster.
type keys struct {
	base string // "<prefix>:{<prefix>}:"
}

func newKeys(prefix string) keys {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return keys{base: prefix + ":{" + prefix + "}:"}
}

// jobsKey is the list of jobs waiting for a worker of queue.
func (k keys) jobsKey(queue string) string { return k.base + "jobs:" + queueName(queue) }

// workingKey is the list of jobs that worker has taken from queue and not
// yet answered.
func (k keys) workingKey(queue, worker string) string {
	return k.base + "working:" + queueName(queue) + ":" + worker
}

// workersKey is the sorted set of the workers of queue, scored by when each
// was last seen (Unix milliseconds on the injected clock).
func (k keys) workersKey(queue string) string { return k.base + "workers:" + queueName(queue) }

// outcomesKey is the list workers push their outcomes onto.
func (k keys) outcomesKey() string { return k.base + "outcomes" }

// processingKey is the list of outcomes consumer has received and not yet
// acknowledged.
func (k keys) processingKey(consumer string) string { return k.base + "processing:" + consumer }

// consumersKey is the sorted set of outcome consumers, scored by when each
// was last seen (Unix milliseconds on the injected clock).
func (k keys) consumersKey() string { return k.base + "consumers" }

// deadKey is the dead-letter list: messages that could not be decoded.
func (k keys) deadKey() string { return k.base + "dead" }

// revokedKey marks attempt uid as over (superseded, cancelled, deleted);
// it expires after the attempt's deadline.
func (k keys) revokedKey(uid string) string { return k.base + "revoked:" + uid }

// eventsKey is the stream of lifecycle events.
func (k keys) eventsKey() string { return k.base + "events" }

func queueName(q string) string {
	if q == "" {
		return DefaultQueue
	}
	return q
}
