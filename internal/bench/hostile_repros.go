package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/freshen-dev/freshen/refresh"
)

// The reproductions of the hostile run: what a hostile client sends to
// freshen serve, each at the edge of a limit (refresh.Limits,
// rrule.Limits, queue.Limits, the HTTP server's bounds), refused or
// accepted.

// HostileQueue is the queue of the models a hostile client writes. No
// worker takes its jobs.
const HostileQueue = "hostile"

// namedText is an input and its name.
type namedText struct{ name, text string }

// maxVariants is how many variants of a schedule differ: each shifts its
// times by another second, up to an hour.
const maxVariants = 3600

// worstSchedules returns schedules at or near the default limits of rrule
// and refresh that a PUT at now accepts: many rules, COUNT rules up to
// their total, long runs of EXDATEs, sparse rules that need the most work
// per occurrence. variant shifts their times by up to an hour, so that a
// variant is new text (never answered from a cache) at the same cost.
func worstSchedules(now time.Time, variant int) []namedText {
	today, fixed, tomorrow6 := scheduleDays(now, variant)
	return []namedText{
		{"100 daily RRULEs", dtstart(today) +
			lines(100, func(i int) string { return fmt.Sprintf("RRULE:FREQ=DAILY;BYHOUR=%d;BYMINUTE=%d", i%24, i%60) })},
		{"100 minutely RRULEs, INTERVAL 7 to 11", dtstart(today) +
			lines(100, func(i int) string {
				return fmt.Sprintf("RRULE:FREQ=MINUTELY;INTERVAL=%d;BYMINUTE=%s", 7+i%5, numberList(0, 59))
			})},
		{"100 COUNT RRULEs, COUNT 100,000 in all", dtstart(today) +
			lines(100, func(i int) string { return fmt.Sprintf("RRULE:FREQ=MINUTELY;INTERVAL=%d;COUNT=1000", i+1) })},
		{"COUNT at its limit (100,000)", dtstart(today) + "RRULE:FREQ=MINUTELY;COUNT=100000\n"},
		{"1,000 EXDATEs in a row", dtstart(today.Add(6*time.Hour)) + "RRULE:FREQ=DAILY\nEXDATE:" + dailyDates(1000, tomorrow6) + "\n"},
		{worstPolicySchedule, dtstart(today) +
			lines(5, func(i int) string { return fmt.Sprintf("RRULE:FREQ=DAILY;BYHOUR=%d", i) }) +
			"EXDATE:" + dailyDates(1000, tomorrow6) + "\nRDATE:" + dailyDates(1000, tomorrow6.Add(30*time.Minute)) + "\n"},
		{"30 yearly RRULEs, BYSETPOS 1 to 40", dtstart(today) +
			lines(30, func(i int) string {
				return fmt.Sprintf("RRULE:FREQ=YEARLY;BYDAY=MO,WE,FR;BYHOUR=%d;BYSETPOS=%s", i%24, numberList(1, 40))
			})},
		{"12 weekly RRULEs, one month each", dtstart(today) +
			lines(12, func(i int) string {
				return fmt.Sprintf("RRULE:FREQ=WEEKLY;INTERVAL=%d;BYMONTH=%d;BYDAY=MO", 1+i%7, 1+i%12)
			})},
		{"sparse: Feb 29 every 13 days", dtstart(fixed) + "RRULE:FREQ=DAILY;INTERVAL=13;BYMONTH=2;BYMONTHDAY=29\n"},
		{"sparse: every 2,999 minutes, Mondays 3h", dtstart(fixed) + "RRULE:FREQ=MINUTELY;INTERVAL=2999;BYHOUR=3;BYDAY=MO\n"},
	}
}

// scheduleDays returns the instants the schedules of variant are anchored
// on, each shifted by the variant's seconds: today's midnight (UTC), a
// fixed day for the sparse rules (whether they occur at all depends on
// it), and tomorrow's 06:00.
func scheduleDays(now time.Time, variant int) (today, fixed, tomorrow6 time.Time) {
	shift := time.Duration(variant%maxVariants) * time.Second
	today = now.UTC().Truncate(24 * time.Hour).Add(shift)
	fixed = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(shift)
	return today, fixed, today.Add(30 * time.Hour)
}

