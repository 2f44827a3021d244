package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
)

// The profiler (--pprof-addr) has no tokens: whoever reaches it can read
// serve's memory and stacks and slow it down with profiles. So serve
// listens for it on a loopback address only, unless --insecure, and never
// answers /debug/pprof/cmdline: the command line may hold a password
// (--database-url postgres://user:password@...).

// listenPprof listens on addr for the profiler. It refuses an address that
// other hosts can reach (no loopback address, e.g. ":6060") unless
// insecure, naming the flag and the rule.
func listenPprof(addr string, insecure bool) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-addr: listen on %s: %w", addr, err)
	}
	if tcp, ok := l.Addr().(*net.TCPAddr); (!ok || !tcp.IP.IsLoopback()) && !insecure {
		_ = l.Close()
		return nil, fmt.Errorf("--pprof-addr %s: other hosts can reach it (it is no loopback address) and the profiler has no tokens: "+
			"listen on a loopback address such as 127.0.0.1:6060, or pass --insecure to let anyone who reaches it profile serve", addr)
	}
	return l, nil
}

// pprofHandler answers the Go profiler's endpoints under /debug/pprof/,
// all but cmdline (an unknown profile there: 404).
func pprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/cmdline", http.NotFound)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// servePprof opens the profiler's HTTP server on addr (see listenPprof).
func (m *Main) servePprof(addr string) error {
	l, err := listenPprof(addr, m.Config.Insecure)
	if err != nil {
		return err
	}
	if tcp, ok := l.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		m.Logger.Error("INSECURE: the profiler listens beyond this host, without tokens: anyone who reaches it can read serve's memory",
			"addr", l.Addr().String())
	}
	m.pprof = &http.Server{Handler: pprofHandler(), ReadHeaderTimeout: m.Config.HTTP.ReadHeaderTimeout}
	m.goLoop(func() {
		if err := m.pprof.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.Logger.Error("pprof server", "err", err)
		}
	})
	m.Logger.Info("profiler listening", "addr", l.Addr().String())
	return nil
}
