package main

import (
	"fmt"
	"log/slog"
	"net"
	"reflect"

	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
)

// Tokens are configuration: serve reads them from a file (--tokens-file,
// FRESHEN_TOKENS_FILE) and from the text of --tokens (FRESHEN_TOKENS), both
// a JSON array of
//
//	{"name": "ops", "hash": "sha256:<64 hex digits>", "scopes": ["admin"], "prefix": "acme-"}
//
// (prefix optional). Neither holds a token, only its SHA-256, so neither
// is a secret; freshen token new makes a token and its entry.

// tokensExample heads the errors of a token list that does not parse.
const tokensExample = `want a JSON array such as [{"name": "ops", "hash": "sha256:...", "scopes": ["admin"]}]`

// tokensList is where serve reads its tokens.
var tokensList = configList{fileFlag: "tokens-file", textFlag: "tokens", item: "tokens", example: tokensExample}

// loadAuth returns the Auth of the tokens of file and text (either may be
// ""), or nil when both are empty. Its errors name the flag and the field,
// e.g. "--tokens-file tokens.json: tokens[1].scopes[0]: must be read,
// write or admin, got \"owner\"".
func loadAuth(file, text string, log *slog.Logger) (*refreshhttp.Auth, error) {
	all, err := readConfigList(tokensList, file, text, func(tokens []refreshhttp.Token) error {
		_, err := refreshhttp.NewAuth(tokens, log)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, nil
	}
	a, err := refreshhttp.NewAuth(all, log)
	if err != nil { // a name or a hash in both lists
		return nil, fmt.Errorf("--tokens-file and --tokens together (the tokens of the file first): %w", err)
	}
	return a, nil
}

// tenantsFunc returns the scheduler's TenantsFunc: the prefixes of the
// prefixed tokens of auth, each a tenant of the fair turns beside the keys
// of the prefix limits; nil when no token has a prefix.
func tenantsFunc(auth *refreshhttp.Auth) func() []string {
	prefixes := auth.Prefixes()
	if len(prefixes) == 0 {
		return nil
	}
	return func() []string { return prefixes }
}

// jsonKind names the JSON of a Go kind.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	}
	return "a number"
}

// checkExposure refuses to serve the API without tokens on addr, the
// address serve listens on, unless it is a loopback address (only this
// host reaches it) or insecure is set.
func checkExposure(addr net.Addr, flag string, auth *refreshhttp.Auth, insecure bool, log *slog.Logger) error {
	if auth != nil {
		return nil
	}
	tcp, ok := addr.(*net.TCPAddr)
	if ok && tcp.IP.IsLoopback() {
		log.Warn("no tokens: the API answers every request, from this host only (loopback)", "addr", addr.String())
		return nil
	}
	if !insecure {
		return fmt.Errorf("--addr %s: other hosts can reach it (it is no loopback address) and no tokens are set: "+
			"give --tokens-file or --tokens (make them with freshen token new), listen on a loopback address "+
			"such as 127.0.0.1:8080, or pass --insecure to serve the API to anyone who reaches it", flag)
	}
	log.Error("INSECURE: no tokens, and the API listens beyond this host: anyone who reaches it can read, change and delete every model",
		"addr", addr.String())
	return nil
}
