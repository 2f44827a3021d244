//go:build linux

package clients_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// apiScripts are, per client, a program that, given FRESHEN_API_URL,
// FRESHEN_TOKEN and FRESHEN_MODEL, creates the model, changes its payload,
// triggers it and reads it back with the client's API client, then tries a
// refused change and a wrong token. It prints the model read back, then the
// two refusals' statuses, one per line. %s is the repository's root.
var apiScripts = map[string][]string{
	"python": {"/usr/bin/python3", "-c", `
import json, os, sys
sys.path.insert(0, "%s/clients/python/src")
from freshen.api import APIError, Client
c, id = Client(os.environ["FRESHEN_API_URL"], os.environ["FRESHEN_TOKEN"]), os.environ["FRESHEN_MODEL"]
c.put_model(id, {"queue": "thumbs", "payload": {"thumb": "v1"}})
c.patch_model(id, {"payload": {"thumb": "v2"}})
c.trigger(id, "thumbnail changed")
print(json.dumps(c.get_model(id)))
for call in (lambda: c.patch_model(id, {"policy": {"timeout": "forever"}}), lambda: Client(os.environ["FRESHEN_API_URL"], "wrong").get_model(id)):
    try:
        call()
        print("accepted")
    except APIError as e:
        print(e.status)
`},
	"typescript": {"node", "--input-type=module", "-e", `
import { APIError, Client } from "%s/clients/typescript/dist/esm/index.js";
const c = new Client(process.env.FRESHEN_API_URL, process.env.FRESHEN_TOKEN), id = process.env.FRESHEN_MODEL;
await c.putModel(id, { queue: "thumbs", payload: { thumb: "v1" } });
await c.patchModel(id, { payload: { thumb: "v2" } });
await c.trigger(id, "thumbnail changed");
console.log(JSON.stringify(await c.getModel(id)));
for (const call of [() => c.patchModel(id, { policy: { timeout: "forever" } }), () => new Client(process.env.FRESHEN_API_URL, "wrong").getModel(id)]) {
  try {
    await call();
    console.log("accepted");
  } catch (e) {
    if (!(e instanceof APIError)) throw e;
    console.log(e.status);
  }
}
`},
	"php": {"php", "-r", `
require "%s/clients/php/src/autoload.php";
use Freshen\Api\{ApiError, Client};
$c = new Client(getenv("FRESHEN_API_URL"), getenv("FRESHEN_TOKEN"));
$id = getenv("FRESHEN_MODEL");
$c->putModel($id, ["queue" => "thumbs", "payload" => ["thumb" => "v1"]]);
$c->patchModel($id, ["payload" => ["thumb" => "v2"]]);
$c->trigger($id, "thumbnail changed");
echo json_encode($c->getModel($id)), "\n";
foreach ([fn() => $c->patchModel($id, ["policy" => ["timeout" => "forever"]]), fn() => (new Client(getenv("FRESHEN_API_URL"), "wrong"))->getModel($id)] as $call) {
    try {
        $call();
        echo "accepted\n";
    } catch (ApiError $e) {
        echo $e->status, "\n";
    }
}
`},
}

// TestAPIClients runs each client's API client against a real freshen
// serve, on the PostgreSQL and Redis of scripts/with-servers.sh, with a
// bearer token.
func TestAPIClients(t *testing.T) {
	redis := redisURL(t)
	db := os.Getenv("DATABASE_URL")
	if db == "" {
		t.Skip("DATABASE_URL is not set; run under scripts/with-servers.sh")
	}
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	dir := t.TempDir()
	bin := filepath.Join(dir, "freshen")
	build := exec.Command("go", "build", "-o", bin, "./cmd/freshen")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	// A write token: its first line is the token, its second the entry for
	// --tokens-file.
	out, err = exec.Command(bin, "token", "new", "--name", "clients", "--scopes", "write").Output()
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 2)
	token, tokens := lines[0], filepath.Join(dir, "tokens.json")
	require.NoError(t, os.WriteFile(tokens, []byte("["+lines[1]+"]"), 0o600))

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	serve := exec.Command(bin, "serve", "--addr", addr, "--migrate", "--tokens-file", tokens, "--redis-prefix", "clients-api")
	serve.Env = append(os.Environ(), "DATABASE_URL="+db, "REDIS_URL="+redis)
	var log strings.Builder
	serve.Stdout, serve.Stderr = &log, &log
	require.NoError(t, serve.Start())
	exited := make(chan error, 1)
	go func() { exited <- serve.Wait() }()
	t.Cleanup(func() {
		_ = serve.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = serve.Process.Kill()
			<-exited
		}
	})
	base := "http://" + addr
	ready := time.Now().Add(60 * time.Second)
	for {
		res, err := http.Get(base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("serve exited (%v):\n%s", err, log.String())
		case <-time.After(50 * time.Millisecond):
		}
		require.True(t, time.Now().Before(ready), "serve not ready within 60s:\n%s", log.String())
	}

	for _, c := range clients() {
		script := apiScripts[c.name]
		require.NotNil(t, script, "no API script for %s", c.name)
		t.Run(c.name, func(t *testing.T) {
			if m := c.missing(); m != "" {
				t.Skipf("%s is missing: run scripts/install-clients.sh", m)
			}
			id := "api-" + c.name
			args := append([]string{}, script[1:]...)
			args[len(args)-1] = fmt.Sprintf(args[len(args)-1], root)
			cmd := exec.Command(script[0], args...)
			cmd.Env = append(os.Environ(), "FRESHEN_API_URL="+base, "FRESHEN_TOKEN="+token, "FRESHEN_MODEL="+id)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			require.Len(t, lines, 3, "%s", out)
			var m struct {
				ID      string         `json:"id"`
				Queue   string         `json:"queue"`
				Payload map[string]any `json:"payload"`
			}
			require.NoError(t, json.Unmarshal([]byte(lines[0]), &m), "%s", out)
			require.Equal(t, id, m.ID)
			require.Equal(t, "thumbs", m.Queue)
			require.Equal(t, map[string]any{"thumb": "v2"}, m.Payload)
			require.Equal(t, "400", lines[1], "a policy with a bad timeout")
			require.Equal(t, "401", lines[2], "a wrong token")

		})
	}
}
