package rrule

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// oracleRequest and oracleAnswer are the lines exchanged with
// testdata/dateutil_oracle.py.
type oracleRequest struct {
	ID      int     `json:"id"`
	Text    string  `json:"text"`
	Zone    string  `json:"zone"`
	Created int64   `json:"created"`
	Limit   int64   `json:"limit"`
	Budget  float64 `json:"budget"`
}

type oracleAnswer struct {
	ID          int     `json:"id"`
	Occurrences []int64 `json:"occurrences"`
	Error       string  `json:"error"`
	Timeout     bool    `json:"timeout"`
}

// TestNextMatchesDateutil compares Next and First with python-dateutil, with
// zoneinfo placing local times (fold=0), on generated schedules with old
// DTSTARTs. Schedules that Parse refuses as having no occurrence must not
// have one for dateutil either, as far as it gets in a short budget.
func TestNextMatchesDateutil(t *testing.T) {
	t.Parallel()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	rng := rand.New(rand.NewPCG(5545, 2026))
	const n = 400
	cases := make([]genCase, n)
	parsed := make([]*Schedule, n)
	var input bytes.Buffer
	enc := json.NewEncoder(&input)
	for i := range n {
		c := genSchedule(rng)
		if c.Form != "bare" && rng.IntN(8) == 0 {
			// An EXDATE that may or may not hit an occurrence.
			c.ExDates = append(c.ExDates, c.From+rng.Int64N(c.To-c.From)/60*60)
		}
		cases[i] = c
		req := oracleRequest{ID: i, Text: c.Text(), Zone: c.Zone, Created: c.Created, Limit: c.Horizon, Budget: 30}
		parsed[i], err = Parse(c.Text(), c.Options())
		if err != nil {
			require.ErrorIs(t, err, ErrNoOccurrence, "%s", c.Text())
			req.Budget = 0.05
		}
		require.NoError(t, enc.Encode(req))
	}

	cmd := exec.Command(python, "testdata/dateutil_oracle.py")
	cmd.Stdin = &input
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "dateutil oracle failed (is python-dateutil installed?):\n%s", stderr.String())

	answered, refused := 0, 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var a oracleAnswer
		require.NoError(t, json.Unmarshal(sc.Bytes(), &a))
		c, s := cases[a.ID], parsed[a.ID]
		label := fmt.Sprintf("case %d, zone %s:\n%s", a.ID, c.Zone, c.Text())
		answered++
		if s == nil {
			refused++
			extra := slices.DeleteFunc(a.Occurrences, func(u int64) bool { return slices.Contains(c.RDates, u) })
			require.Empty(t, extra, "Parse found no occurrence, dateutil did; %s", label)
			continue
		}
		require.False(t, a.Timeout, "dateutil timed out; %s", label)
		require.Empty(t, a.Error, "dateutil failed; %s", label)
		compareWindow(t, rng, label, s, a.Occurrences, c.From, c.To, c.Horizon)
	}
	require.NoError(t, sc.Err())
	require.Equal(t, n, answered)
	t.Logf("%d schedules compared with dateutil, %d refused by Parse", n-refused, refused)
}
