package main

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/rrule"
)

// redisServers names the servers of Redis Sentinel or Redis Cluster, when
// Redis runs so; the Redis URL then gives only credentials and options.
// serve and work take the same flags for them.
type redisServers struct {
	RedisSentinelMaster   string
	RedisSentinelAddrs    []string
	RedisSentinelPassword string
	RedisClusterAddrs     []string
}

// addFlags defines the flags of r on fs.
func (r *redisServers) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&r.RedisSentinelMaster, "redis-sentinel-master", r.RedisSentinelMaster, "name of the Redis primary that Redis Sentinel watches (with --redis-sentinel-addrs)")
	listVar(fs, &r.RedisSentinelAddrs, "redis-sentinel-addrs", "comma-separated host:port of the Redis Sentinels; --redis-url then has no host (e.g. redis://:password@/0)")
	fs.StringVar(&r.RedisSentinelPassword, "redis-sentinel-password", r.RedisSentinelPassword, "password of the Redis Sentinels, if they need one")
	listVar(fs, &r.RedisClusterAddrs, "redis-cluster-addrs", "comma-separated host:port of some Redis Cluster nodes; --redis-url then has no host")
}

// clientConfig is the configuration of the Redis client of r and url.
func (r redisServers) clientConfig(url string) queue.ClientConfig {
	return queue.ClientConfig{
		URL: url, SentinelMaster: r.RedisSentinelMaster, SentinelAddrs: r.RedisSentinelAddrs,
		SentinelPassword: r.RedisSentinelPassword, ClusterAddrs: r.RedisClusterAddrs,
	}
}

// durationValue is a flag.Value of a duration written as policies write
// them: Go syntax ("90s", "1h30m") or ISO 8601 ("PT30S", "P1D").
type durationValue struct{ d *time.Duration }

// durationVar defines a duration flag on fs that accepts ISO 8601 too.
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(durationValue{p}, name, usage+"; a `duration` such as 30s or PT30S")
}

func (v durationValue) Set(s string) error {
	d, err := refresh.ParseDuration(s)
	if err != nil {
		return err
	}
	*v.d = time.Duration(d)
	return nil
}

func (v durationValue) String() string {
	if v.d == nil {
		return "0s"
	}
	return v.d.String()
}

// listValue is a flag.Value of a comma-separated list.
type listValue struct{ p *[]string }

// listVar defines a flag on fs that reads a comma-separated list.
func listVar(fs *flag.FlagSet, p *[]string, name, usage string) {
	fs.Var(listValue{p}, name, usage)
}

func (v listValue) Set(s string) error {
	*v.p = nil
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			*v.p = append(*v.p, e)
		}
	}
	return nil
}

func (v listValue) String() string {
	if v.p == nil {
		return ""
	}
	return strings.Join(*v.p, ",")
}

