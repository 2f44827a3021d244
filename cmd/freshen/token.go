package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
)

// tokenPrefix starts every token freshen token new makes, so that secret
// scanners can tell one.
const tokenPrefix = "fr_"

const tokenUsage = `usage: freshen token new --name NAME [--scopes read|write|admin] [--prefix ID-PREFIX]
       freshen token hash [TOKEN]

new makes a bearer token for the API: it prints the token (give it to its
holder; it is shown only now) on the first line, then its entry for serve's
--tokens-file on the second. The entry holds the token's SHA-256, not the
token.

hash prints the hash of a token read from the argument or, safer (the
argument shows in the process list), from the first line of stdin.
`

// runToken is `freshen token new|hash`.
func runToken(_ context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, tokenUsage)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "-help", "help":
		fmt.Fprint(stderr, tokenUsage)
		return 0
	case "new":
		return runTokenNew(args[1:], stdout, stderr)
	case "hash":
		return runTokenHash(args[1:], stdin, stdout, stderr)
	}
	fmt.Fprintf(stderr, "freshen token: unknown command %q; want new or hash\n", args[0])
	return 2
}

func runTokenNew(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("token new", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "name of the token's holder, shown in logs (required)")
	var scopes []string
	listVar(fs, &scopes, "scopes", "comma-separated scopes: read, write (implies read) or admin (implies write) (default read)")
	prefix := fs.String("prefix", "", "limit the token to the models whose id starts with this")
	fs.Usage = func() {
		fmt.Fprint(stderr, tokenUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "freshen token new: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if len(scopes) == 0 {
		scopes = []string{string(refreshhttp.ScopeRead)}
	}
	secret := newToken()
	t := refreshhttp.Token{Name: *name, Hash: refreshhttp.HashToken(secret), Prefix: *prefix}
	for _, s := range scopes {
		t.Scopes = append(t.Scopes, refreshhttp.Scope(s))
	}
	if _, err := refreshhttp.NewAuth([]refreshhttp.Token{t}, nil); err != nil {
		msg := strings.ReplaceAll(err.Error(), "tokens[0].", "--")
		fmt.Fprintf(stderr, "freshen token new: %s\n", msg)
		return 2
	}
	entry, _ := json.Marshal(t)
	fmt.Fprintln(stdout, secret)
	fmt.Fprintln(stdout, string(entry))
	return 0
}

// newToken returns a new token: 32 random bytes in base64url after
// tokenPrefix.
func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

func runTokenHash(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var secret string
	switch len(args) {
	case 0:
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			fmt.Fprintf(stderr, "freshen token hash: read stdin: %v\n", err)
			return 1
		}
		secret = strings.TrimSpace(line)
	case 1:
		if strings.HasPrefix(args[0], "-") {
			fmt.Fprint(stderr, tokenUsage)
			if args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
				return 0
			}
			return 2
		}
		secret = args[0]
	default:
		fmt.Fprintf(stderr, "freshen token hash: unexpected argument %q\n", args[1])
		return 2
	}
	if secret == "" || strings.ContainsAny(secret, " \t") {
		fmt.Fprintln(stderr, "freshen token hash: the token must be one word, given as the argument or on stdin")
		return 2
	}
	fmt.Fprintln(stdout, refreshhttp.HashToken(secret))
	return 0
}
