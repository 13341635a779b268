package oid

import (
	"strings"
	"testing"
)

func TestOIDHoldsBothFormats(t *testing.T) {
	for _, c := range []struct{ hex, format string }{
		{strings.Repeat("ab", 20), SHA1},
		{strings.Repeat("cd", 32), SHA256},
	} {
		id, err := Parse(c.hex)
		if err != nil || id.String() != c.hex || id.Format() != c.format || id.IsZero() {
			t.Fatalf("Parse(%s) = %s (%s), %v", c.hex, id, id.Format(), err)
		}
		back, ok := FromBytes(id.Bytes())
		if !ok || back != id {
			t.Fatalf("FromBytes(Bytes()) = %s, %v", back, ok)
		}
	}
	for _, bad := range []string{"", "abc", strings.Repeat("g", 40), strings.Repeat("a", 41), strings.Repeat("a", 63)} {
		if _, err := Parse(bad); err == nil {
			t.Fatalf("Parse(%q) accepted", bad)
		}
	}
	if (OID{}).Format() != "" || !(OID{}).IsZero() {
		t.Fatal("the zero OID has a format or is not zero")
	}
}
