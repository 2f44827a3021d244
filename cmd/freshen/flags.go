package main

import (
	"flag"
	"time"

	"github.com/freshen-dev/freshen/refresh"
)

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
