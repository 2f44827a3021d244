<?php
// A router for PHP's built-in server that answers as freshen serve would,
// and logs each request as a JSON line in FAKE_API_LOG.
$body = file_get_contents('php://input');
$in = $body !== '' ? json_decode($body, true) : null;
file_put_contents(getenv('FAKE_API_LOG'), json_encode([$_SERVER['REQUEST_METHOD'], $_SERVER['REQUEST_URI'], $_SERVER['HTTP_AUTHORIZATION'] ?? null, $in]) . "\n", FILE_APPEND);
header('Content-Type: application/json');
if ($_SERVER['REQUEST_URI'] === '/models/bad') {
    http_response_code(400);
    echo json_encode(['error' => 'invalid model', 'fields' => [['field' => 'policy.timeout', 'rule' => 'must be > 0']]]);
} elseif (str_ends_with($_SERVER['REQUEST_URI'], '/trigger')) {
    echo json_encode(['model' => ['id' => 'thumb-42', 'state' => 'scheduled'], 'changed' => true]);
} else {
    echo json_encode(['id' => 'thumb-42', 'queue' => $in['queue'] ?? 'default']);
}
