package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
)

// defaultServer is the API a client command talks to without --server or
// FRESHEN_SERVER.
const defaultServer = "http://localhost:8080"

// clientTimeout bounds one request of a client command.
const clientTimeout = time.Minute

// clientCmd is one run of a client command: its flags common to all, its
// output, and the client it makes.
type clientCmd struct {
	name           string
	stdin          io.Reader
	stdout, stderr io.Writer
	server, token  string
	json           bool
	fs             *flag.FlagSet
	client         *refreshhttp.Client
}

// flags returns the flag set of the command, with the common flags.
func (c *clientCmd) flags(args, summary string) *flag.FlagSet {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.StringVar(&c.server, "server", "", "URL of the API (env FRESHEN_SERVER, default "+defaultServer+")")
	fs.StringVar(&c.token, "token", "", "bearer token (env FRESHEN_TOKEN, which is safer: an argument shows in the process list)")
	fs.BoolVar(&c.json, "json", false, "print the API's JSON")
	fs.Usage = func() {
		fmt.Fprintf(c.stderr, "usage: %s [flags] %s\n\n%s\n\n", c.name, args, summary)
		fs.PrintDefaults()
	}
	c.fs = fs
	return fs
}

// parse parses args, flags and arguments in any order, checks that there
// are between minArgs and maxArgs arguments (maxArgs < 0: any number), and
// makes the client. It returns the arguments, or the exit status to
// return (0 for -h).
func (c *clientCmd) parse(args []string, minArgs, maxArgs int) ([]string, int, bool) {
	var rest []string
	for {
		if err := c.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, 0, false
			}
			return nil, 2, false
		}
		if c.fs.NArg() == 0 {
			break
		}
		rest = append(rest, c.fs.Arg(0))
		args = c.fs.Args()[1:]
	}
	switch {
	case len(rest) < minArgs:
		c.fs.Usage()
		return nil, 2, false
	case maxArgs >= 0 && len(rest) > maxArgs:
		fmt.Fprintf(c.stderr, "%s: unexpected argument %q\n", c.name, rest[maxArgs])
		return nil, 2, false
	}
	if c.server == "" {
		c.server = os.Getenv("FRESHEN_SERVER")
	}
	if c.server == "" {
		c.server = defaultServer
	}
	if c.token == "" {
		c.token = os.Getenv("FRESHEN_TOKEN")
	}
	client, err := refreshhttp.NewClient(c.server, c.token, &http.Client{Timeout: clientTimeout})
	if err != nil {
		fmt.Fprintf(c.stderr, "%s: --%s\n", c.name, err)
		return nil, 2, false
	}
	c.client = client
	return rest, 0, true
}

// fail prints err and returns its exit status (exitStatus), with a hint
// for a refused token. With --json, the error also goes to stdout as the
// API writes it ({"error", "fields"}), so that a script can read the
// fields.
func (c *clientCmd) fail(err error) int {
	fmt.Fprintf(c.stderr, "%s: %v\n", c.name, err)
	if c.json {
		c.printJSON(jsonError(err, ""))
	}
	var api *refreshhttp.APIError
	if errors.As(err, &api) {
		switch api.StatusCode {
		case http.StatusUnauthorized:
			if c.token == "" {
				fmt.Fprintln(c.stderr, "(the server needs a token: set FRESHEN_TOKEN or --token)")
			} else {
				fmt.Fprintln(c.stderr, "(the server does not know this token: check FRESHEN_TOKEN or --token)")
			}
		case http.StatusForbidden:
			fmt.Fprintln(c.stderr, "(the token is known, but may not do this)")
		}
	}
	return exitStatus(err)
}

// exitStatus is the exit status of a client command that failed with err:
// 2 when the server refused the input (an answer 400 or 413, whose error
// names the field and the rule), as for input the command refuses itself;
// 1 for every other failure (a model not found, a refused token, a
// conflict, the server or the network).
func exitStatus(err error) int {
	if refresh.ErrorCode(err) == refresh.EINVALID {
		return 2
	}
	return 1
}

// apiError is an error as the API writes it, with the id it concerns when
// a command acts on several.
type apiError struct {
	ID     string               `json:"id,omitempty"`
	Error  string               `json:"error"`
	Fields []refresh.FieldError `json:"fields,omitempty"`
}

// jsonError returns err as the API writes it; id, if not "", names the
// model or dead letter it concerns.
func jsonError(err error, id string) apiError {
	out := apiError{ID: id, Error: err.Error()}
	var api *refreshhttp.APIError
	if errors.As(err, &api) {
		out.Fields = api.Fields
	}
	return out
}

// printJSON prints v as indented JSON.
func (c *clientCmd) printJSON(v any) {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
