package supervise

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A sandboxed turn given lazy's MCP tools waits for the daemon's socket,
// which the sandbox binds only if it exists when it is built: it goes on
// as soon as the socket appears, and after the wait when it never does.
func TestASandboxedTurnWaitsForTheDaemonsSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "daemon.sock")
	go func() {
		time.Sleep(150 * time.Millisecond) // the daemon the launch started is still starting
		_ = os.WriteFile(path, nil, 0o600)
	}()
	awaitFile(context.Background(), path, time.Minute)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("went on before the socket existed: %v", err)
	}
	began := time.Now()
	awaitFile(context.Background(), filepath.Join(t.TempDir(), "never"), 100*time.Millisecond)
	if waited := time.Since(began); waited < 100*time.Millisecond || waited > 30*time.Second {
		t.Fatalf("waited %s for a socket that never came, want the 100ms wait", waited)
	}
}
