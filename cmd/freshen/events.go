package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/freshen-dev/freshen/refresh"
)

// addEventsFlag adds --events, the lifecycle names of the events stream,
// to fs. The function it returns, called once fs is parsed, sets *names
// from the flag, or returns the refusal naming it.
func addEventsFlag(fs *flag.FlagSet, names *refresh.EventNames) func() error {
	s := fs.String("events", names.String(), "lifecycle names written to the events stream: all, none, names separated by commas, "+
		"or -names to leave out of all (-started,-succeeded turns off the two of every cycle); webhooks add the names they deliver. Names: "+
		strings.Join(refresh.LifecycleNames, ", "))
	return func() error {
		n, err := parseEvents(*s)
		if err != nil {
			return err
		}
		*names = n
		return nil
	}
}

// parseEvents reads the value s of an --events flag.
func parseEvents(s string) (refresh.EventNames, error) {
	n, err := refresh.ParseEventNames(s)
	if err != nil {
		return n, fmt.Errorf("--events: %w", err)
	}
	return n, nil
}