// refusedSchedules are schedules a PUT refuses, some only after the work
// their limit allows (rrule.Limits.MaxParseSteps for the last three).
func refusedSchedules(now time.Time, variant int) []namedText {
	today, fixed, tomorrow6 := scheduleDays(now, variant)
	return []namedText{
		{"500 RRULEs", dtstart(today) +
			lines(500, func(i int) string { return fmt.Sprintf("RRULE:FREQ=DAILY;BYHOUR=%d;BYMINUTE=%d", i%24, i%60) })},
		{"300 COUNT RRULEs of 1,000,000", dtstart(today) +
			lines(300, func(i int) string { return fmt.Sprintf("RRULE:FREQ=MINUTELY;COUNT=%d", 1_000_000-i) })},
		{"3,800 EXDATEs (64 KiB)", dtstart(today.Add(6*time.Hour)) + "RRULE:FREQ=DAILY\nEXDATE:" + dailyDates(3800, today.Add(30*time.Hour)) + "\n"},
		{"100 hourly RRULEs, 1,000 EXDATEs", dtstart(today) +
			lines(100, func(i int) string { return fmt.Sprintf("RRULE:FREQ=HOURLY;INTERVAL=%d", 1+i%24) }) +
			"EXDATE:" + dailyDates(1000, today.Add(30*time.Hour)) + "\n"},
		{"an RRULE folded over 5,900 lines", dtstart(today) + "RRULE:FREQ=DAILY;\n" + strings.Repeat(" BYHOUR=1;\n", 5900)},
		{"100 weekly RRULEs, one month each", dtstart(today) +
			lines(100, func(i int) string {
				return fmt.Sprintf("RRULE:FREQ=WEEKLY;INTERVAL=%d;BYMONTH=%d;BYDAY=MO", 1+i%7, 1+i%12)
			})},
		{"sparse: Feb 29 every 265 days", dtstart(fixed) + "RRULE:FREQ=DAILY;INTERVAL=265;BYMONTH=2;BYMONTHDAY=29\n"},
		{"20 RRULEs, 1,000 EXDATEs, 1,000 RDATEs", dtstart(today) +
			lines(20, func(i int) string { return fmt.Sprintf("RRULE:FREQ=DAILY;BYHOUR=%d", i) }) +
			"EXDATE:" + dailyDates(1000, tomorrow6) + "\nRDATE:" + dailyDates(1000, tomorrow6.Add(30*time.Minute)) + "\n"},
	}
}

func dtstart(t time.Time) string { return "DTSTART:" + t.Format("20060102T150405Z") + "\n" }

// lines returns n lines made by line(i).
func lines(n int, line func(i int) string) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(line(i))
		b.WriteByte('\n')
	}
	return b.String()
}

// dailyDates returns n comma-separated UTC date-times a day apart from
// start.
func dailyDates(n int, start time.Time) string {
	out := make([]string, n)
	for i := range out {
		out[i] = start.AddDate(0, 0, i).Format("20060102T150405Z")
	}
	return strings.Join(out, ",")
}

func numberList(from, to int) string {
	out := make([]string, 0, to-from+1)
	for i := from; i <= to; i++ {
		out = append(out, strconv.Itoa(i))
	}
	return strings.Join(out, ",")
}

// jsonString returns s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// modelBody returns a PUT body of a model in HostileQueue with the given
// policy members (JSON object members, without braces).
func modelBody(policy string) []byte {
	return []byte(`{"queue":"` + HostileQueue + `","policy":{` + policy + `}}`)
}

// scheduleBody returns a PUT body whose policy has schedule text.
func scheduleBody(text string) []byte { return modelBody(`"schedule":` + jsonString(text)) }

// errorTemplate is a disabled_message of the longest length the default
// limits accept (1,000 bytes), with each placeholder (each may appear
// once): the error text fills what is left of the reason's 4,096 bytes.
var errorTemplate = func() string {
	t := "{error} after {attempts} attempts since {since}. "
	return t + strings.Repeat("x", 1000-len(t))
}()

// worstPolicySchedule names the schedule of worstPolicyBody.
const worstPolicySchedule = "5 RRULEs, 1,000 EXDATEs, 1,000 RDATEs"

