"""A client of Freshen's HTTP API (refresh/http/openapi.json in the Freshen
repository) for the insert side: create, update and trigger models, so that an
application can say "this thumbnail changed" in one call."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, List, Optional

try:
    from typing import TypedDict
except ImportError:  # Python < 3.8
    TypedDict = dict  # type: ignore


class Policy(TypedDict, total=False):
    """PolicyInput: when a model refreshes and what happens on failure."""

    schedule: str
    timezone: str
    timeout: str
    retry: Dict[str, Any]
    on_exhausted: str
    give_up_after: str
    disabled_message: str
    max_age: str
    trigger_debounce: Any
    max_snooze: str
    spread: str
    max_lateness: str


class ModelInput(TypedDict, total=False):
    """The body of PUT and PATCH /models/{id}."""

    queue: str
    payload: Any
    policy: Policy
    trigger: bool
    reason: str
    upstreams: List[str]
    upstreams_mode: str


class Model(TypedDict, total=False):
    """A model as the API answers it (the members used most; the answer holds
    every member of the OpenAPI schema Model)."""

    id: str
    queue: str
    payload: Any
    policy: Dict[str, Any]
    state: str
    running: bool
    refresh_at: Optional[str]
    disabled: bool
    disabled_reason: str
    status_message: str
    last_success_at: Optional[str]
    last_error: Optional[Dict[str, Any]]


class ActResult(TypedDict, total=False):
    """The answer of an action (POST /models/{id}/trigger...)."""

    model: Model
    decision: Dict[str, Any]
    changed: bool


class APIError(Exception):
    """An answer other than 2xx: status, the API's error text and the
    refusals by field ([{"field": ..., "rule": ...}])."""

    def __init__(self, status: int, error: str, fields: Optional[List[Dict[str, str]]] = None):
        super().__init__(f"freshen API: {status}: {error}")
        self.status, self.error, self.fields = status, error, fields or []


class Client:
    """Calls the API at base_url (e.g. "http://freshen:8080") with a token of
    `freshen token new` (scope write for these calls)."""

    def __init__(self, base_url: str, token: str = "", timeout: float = 30.0):
        self.base_url = base_url.rstrip("/")
        self._token = token
        self.timeout = timeout

    def put_model(self, id: str, model: ModelInput) -> Model:
        """Creates or replaces the whole model id."""
        return self._call("PUT", f"/models/{_quote(id)}", model)

    def patch_model(self, id: str, changes: ModelInput) -> Model:
        """Changes part of model id (a JSON merge patch)."""
        return self._call("PATCH", f"/models/{_quote(id)}", changes)

    def get_model(self, id: str) -> Model:
        return self._call("GET", f"/models/{_quote(id)}")

    def trigger(self, id: str, reason: str = "") -> ActResult:
        """Asks for a refresh of model id now ("this changed"): a running
        attempt is superseded."""
        return self._call("POST", f"/models/{_quote(id)}/trigger", {"reason": reason} if reason else None)

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.base_url + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self._token:
            req.add_header("Authorization", "Bearer " + self._token)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                doc = json.loads(raw)
            except ValueError:
                doc = {}
            if not isinstance(doc, dict):
                doc = {}
            raise APIError(e.code, str(doc.get("error") or e.reason), doc.get("fields")) from None
        return json.loads(raw) if raw else None


def _quote(id: str) -> str:
    return urllib.parse.quote(id, safe="")
