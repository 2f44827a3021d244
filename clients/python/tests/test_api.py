import json
import threading
import unittest
from http.server import BaseHTTPRequestHandler, HTTPServer

from freshen.api import APIError, Client


class FakeAPI(BaseHTTPRequestHandler):
    """Answers as freshen serve would, and records the requests."""

    seen = []

    def _answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n)) if n else None
        FakeAPI.seen.append((self.command, self.path, self.headers.get("Authorization"), body))
        if self.path == "/models/bad":
            code, doc = 400, {"error": "invalid model", "fields": [{"field": "policy.timeout", "rule": "must be > 0"}]}
        elif self.path.endswith("/trigger"):
            code, doc = 200, {"model": {"id": "thumb-42", "state": "scheduled"}, "changed": True}
        else:
            code, doc = 200, {"id": "thumb-42", "queue": (body or {}).get("queue", "default")}
        raw = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    do_PUT = do_PATCH = do_POST = do_GET = _answer

    def log_message(self, *args):
        pass


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = HTTPServer(("127.0.0.1", 0), FakeAPI)
        threading.Thread(target=cls.srv.serve_forever, daemon=True).start()
        cls.api = Client(f"http://127.0.0.1:{cls.srv.server_port}/", token="s3cret")

    @classmethod
    def tearDownClass(cls):
        cls.srv.shutdown()
        cls.srv.server_close()

    def setUp(self):
        FakeAPI.seen.clear()

    def test_put_and_trigger(self):
        m = self.api.put_model("thumb-42", {"queue": "thumbnails", "payload": {"image": "s3://b/42.png"}})
        self.assertEqual(m["queue"], "thumbnails")
        r = self.api.trigger("thumb-42", reason="the image changed")
        self.assertTrue(r["changed"])
        self.assertEqual(FakeAPI.seen, [
            ("PUT", "/models/thumb-42", "Bearer s3cret", {"queue": "thumbnails", "payload": {"image": "s3://b/42.png"}}),
            ("POST", "/models/thumb-42/trigger", "Bearer s3cret", {"reason": "the image changed"}),
        ])

    def test_refusal_names_the_field(self):
        with self.assertRaises(APIError) as e:
            self.api.patch_model("bad", {"policy": {"timeout": "0s"}})
        self.assertEqual((e.exception.status, e.exception.fields[0]["field"]), (400, "policy.timeout"))


if __name__ == "__main__":
    unittest.main()