// limitFlags defines a flag for each global limit of lim (refresh.Limits),
// with its default. A model written, or an outcome applied, is checked
// against them.
func limitFlags(fs *flag.FlagSet, lim *refresh.Limits) {
	*lim = refresh.DefaultLimits()
	d, sd := lim, &lim.Schedule
	*sd = rrule.DefaultLimits
	fs.IntVar(&d.MaxRetries, "max-retries", d.MaxRetries, "most retries a policy may plan in a round")
	durationVar(fs, &d.MaxDelay, "max-delay", d.MaxDelay, "longest retry delay, after jitter")
	durationVar(fs, &d.MinTimeout, "min-timeout", d.MinTimeout, "shortest timeout a policy may set")
	durationVar(fs, &d.MaxTimeout, "max-timeout", d.MaxTimeout, "longest timeout a policy may set")
	durationVar(fs, &d.MaxGiveUpAfter, "max-give-up-after", d.MaxGiveUpAfter, "longest give_up_after a policy may set")
	durationVar(fs, &d.MinInterval, "min-interval", d.MinInterval, "least distance between two occurrences of a schedule (among the first 1,000 after a write)")
	fs.IntVar(&d.MaxMessageBytes, "max-message-bytes", d.MaxMessageBytes, "longest disabled_message template, in bytes")
	fs.IntVar(&d.MaxReasonBytes, "max-reason-bytes", d.MaxReasonBytes, "longest disabled reason once expanded, in bytes")
	fs.IntVar(&d.MaxKinds, "max-kinds", d.MaxKinds, "most error kinds in retry_on or non_retryable")
	fs.IntVar(&d.MaxKindBytes, "max-kind-bytes", d.MaxKindBytes, "longest error kind in retry_on or non_retryable, in bytes")
	fs.IntVar(&d.MaxPayloadBytes, "max-payload-bytes", d.MaxPayloadBytes, "largest payload, in bytes")
	fs.IntVar(&d.MaxPayloadDepth, "max-payload-depth", d.MaxPayloadDepth, "deepest nesting of arrays and objects in a payload")
	fs.IntVar(&d.MaxFieldErrors, "max-field-errors", d.MaxFieldErrors, "most broken rules an error lists")
	fs.IntVar(&sd.MaxBytes, "max-schedule-bytes", sd.MaxBytes, "longest schedule text, in bytes")
	fs.IntVar(&sd.MaxRules, "max-schedule-rules", sd.MaxRules, "most RRULE lines in a schedule")
	fs.IntVar(&sd.MaxRDates, "max-schedule-rdates", sd.MaxRDates, "most RDATE values in a schedule")
	fs.IntVar(&sd.MaxExDates, "max-schedule-exdates", sd.MaxExDates, "most EXDATE values in a schedule")
	fs.IntVar(&sd.MaxCount, "max-schedule-count", sd.MaxCount, "largest COUNT of a schedule's rules, all rules together")
	fs.IntVar(&sd.MaxSteps, "max-schedule-steps", sd.MaxSteps, "most steps of work to find one occurrence of a schedule (a step is a few ns)")
	fs.IntVar(&sd.MaxParseSteps, "max-schedule-parse-steps", sd.MaxParseSteps, "most steps of work to read a schedule and bound its searches (a step is a few ns)")
}

// checkLimits returns an error naming the first limit flag that is not
// positive.
func checkLimits(lim refresh.Limits) error {
	s := lim.Schedule
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"--max-retries", int64(lim.MaxRetries)}, {"--max-delay", int64(lim.MaxDelay)}, {"--min-timeout", int64(lim.MinTimeout)},
		{"--max-timeout", int64(lim.MaxTimeout)}, {"--max-give-up-after", int64(lim.MaxGiveUpAfter)}, {"--min-interval", int64(lim.MinInterval)},
		{"--max-message-bytes", int64(lim.MaxMessageBytes)}, {"--max-reason-bytes", int64(lim.MaxReasonBytes)}, {"--max-kinds", int64(lim.MaxKinds)},
		{"--max-kind-bytes", int64(lim.MaxKindBytes)}, {"--max-payload-bytes", int64(lim.MaxPayloadBytes)}, {"--max-payload-depth", int64(lim.MaxPayloadDepth)},
		{"--max-field-errors", int64(lim.MaxFieldErrors)}, {"--max-schedule-bytes", int64(s.MaxBytes)}, {"--max-schedule-rules", int64(s.MaxRules)},
		{"--max-schedule-rdates", int64(s.MaxRDates)}, {"--max-schedule-exdates", int64(s.MaxExDates)}, {"--max-schedule-count", int64(s.MaxCount)},
		{"--max-schedule-steps", int64(s.MaxSteps)}, {"--max-schedule-parse-steps", int64(s.MaxParseSteps)},
	} {
		if f.v <= 0 {
			return fmt.Errorf("%s: must be > 0, got %d", f.name, f.v)
		}
	}
	if lim.MinTimeout > lim.MaxTimeout {
		return fmt.Errorf("--min-timeout: must be <= --max-timeout (%s), got %s", lim.MaxTimeout, lim.MinTimeout)
	}
	return nil
}