// worstPolicyBody returns the PUT body of a model whose every list and
// text is at its default limit: a 64 KiB payload nested 32 deep, 100
// retry delays of 30 days, 100 retry_on and non_retryable kinds of
// refresh.DefaultLimits().MaxKindBytes bytes, the disabled_message errorTemplate, the longest timeout and
// give_up_after, and a schedule of 5 rules, 1,000 EXDATEs and 1,000
// RDATEs (20 rules are refused for rrule.Limits.MaxParseSteps); it asks
// for a run now.
func worstPolicyBody(now time.Time, variant int) []byte {
	kinds := func(prefix string) string {
		out := make([]string, refresh.DefaultLimits().MaxKinds)
		for i := range out {
			k := fmt.Sprintf("%s%03d-", prefix, i)
			out[i] = `"` + k + strings.Repeat("k", refresh.DefaultLimits().MaxKindBytes-len(k)) + `"`
		}
		return "[" + strings.Join(out, ",") + "]"
	}
	var schedule string
	for _, s := range worstSchedules(now, variant) {
		if s.name == worstPolicySchedule {
			schedule = s.text
		}
	}
	return []byte(`{"queue":"` + HostileQueue + `","trigger":true,"payload":` + deepPayload(32, 64<<10) + `,"policy":{` +
		`"schedule":` + jsonString(schedule) + `,"timezone":"America/Argentina/Buenos_Aires","timeout":"168h",` +
		`"retry":{"delays":[` + strings.TrimSuffix(strings.Repeat(`"720h",`, 100), ",") + `],"jitter":0.99,` +
		`"retry_on":` + kinds("r") + `,"non_retryable":` + kinds("n") + `},` +
		`"on_exhausted":"wait_next","give_up_after":"8760h","disabled_message":` + jsonString(errorTemplate) + `}}`)
}

// deepPayload returns a JSON object of exactly size bytes nested depth
// objects deep, its innermost member a long string.
func deepPayload(depth, size int) string {
	open := strings.Repeat(`{"a":`, depth-1) + `{"s":"`
	closing := `"}` + strings.Repeat("}", depth-1)
	return open + strings.Repeat("x", size-len(open)-len(closing)) + closing
}

// nestedArrays returns depth arrays, one inside the other.
func nestedArrays(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }

// unknownMembers returns a JSON object of n members f0, f1, ... .
func unknownMembers(n int) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"f%d":0`, i)
	}
	b.WriteByte('}')
	return b.String()
}

// junkQuery returns a query string of n parameters.
func junkQuery(n int) string { return strings.TrimSuffix(strings.Repeat("x=1&", n), "&") }

// outcomeWithMembers returns an outcome of a model nobody has, padded with
// unknown members to about size bytes.
func outcomeWithMembers(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"model_id":"h-none","attempt_uid":"u","outcome":"success"`)
	for i := 0; b.Len() < size-16; i++ {
		fmt.Fprintf(&b, `,"f%d":0`, i)
	}
	b.WriteByte('}')
	return []byte(b.String())
}

// failureOutcome returns a failure outcome with a message of n bytes
// (multi-byte characters, so that cutting it must find a boundary).
func failureOutcome(model, uid string, n int) []byte {
	msg := strings.Repeat("é✓", n/5+1)[:n]
	for !utf8.ValidString(msg) {
		msg = msg[:len(msg)-1] // a character cut in its middle
	}
	return []byte(`{"model_id":` + jsonString(model) + `,"attempt_uid":` + jsonString(uid) +
		`,"outcome":"failure","kind":"error","message":` + jsonString(msg) + `}`)
}

// malformedOutcomes are outcomes a consumer must dead-letter, one of each
// rule of WIRE.md.
func malformedOutcomes() [][]byte {
	long := strings.Repeat("k", 10_000)
	return [][]byte{
		[]byte(`not json`),
		[]byte(`["model_id","m"]`),
		[]byte("{\"model_id\":\"h-\xff\",\"attempt_uid\":\"u\",\"outcome\":\"success\"}"),
		[]byte(`{"model_id":"h-\u0000","attempt_uid":"u","outcome":"success"}`),
		[]byte(`{"model_id":"h-none","attempt_uid":"\ud800","outcome":"success"}`),
		[]byte(`{"model_id":"h-none","attempt_uid":"u","outcome":"success"` + strings.Repeat(`,"model_id":"x"`, 1000) + `}`),
		[]byte(`{"model_id":"h-none","attempt_uid":"u","outcome":"failure","kind":"` + long + `"}`),
		[]byte(`{"model_id":"` + long + `","attempt_uid":"u","outcome":"success"}`),
		[]byte(`{"model_id":"h-none","attempt_uid":"u","outcome":"explode"}`),
		[]byte(`{"model_id":"h-none","attempt_uid":"u","outcome":"success","retryable":"yes"}`),
	}
}

