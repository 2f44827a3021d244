package ui

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
	"github.com/freshen-dev/freshen/refresh/memory"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// Queues reports how many jobs wait on worker queues.
type Queues interface {
	// Depths returns the number of jobs waiting on each of the named
	// queues (a queue without jobs may be left out).
	Depths(ctx context.Context, queues []string) (map[string]int64, error)
}

// Events reads the latest lifecycle events.
type Events interface {
	// RecentEvents returns up to limit of the latest lifecycle events,
	// newest first.
	RecentEvents(ctx context.Context, limit int) ([]refresh.Event, error)
}

// Bounds of what one page costs.
const (
	// DefaultScanLimit is how many models the overview counts at most.
	DefaultScanLimit = 10_000
	// maxQueues is how many queues the overview shows.
	maxQueues = 50
	// recentEvents is how many events the overview shows, and
	// eventsScanned how many it reads to find them for a token limited to
	// a prefix.
	recentEvents  = 20
	eventsScanned = 500
	// historyLimit is how many attempts a model's page shows.
	historyLimit = 20
	// DefaultRequestTimeout bounds the work of one page.
	DefaultRequestTimeout = 30 * time.Second
)

// Handler serves the dashboard. Build it with New and mount it at its base
// path (WithBase, default "/ui"): it answers the paths under it.
type Handler struct {
	svc       *refresh.Service
	log       *slog.Logger
	auth      *refreshhttp.Auth
	dead      refreshhttp.DeadLetters
	queues    Queues
	events    Events
	base      string
	scanLimit int
	timeout   time.Duration
	pages     map[string]*template.Template
	mux       *http.ServeMux
	origin    *http.CrossOriginProtection
	// sessions keep the signed-in sessions, for sessionTTL each
	// (session.go).
	sessions   SessionStore
	sessionTTL time.Duration
}

// Option configures a Handler.
type Option func(*Handler)

// WithAuth makes every page need a token that a knows (see the package
// documentation); without it, the dashboard is open to every caller, with
// every scope, as the API is without tokens.
func WithAuth(a *refreshhttp.Auth) Option { return func(h *Handler) { h.auth = a } }

// WithDeadLetters shows the dead-letter list d, and lets admins requeue and
// drop its entries.
func WithDeadLetters(d refreshhttp.DeadLetters) Option { return func(h *Handler) { h.dead = d } }

// WithQueues shows the depth of the worker queues on the overview.
func WithQueues(q Queues) Option { return func(h *Handler) { h.queues = q } }

// WithEvents shows the latest lifecycle events on the overview.
func WithEvents(e Events) Option { return func(h *Handler) { h.events = e } }

// WithLogger sets the logger of failed pages (default: svc.Logger, or
// nothing).
func WithLogger(log *slog.Logger) Option { return func(h *Handler) { h.log = log } }

// WithBase sets the path the dashboard is mounted at (default "/ui"); its
// links and cookies are under it.
func WithBase(path string) Option {
	return func(h *Handler) { h.base = "/" + strings.Trim(path, "/") }
}

// WithScanLimit bounds the models the overview counts (default
// DefaultScanLimit); past it, the overview says its counts are partial.
func WithScanLimit(n int) Option { return func(h *Handler) { h.scanLimit = n } }

// WithRequestTimeout bounds the work of one page (default
// DefaultRequestTimeout).
func WithRequestTimeout(d time.Duration) Option { return func(h *Handler) { h.timeout = d } }

