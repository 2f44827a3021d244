package http

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/freshen-dev/freshen/refresh"
)

// Client calls the API of a Server over HTTP, one method per route. An
// answer with an error status is an *APIError that carries the API's
// message and field errors. A read (GET) answered 503 with a Retry-After
// of a few seconds is sent again after that wait, up to getAttempts times
// in all: the server asks for that when it holds as many large answers
// as it may, or when its store is briefly unavailable.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
	clock refresh.Clock
}

// getAttempts is how many times a read is sent at most; maxRetryAfter is
// the longest Retry-After the client waits for (a longer one ends the
// read with the 503).
const (
	getAttempts   = 4
	maxRetryAfter = 5 * time.Second
)

// NewClient returns a client of the API at baseURL ("http://host:port",
// or "host:port" for plain HTTP) that sends token as its bearer token (""
// sends none) through hc (nil: http.DefaultClient).
func NewClient(baseURL, token string, hc *http.Client) (*Client, error) {
	if !strings.Contains(baseURL, "://") {
		baseURL = "http://" + baseURL
	}
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("server: must be an http or https URL such as http://localhost:8080, got %q", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("server: must have no query or fragment, got %q", baseURL)
	}
	u.Path, u.RawPath = strings.TrimSuffix(u.Path, "/"), strings.TrimSuffix(u.RawPath, "/")
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: u, token: token, http: hc, clock: refresh.SystemClock{}}, nil
}

// APIError is an answer of the API with an error status.
type APIError struct {
	StatusCode int
	// Message is the API's "error": every broken rule of Fields, or what
	// went wrong.
	Message string
	Fields  []refresh.FieldError
}

func (e *APIError) Error() string { return e.Message }

// Unwrap returns the error as the refresh package states it, so that
// refresh.ErrorCode tells its code: a *refresh.ValidationError for a 400
// that names fields, else a *refresh.Error with the code of the status.
func (e *APIError) Unwrap() error {
	if e.StatusCode == http.StatusBadRequest && len(e.Fields) > 0 {
		return &refresh.ValidationError{Fields: e.Fields}
	}
	code := refresh.EINTERNAL
	switch e.StatusCode {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		code = refresh.EINVALID
	case http.StatusNotFound:
		code = refresh.ENOTFOUND
	case http.StatusConflict:
		code = refresh.ECONFLICT
	case http.StatusPreconditionFailed:
		code = refresh.EPRECONDITION
	case http.StatusServiceUnavailable:
		code = refresh.EUNAVAILABLE
	}
	return &refresh.Error{Code: code, Message: e.Message}
}

// ListOptions are the filters and the page of GET /models; zero values do
// not filter.
type ListOptions struct {
	Disabled, Failing, Running, Paused *bool
	Queue                              string
	After                              string
	Limit                              int
}

