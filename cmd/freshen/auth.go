package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"reflect"

	"github.com/freshen-dev/freshen/refresh"
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

// maxTokensBytes bounds a token file.
const maxTokensBytes = 1 << 20

// loadAuth returns the Auth of the tokens of file and text (either may be
// ""), or nil when both are empty. Its errors name the flag and the field,
// e.g. "--tokens-file tokens.json: tokens[1].scopes[0]: must be read,
// write or admin, got \"owner\"".
func loadAuth(file, text string, log *slog.Logger) (*refreshhttp.Auth, error) {
	var all []refreshhttp.Token
	for _, src := range []struct {
		name string
		read func() ([]byte, error)
	}{
		{"--tokens-file " + file, func() ([]byte, error) {
			if file == "" {
				return nil, nil
			}
			f, err := os.Open(file)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			data, err := io.ReadAll(io.LimitReader(f, maxTokensBytes+1))
			if err == nil && len(data) > maxTokensBytes {
				err = fmt.Errorf("must be at most %d bytes", maxTokensBytes)
			}
			return data, err
		}},
		{"--tokens", func() ([]byte, error) { return []byte(text), nil }},
	} {
		data, err := src.read()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src.name, err)
		}
		if len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		tokens, err := parseTokens(data)
		if err == nil {
			_, err = refreshhttp.NewAuth(tokens, log)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src.name, err)
		}
		all = append(all, tokens...)
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

// parseTokens reads a JSON array of tokens, refusing unknown members.
func parseTokens(data []byte) ([]refreshhttp.Token, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var tokens []refreshhttp.Token
	if err := dec.Decode(&tokens); err != nil {
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syntax):
			return nil, fmt.Errorf("invalid JSON at byte %d: %s; %s", syntax.Offset, syntax, tokensExample)
		case errors.As(err, &typ) && typ.Field != "":
			return nil, &refresh.ValidationError{Fields: []refresh.FieldError{{Field: "tokens[]." + typ.Field, Rule: "must be " + jsonKind(typ.Type.Kind()) + ", got " + typ.Value}}}
		}
		return nil, fmt.Errorf("%s; %s", err, tokensExample)
	}
	if dec.More() {
		return nil, errors.New("has more after the array; " + tokensExample)
	}
	return tokens, nil
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