// repros returns the reproductions, in the order they run.
func (h *hostile) repros() []repro {
	now := h.b.clock.Now()
	put := func(name, id string, body func(variant int) []byte) repro {
		return h.request(name, http.MethodPut, "/models/"+id, nil, body, http.StatusBadRequest)
	}
	out := []repro{
		put(`disabled_message "{error}" x 110,000 (770 KB)`, "h-template",
			func(int) []byte { return modelBody(`"disabled_message":"` + strings.Repeat("{error}", 110_000) + `"`) }),
		put("payload nested 9,000 deep", "h-deep",
			func(int) []byte {
				return []byte(`{"queue":"` + HostileQueue + `","payload":` + nestedArrays(9000) + `}`)
			}),
		put("payload nested 500,000 deep (1 MiB body)", "h-deep",
			func(int) []byte {
				return []byte(`{"queue":"` + HostileQueue + `","payload":` + nestedArrays(500_000) + `}`)
			}),
		put("payload of 1 MiB (the body limit)", "h-large", func(int) []byte {
			const open, closing = `{"queue":"` + HostileQueue + `","payload":"`, `"}`
			return []byte(open + strings.Repeat("x", 1<<20-len(open)-len(closing)) + closing)
		}),
		h.request("body of 2 MiB", http.MethodPut, "/models/h-large", nil,
			func(int) []byte { return []byte(`{"payload":"` + strings.Repeat("x", 2<<20) + `"}`) }, http.StatusRequestEntityTooLarge),
		put("40,000 unknown members in a body", "h-fields", func(int) []byte { return []byte(unknownMembers(40_000)) }),
		put("40,000 unknown policy fields", "h-fields",
			func(int) []byte { return []byte(`{"policy":` + unknownMembers(40_000) + `}`) }),
		put("retry_on of 20,001 kinds (60 KB)", "h-kinds",
			func(int) []byte { return modelBody(`"retry":{"retry_on":[` + strings.Repeat(`"",`, 20_000) + `""]}`) }),
		h.request("10,000 junk query parameters", http.MethodGet, "/models?queue=q&"+junkQuery(10_000), nil, nil, http.StatusBadRequest),
		put(`timeout "1ns", FREQ=SECONDLY, 100 immediate retries`, "h-fast", func(int) []byte {
			return modelBody(`"schedule":"FREQ=SECONDLY","timeout":"1ns","retry":{"backoff":{"strategy":"immediate","max_retries":100}}`)
		}),
	}
	for k, s := range refusedSchedules(now, 0) {
		out = append(out, put("schedule: "+s.name, fmt.Sprintf("h-refused-%d", k),
			func(v int) []byte { return scheduleBody(refusedSchedules(now, v)[k].text) }))
	}
	out = append(out, h.badText())
	accepted := func(name, id string, body func(variant int) []byte) repro {
		return h.request(name, http.MethodPut, "/models/"+id, []string{id}, body, http.StatusOK, http.StatusCreated)
	}
	for k, s := range worstSchedules(now, 0) {
		id := fmt.Sprintf("h-schedule-%d", k)
		out = append(out, accepted("accepted: "+s.name, id,
			func(v int) []byte { return scheduleBody(worstSchedules(h.b.clock.Now(), v)[k].text) }))
	}
	out = append(out,
		accepted("accepted: every list and text at its limit, run now", "h-worst",
			func(v int) []byte { return worstPolicyBody(h.b.clock.Now(), v) }),
		accepted("accepted: 1s timeout, 100 immediate retries, run now", "h-retries", func(int) []byte {
			return []byte(`{"queue":"` + HostileQueue + `","trigger":true,"policy":{"schedule":"FREQ=MINUTELY","timeout":"1s",` +
				`"retry":{"backoff":{"strategy":"immediate","max_retries":100}}}}`)
		}),
		h.disableFlow(),
		h.outcomes("outcome of 2 MiB", 1, func() [][]byte { return [][]byte{[]byte(strings.Repeat("x", 2<<20))} }),
		h.outcomes("outcome with 1 MiB of unknown members", 0, func() [][]byte { return [][]byte{outcomeWithMembers(1 << 20)} }),
		h.outcomes("outcome nested 500,000 deep", 1, func() [][]byte {
			return [][]byte{[]byte(`{"model_id":"h-none","attempt_uid":"u","outcome":"success","x":` + nestedArrays(500_000) + `}`)}
		}),
		h.outcomes("outcome with a message of 1 MiB", 0, func() [][]byte { return [][]byte{failureOutcome("h-none", "u", 1<<20-200)} }),
		h.outcomes("malformed outcomes, one per rule", len(malformedOutcomes()), malformedOutcomes),
		h.outcomes("1,000 outcomes of unknown models", 0, func() [][]byte {
			out := make([][]byte, 1000)
			for i := range out {
				out[i] = []byte(fmt.Sprintf(`{"model_id":"h-none-%d","attempt_uid":"u%d","outcome":"success"}`, i, i))
			}
			return out
		}),
		// In the loop it runs on a client of its own, one run at a time:
		// four clients pushing 90 MB each at once saturate Redis itself.
		h.own(h.outcomes("100 outcomes of 900 KB at once", 0, func() [][]byte {
			out := make([][]byte, 100)
			for i := range out {
				out[i] = failureOutcome(fmt.Sprintf("h-none-%d", i), "u", 900_000)
			}
			return out
		})),
		h.own(h.deadPage()),
		h.slowClients(),
		h.idleConnections(),
	)
	return out
}