// New returns the dashboard over svc. It panics if its embedded templates
// do not parse, which is a programming error.
func New(svc *refresh.Service, opts ...Option) *Handler {
	h := &Handler{svc: svc, log: svc.Logger, base: "/ui", scanLimit: DefaultScanLimit, timeout: DefaultRequestTimeout}
	for _, o := range opts {
		o(h)
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.scanLimit < 1 {
		h.scanLimit = DefaultScanLimit
	}
	if h.auth != nil && h.sessions == nil {
		h.sessions = memory.NewSessions()
	}
	if h.sessionTTL <= 0 {
		h.sessionTTL = DefaultSessionTTL
	}
	h.pages = parsePages(h.base)
	h.origin = http.NewCrossOriginProtection()
	h.origin.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, r, nil, http.StatusForbidden, "This request came from another site, and was refused.")
	}))

	b := h.base
	h.mux = http.NewServeMux()
	static, err := fs.Sub(staticFiles, "static")
	if err != nil {
		panic(err)
	}
	h.mux.Handle("GET "+b+"/static/", http.StripPrefix(b+"/static/", staticHandler(static)))
	h.mux.HandleFunc("GET "+b+"/login", h.handleLoginForm)
	h.mux.HandleFunc("POST "+b+"/login", h.handleLogin)
	h.mux.HandleFunc("POST "+b+"/logout", h.handleLogout)
	h.mux.HandleFunc("GET "+b+"/{$}", h.page(refreshhttp.ScopeRead, false, h.handleOverview))
	h.mux.HandleFunc("GET "+b+"/models", h.page(refreshhttp.ScopeRead, false, h.handleModels))
	h.mux.HandleFunc("GET "+b+"/models/{id}", h.page(refreshhttp.ScopeRead, false, h.handleModel))
	h.mux.HandleFunc("POST "+b+"/models/{id}/{action}", h.act(refreshhttp.ScopeWrite, false, h.handleAct))
	h.mux.HandleFunc("GET "+b+"/models/{id}/replay", h.page(refreshhttp.ScopeRead, false, h.handleReplayForm))
	h.mux.HandleFunc("POST "+b+"/models/{id}/replay", h.act(refreshhttp.ScopeRead, false, h.handleReplay))
	h.mux.HandleFunc("GET "+b+"/preview", h.page(refreshhttp.ScopeRead, false, h.handlePreviewForm))
	h.mux.HandleFunc("POST "+b+"/preview", h.act(refreshhttp.ScopeRead, false, h.handlePreview))
	h.mux.HandleFunc("GET "+b+"/dead", h.page(refreshhttp.ScopeAdmin, true, h.handleDead))
	h.mux.HandleFunc("POST "+b+"/dead", h.act(refreshhttp.ScopeAdmin, true, h.handleDeadAct))
	h.mux.HandleFunc("GET "+b+"/limits", h.page(refreshhttp.ScopeRead, true, h.handleLimits))
	h.mux.HandleFunc("POST "+b+"/limits", h.act(refreshhttp.ScopeAdmin, true, h.handleLimitsAct))
	h.mux.HandleFunc(b+"/", func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, r, nil, http.StatusNotFound, "There is no page at "+r.URL.Path+".")
	})
	return h
}

// ServeHTTP serves the pages under the base path.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
	defer cancel()
	hd := w.Header()
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	h.mux.ServeHTTP(w, r.WithContext(ctx))
}

// staticHandler serves the embedded assets, to be kept a day.
func staticHandler(files fs.FS) http.Handler {
	fileServer := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=86400")
		fileServer.ServeHTTP(w, r)
	})
}

// viewer is who looks at a page.
type viewer struct {
	refreshhttp.Principal
	// open is set when the dashboard has no tokens: everyone is admin.
	open bool
	// session is what the CSRF tokens of the viewer's pages are bound
	// to: the session's id, "bearer:" and the hash of an Authorization
	// header's token, "" when open.
	session string
}

// audited returns ctx carrying the viewer as the author of the writes made
// with it, as the API's writes carry their token's name (the audit of
// each model).
func (v *viewer) audited(ctx context.Context) context.Context {
	actor := v.Name
	if actor == "" {
		actor = refresh.AuditAnonymous
	}
	return refresh.WithAudit(ctx, refresh.AuditInfo{Actor: actor})
}

// CanWrite reports whether the viewer may act on models.
func (v *viewer) CanWrite() bool { return v.Can(refreshhttp.ScopeWrite) }

// CanAdmin reports whether the viewer may see dead letters: admin scope
// and no id prefix.
func (v *viewer) CanAdmin() bool { return v.Can(refreshhttp.ScopeAdmin) && v.Prefix == "" }

// Whole reports whether the viewer sees every model (no id prefix), and so
// what concerns more than models: queue depths, dead letters.
func (v *viewer) Whole() bool { return v.Prefix == "" }

// Open reports whether the dashboard has no tokens.
func (v *viewer) Open() bool { return v.open }

// ScopeText names the viewer's scopes: "read, write".
func (v *viewer) ScopeText() string {
	s := make([]string, len(v.Scopes))
	for i, sc := range v.Scopes {
		s[i] = string(sc)
	}
	return strings.Join(s, ", ")
}

// errNoSession is who has no valid session.
var errNoSession = errors.New("no session")

// viewerOf returns who sent r: with tokens, the holder of the session of
// the session cookie (session.go), or of the token of an Authorization:
// Bearer header; without, an open viewer with every scope. It returns
// errNoSession when r has neither, or an error of the session store.
func (h *Handler) viewerOf(r *http.Request) (*viewer, error) {
	if h.auth == nil {
		return &viewer{open: true, Principal: refreshhttp.Principal{Scopes: []refreshhttp.Scope{refreshhttp.ScopeAdmin}}}, nil
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		return h.sessionViewer(r.Context(), c.Value)
	}
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return nil, errNoSession
	}
	p, ok := h.auth.Lookup(token)
	if !ok {
		return nil, errNoSession
	}
	return &viewer{Principal: p, session: "bearer:" + refreshhttp.HashToken(token)}, nil
}

// pageFunc serves a page to an authorised viewer.
type pageFunc func(w http.ResponseWriter, r *http.Request, v *viewer)

