package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
)

// tokenEntry is the JSON of a token whose secret is its name.
func tokenEntry(name, scopes, prefix string) string {
	t := refreshhttp.Token{Name: name, Hash: refreshhttp.HashToken(name), Prefix: prefix}
	for _, s := range strings.Split(scopes, ",") {
		t.Scopes = append(t.Scopes, refreshhttp.Scope(s))
	}
	b, _ := json.Marshal(t)
	return string(b)
}

func TestLoadAuth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens.json")
	require.NoError(t, os.WriteFile(file, []byte("["+tokenEntry("ops", "admin", "")+"]\n"), 0o600))

	a, err := loadAuth("", "", nil)
	require.NoError(t, err)
	require.Nil(t, a, "no tokens, no auth")
	a, err = loadAuth(file, " ", nil)
	require.NoError(t, err)
	require.NotNil(t, a)
	a, err = loadAuth(file, "["+tokenEntry("acme", "write", "acme-")+"]", nil)
	require.NoError(t, err)
	require.NotNil(t, a)

	tests := []struct {
		name       string
		file, text string
		want       string
	}{
		{"missing file", filepath.Join(dir, "nope.json"), "", "--tokens-file " + filepath.Join(dir, "nope.json") + ": open " + filepath.Join(dir, "nope.json") + ": no such file or directory"},
		{"not JSON", "", "ops admin", `--tokens: invalid JSON at byte 1: invalid character 'o' looking for beginning of value; want a JSON array such as [{"name": "ops", "hash": "sha256:...", "scopes": ["admin"]}]`},
		{"an object", "", `{"name": "ops"}`, `--tokens: json: cannot unmarshal object into Go value of type []http.Token; want a JSON array such as [{"name": "ops", "hash": "sha256:...", "scopes": ["admin"]}]`},
		{"unknown member", "", `[{"name": "ops", "scope": "admin"}]`, `--tokens: json: unknown field "scope"; want a JSON array such as [{"name": "ops", "hash": "sha256:...", "scopes": ["admin"]}]`},
		{"wrong type", "", `[{"name": "ops", "scopes": "admin"}]`, `--tokens: tokens[].scopes: must be an array, got string`},
		{"two arrays", "", `[] []`, `--tokens: has more after the array; want a JSON array such as [{"name": "ops", "hash": "sha256:...", "scopes": ["admin"]}]`},
		{"empty array", "", `[]`, `--tokens: tokens: must list at least one token`},
		{"bad scope", "", "[" + tokenEntry("ci", "read,owner", "") + "]", `--tokens: tokens[0].scopes[1]: must be read, write or admin, got "owner"`},
		{"same name in both", file, "[" + tokenEntry("ops", "read", "") + "]",
			`--tokens-file and --tokens together (the tokens of the file first): tokens[1].name: "ops" is the name of tokens[0] too; tokens[1].hash: is the hash of tokens[0] too: a token must name one holder`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadAuth(tt.file, tt.text, nil)
			require.EqualError(t, err, tt.want)
		})
	}
}

func TestCheckExposure(t *testing.T) {
	t.Parallel()
	a, err := refreshhttp.NewAuth([]refreshhttp.Token{{Name: "ops", Hash: refreshhttp.HashToken("x"), Scopes: []refreshhttp.Scope{"admin"}}}, nil)
	require.NoError(t, err)
	loop4 := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	loop6 := &net.TCPAddr{IP: net.IPv6loopback, Port: 8080}
	every := &net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}
	lan := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 8080}
	tests := []struct {
		name     string
		addr     net.Addr
		auth     *refreshhttp.Auth
		insecure bool
		refused  bool
		log      string
	}{
		{"loopback v4", loop4, nil, false, false, "no tokens: the API answers every request, from this host only"},
		{"loopback v6", loop6, nil, false, false, "no tokens"},
		{"every interface", every, nil, false, true, ""},
		{"a LAN address", lan, nil, false, true, ""},
		{"every interface, insecure", every, nil, true, false, `level=ERROR msg="INSECURE: no tokens, and the API listens beyond this host`},
		{"every interface, tokens", every, a, false, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			err := checkExposure(tt.addr, ":8080", tt.auth, tt.insecure, slog.New(slog.NewTextHandler(&logs, nil)))
			if tt.refused {
				require.ErrorContains(t, err, "--addr :8080: other hosts can reach it (it is no loopback address) and no tokens are set")
				require.ErrorContains(t, err, "--insecure")
			} else {
				require.NoError(t, err)
			}
			if tt.log == "" {
				require.Empty(t, logs.String())
			} else {
				require.Contains(t, logs.String(), tt.log)
			}
		})
	}
}

