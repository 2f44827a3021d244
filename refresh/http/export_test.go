package http

import "github.com/freshen-dev/freshen/refresh"

// SetClientClock makes c wait on clk between the attempts of a read.
func SetClientClock(c *Client, clk refresh.Clock) { c.clock = clk }
