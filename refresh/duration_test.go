package refresh_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

func TestParseDuration(t *testing.T) {
	t.Parallel()
	const day = 24 * time.Hour
	tests := []struct {
		in   string
		want time.Duration
		err  string
	}{
		// Go syntax.
		{in: "90s", want: 90 * time.Second},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "0s", want: 0},
		{in: "0", want: 0},
		{in: "1.5h", want: 90 * time.Minute},
		{in: "250ms", want: 250 * time.Millisecond},
		{in: "-1m", want: -time.Minute},
		// ISO 8601.
		{in: "PT5M", want: 5 * time.Minute},
		{in: "P7D", want: 7 * day},
		{in: "P1DT2H", want: 26 * time.Hour},
		{in: "P2W", want: 14 * day},
		{in: "PT1H30M15S", want: time.Hour + 30*time.Minute + 15*time.Second},
		{in: "PT0.5S", want: 500 * time.Millisecond},
		{in: "P0.5D", want: 12 * time.Hour},
		{in: "PT0S", want: 0},
		{in: "-PT1M", want: -time.Minute},
		// Refused.
		{in: "xyz", err: `must be a duration like "90s" or "PT5M", got "xyz"`},
		{in: "", err: `must be a duration like "90s" or "PT5M", got ""`},
		{in: "5", err: `must be a duration like "90s" or "PT5M", got "5"`},
		{in: "1d", err: `must be a duration like "90s" or "PT5M", got "1d"`},
		{in: "P", err: `must be a duration like "90s" or "PT5M", got "P"`},
		{in: "PT", err: `must be a duration like "90s" or "PT5M", got "PT"`},
		{in: "P1DT", err: `must be a duration like "90s" or "PT5M", got "P1DT"`},
		{in: "PT5", err: `must be a duration like "90s" or "PT5M", got "PT5"`},
		{in: "P5H", err: `must be a duration like "90s" or "PT5M", got "P5H"`},
		{in: "PT5M1H", err: `must be a duration like "90s" or "PT5M", got "PT5M1H"`},
		{in: "PT5M5M", err: `must be a duration like "90s" or "PT5M", got "PT5M5M"`},
		{in: "P1D2W", err: `must be a duration like "90s" or "PT5M", got "P1D2W"`},
		{in: "P1DT1HT1M", err: `must be a duration like "90s" or "PT5M", got "P1DT1HT1M"`},
		{in: "P-1D", err: `must be a duration like "90s" or "PT5M", got "P-1D"`},
		{in: "pt5m", err: `must be a duration like "90s" or "PT5M", got "pt5m"`},
		{in: "P1D5M", err: `must be a duration like "90s" or "PT5M", got "P1D5M"`},
		{in: "P1M", err: `must not use years or months, whose length varies (use days, e.g. "P30D"), got "P1M"`},
		{in: "P1Y", err: `must not use years or months, whose length varies (use days, e.g. "P30D"), got "P1Y"`},
		{in: "P300000D", err: `must be at most 2562047h47m16.854775807s, got "P300000D"`},
		{in: "-P300000D", err: `must be at least -2562047h47m16.854775807s, got "-P300000D"`},
		{in: "PT" + strings.Repeat("9", 400) + "S", err: `must be a duration like "90s" or "PT5M", got "PT` + strings.Repeat("9", 35) + `..."`},
		{in: strings.Repeat("x", 100), err: `must be a duration like "90s" or "PT5M", got "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx..."`},
		{in: "1h\x00", err: `must be a duration like "90s" or "PT5M", got "1h\x00"`},
		{in: "300000000h", err: `must be a duration like "90s" or "PT5M", got "300000000h"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := refresh.ParseDuration(tt.in)
			if tt.err != "" {
				require.EqualError(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, time.Duration(got))
		})
	}
}

func TestDurationString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"},
		{time.Hour, "1h"},
		{90 * time.Second, "1m30s"},
		{168 * time.Hour, "168h"},
		{time.Hour + 5*time.Second, "1h5s"},
		{25*time.Hour + 30*time.Minute, "25h30m"},
		{10 * time.Minute, "10m"},
		{1500 * time.Millisecond, "1.5s"},
		{250 * time.Millisecond, "250ms"},
		{time.Minute + 250*time.Millisecond, "1m250ms"},
		{time.Nanosecond, "1ns"},
		{-5 * time.Minute, "-5m"},
		{-90 * time.Second, "-1m30s"},
		{math.MaxInt64, "2562047h47m16.854775807s"},
		{math.MinInt64, "-2562047h47m16.854775808s"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, refresh.Duration(tt.in).String())
			// What String writes, ParseDuration reads back.
			back, err := refresh.ParseDuration(tt.want)
			require.NoError(t, err)
			require.Equal(t, tt.in, time.Duration(back))
		})
	}
}

func TestDurationJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want time.Duration
		out  string
		err  string
	}{
		{name: "go", in: `"1h30m"`, want: 90 * time.Minute, out: `"1h30m"`},
		{name: "iso", in: `"P7D"`, want: 7 * 24 * time.Hour, out: `"168h"`},
		{name: "iso mixed", in: `"P1DT2H"`, want: 26 * time.Hour, out: `"26h"`},
		{name: "zero", in: `"PT0S"`, want: 0, out: `"0s"`},
		{name: "negative", in: `"-PT1M"`, want: -time.Minute, out: `"-1m"`},
		{name: "number", in: `90`, err: `must be a duration like "90s" or "PT5M", got 90`},
		{name: "bool", in: `true`, err: `must be a duration like "90s" or "PT5M", got true`},
		{name: "bad string", in: `"xyz"`, err: `must be a duration like "90s" or "PT5M", got "xyz"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var d refresh.Duration
			err := json.Unmarshal([]byte(tt.in), &d)
			if tt.err != "" {
				require.EqualError(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, time.Duration(d))
			out, err := json.Marshal(d)
			require.NoError(t, err)
			require.Equal(t, tt.out, string(out))
		})
	}

	t.Run("null leaves the value", func(t *testing.T) {
		t.Parallel()
		d := refresh.Duration(time.Minute)
		require.NoError(t, json.Unmarshal([]byte(`null`), &d))
		require.Equal(t, refresh.Duration(time.Minute), d)
	})
}