// own marks r to run, in the loop phase, on a client of its own.
func (h *hostile) own(r repro) repro {
	r.own = true
	return r
}

// deadPage is a reproduction that asks for a page of 1,000 dead letters
// when the newest 100 are of 900 KB each (under the size limit, so kept
// whole).
func (h *hostile) deadPage() repro {
	entry := `{"reason":"bench: a large dead letter","message":"` + strings.Repeat("x", 900_000) + `","at":"2026-01-01T00:00:00Z"}`
	return repro{name: "a page of 1,000 dead letters, 100 of them of 900 KB", units: 1, unit: "request", redis: true,
		prepare: func(ctx context.Context, _ int, _ string) (run, error) {
			// The entries of earlier runs go first, so that the list does
			// not grow with the runs.
			pipe := h.b.rdb.TxPipeline()
			pipe.LRem(ctx, h.b.keys.dead(), 0, entry)
			for range 100 {
				pipe.LPush(ctx, h.b.keys.dead(), entry)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				return nil, err
			}
			return func(ctx context.Context) (answer, error) {
				code, err := h.do(ctx, http.MethodGet, "/dead?limit=1000", nil)
				return answer{status: fmt.Sprintf("answered %d", code), ok: code == http.StatusOK}, err
			}, nil
		}}
}

// request is a reproduction of one request whose answer must be one of
// want. target is the path and query, escaped; body builds the body of a
// run from a new variant number (nil: no body).
func (h *hostile) request(name, method, target string, models []string, body func(variant int) []byte, want ...int) repro {
	return repro{name: name, units: 1, unit: "request", models: models,
		prepare: func(context.Context, int, string) (run, error) {
			var data []byte
			if body != nil {
				data = body(int(h.variant.Add(1)))
			}
			return func(ctx context.Context) (answer, error) {
				code, msg, err := h.call(ctx, method, target, data)
				if err != nil {
					if ctx.Err() != nil {
						return answer{}, ctx.Err()
					}
					return answer{status: "error: " + shortError(err)}, nil
				}
				a := answer{status: strconv.Itoa(code), ok: slices.Contains(want, code)}
				if !a.ok && msg != "" {
					a.status += fmt.Sprintf(": %.200q", msg)
				}
				return a, nil
			}, nil
		}}
}

// shortError returns the end of err's text, where its cause is.
func shortError(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && len(s)-i > 10 {
		return s[i+2:]
	}
	return s
}

// badText is a burst of requests with NUL bytes and invalid UTF-8 in their
// path, query or body, some sent raw (as no HTTP client would), each to be
// refused with a 400.
func (h *hostile) badText() repro {
	type request struct {
		method, target string
		body           []byte
	}
	requests := []request{
		{http.MethodGet, "/models/a%00b", nil},
		{http.MethodGet, "/models/%FF%FE", nil},
		{http.MethodGet, "/models?queue=%00", nil},
		{http.MethodGet, "/models?after=%FF", nil},
		{http.MethodGet, "/models/h-x/attempts?limit=%00", nil},
		{http.MethodPut, "/models/h-text", []byte("{\"payload\": \"\xff\"}")},
		{http.MethodPut, "/models/h-text", []byte(`{"queue": "` + HostileQueue + `", "policy": {"disabled_message": "a\u0000b"}}`)},
		{http.MethodPut, "/models/h-text", []byte("{\"queue\": \"a\x00b\"}")},
		{http.MethodPut, "/models/h-text", []byte(`{"queue": "a\u0000b"}`)},
	}
	raw := []string{
		"GET /models/a\x00b HTTP/1.1\r\nHost: bench\r\n\r\n",
		"GET /models/\xff\xfe HTTP/1.1\r\nHost: bench\r\n\r\n",
		"GET /models?queue=\x00 HTTP/1.1\r\nHost: bench\r\n\r\n",
		"PUT /models/h-text HTTP/1.1\r\nHost: bench\r\nX-Bad: \x00\xff\r\nContent-Length: 2\r\n\r\n{}",
	}
	return repro{name: "NUL and invalid UTF-8 in paths, queries, headers, bodies", units: len(requests) + len(raw), unit: "request",
		prepare: func(context.Context, int, string) (run, error) {
			return func(ctx context.Context) (answer, error) {
				codes := map[string]int{}
				for _, r := range requests {
					code, err := h.do(ctx, r.method, r.target, r.body)
					if err != nil {
						return answer{}, err
					}
					codes[strconv.Itoa(code)]++
				}
				for _, r := range raw {
					code, err := h.raw(ctx, r)
					if err != nil {
						return answer{}, err
					}
					codes[strconv.Itoa(code)]++
				}
				return answer{status: countList(codes), ok: codes["400"] == len(requests)+len(raw)}, nil
			}, nil
		}}
}