// List returns one page of models; ModelList.Next is the After of the
// next page.
func (c *Client) List(ctx context.Context, o ListOptions) (ModelList, error) {
	q := url.Values{}
	for _, f := range []struct {
		name string
		v    *bool
	}{{"disabled", o.Disabled}, {"failing", o.Failing}, {"running", o.Running}, {"paused", o.Paused}} {
		if f.v != nil {
			q.Set(f.name, strconv.FormatBool(*f.v))
		}
	}
	if o.Queue != "" {
		q.Set("queue", o.Queue)
	}
	if o.After != "" {
		q.Set("after", o.After)
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	var res ModelList
	_, err := c.do(ctx, http.MethodGet, "/models", q, nil, &res)
	return res, err
}

// Get returns a model with its next planned runs.
func (c *Client) Get(ctx context.Context, id string) (ModelWithRuns, error) {
	var m ModelWithRuns
	_, err := c.do(ctx, http.MethodGet, modelPath(id), nil, nil, &m)
	return m, err
}

// Put creates or replaces a model with body, a JSON object as PUT takes
// it, and reports whether it created it.
func (c *Client) Put(ctx context.Context, id string, body []byte) (ModelWithRuns, bool, error) {
	var m ModelWithRuns
	code, err := c.do(ctx, http.MethodPut, modelPath(id), nil, body, &m)
	return m, code == http.StatusCreated, err
}

// Patch changes a model with body, a JSON merge patch.
func (c *Client) Patch(ctx context.Context, id string, body []byte) (ModelWithRuns, error) {
	var m ModelWithRuns
	_, err := c.do(ctx, http.MethodPatch, modelPath(id), nil, body, &m)
	return m, err
}

// Act applies action (trigger, enable, pause, resume, cancel) to a model.
func (c *Client) Act(ctx context.Context, id, action string) (ActResult, error) {
	return c.ActWithReason(ctx, id, action, "")
}

// ActWithReason is Act with the reason the audit records ("" for none).
func (c *Client) ActWithReason(ctx context.Context, id, action, reason string) (ActResult, error) {
	var res ActResult
	_, err := c.do(ctx, http.MethodPost, modelPath(id)+"/"+url.PathEscape(action), nil, reasonBody(reason), &res)
	return res, err
}

// Delete removes a model and its history.
func (c *Client) Delete(ctx context.Context, id string) error {
	return c.DeleteWithReason(ctx, id, "")
}

// DeleteWithReason is Delete with the reason the audit records ("" for
// none).
func (c *Client) DeleteWithReason(ctx context.Context, id, reason string) error {
	_, err := c.do(ctx, http.MethodDelete, modelPath(id), nil, reasonBody(reason), nil)
	return err
}

// reasonBody returns the body {"reason": reason}, or none for "".
func reasonBody(reason string) []byte {
	if reason == "" {
		return nil
	}
	body, _ := json.Marshal(map[string]string{"reason": reason}) // a string always encodes
	return body
}

// Audit returns one page of a model's audit, newest first; after is "" or
// the Next of the previous page, limit 0 the server's default.
func (c *Client) Audit(ctx context.Context, id, after string, limit int) (AuditList, error) {
	q := url.Values{}
	if after != "" {
		q.Set("after", after)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var res AuditList
	_, err := c.do(ctx, http.MethodGet, modelPath(id)+"/audit", q, nil, &res)
	return res, err
}

// Bulk applies action (trigger, enable, pause, resume, cancel) to every
// model req's selector matches, or with req.DryRun counts them.
func (c *Client) Bulk(ctx context.Context, action string, req BulkRequest) (BulkResult, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return BulkResult{}, err
	}
	var res BulkResult
	_, err = c.do(ctx, http.MethodPost, "/bulk/"+url.PathEscape(action), nil, body, &res)
	return res, err
}

// Attempts returns a model's attempts that started before before ("" or
// the Next of the previous page), newest first, at most limit (0: the
// server's default).
func (c *Client) Attempts(ctx context.Context, id, before string, limit int) (AttemptList, error) {
	q := url.Values{}
	if before != "" {
		q.Set("before", before)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var res AttemptList
	_, err := c.do(ctx, http.MethodGet, modelPath(id)+"/attempts", q, nil, &res)
	return res, err
}

// DeadLetters returns one page of dead letters, newest first; after is ""
// or the Next of the previous page, limit 0 the server's default.
func (c *Client) DeadLetters(ctx context.Context, after string, limit int) (DeadList, error) {
	q := url.Values{}
	if after != "" {
		q.Set("after", after)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var res DeadList
	_, err := c.do(ctx, http.MethodGet, "/dead", q, nil, &res)
	return res, err
}

// RequeueDead puts the dead letters with ids back on their lists.
func (c *Client) RequeueDead(ctx context.Context, ids []string) (RequeueResult, error) {
	return c.requeue(ctx, map[string]any{"ids": ids})
}

// RequeueAllDead puts every dead letter back on its list.
func (c *Client) RequeueAllDead(ctx context.Context) (RequeueResult, error) {
	return c.requeue(ctx, map[string]any{"all": true})
}

func (c *Client) requeue(ctx context.Context, sel map[string]any) (RequeueResult, error) {
	body, _ := json.Marshal(sel)
	var res RequeueResult
	_, err := c.do(ctx, http.MethodPost, "/dead/requeue", nil, body, &res)
	return res, err
}

// DropDead removes the dead letters with ids.
func (c *Client) DropDead(ctx context.Context, ids []string) (DropResult, error) {
	return c.drop(ctx, map[string]any{"ids": ids})
}

// DropAllDead removes every dead letter.
func (c *Client) DropAllDead(ctx context.Context) (DropResult, error) {
	return c.drop(ctx, map[string]any{"all": true})
}

func (c *Client) drop(ctx context.Context, sel map[string]any) (DropResult, error) {
	body, _ := json.Marshal(sel)
	var res DropResult
	_, err := c.do(ctx, http.MethodPost, "/dead/drop", nil, body, &res)
	return res, err
}

func modelPath(id string) string { return "/models/" + url.PathEscape(id) }

// maxAnswerBytes bounds an answer the client reads: a page of 1000 models
// of the largest payloads.
const maxAnswerBytes = 256 << 20

// do sends a request and decodes a successful answer into out (nil: the
// body is dropped). It returns the status code. A GET answered 503 with a
// Retry-After of at most maxRetryAfter is sent again after it, up to
// getAttempts times in all.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body []byte, out any) (int, error) {
	for attempt := 1; ; attempt++ {
		code, wait, err := c.send(ctx, method, path, q, body, out)
		if method != http.MethodGet || wait == 0 || attempt == getAttempts {
			return code, err
		}
		select {
		case <-ctx.Done():
			return code, err
		case <-c.clock.After(wait):
		}
	}
}

// send is one attempt of do. wait is the answer's Retry-After when it is
// a 503 that asks for a wait of at most maxRetryAfter, else 0.
func (c *Client) send(ctx context.Context, method, path string, q url.Values, body []byte, out any) (code int, wait time.Duration, err error) {
	target := c.base.String() + path // path is escaped
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, r)
	if err != nil {
		return 0, 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return resp.StatusCode, 0, fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode >= 400 {
		var e errorBody
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			text := strings.TrimSpace(string(data))
			if len(text) > 200 {
				text = text[:200] + "..."
			}
			e.Error = fmt.Sprintf("%s %s: %s", method, path, resp.Status)
			if text != "" {
				e.Error += ": " + text
			}
		}
		if resp.StatusCode == http.StatusServiceUnavailable {
			if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 && time.Duration(secs)*time.Second <= maxRetryAfter {
				wait = time.Duration(secs) * time.Second
			}
		}
		return resp.StatusCode, wait, &APIError{StatusCode: resp.StatusCode, Message: e.Error, Fields: e.Fields}
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return resp.StatusCode, 0, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return resp.StatusCode, 0, fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	return resp.StatusCode, 0, nil
}
