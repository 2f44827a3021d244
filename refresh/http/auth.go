package http

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/freshen-dev/freshen/refresh"
)

// Scope is what a token allows. Each scope includes the ones before it:
// admin implies write, which implies read.
type Scope string

// Scopes.
const (
	// ScopeRead reads models, their attempts and the metrics.
	ScopeRead Scope = "read"
	// ScopeWrite also creates and changes models (PUT, PATCH) and acts on
	// them (trigger, enable, pause, resume, cancel).
	ScopeWrite Scope = "write"
	// ScopeAdmin also deletes models and handles dead letters.
	ScopeAdmin Scope = "admin"
)

// rank orders the scopes; 0 is no scope.
func (s Scope) rank() int {
	switch s {
	case ScopeRead:
		return 1
	case ScopeWrite:
		return 2
	case ScopeAdmin:
		return 3
	}
	return 0
}

// Principal is who sent a request: the token's name, its scopes and the
// id prefix it is limited to ("" for none).
type Principal struct {
	Name   string
	Scopes []Scope
	Prefix string
}

// Can reports whether p has scope s, itself or through a scope that
// implies it.
func (p Principal) Can(s Scope) bool {
	for _, have := range p.Scopes {
		if s.rank() > 0 && have.rank() >= s.rank() {
			return true
		}
	}
	return false
}

// Owns reports whether model id is within p's prefix.
func (p Principal) Owns(id string) bool { return strings.HasPrefix(id, p.Prefix) }

type principalKey struct{}

// ContextWithPrincipal returns a copy of ctx that carries p, as the
// middleware passes it on.
func ContextWithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal of a request that the middleware
// (Auth.Require) let through, and false when there is none: the request was
// not authenticated, as on a server without tokens.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// Token is a bearer token as the configuration holds it: the hash of the
// token, never the token itself.
type Token struct {
	// Name names the token's holder in logs.
	Name string `json:"name"`
	// Hash is "sha256:" followed by the 64 hex digits of the SHA-256 of
	// the token (see HashToken).
	Hash   string  `json:"hash"`
	Scopes []Scope `json:"scopes"`
	// Prefix, if set, limits the token to the models whose id starts with
	// it.
	Prefix string `json:"prefix,omitempty"`
}

// hashPrefix starts every Token.Hash.
const hashPrefix = "sha256:"

// HashToken returns the Token.Hash of the bearer token secret.
func HashToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hashPrefix + hex.EncodeToString(sum[:])
}

// Auth maps bearer tokens to principals: it is the one place that knows
// which token may do what. Build it with NewAuth.
type Auth struct {
	tokens []authToken
	log    *slog.Logger
}

type authToken struct {
	digest [sha256.Size]byte
	p      Principal
}

