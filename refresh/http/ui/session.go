package ui

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
)

// Cookies of the dashboard, all HttpOnly, SameSite=Strict, under the base
// path, and Secure on a TLS connection or behind a proxy that ended TLS
// (X-Forwarded-Proto: https). Trusting that header can only make a cookie
// stricter: a client that forges it loses its own session over plain HTTP.
const (
	// sessionCookie holds the id of the viewer's session (never the
	// token), for the browser's session.
	sessionCookie = "freshen_session"
	// csrfCookie holds a random key; the forms carry an HMAC of the
	// session's id under it (csrfToken).
	csrfCookie = "freshen_csrf"
	// flashCookie carries a message to the page after a redirect.
	flashCookie = "freshen_flash"
	// tokenCookie held the token itself, before sessions; a sign-in and a
	// sign-out delete it from the browser.
	tokenCookie = "freshen_token"
)

// A session is opened by signing in with a token: the server makes a
// random id (sessionIDBytes of crypto/rand), gives it to the browser in
// the session cookie, and keeps its SHA-256 with the token's hash and an
// expiry in a SessionStore, shared by every instance of the dashboard. At
// each request the session must exist, be unexpired, and name a token the
// server still knows: a sign-out (which deletes it) and the removal of
// its token end it everywhere at the next request. A copied cookie is
// worth no more than the session, and never reveals the token.

// SessionStore keeps the dashboard's sessions. refresh/postgres keeps
// them in the database, so that every instance knows every session;
// refresh/memory.Sessions in process memory, for a dashboard that runs
// alone.
type SessionStore interface {
	// CreateSession stores s, and deletes the sessions expired at now.
	CreateSession(ctx context.Context, s refresh.Session, now time.Time) error
	// Session returns the session whose id hashes to hash if it has not
	// expired at now, else an error with code ENOTFOUND.
	Session(ctx context.Context, hash string, now time.Time) (refresh.Session, error)
	// DeleteSession deletes the session whose id hashes to hash, if any.
	DeleteSession(ctx context.Context, hash string) error
}

// DefaultSessionTTL is how long a session lasts after its sign-in.
const DefaultSessionTTL = 12 * time.Hour

// sessionIDBytes is how many random bytes make a session's id.
const sessionIDBytes = 32

// WithSessions keeps the sessions in s (default: in this process's
// memory, which only a dashboard that runs alone may use).
func WithSessions(s SessionStore) Option { return func(h *Handler) { h.sessions = s } }

// WithSessionTTL sets how long a session lasts after its sign-in (default
// DefaultSessionTTL).
func WithSessionTTL(d time.Duration) Option { return func(h *Handler) { h.sessionTTL = d } }

// newSessionID returns a new session id: sessionIDBytes random bytes,
// base64url.
func newSessionID() string {
	b := make([]byte, sessionIDBytes)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// sessionHash is what the store keeps of a session's id: its SHA-256, in
// hex.
func sessionHash(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// sessionViewer returns the viewer of the session whose id is id, or
// errNoSession when there is none: unknown, expired, or opened with a token
// the server no longer knows (that session is deleted, for every
// instance). Other errors are the store's.
func (h *Handler) sessionViewer(ctx context.Context, id string) (*viewer, error) {
	if len(id) != base64.RawURLEncoding.EncodedLen(sessionIDBytes) {
		return nil, errNoSession
	}
	hash := sessionHash(id)
	s, err := h.sessions.Session(ctx, hash, h.svc.Clock.Now())
	switch {
	case refresh.ErrorCode(err) == refresh.ENOTFOUND:
		return nil, errNoSession
	case err != nil:
		return nil, err
	}
	p, ok := h.auth.LookupHash(s.TokenHash)
	if !ok {
		h.log.Info("dashboard session ended: its token is no longer configured", "token", s.TokenName)
		if err := h.sessions.DeleteSession(ctx, hash); err != nil {
			h.log.Error("delete dashboard session", "token", s.TokenName, "err", err)
		}
		return nil, errNoSession
	}
	return &viewer{Principal: p, session: id}, nil
}

// minCSRFKey is the length of a CSRF key (rand.Text).
const minCSRFKey = 26

// maxTokenBytes bounds the token of the login form.
const maxTokenBytes = 512

// cookie returns a cookie of the dashboard named name holding value;
// maxAge < 0 deletes it, 0 keeps it for the browser's session.
func (h *Handler) cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: h.base + "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure(r)}
}

// secure reports whether r came over TLS, to this server or to a proxy in
// front of it.
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// csrfKey returns the key of r's CSRF cookie, setting a new one on w when
// r has none.
func (h *Handler) csrfKey(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) >= minCSRFKey {
		return c.Value
	}
	key := rand.Text() // 26 characters, 130 bits
	http.SetCookie(w, h.cookie(r, csrfCookie, key, 0))
	// A second page built for this request (an error after a form) must
	// see the same key.
	r.AddCookie(&http.Cookie{Name: csrfCookie, Value: key})
	return key
}

