// Package ui is Freshen's dashboard: HTML pages, rendered on the server
// from the templates and assets embedded in the binary (no build step, no
// CDN: the pages work offline), over refresh.Service and the simulator of
// package scenarios, like any other caller of them. freshen serve mounts it
// at /ui/, beside the API; freshen demo --addr too.
//
// # Pages
//
//	GET  /ui/                      overview: counts by state and queue, queue depths,
//	                               models that need attention, recent events, dead letters
//	GET  /ui/models                the models, with the API's filters, by id prefix, a page at a time
//	GET  /ui/models/{id}           one model: state, disabled reason, what it waits for, its
//	                               upstreams and their status, freshness, next runs, attempts,
//	                               and its projected timeline
//	POST /ui/models/{id}/{action}  trigger, enable, pause, resume or cancel
//	GET  /ui/models/{id}/replay    the replay form: the model's last N days under a proposed policy
//	POST /ui/models/{id}/replay    the replay (scenarios.RunReplay): recorded and replayed, side by side
//	GET  /ui/preview               a policy and a failure pattern, simulated before saving
//	POST /ui/preview               the simulation; or, opened from a model, saving its
//	                               policy (write scope; refused if the model changed since)
//	GET  /ui/limits                the limits, as GET /limits lists them; POST (admin) sets
//	                               one or deletes one, as PUT and DELETE /limits/{kind}/{key} do
//	GET  /ui/dead                  the dead-letter list; POST requeues or drops entries
//	GET  /ui/login, POST /ui/login, POST /ui/logout
//
// The projected timeline of a model is two runs of scenarios.Run from the
// model's current state and policy (scenarios.SpecModel.State): one where
// every attempt fails as the last one did (same error kind and message, or
// a timeout), one where the next attempt succeeds; a disabled model is
// projected as if enabled now, a paused one as if resumed, one with
// nothing planned as if triggered. Each run is bounded: at most 200
// events, 3 seconds of computing, and 8 days ahead (more when
// give_up_after asks, at most 32). Its chart is SVG drawn on the server:
// attempts as bars, scheduled runs as diamonds, each failure's decision
// under it, with a compressed time axis so that a one-minute attempt
// stays visible beside a ten-hour wait.
//
// # Signing in
//
// With tokens (WithAuth, as freshen serve has with --tokens-file), every
// page needs a token of the API: the sign-in form takes one, checks it
// with the same Auth as the API (Auth.Lookup) and opens a session of it
// (session.go). The browser gets the session's random id, never the token,
// in a cookie (freshen_session: HttpOnly, SameSite=Strict, Path=/ui/,
// Secure over TLS or behind a TLS proxy, for the browser's session); the
// SessionStore (WithSessions) keeps the id's hash, the token's hash and an
// expiry (WithSessionTTL). A sign-out deletes the session, and a session
// whose token the server no longer knows is refused and deleted. A request
// may instead send the API's "Authorization: Bearer" header. The scopes are the API's: read to look,
// write to act on models, admin (without an id prefix) for dead letters
// and to set limits. A token limited to an id prefix sees only those
// models, in every count and list, and no queue depths, limits or dead
// letters, which concern every customer. Without tokens, every visitor has every scope, as the API has.
//
// # Forms
//
// Every POST needs the CSRF token of the pages of the viewer's session, a
// hidden form field: an HMAC, keyed by a random value in an HttpOnly,
// SameSite=Strict cookie (freshen_csrf), of the session's token, so
// another site can neither read nor forge it, and it is worth nothing to
// another session. A request that a browser marks as coming from another
// site (Sec-Fetch-Site, Origin) is refused before that
// (http.CrossOriginProtection). Every field is checked on the server and
// its broken rules shown beside it, in the API's words. Pages are sent
// with a Content-Security-Policy that allows scripts and styles of this
// server only; html/template escapes every value shown.
//
// # Cost of a page
//
// No page reads the whole store. The overview counts the first
// DefaultScanLimit models by id of the viewer's prefix (WithScanLimit) in
// one query (refresh.Store.Census), finds the disabled and failing ones
// among them in two more, and says when its counts are partial; it reads
// at most 500 events to find 20 a prefix-limited token may see. A page of
// the model list is one read of the range of its prefix. A
// model's page reads 20 attempts and runs two bounded simulations. A
// replay reads at most 5,000 attempts and simulates at most 10,000 events
// in 5 seconds.
package ui
