package refresh

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sosodev/duration"
)

// String returns d in compact Go syntax without zero units: "1h", "1m30s",
// "168h", "0s", "-5m".
func (d Duration) String() string { return formatDuration(time.Duration(d)) }

// MarshalJSON writes d as a JSON string in the syntax of String.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

// UnmarshalJSON reads a JSON string in Go syntax ("90s", "1h30m") or ISO 8601
// ("PT5M", "P7D", "P1DT2H"). JSON null leaves d unchanged. Negative values
// are read; Policy.Validate refuses them where they make no sense.
func (d *Duration) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	v, err := decodeDuration(data)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// durationRule is the rule reported for a value that is not a duration.
const durationRule = `must be a duration like "90s" or "PT5M", got %s`

// decodeDuration reads one JSON value as a Duration. Its error is the rule
// text of a FieldError.
func decodeDuration(data []byte) (Duration, error) {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return 0, fmt.Errorf(durationRule, shortJSON(data))
	}
	v, err := ParseDuration(s)
	if err != nil {
		return 0, err
	}
	return v, nil
}

// ParseDuration reads s in Go syntax ("90s", "1h30m", "-5m", "0") or ISO 8601
// ("PT5M", "P7D", "P1DT2H30M", "P2W", "-PT1M"). ISO 8601 years and months are
// refused because their length varies; use days or weeks instead.
func ParseDuration(s string) (Duration, error) {
	body := strings.TrimPrefix(s, "-")
	if !strings.HasPrefix(body, "P") {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf(durationRule, quoteShort(s))
		}
		return Duration(d), nil
	}
	iso, err := duration.Parse(s)
	if err != nil || !isoDesignatorsInOrder(body) {
		return 0, fmt.Errorf(durationRule, quoteShort(s))
	}
	if iso.Years != 0 || iso.Months != 0 {
		return 0, fmt.Errorf("must not use years or months, whose length varies (use days, e.g. \"P30D\"), got %s", quoteShort(s))
	}
	// Sum in float first: ToTimeDuration would silently wrap on overflow.
	ns := iso.Weeks*float64(7*24*time.Hour) + iso.Days*float64(24*time.Hour) +
		iso.Hours*float64(time.Hour) + iso.Minutes*float64(time.Minute) + iso.Seconds*float64(time.Second)
	switch {
	case math.IsNaN(ns):
		return 0, fmt.Errorf(durationRule, quoteShort(s))
	case math.Abs(ns) >= math.MaxInt64 && iso.Negative:
		return 0, fmt.Errorf("must be at least -%s, got %s", Duration(math.MaxInt64), quoteShort(s))
	case math.Abs(ns) >= math.MaxInt64:
		return 0, fmt.Errorf("must be at most %s, got %s", Duration(math.MaxInt64), quoteShort(s))
	}
	return Duration(iso.ToTimeDuration()), nil
}

// isoDesignatorsInOrder reports whether an ISO 8601 duration body ("P1DT2H")
// has at least one component, and its designators in the order of the
// standard, each at most once: the parser accepts "PT5M1H", "PT5M5M" and
// "P". It does not parse numbers; duration.Parse does.
func isoDesignatorsInOrder(body string) bool {
	const order = "PYMWDTHMS"
	const t = 5 // index of 'T'; "M" before it is months, after it minutes
	pos, components, inTime, timeComponents := -1, 0, false, 0
	for _, c := range body {
		if c >= '0' && c <= '9' || c == '.' {
			continue
		}
		from, to := pos+1, t+1
		if inTime {
			to = len(order)
		}
		if from > to {
			return false
		}
		i := strings.IndexRune(order[from:to], c)
		if i < 0 {
			return false
		}
		pos = from + i
		switch c {
		case 'P':
		case 'T':
			inTime = true
		default:
			components++
			if inTime {
				timeComponents++
			}
		}
	}
	return components > 0 && (!inTime || timeComponents > 0)
}

// formatDuration writes d in Go syntax without zero units.
func formatDuration(d time.Duration) string {
	sign := ""
	u := uint64(d)
	if d < 0 {
		sign, u = "-", uint64(-d) // -MinInt64 wraps to itself, which is right as a uint64
	}
	h := u / uint64(time.Hour)
	u %= uint64(time.Hour)
	m := u / uint64(time.Minute)
	u %= uint64(time.Minute)
	var b strings.Builder
	b.WriteString(sign)
	if h > 0 {
		b.WriteString(strconv.FormatUint(h, 10) + "h")
	}
	if m > 0 {
		b.WriteString(strconv.FormatUint(m, 10) + "m")
	}
	if u > 0 || b.Len() == len(sign) {
		b.WriteString(time.Duration(u).String()) // "0s", "30s", "1.5s", "250ms"
	}
	return b.String()
}

// quoteShort quotes s for an error message, shortened if long.
func quoteShort(s string) string {
	const max = 40
	if len(s) > max {
		return strconv.Quote(cutText(s, max-3) + "...")
	}
	return strconv.Quote(s)
}

// shortJSON quotes a JSON value for an error message, shortened if long.
func shortJSON(data []byte) string {
	s := strings.TrimSpace(string(data))
	if len(s) > 40 {
		s = cutText(s, 37) + "..."
	}
	return s
}
