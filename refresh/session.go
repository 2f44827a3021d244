package refresh

import "time"

// Session is a signed-in session of the dashboard as a store keeps it. The
// browser holds the session's id, a random secret; the store holds only
// its hash, so that reading the store (a backup, a replica) opens no
// session. The session names the API token it was opened with by the
// token's hash, so that a token removed from the configuration ends its
// sessions.
type Session struct {
	// Hash is the SHA-256 of the session's id, in hex.
	Hash string
	// TokenHash is the hash of the token ("sha256:<64 hex digits>", as
	// the tokens file has it) and TokenName its name, for logs.
	TokenHash string
	TokenName string
	CreatedAt time.Time
	// ExpiresAt is when the session ends, whatever is done with it.
	ExpiresAt time.Time
}