// csrfToken is the token a form of a page carries: an HMAC, under the
// browser's CSRF key, of the session's id. Another site can neither read
// the key (an HttpOnly cookie) nor the id, so it cannot forge the field;
// the token of a session signed out of is worth nothing to the next one.
func csrfToken(key, session string) string {
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte("freshen-ui\x00" + session))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// validCSRF reports whether the form of r carries the CSRF token of v's
// pages.
func (h *Handler) validCSRF(r *http.Request, v *viewer) bool {
	c, err := r.Cookie(csrfCookie)
	if err != nil || len(c.Value) < minCSRFKey {
		return false
	}
	got := r.PostForm.Get("csrf")
	want := csrfToken(c.Value, v.session)
	return hmac.Equal([]byte(got), []byte(want))
}

// flash is a message shown once, on the page after a redirect.
type flash struct {
	// Kind is ok, info or error.
	Kind string `json:"k"`
	Text string `json:"t"`
}

// maxFlashBytes bounds the text of a flash message.
const maxFlashBytes = 600

// setFlash keeps a message for the next page.
func (h *Handler) setFlash(w http.ResponseWriter, r *http.Request, kind, text string) {
	if len(text) > maxFlashBytes {
		text = strings.ToValidUTF8(text[:maxFlashBytes], "") + "…"
	}
	b, _ := json.Marshal(flash{Kind: kind, Text: text}) // strings always encode
	http.SetCookie(w, h.cookie(r, flashCookie, base64.RawURLEncoding.EncodeToString(b), 60))
}

// takeFlash returns the message kept for this page, if any, and forgets it.
func (h *Handler) takeFlash(w http.ResponseWriter, r *http.Request) *flash {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return nil
	}
	http.SetCookie(w, h.cookie(r, flashCookie, "", -1))
	b, err := base64.RawURLEncoding.DecodeString(c.Value)
	var f flash
	if err != nil || json.Unmarshal(b, &f) != nil || f.Text == "" {
		return nil
	}
	switch f.Kind {
	case "ok", "info", "error":
	default:
		f.Kind = "info"
	}
	return &f
}

// frame is what every page shows around its content.
type frame struct {
	Base    string
	Title   string
	Viewer  *viewer
	CSRF    string
	Now     time.Time
	Flash   *flash
	Nav     string
	Refresh int // seconds between automatic refreshes; 0 for none
}

// frame returns the frame of a page titled title for v (nil: no viewer).
func (h *Handler) frame(w http.ResponseWriter, r *http.Request, v *viewer, title string) *frame {
	session := ""
	if v != nil {
		session = v.session
	}
	return &frame{Base: h.base, Title: title, Viewer: v, CSRF: csrfToken(h.csrfKey(w, r), session),
		Now: h.svc.Clock.Now(), Flash: h.takeFlash(w, r)}
}

