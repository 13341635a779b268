// Package link is how a turn's agent reaches the daemon: the per-turn
// bearer token the supervisor mints (and the daemon verifies), the rule
// for how long a token stays live, and the unix-socket transport every
// client of the daemon dials. supervise, mcp and daemon all import it, so
// none of them needs another's internals.
package link

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/google/renameio/v2"

	"github.com/lazyorch/lazy/internal/unixsock"
)

// TokenEnv is the environment variable that carries an agent's token to
// lazy mcp-proxy.
const TokenEnv = "LAZY_MCP_TOKEN" //nolint:gosec // the name of the variable, not a credential

// Identity is what a token says about its holder.
type Identity struct {
	Task    string `json:"task"`
	Session string `json:"session"`
	Turn    int    `json:"turn"`
	// Kind is "pair" for a token minted for lazy pair's agent, which is
	// live while the task pairs; "" for a supervised turn's.
	Kind   string    `json:"kind,omitempty"`
	Minted time.Time `json:"minted_at"`
}

// ErrBadToken is a token lazy did not mint, or one already revoked.
var ErrBadToken = errors.New("unknown or revoked MCP token")

func tokenPath(lazyDir, raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return filepath.Join(lazyDir, "tokens", hex.EncodeToString(sum[:])+".json")
}

// MintToken creates a bearer token for one turn's agent. Only its SHA-256
// is stored (0600, under the git directory, never in refs); the raw token
// goes to the agent's environment and nowhere else.
func MintToken(lazyDir string, id Identity) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("mint an MCP token: %w", err)
	}
	raw := "lazy_" + hex.EncodeToString(b[:])
	id.Minted = time.Now().UTC()
	data, err := json.Marshal(struct {
		Identity
		Hash string `json:"sha256"`
	}{id, filepath.Base(tokenPath(lazyDir, raw))})
	if err != nil {
		return "", err
	}
	path := tokenPath(lazyDir, raw)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("mint an MCP token: %w", err)
	}
	if err := renameio.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("mint an MCP token: %w", err)
	}
	return raw, nil
}

// VerifyToken returns the identity of a raw token.
func VerifyToken(lazyDir, raw string) (Identity, error) {
	var id Identity
	if len(raw) != len("lazy_")+64 {
		return id, ErrBadToken
	}
	path := tokenPath(lazyDir, raw)
	b, err := os.ReadFile(path)
	if err != nil {
		return id, ErrBadToken
	}
	var rec struct {
		Identity
		Hash string `json:"sha256"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return id, ErrBadToken
	}
	// The file name is the hash; compare anyway, in constant time, so a
	// misplaced file cannot vouch for another token.
	if subtle.ConstantTimeCompare([]byte(rec.Hash), []byte(filepath.Base(path))) != 1 {
		return id, ErrBadToken
	}
	return rec.Identity, nil
}

// RevokeToken deletes a token's record: the turn is over.
func RevokeToken(lazyDir, raw string) { _ = os.Remove(tokenPath(lazyDir, raw)) }

// SocketFile is the daemon's socket under <git common dir>/lazy.
const SocketFile = "daemon.sock"

// Transport connects HTTP clients to the socket of the daemon whose lazy
// directory is lazyDir.
func Transport(lazyDir string) *http.Transport {
	sock := filepath.Join(lazyDir, SocketFile)
	return &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return unixsock.Dial(ctx, sock)
	}}
}
