import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";
import { APIError, Client } from "../dist/esm/index.js";

test("put, trigger and a refusal, as freshen serve answers them", async () => {
  const seen = [];
  const srv = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      seen.push([req.method, req.url, req.headers.authorization, body ? JSON.parse(body) : undefined]);
      let code = 200, doc;
      if (req.url === "/models/bad") (code = 400), (doc = { error: "invalid model", fields: [{ field: "policy.timeout", rule: "must be > 0" }] });
      else if (req.url.endsWith("/trigger")) doc = { model: { id: "thumb-42", state: "scheduled" }, changed: true };
      else doc = { id: "thumb-42", queue: JSON.parse(body || "{}").queue ?? "default" };
      res.writeHead(code, { "Content-Type": "application/json" }).end(JSON.stringify(doc));
    });
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const api = new Client(`http://127.0.0.1:${srv.address().port}/`, "s3cret");
  try {
    assert.equal((await api.putModel("thumb-42", { queue: "thumbnails", payload: { image: "s3://b/42.png" } })).queue, "thumbnails");
    assert.equal((await api.trigger("thumb-42", "the image changed")).changed, true);
    assert.deepEqual(seen, [
      ["PUT", "/models/thumb-42", "Bearer s3cret", { queue: "thumbnails", payload: { image: "s3://b/42.png" } }],
      ["POST", "/models/thumb-42/trigger", "Bearer s3cret", { reason: "the image changed" }],
    ]);
    await assert.rejects(api.patchModel("bad", { policy: { timeout: "0s" } }), (e) => e instanceof APIError && e.status === 400 && e.fields[0].field === "policy.timeout");
  } finally {
    srv.close();
  }
});