func runArgs(args []string, stdin string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestTokenCommand(t *testing.T) {
	t.Parallel()
	code, out, errOut := runArgs([]string{"token", "new", "--name", "acme-backend", "--scopes", "write", "--prefix", "acme-"}, "")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2)
	secret := lines[0]
	require.True(t, strings.HasPrefix(secret, tokenPrefix), secret)
	require.Len(t, secret, len(tokenPrefix)+43)
	var entry refreshhttp.Token
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &entry))
	require.Equal(t, refreshhttp.Token{Name: "acme-backend", Hash: refreshhttp.HashToken(secret),
		Scopes: []refreshhttp.Scope{"write"}, Prefix: "acme-"}, entry)
	require.NotContains(t, lines[1], secret)

	// The entry is what serve reads.
	_, err := loadAuth("", "["+lines[1]+"]", nil)
	require.NoError(t, err)

	// Two tokens differ.
	_, out2, _ := runArgs([]string{"token", "new", "--name", "x"}, "")
	require.NotEqual(t, secret, strings.Split(out2, "\n")[0])
	require.Contains(t, out2, `"scopes":["read"]`)

	// hash reads stdin or the argument.
	code, out, errOut = runArgs([]string{"token", "hash"}, secret+"\n")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, entry.Hash+"\n", out)
	code, out, _ = runArgs([]string{"token", "hash", secret}, "")
	require.Equal(t, 0, code)
	require.Equal(t, entry.Hash+"\n", out)

	for _, tt := range []struct {
		args  []string
		stdin string
		error string
	}{
		{[]string{"token", "new"}, "", "freshen token new: --name: must be 1 to 100 letters"},
		{[]string{"token", "new", "--name", "x", "--scopes", "root"}, "", `freshen token new: --scopes[0]: must be read, write or admin, got "root"`},
		{[]string{"token", "new", "--name", "x", "--prefix", "a/b"}, "", "freshen token new: --prefix: must be the start of a model id"},
		{[]string{"token", "hash"}, "", "freshen token hash: the token must be one word"},
		{[]string{"token", "hash", "a", "b"}, "", `freshen token hash: unexpected argument "b"`},
		{[]string{"token", "mint"}, "", `freshen token: unknown command "mint"; want new or hash`},
	} {
		code, out, errOut := runArgs(tt.args, tt.stdin)
		require.Equal(t, 2, code, tt.args)
		require.Empty(t, out)
		require.Contains(t, errOut, tt.error, tt.args)
	}
}

// TestServeTokenFlags reads serve's tokens from the environment and
// refuses a token list that breaks a rule before anything starts.
func TestServeTokenFlags(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://plain/db")
	t.Setenv("REDIS_URL", "redis://plain:6379/0")
	m := NewMain(io.Discard)
	require.NoError(t, m.ParseFlags(nil))
	require.Nil(t, m.auth)
	require.False(t, m.Config.Insecure)

	t.Setenv("FRESHEN_TOKENS", "["+tokenEntry("ops", "admin", "")+"]")
	t.Setenv("FRESHEN_INSECURE", "true")
	m = NewMain(io.Discard)
	require.NoError(t, m.ParseFlags(nil))
	require.NotNil(t, m.auth)
	require.True(t, m.Config.Insecure)

	err := NewMain(io.Discard).ParseFlags([]string{"--tokens", `[{"name": "ops"}]`})
	require.EqualError(t, err, "--tokens: tokens[0].hash: must be sha256: followed by 64 hex digits, the hash of the token "+
		"(freshen token hash prints it); tokens[0].scopes: must list read, write or admin")
	err = NewMain(io.Discard).ParseFlags([]string{"--tokens-file", filepath.Join(t.TempDir(), "none.json")})
	require.ErrorContains(t, err, "--tokens-file ")
	require.ErrorContains(t, err, "no such file or directory")
}