// render writes page name with data, with status code. The page is built
// whole before anything is sent, so a failure sends a plain error.
func (h *Handler) render(w http.ResponseWriter, status int, name string, data any) {
	var b bytes.Buffer
	if err := h.pages[name].ExecuteTemplate(&b, "layout", data); err != nil {
		h.log.Error("render dashboard page", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes()) // the client went away; nothing to tell it
}

// loginPage is the sign-in form.
type loginPage struct {
	*frame
	Next   string
	Errors fieldErrors
}

// handleLoginForm shows the sign-in form, or the overview when the
// dashboard has no tokens.
func (h *Handler) handleLoginForm(w http.ResponseWriter, r *http.Request) {
	if h.auth == nil {
		http.Redirect(w, r, h.base+"/", http.StatusSeeOther)
		return
	}
	f := h.frame(w, r, nil, "Sign in")
	h.render(w, http.StatusOK, "login", loginPage{frame: f, Next: h.safeNext(r.URL.Query().Get("next"))})
}

// handleLogin checks the token of the sign-in form and opens a session of
// it: the session's id goes to the session cookie.
func (h *Handler) handleLogin(w http.ResponseWriter, r *http.Request) {
	if h.auth == nil {
		http.Redirect(w, r, h.base+"/", http.StatusSeeOther)
		return
	}
	if err := h.origin.Check(r); err != nil {
		h.fail(w, r, nil, http.StatusForbidden, "This request came from another site, and was refused.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		h.fail(w, r, nil, http.StatusBadRequest, "The form could not be read: "+err.Error())
		return
	}
	next := h.safeNext(r.PostForm.Get("next"))
	if !h.validCSRF(r, &viewer{}) {
		h.fail(w, r, nil, http.StatusForbidden, "This form is out of date or did not come from this dashboard. Reload the page and try again (cookies must be enabled).")
		return
	}
	token := strings.TrimSpace(r.PostForm.Get("token"))
	var errs fieldErrors
	var p refreshhttp.Principal
	switch {
	case token == "":
		errs.add("token", "is required: paste the token you were given (freshen token new makes one)")
	case len(token) > maxTokenBytes:
		errs.add("token", "must be at most 512 characters")
	default:
		var ok bool
		if p, ok = h.auth.Lookup(token); !ok {
			h.log.Info("dashboard sign-in refused", "status", http.StatusUnauthorized, "remote", r.RemoteAddr, "why", "unknown token")
			errs.add("token", "is not a token this server knows")
		}
	}
	if len(errs) > 0 {
		f := h.frame(w, r, nil, "Sign in")
		h.render(w, http.StatusUnauthorized, "login", loginPage{frame: f, Next: next, Errors: errs})
		return
	}
	id, now := newSessionID(), h.svc.Clock.Now()
	err := h.sessions.CreateSession(r.Context(), refresh.Session{Hash: sessionHash(id), TokenHash: refreshhttp.HashToken(token),
		TokenName: p.Name, CreatedAt: now, ExpiresAt: now.Add(h.sessionTTL)}, now)
	if err != nil {
		h.failErr(w, r, nil, err)
		return
	}
	if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
		// The browser's session before this sign-in ends with it.
		if err := h.sessions.DeleteSession(r.Context(), sessionHash(c.Value)); err != nil {
			h.log.Error("delete dashboard session", "err", err)
		}
	}
	h.log.Info("dashboard sign-in", "token", p.Name, "remote", r.RemoteAddr)
	http.SetCookie(w, h.cookie(r, sessionCookie, id, 0))
	http.SetCookie(w, h.cookie(r, tokenCookie, "", -1))
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// handleLogout ends the session, for every instance, and forgets its
// cookie. It needs the CSRF token of the session's pages, not a session
// the server still knows.
func (h *Handler) handleLogout(w http.ResponseWriter, r *http.Request) {
	if err := h.origin.Check(r); err != nil {
		h.fail(w, r, nil, http.StatusForbidden, "This request came from another site, and was refused.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	session := ""
	if c, err := r.Cookie(sessionCookie); err == nil {
		session = c.Value
	}
	if r.ParseForm() != nil || !h.validCSRF(r, &viewer{session: session}) {
		h.fail(w, r, nil, http.StatusForbidden, "This form is out of date or did not come from this dashboard. Reload the page and try again.")
		return
	}
	if session != "" && h.sessions != nil {
		if err := h.sessions.DeleteSession(r.Context(), sessionHash(session)); err != nil {
			h.failErr(w, r, nil, err)
			return
		}
	}
	http.SetCookie(w, h.cookie(r, sessionCookie, "", -1))
	http.SetCookie(w, h.cookie(r, tokenCookie, "", -1))
	http.Redirect(w, r, h.base+"/login", http.StatusSeeOther)
}

// safeNext returns next if it is a page of the dashboard, else the
// overview: a sign-in never sends the browser to another site.
func (h *Handler) safeNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") ||
		!strings.HasPrefix(u.Path, h.base+"/") || strings.HasPrefix(u.Path, h.base+"/login") {
		return h.base + "/"
	}
	return u.RequestURI()
}

// urlQueryEscape escapes s for a query parameter.
func urlQueryEscape(s string) string { return url.QueryEscape(s) }

// fieldErrors are the broken rules of a form, by field.
type fieldErrors map[string][]string

func (e *fieldErrors) add(field, rule string) {
	if *e == nil {
		*e = fieldErrors{}
	}
	(*e)[field] = append((*e)[field], rule)
}

// For returns the rules field breaks.
func (e fieldErrors) For(field string) []string { return e[field] }

// fromValidation files the fields of a *refresh.ValidationError under the
// form's fields: name maps an error's field to the form's field and the
// text to show (e.g. "policy.retry.delays[0]" to "policy",
// "retry.delays[0]: must be ..."). It reports whether err was one.
func (e *fieldErrors) fromValidation(err error, name func(field string) (string, string)) bool {
	v, ok := asValidation(err)
	if !ok {
		return false
	}
	for _, f := range v.Fields {
		field, prefix := name(f.Field)
		rule := f.Rule
		if prefix != "" {
			rule = prefix + ": " + rule
		}
		e.add(field, rule)
	}
	if v.More > 0 {
		e.add("form", "and more broken rules not shown")
	}
	return true
}

// asValidation returns err as a *refresh.ValidationError.
func asValidation(err error) (*refresh.ValidationError, bool) {
	return errors.AsType[*refresh.ValidationError](err)
}