// page wraps a GET page: a viewer without a session is sent to the login
// page, one without scope (or with an id prefix, when whole) refused.
func (h *Handler) page(scope refreshhttp.Scope, whole bool, fn pageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := h.viewerOf(r)
		switch {
		case errors.Is(err, errNoSession):
			http.Redirect(w, r, h.base+"/login?next="+urlQueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		case err != nil:
			h.failErr(w, r, nil, err)
			return
		}
		if !h.allowed(w, r, v, scope, whole) {
			return
		}
		fn(w, r, v)
	}
}

// act wraps a POST: it must come from a page of this site
// (CrossOriginProtection), from a viewer with scope, and carry the CSRF
// token of the viewer's pages.
func (h *Handler) act(scope refreshhttp.Scope, whole bool, fn pageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h.origin.Check(r); err != nil {
			h.fail(w, r, nil, http.StatusForbidden, "This request came from another site, and was refused.")
			return
		}
		v, err := h.viewerOf(r)
		switch {
		case errors.Is(err, errNoSession):
			h.fail(w, r, nil, http.StatusUnauthorized, "Your session has ended: sign in again, then repeat what you did.")
			return
		case err != nil:
			h.failErr(w, r, nil, err)
			return
		}
		if !h.allowed(w, r, v, scope, whole) {
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			h.fail(w, r, v, http.StatusBadRequest, "The form could not be read: "+err.Error())
			return
		}
		if !h.validCSRF(r, v) {
			h.log.Info("dashboard request refused", "status", http.StatusForbidden, "method", r.Method, "path", r.URL.Path, "token", v.Name, "why", "missing or wrong CSRF token")
			h.fail(w, r, v, http.StatusForbidden, "This form is out of date or did not come from this dashboard (its CSRF token does not match). Reload the page and try again.")
			return
		}
		fn(w, r, v)
	}
}

// maxFormBytes bounds a form's body.
const maxFormBytes = 256 << 10

// allowed reports whether v may see or do what r asks, and answers 403
// when not.
func (h *Handler) allowed(w http.ResponseWriter, r *http.Request, v *viewer, scope refreshhttp.Scope, whole bool) bool {
	var msg string
	switch {
	case !v.Can(scope):
		msg = fmt.Sprintf("Your token %q has scope %s; this needs scope %s.", v.Name, v.ScopeText(), scope)
	case whole && !v.Whole():
		msg = fmt.Sprintf("Your token %q is limited to the models whose id starts with %q; this page shows more than models and needs a token without a prefix.", v.Name, v.Prefix)
	case r.PathValue("id") != "" && !v.Owns(r.PathValue("id")):
		msg = fmt.Sprintf("Your token %q is limited to the models whose id starts with %q.", v.Name, v.Prefix)
	default:
		return true
	}
	h.log.Info("dashboard request refused", "status", http.StatusForbidden, "method", r.Method, "path", r.URL.Path, "token", v.Name, "why", msg)
	h.fail(w, r, v, http.StatusForbidden, msg)
	return false
}

// failure is an error page.
type failure struct {
	*frame
	Status  int
	Message string
}

// fail answers status with an error page saying msg.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, v *viewer, status int, msg string) {
	f := h.frame(w, r, v, http.StatusText(status))
	h.render(w, status, "error", failure{frame: f, Status: status, Message: msg})
}

// failErr answers the error of a service call: its message for an error
// the caller can act on, "internal error" (and a log line) for the rest.
func (h *Handler) failErr(w http.ResponseWriter, r *http.Request, v *viewer, err error) {
	status := http.StatusInternalServerError
	msg := "Something went wrong on the server; it was logged. Try again in a moment."
	switch refresh.ErrorCode(err) {
	case refresh.EINVALID:
		status, msg = http.StatusBadRequest, refresh.ErrorMessage(err)
	case refresh.ENOTFOUND:
		status, msg = http.StatusNotFound, refresh.ErrorMessage(err)
	case refresh.ECONFLICT:
		status, msg = http.StatusConflict, refresh.ErrorMessage(err)
	case refresh.EPRECONDITION:
		status, msg = http.StatusPreconditionFailed, refresh.ErrorMessage(err)
	case refresh.EUNAVAILABLE:
		status, msg = http.StatusServiceUnavailable, "The database is busy: "+refresh.ErrorMessage(err)+". Try again in a moment."
	default:
		if r.Context().Err() != nil {
			status, msg = http.StatusServiceUnavailable, "This page took too long to compute. Try again in a moment."
		}
		attrs := []any{"method", r.Method, "path", r.URL.Path, "err", err}
		if v != nil {
			attrs = append(attrs, "token", v.Name)
		}
		h.log.Error("dashboard page failed", attrs...)
	}
	h.fail(w, r, v, status, msg)
}
