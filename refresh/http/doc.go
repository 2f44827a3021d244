// Package http serves Freshen's JSON API over net/http, and Client calls
// it. The API's reference is the OpenAPI 3.1 document openapi.json, served
// at GET /openapi.json and checked against the routes and their answers by
// openapi_test.go; docs/api.md in the repository is its tour.
//
// # Routes
//
//	PUT    /models/{id}             create or replace a whole model
//	PATCH  /models/{id}             change part of a model (JSON merge patch)
//	GET    /models/{id}             read a model, with its next planned runs
//	DELETE /models/{id}             remove a model and its history: 204
//	GET    /models                  list models, filtered, one page at a time
//	GET    /models/{id}/attempts    a model's attempts, newest first
//	GET    /models/{id}/audit       a model's audit: who wrote what, when and why, newest first
//	POST   /models/{id}/{action}    trigger, enable, pause, resume or cancel
//	POST   /bulk/{action}           the same on every model a selector matches
//	GET    /dead                    dead letters, newest first, one page at a time
//	POST   /dead/requeue            put dead letters back on their lists
//	POST   /dead/drop               remove dead letters
//	DELETE /dead/{id}               remove one dead letter: 204
//	GET    /limits                  the limits, by kind then key
//	PUT    /limits/{kind}/{key}     create or replace a limit
//	DELETE /limits/{kind}/{key}     remove a limit: 204
//	GET    /healthz                 200 {"status": "ok"}, or 503 naming the failed checks
//	GET    /metrics                 Prometheus metrics
//	GET    /openapi.json            the OpenAPI document of these routes
//
// The /dead routes exist on a server given a dead-letter list
// (WithDeadLetters), as freshen serve's is.
//
// # Authentication
//
// A server given tokens (WithAuth) answers every route but /healthz only
// to a request with the header "Authorization: Bearer <token>" of a token
// it knows (freshen serve also leaves /readyz open). A token has a name
// (shown in logs), scopes, and optionally an id prefix:
//
//	read    GET /models, /models/{id}, /models/{id}/attempts, /models/{id}/audit, /metrics, /openapi.json
//	write   also PUT and PATCH /models/{id}, the actions and the bulk actions
//	admin   also DELETE /models/{id} and the /dead routes
//
// Each scope includes those above it. A token limited to a prefix (such as
// "acme-") reaches only the models whose id starts with it: GET /models
// lists only those, and any other route naming a model outside the prefix
// (read, create, change, act, delete, attempts) is refused. /metrics and
// the /dead routes show more than models (counts of every customer,
// messages of any model) and need a token without a prefix.
//
// A request without a token, or with one the server does not know, is
// answered 401 with "WWW-Authenticate: Bearer realm="freshen"" (plus
// error="invalid_token" when a token was sent); a known token without the
// scope the route needs 403 with error="insufficient_scope" and the scope,
// and one whose prefix does not allow the route 403. Each is a JSON error,
// e.g. {"error": "token \"ci\" has scope read; POST /models/m1/trigger
// needs scope write"}. A request to no route is answered 401 too until it
// shows a known token, then 404 or 405. The server keeps only the SHA-256
// of each token (HashToken) and compares hashes in constant time. Without
// tokens, every route is open to every caller.
//
// A path or method no route takes is a JSON 404, or 405 with an Allow
// header.
//
// # Ids, queue names and other text
//
// A model id is 1 to 200 ASCII letters, digits or ._:@-, starting with a
// letter or digit; a queue name is the same without ':' (it is part of the
// queue's Redis keys, such as working:<queue>:<worker>, where a ':' would
// be ambiguous). An id in a path, and the after= and queue= parameters of
// the list, that break their rule are answered 400 naming "id", "after" or
// "queue": a NUL, a byte that is not UTF-8, a slash (%2F) or a space never
// reach the store. A request body must be UTF-8 ("body: must be UTF-8").
//
// # Queries
//
// Every route under /models refuses the query parameters it does not take,
// and a parameter given twice, with a 400 naming them. A query that does not
// parse (a ';' separator, a broken %-escape) or that has more than 32
// parameters is a 400 naming "query", never a query silently ignored.
//
// # Models
//
// A model is shown as
//
//	{"id", "queue", "payload", "policy", "created_at", "refresh_at", "deadline_at",
//	 "attempt_no", "attempt_uid", "started_at", "running", "consecutive_failures",
//	 "failing_since", "last_success_at", "last_error": {"kind", "message", "at"},
//	 "disabled", "disabled_at", "disabled_reason", "paused", "status_message"}
//
// with null for unset times and texts, and "policy" stating every default
// (docs/policy.md and docs/api.md). The routes that return one model add
// "next_runs": up to 5 planned starts (none when disabled or when nothing is
// planned; a paused model lists the runs it would make once resumed).
//
// Every time in the API — model fields, next_runs, last_error.at, attempts
// — is RFC 3339 in UTC in whole seconds ("2026-03-02T05:30:00Z"): the
// store keeps finer times, and the fraction is cut off, so a time shown is
// never later than the time kept.
//
// # PUT /models/{id}
//
// The body is a JSON object {"queue", "payload", "policy", "trigger"}, each
// member optional and null meaning left out, and "id", which must be the
// path's if given. PUT replaces the whole definition of the model (queue,
// payload, policy): a member left out takes its default — queue "default",
// no payload, the default policy (on demand, docs/policy.md) — whatever
// the model had, so a PUT with only a payload turns a scheduled model into
// an on-demand one in queue "default". To change part of a model, use
// PATCH. A replaced model keeps its run state; when idle, enabled and not
// in a retry round, its next run is planned again under the new schedule.
// "trigger": true asks for a refresh now, on create and replace alike.
// Answers: 201 with a Location header when created, 200 when replaced,
// each with the model and its ETag.
//
// The payload is JSON of at most 64 KiB nested at most 32 arrays or
// objects deep (refresh.Limits MaxPayloadBytes and MaxPayloadDepth;
// "payload: nested deeper than 32 levels"). It is stored and handed to
// workers as written; a \u0000 escape in it is allowed and kept. A NUL in
// a policy string is refused. A schedule set by the request (on create, or
// changed) must have an occurrence after the time of the request
// ("policy.schedule: rule has no occurrence after <now>").
//
// # PATCH /models/{id}
//
// The body has the members of PUT's and is a JSON merge patch (RFC 7396)
// over the definition {"queue", "payload", "policy"} as GET shows it: a
// member left out is kept; null returns it to its default (queue
// "default", no payload, the default policy) and, inside payload and
// policy objects, removes a member (a policy member removed takes its
// default); an object merges into the stored object member by member; any
// other value replaces. "trigger": true is taken as in PUT. The merged
// definition is checked exactly as a PUT of it, and nothing is written
// when it breaks a rule. The stored policy states every default, so
// switching the retry form needs the other one removed, e.g.
// {"policy": {"retry": {"delays": null, "backoff": {"strategy": "fixed",
// "base": "1m"}}}}. A PATCH never creates: an unknown model is a 404.
// Answers 200 with the model and its ETag.
//
// Besides queue, payload and policy, a model's definition holds its
// upstreams, upstreams_mode and rate_key (a string: the key of the
// rate_key limits that cover it, 1 to 128 bytes of UTF-8 without control
// characters; "" or null for none), each a member of the PUT body and of
// the PATCH's merge patch, shown by GET (rate_key null for none).
//
// # Limits
//
// PUT /limits/{kind}/{key} (kind queue, prefix or rate_key) takes
// {"max_running", "max_starts", "per", "burst"}: max_running, or
// max_starts with per (from 1s to 24h) and an optional burst (1 to
// 10,000), or both; a member left out or null is unset. Each broken rule
// is named by its field (refresh.CheckLimit; a body with neither
// max_running nor max_starts is refused naming max_running). A model that
// a limit holds back shows waiting_for_slot, waiting_limit and, for a
// rate limit, waiting_until: when the limit admits its next start. These
// routes need a token without an id prefix.
//
// # ETag and preconditions
//
// GET, PUT and PATCH answer an ETag header that identifies the model's
// definition — its queue, payload and policy — and not its run state,
// which changes at every run: triggering, pausing or running a model does
// not change its ETag, and a PUT of the same definition gives the same
// ETag. PUT and PATCH honour If-Match (a list of ETags, or *): when the
// model's ETag is not among them, or the model does not exist (PUT), the
// answer is 412 Precondition Failed with a JSON error and nothing is
// written. The check is made in the transaction of the write, so two
// clients that read the same ETag cannot both write. Weak tags (W/"...")
// never match If-Match. On PUT, If-None-Match: * creates only: 412 if the
// model exists (a list of ETags answers 412 when the model has one of
// them). PATCH refuses If-None-Match. GET does not answer 304.
//
// # Actions
//
// POST /models/{id}/trigger, enable, pause, resume, cancel apply the
// transitions of docs/transitions.md and answer
//
//	{"model": {...}, "decision": {"event", "rule", "why"}, "changed": true}
//
// "changed" is false when the action changed nothing (enable on a model
// that is not disabled, cancel on a disabled one, pause on a paused one,
// resume on a running one...): the model is then answered unchanged, and
// nothing is written or published. The body of an action, and of a
// DELETE, is empty, {} or {"reason": "..."}; any other member is refused
// by name.
//
// # Bulk actions
//
// POST /bulk/trigger, enable, pause, resume, cancel take {"selector":
// {"prefix", "queue", "state", "overdue"}, "all", "dry_run", "reason"},
// checked whole (every broken rule named, nothing done); a selector that
// names no criterion needs "all": true. It is resolved once into ids, then
// refresh.Service.Bulk applies the action in batches, each model getting
// its single action's transition, event and audit entry. A token limited
// to an id prefix stays within it (an empty selector means its models; a
// prefix beyond it is 403). Answers {"matched", "would_change"} for a dry
// run, else {"matched", "changed", "unchanged", "failed": [{"id",
// "error"}]}.
//
// # Audit
//
// Every write (PUT, PATCH, DELETE, the actions, each model of a bulk
// action) is audited in the transaction of its change: the token's name
// ("anonymous" without tokens), the time, the action, the body's optional
// "reason" (at most 500 bytes, no control characters but tab and newline)
// and, for a create, replace or patch, the definition fields changed with
// their values before and after (refresh.DefinitionChanges). A write that
// changes nothing records nothing. GET /models/{id}/audit (parameters
// after and limit, 1 to 1000, default 20) answers {"audit": [{"id", "at",
// "actor", "action", "reason", "bulk", "trigger", "changes"}], "next"},
// newest first; the entries outlive the model.
//
// # GET /models
//
// Parameters: disabled, failing, running, paused (true or false), queue
// (a queue name), after (the cursor: ids after it), limit (1 to 1000,
// default 100). Models come in id order as {"models": [...], "next": ""};
// "next", when not empty, is the after= of the next page. Listed models
// have no next_runs. A page holds at most 4 MiB of payloads (and always
// one model): models with large payloads end it early, with fewer models
// than limit and a "next" to go on from. For a token limited to an id
// prefix, a page is one read of the ids in its range (refresh.Filter.Prefix),
// whatever the after, and "next" is the last id of the page. Follow "next"
// until it is empty.
//
// # Dead letters
//
// GET /dead lists the dead-letter list (queue/WIRE.md), newest first:
//
//	{"dead": [{"id", "at", "reason", "message", "list", "refusal"}], "next": ""}
//
// Parameters: after (the "next" of the previous page) and limit (1 to
// 1000, default 100). "id" names the entry (16 hex digits); "list" is
// where a requeue puts the message back ("outcomes" or "jobs:<queue>"), or
// null when it cannot be requeued, "refusal" then saying why (a message
// cut because it was too large, a job that names no queue). A page holds
// at most 2 MiB of entries (and always one), so it may end before limit,
// with a "next". An entry set aside while a client pages does not shift
// the pages; one requeued or dropped meanwhile may make an entry show
// twice.
//
// POST /dead/requeue takes {"ids": ["...", ...]} (1 to 1000) or {"all":
// true} and answers {"requeued": n, "missing": [ids], "refused": [{"id",
// "reason"}]}: each entry is removed and its message pushed back, oldest
// first, in one step each, so a message is taken again as a new one
// would be (and set aside again if it still breaks a rule). "missing" are
// the ids the list does not hold (never there, or requeued or dropped
// meanwhile); entries that cannot be requeued stay on the list. "all"
// requeues as many entries as the list held when it started. POST
// /dead/drop takes the same body and answers {"dropped": n, "missing":
// [ids]}; DELETE /dead/{id} drops one entry, 404 when the list does not
// hold it.
//
// # GET /models/{id}/attempts
//
// Parameter: limit (1 to 1000, default 20). Answers {"attempts": [{"uid",
// "attempt_no", "started_at", "deadline_at", "finished_at", "outcome",
// "error_kind", "error_message", "decision", "delay"}]}, newest first;
// outcome is null while the attempt runs.
//
// # Bounds
//
// A request body is at most 1 MiB (413 otherwise). Its members are read in
// order; an unknown member, a member given twice or of the wrong type is
// named in the error, and reading stops at the first refresh.Limits
// MaxFieldErrors (default 20) broken rules: an error lists at most that
// many. Responses are compact JSON (no indentation; payloads written as
// stored, whitespace aside; HTML characters not escaped), so an answer is
// as large as what it shows. A request ends when its client leaves, and
// after WithRequestTimeout (default 30 s) at the latest: every store call
// runs under the request's context.
//
// # Client
//
// Client calls these routes, one method each; an answer with an error
// status is an *APIError with the message and the field errors, whose
// refresh.ErrorCode is the code of its status. freshen models and freshen
// dead are built on it.
//
// # Errors
//
// Every error is a JSON object {"error": "...", "fields": [{"field",
// "rule"}]}, "fields" listing the broken rules of an input, each named by
// its field, e.g. "policy.retry.backoff.multiplier: must be >= 1, got 0.5".
// The refresh error codes map to status codes in one place, Server.Error;
// 401 and 403 come from the token check (Auth):
//
//	400 Bad Request           an input breaks a rule (EINVALID), or its body was cut short
//	401 Unauthorized          no bearer token, or an unknown one (see Authentication)
//	403 Forbidden             the token lacks the scope, or its prefix does not allow the model
//	404 Not Found             no such model (ENOTFOUND)
//	409 Conflict              ECONFLICT
//	412 Precondition Failed   If-Match or If-None-Match does not hold (EPRECONDITION)
//	413 Content Too Large     a body over 1 MiB
//	499                       the client left before the answer (recorded, not sent)
//	503 Service Unavailable   the store cannot answer now (EUNAVAILABLE: a model locked
//	                          too long, a database that does not answer in time), the
//	                          request ran out of time, or the large answers being read
//	                          already hold their bound (WithResponseBytes); with
//	                          Retry-After: 1
//	500 Internal Server Error anything else, logged; the answer says only "internal error"
package http
