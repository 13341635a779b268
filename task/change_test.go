package task

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/oid"
)

func TestHexEncodesAsAHexString(t *testing.T) {
	h := Hex(newOID("0123456789abcdef0123456789abcdef01234567"))
	b, err := json.Marshal(Change{Commit: h})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"commit":"0123456789abcdef0123456789abcdef01234567"`) {
		t.Fatalf("history commit encodes as %s", b)
	}
	var back Change
	if err := json.Unmarshal(b, &back); err != nil || back.Commit != h {
		t.Fatalf("round trip: %v %v", back.Commit, err)
	}
	for _, bad := range []string{`"0123"`, `"zz23456789abcdef0123456789abcdef01234567"`, `[1,2]`} {
		var c Hex
		if err := json.Unmarshal([]byte(bad), &c); err == nil {
			t.Fatalf("%s decoded", bad)
		}
	}
}

// newOID reads a hex id: the zero id when it is not one.
func newOID(s string) oid.OID {
	id, _ := oid.Parse(s)
	return id
}