// Rules of a Token.
var tokenNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@:-]{0,99}$`)

const (
	tokenNameRule = "must be 1 to 100 letters, digits or ._@:- starting with a letter or digit"
	tokenHashRule = "must be sha256: followed by 64 hex digits, the hash of the token (freshen token hash prints it)"
)

// NewAuth returns an Auth of tokens, or a *refresh.ValidationError naming
// each broken rule by its field ("tokens[1].scopes[0]: must be read, write
// or admin, got \"owner\""): a token needs a name, unique among them; a hash
// of the form of HashToken, unique too; at least one scope; and a prefix, if
// any, that can start a model id. log receives the refusals (nil: none).
func NewAuth(tokens []Token, log *slog.Logger) (*Auth, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &Auth{log: log}
	var fields []refresh.FieldError
	bad := func(field, format string, args ...any) {
		fields = append(fields, refresh.FieldError{Field: field, Rule: fmt.Sprintf(format, args...)})
	}
	if len(tokens) == 0 {
		bad("tokens", "must list at least one token")
	}
	names := map[string]int{}
	hashes := map[string]int{}
	for i, t := range tokens {
		at := fmt.Sprintf("tokens[%d]", i)
		switch j, dup := names[t.Name]; {
		case !tokenNamePattern.MatchString(t.Name):
			bad(at+".name", "%s, got %q", tokenNameRule, short([]byte(t.Name)))
		case dup:
			bad(at+".name", "%q is the name of tokens[%d] too", t.Name, j)
		default:
			names[t.Name] = i
		}
		var digest [sha256.Size]byte
		hash := strings.ToLower(t.Hash)
		raw, ok := strings.CutPrefix(hash, hashPrefix)
		if n, err := hex.Decode(digest[:], []byte(raw)); !ok || err != nil || n != sha256.Size || len(raw) != 2*sha256.Size {
			bad(at+".hash", "%s", tokenHashRule)
		} else if j, dup := hashes[hash]; dup {
			bad(at+".hash", "is the hash of tokens[%d] too: a token must name one holder", j)
		} else {
			hashes[hash] = i
		}
		if len(t.Scopes) == 0 {
			bad(at+".scopes", "must list read, write or admin")
		}
		for k, s := range t.Scopes {
			if s.rank() == 0 {
				bad(fmt.Sprintf("%s.scopes[%d]", at, k), "must be read, write or admin, got %q", short([]byte(s)))
			}
		}
		if t.Prefix != "" && !refresh.ValidID(t.Prefix) {
			bad(at+".prefix", "must be the start of a model id (%s), got %q", refresh.IDRule, short([]byte(t.Prefix)))
		}
		a.tokens = append(a.tokens, authToken{digest: digest,
			p: Principal{Name: t.Name, Scopes: append([]Scope(nil), t.Scopes...), Prefix: t.Prefix}})
	}
	if len(fields) > 0 {
		return nil, &refresh.ValidationError{Fields: fields}
	}
	return a, nil
}

// authError is why a request has no principal.
type authError struct {
	msg     string
	invalid bool // a token was sent (RFC 6750 error="invalid_token")
}

// authenticate returns the principal of r's bearer token. The token is
// hashed and compared with every known hash in constant time.
func (a *Auth) authenticate(r *http.Request) (Principal, *authError) {
	values := r.Header.Values("Authorization")
	switch len(values) {
	case 0:
		return Principal{}, &authError{msg: `missing bearer token: send the header "Authorization: Bearer <token>"`}
	case 1:
	default:
		return Principal{}, &authError{msg: "Authorization: must be given once", invalid: true}
	}
	scheme, token, _ := strings.Cut(strings.TrimSpace(values[0]), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return Principal{}, &authError{msg: `Authorization: must be "Bearer <token>"`, invalid: true}
	}
	p, ok := a.Lookup(token)
	if !ok {
		return Principal{}, &authError{msg: "unknown bearer token", invalid: true}
	}
	return p, nil
}

// Principal returns the principal of r's bearer token, as Require finds
// it, and false when r has none that a knows: for a handler outside
// Require that answers everyone but tells more to some (serve's /readyz).
func (a *Auth) Principal(r *http.Request) (Principal, bool) {
	p, err := a.authenticate(r)
	return p, err == nil
}

// Lookup returns the principal of token, and false when a knows no such
// token. It compares hashes as Require does, in constant time; callers that
// take a token another way than the Authorization header (the dashboard's
// cookie) check it with Lookup.
func (a *Auth) Lookup(token string) (Principal, bool) {
	return a.lookupDigest(sha256.Sum256([]byte(token)))
}

// lookupDigest returns the principal of the token whose SHA-256 is digest,
// comparing it with every known one in constant time.
func (a *Auth) lookupDigest(digest [sha256.Size]byte) (Principal, bool) {
	found := -1
	for i := range a.tokens {
		if subtle.ConstantTimeCompare(digest[:], a.tokens[i].digest[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Principal{}, false
	}
	return a.tokens[found].p, true
}

// Prefixes returns the id prefixes of a's tokens, each once, sorted: the
// tenants of the scheduler's fair turns (refresh.Tenant). A nil Auth has
// none.
func (a *Auth) Prefixes() []string {
	if a == nil {
		return nil
	}
	var out []string
	for _, t := range a.tokens {
		if t.p.Prefix != "" {
			out = append(out, t.p.Prefix)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// LookupHash returns the principal of the token whose Token.Hash is hash
// ("sha256:<64 hex digits>", any case), and false when a knows no such
// token: the dashboard checks the token a session was opened with at each
// of its requests, so that a token removed from the configuration ends
// its sessions.
func (a *Auth) LookupHash(hash string) (Principal, bool) {
	var digest [sha256.Size]byte
	raw, ok := strings.CutPrefix(strings.ToLower(hash), hashPrefix)
	if n, err := hex.Decode(digest[:], []byte(raw)); !ok || err != nil || n != sha256.Size || len(raw) != 2*sha256.Size {
		return Principal{}, false
	}
	return a.lookupDigest(digest)
}

// Require is the middleware: it passes to next the requests whose bearer
// token has scope, with the token's Principal in their context
// (PrincipalFrom). It answers a request without a token, or with one it
// does not know, 401 with a WWW-Authenticate: Bearer header, and one whose
// token lacks scope 403, each with a JSON error. It checks no id prefix:
// next does, with Principal.Owns.
func (a *Auth) Require(scope Scope, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := a.check(w, r)
		if !ok {
			return
		}
		if !p.Can(scope) {
			a.forbid(w, r, p, fmt.Sprintf("token %q has scope %s; %s %s needs scope %s", p.Name, scopeList(p.Scopes), r.Method, r.URL.Path, scope), scope)
			return
		}
		next.ServeHTTP(w, r.WithContext(ContextWithPrincipal(r.Context(), p)))
	})
}

// check authenticates r, answering 401 when it cannot.
func (a *Auth) check(w http.ResponseWriter, r *http.Request) (Principal, bool) {
	p, err := a.authenticate(r)
	if err == nil {
		return p, true
	}
	challenge := `Bearer realm="freshen"`
	if err.invalid {
		challenge += `, error="invalid_token"`
		a.log.Info("request refused", "status", http.StatusUnauthorized, "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "why", err.msg)
	}
	w.Header().Set("WWW-Authenticate", challenge)
	writeJSON(w, http.StatusUnauthorized, errorBody{Error: err.msg})
	return Principal{}, false
}

// forbid answers 403 with msg; scope, if set, is the scope missing.
func (a *Auth) forbid(w http.ResponseWriter, r *http.Request, p Principal, msg string, scope Scope) {
	a.log.Info("request refused", "status", http.StatusForbidden, "method", r.Method, "path", r.URL.Path, "token", p.Name, "why", msg)
	if scope != "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="freshen", error="insufficient_scope", scope="`+string(scope)+`"`)
	}
	writeJSON(w, http.StatusForbidden, errorBody{Error: msg})
}

// scopeList writes scopes for an error: "read, write".
func scopeList(scopes []Scope) string {
	s := make([]string, len(scopes))
	for i, sc := range scopes {
		s[i] = string(sc)
	}
	return strings.Join(s, ", ")
}
