package link

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTokenLifecycle(t *testing.T) {
	dir := t.TempDir()
	raw, err := MintToken(dir, Identity{Task: "0123456789abcdef", Session: "fedcba9876543210", Turn: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(raw, "lazy_") {
		t.Fatalf("token %q", raw)
	}
	id, err := VerifyToken(dir, raw)
	if err != nil || id.Task != "0123456789abcdef" || id.Turn != 3 {
		t.Fatalf("verify: %+v %v", id, err)
	}
	// Only the hash is on disk, 0600.
	files, _ := filepath.Glob(filepath.Join(dir, "tokens", "*"))
	if len(files) != 1 {
		t.Fatalf("token records: %v", files)
	}
	b, _ := os.ReadFile(files[0])
	if strings.Contains(string(b), raw) {
		t.Fatal("the raw token is stored on disk")
	}
	if fi, _ := os.Stat(files[0]); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	for _, bad := range []string{"", "lazy_", raw[:len(raw)-1] + "0", strings.ToUpper(raw)} {
		if bad == raw {
			continue
		}
		if _, err := VerifyToken(dir, bad); !errors.Is(err, ErrBadToken) {
			t.Fatalf("token %q verified: %v", bad, err)
		}
	}
	RevokeToken(dir, raw)
	if _, err := VerifyToken(dir, raw); !errors.Is(err, ErrBadToken) {
		t.Fatalf("a revoked token verified: %v", err)
	}
}