// countList returns counts as "400 x 12" or "400 x 11, 404 x 1".
func countList(counts map[string]int) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		out = append(out, fmt.Sprintf("%s x %d", k, counts[k]))
	}
	return strings.Join(out, ", ")
}

// raw sends req as it is on a connection of its own and returns the status
// code of the answer.
func (h *hostile) raw(ctx context.Context, req string) (int, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", h.serve.addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(h.b.clock.Now().Add(30 * time.Second)); err != nil {
		return 0, err
	}
	if _, err := io.WriteString(conn, req); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, fmt.Errorf("raw request %q: %w", shortText(req), err)
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func shortText(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// dead and processing spell the dead-letter list and the processing list
// of freshen serve (startServe's --instance-id).
func (k keys) dead() string       { return k.base + "dead" }
func (k keys) processing() string { return k.base + "processing:bench-serve" }

// outcomes is a reproduction that pushes the messages of msgs at once on
// the outcomes list, of which wantDead must be dead-lettered.
func (h *hostile) outcomes(name string, wantDead int, msgs func() [][]byte) repro {
	return repro{name: name, units: len(msgs()), unit: "message", redis: true,
		prepare: func(context.Context, int, string) (run, error) {
			m := msgs()
			return func(ctx context.Context) (answer, error) { return h.push(ctx, m, wantDead) }, nil
		}}
}

// push pushes msgs on the outcomes list and waits until serve has taken
// and acknowledged them all (both the outcomes list and its processing
// list are empty). In the loop phase other clients' dead letters mix in,
// so only that they were consumed counts.
func (h *hostile) push(ctx context.Context, msgs [][]byte, wantDead int) (answer, error) {
	rdb, k := h.b.rdb, h.b.keys
	before, err := rdb.LLen(ctx, k.dead()).Result()
	if err != nil {
		return answer{}, err
	}
	args := make([]any, len(msgs))
	for i, m := range msgs {
		args[i] = m
	}
	if err := rdb.LPush(ctx, k.outcomes(), args...).Err(); err != nil {
		return answer{}, err
	}
	limit := h.b.clock.After(2 * time.Minute)
	for {
		pipe := rdb.Pipeline()
		waiting, taken := pipe.LLen(ctx, k.outcomes()), pipe.LLen(ctx, k.processing())
		if _, err := pipe.Exec(ctx); err != nil {
			return answer{}, err
		}
		if waiting.Val()+taken.Val() == 0 {
			break
		}
		select {
		case <-limit:
			return answer{status: fmt.Sprintf("%d messages still waiting after 2m", waiting.Val()+taken.Val())}, nil
		case <-ctx.Done():
			return answer{}, ctx.Err()
		case <-h.b.clock.After(2 * time.Millisecond):
		}
	}
	after, err := rdb.LLen(ctx, k.dead()).Result()
	if err != nil {
		return answer{}, err
	}
	dead := int(after - before)
	return answer{status: fmt.Sprintf("dead-lettered %d of %d", dead, len(msgs)), ok: h.looping.Load() || dead == wantDead}, nil
}

// disableFlow is a failure with a 10 KB message on a running model whose
// disabled_message is errorTemplate and that has no retry: the reason,
// expanded, must stay within refresh.Limits MaxReasonBytes (4,096).
// Each run starts the model (a PUT with trigger, then its started event),
// unmeasured; the measure is from pushing the failure to the disabled
// event.
func (h *hostile) disableFlow() repro {
	const maxReason = 4096
	return repro{name: "failure with a 10 KB message, a template of 1,000 bytes", units: 1, unit: "message", redis: true,
		models: []string{"h-disable"},
		prepare: func(ctx context.Context, _ int, who string) (run, error) {
			id := "h-disable" + who
			from, err := h.lastEvent(ctx)
			if err != nil {
				return nil, err
			}
			body := []byte(`{"queue":"` + HostileQueue + `","trigger":true,"policy":{"retry":{"delays":[]},"disabled_message":` +
				jsonString(errorTemplate) + `}}`)
			code, err := h.do(ctx, http.MethodPut, "/models/"+id, body)
			if err != nil {
				return nil, fmt.Errorf("put %s: %w", id, err)
			}
			if code != http.StatusOK && code != http.StatusCreated {
				return fixed(answer{status: fmt.Sprintf("PUT answered %d", code)}), nil
			}
			started, err := h.waitEvent(ctx, from, id, refresh.LifecycleStarted, 10*time.Second)
			if err != nil || started == nil {
				return fixed(answer{status: "no start within 10s"}), err
			}
			uid, _ := started["attempt_uid"].(string)
			if from, err = h.lastEvent(ctx); err != nil {
				return nil, err
			}
			msg := failureOutcome(id, uid, 10_000)
			return func(ctx context.Context) (answer, error) {
				if err := h.b.rdb.LPush(ctx, h.b.keys.outcomes(), msg).Err(); err != nil {
					return answer{}, err
				}
				disabled, err := h.waitEvent(ctx, from, id, refresh.LifecycleDisabled, 10*time.Second)
				if err != nil || disabled == nil {
					return answer{status: "not disabled within 10s"}, err
				}
				reason, _ := disabled["reason"].(string)
				n := len(reason)
				return answer{status: fmt.Sprintf("disabled, reason of %s bytes", formatInt(n)), ok: n > 0 && n <= maxReason}, nil
			}, nil
		}}
}

// fixed returns a run that answers a at once.
func fixed(a answer) run { return func(context.Context) (answer, error) { return a, nil } }

// formatInt writes n with commas between thousands.
func formatInt(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// lastEvent returns the id of the last entry of the events stream, or
// "0-0" when it has none.
func (h *hostile) lastEvent(ctx context.Context) (string, error) {
	msgs, err := h.b.rdb.XRevRangeN(ctx, h.b.keys.events(), "+", "-", 1).Result()
	if err != nil {
		return "", err
	}
	if len(msgs) == 0 {
		return "0-0", nil
	}
	return msgs[0].ID, nil
}

// waitEvent reads the events stream after entry from until an entry of
// type typ for model, and returns its event, decoded; nil if none came
// within the time given.
func (h *hostile) waitEvent(ctx context.Context, from, model, typ string, within time.Duration) (map[string]any, error) {
	end := h.b.clock.Now().Add(within)
	for {
		left := end.Sub(h.b.clock.Now())
		if left <= 0 {
			return nil, nil
		}
		res, err := h.b.rdb.XRead(ctx, &redis.XReadArgs{
			Streams: []string{h.b.keys.events(), from}, Count: 1000, Block: max(min(left, time.Second), time.Millisecond),
		}).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, s := range res {
			for _, m := range s.Messages {
				from = m.ID
				if m.Values["model_id"] != model || m.Values["type"] != typ {
					continue
				}
				raw, _ := m.Values["event"].(string)
				var ev map[string]any
				if err := json.Unmarshal([]byte(raw), &ev); err != nil {
					return nil, fmt.Errorf("event %s: %w", m.ID, err)
				}
				return ev, nil
			}
		}
	}
}

// slowClients is SlowConns connections that trickle their headers and as
// many that trickle their bodies, a byte every TrickleEvery, until serve
// cuts them (its read timeouts).
func (h *hostile) slowClients() repro {
	n := h.cfg.SlowConns
	return repro{name: fmt.Sprintf("%d trickled headers, %d trickled bodies (1 byte/%s)", n, n, h.cfg.TrickleEvery),
		units: 2 * n, unit: "connection", own: true,
		prepare: func(context.Context, int, string) (run, error) { return h.trickle, nil }}
}

// slowConn is one connection of slowClients.
type slowConn struct {
	conn net.Conn
	body bool
	done chan struct{} // closed once serve answered or closed it
	at   time.Duration // then, from the start
	code int           // the status code of its answer, 0 if none
}

// trickleLimit bounds how long trickle waits for serve to cut its
// connections.
const trickleLimit = 3 * time.Minute

func (h *hostile) trickle(ctx context.Context) (answer, error) {
	n := h.cfg.SlowConns
	start := h.b.clock.Now()
	conns := make([]*slowConn, 0, 2*n)
	defer func() {
		for _, c := range conns {
			c.conn.Close()
			<-c.done
		}
	}()
	var d net.Dialer
	for i := range 2 * n {
		conn, err := d.DialContext(ctx, "tcp", h.serve.addr)
		if err != nil {
			return answer{}, err
		}
		c := &slowConn{conn: conn, body: i%2 == 1, done: make(chan struct{})}
		conns = append(conns, c)
		go func() {
			defer close(c.done)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err == nil {
				c.code = resp.StatusCode
				resp.Body.Close()
			}
			c.at = h.b.clock.Now().Sub(start)
		}()
		head := "GET /models HTTP/1.1\r\nHost: bench\r\nX-Slow: "
		if c.body {
			head = "PUT /models/h-slow HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{\"payload\":\""
		}
		if _, err := io.WriteString(conn, head); err != nil {
			return answer{}, err
		}
	}
	limit := h.b.clock.After(trickleLimit)
	for open := len(conns); open > 0; {
		select {
		case <-ctx.Done():
			return answer{}, ctx.Err()
		case <-limit:
			return answer{status: fmt.Sprintf("%d connections still open after %s", open, trickleLimit)}, nil
		case <-h.b.clock.After(h.cfg.TrickleEvery):
		}
		open = 0
		for _, c := range conns {
			select {
			case <-c.done:
				continue
			default:
			}
			open++
			_ = c.conn.SetWriteDeadline(h.b.clock.Now().Add(time.Second))
			_, _ = c.conn.Write([]byte("a")) // fails once serve closed it
		}
	}
	return answer{status: cutSummary(conns, false) + "; " + cutSummary(conns, true), ok: true}, nil
}

// cutSummary says when and how serve cut the connections that trickle
// their bodies (or their headers), e.g. "bodies cut by 30s: 400 x 50".
func cutSummary(conns []*slowConn, body bool) string {
	var last time.Duration
	codes := map[string]int{}
	for _, c := range conns {
		if c.body != body {
			continue
		}
		last = max(last, c.at)
		code := "closed"
		if c.code != 0 {
			code = strconv.Itoa(c.code)
		}
		codes[code]++
	}
	what := "headers"
	if body {
		what = "bodies"
	}
	return fmt.Sprintf("%s cut by %.0fs: %s", what, last.Seconds(), countList(codes))
}

// idleConnections opens IdleConns keep-alive connections, each sends one
// request, and holds them idle until released.
func (h *hostile) idleConnections() repro {
	n := h.cfg.IdleConns
	return repro{name: fmt.Sprintf("%s idle keep-alive connections", formatInt(n)), units: n, unit: "connection", own: true,
		prepare: func(context.Context, int, string) (run, error) { return h.idle1, nil }}
}

// idleAnswerWait is how long idle1 waits for the answers to its requests.
const idleAnswerWait = 2 * time.Second

func (h *hostile) idle1(ctx context.Context) (answer, error) {
	n := h.cfg.IdleConns
	var (
		mu       sync.Mutex
		conns    []net.Conn
		firstErr error
		next     atomic.Int64
		answered atomic.Int64
		wg       sync.WaitGroup
	)
	release := func() {
		for _, c := range conns {
			c.Close()
		}
	}
	for range 64 {
		wg.Go(func() {
			var d net.Dialer
			for next.Add(1) <= int64(n) {
				conn, err := d.DialContext(ctx, "tcp", h.serve.addr)
				if err == nil {
					_, err = io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: bench\r\n\r\n")
				}
				mu.Lock()
				if conn != nil {
					conns = append(conns, conn)
				}
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		release()
		return answer{}, firstErr
	}
	deadline := h.b.clock.Now().Add(idleAnswerWait)
	for _, c := range conns {
		wg.Go(func() {
			if c.SetReadDeadline(deadline) != nil {
				return
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				answered.Add(1)
			}
		})
	}
	wg.Wait()
	status := fmt.Sprintf("%s of %s answered within %s; a new client meanwhile: %s",
		formatInt(int(answered.Load())), formatInt(n), idleAnswerWait, h.probe(ctx))
	return answer{status: status, ok: answered.Load() > 0, release: release}, nil
}

// probe sends GET /healthz on a new connection and says how long serve
// took to answer, up to idleAnswerWait.
func (h *hostile) probe(ctx context.Context) string {
	start := h.b.clock.Now()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", h.serve.addr)
	if err != nil {
		return "could not connect: " + shortError(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(start.Add(idleAnswerWait)); err != nil {
		return err.Error()
	}
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: bench\r\n\r\n"); err != nil {
		return "could not send: " + shortError(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return fmt.Sprintf("not answered within %s", idleAnswerWait)
	}
	resp.Body.Close()
	return fmt.Sprintf("%d in %.0f ms", resp.StatusCode, ms(h.b.clock.Now().Sub(start)))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
