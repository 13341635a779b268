package gitrepo

import "testing"

// TestParseHeader: cat-file's answer header, parsed in place.
func TestParseHeader(t *testing.T) {
	oid := "89abcdef0123456789abcdef0123456789abcdef"
	for _, c := range []struct {
		line       string
		blob, ok   bool
		size       int64
		wantOIDLen int
	}{
		{oid + " blob 123\n", true, true, 123, 40},
		{oid + " tree 0\n", false, true, 0, 40},
		{oid + " blob 123", true, true, 123, 40},
		{oid + ":task.json missing\n", false, false, 0, 0},
		{"abc blob 1\n", false, false, 0, 0},
		{oid + " blob -1\n", false, false, 0, 0},
		{oid + " blob 1x\n", false, false, 0, 0},
		{oid + " blob \n", false, false, 0, 0},
		{oid + " blob 9999999999999999999\n", false, false, 0, 0},
		{"", false, false, 0, 0},
	} {
		o, typ, size, ok := parseHeader([]byte(c.line))
		blob := typ == string(Blob)
		if ok != c.ok || blob != c.blob || size != c.size || len(o) != c.wantOIDLen {
			t.Errorf("parseHeader(%q) = %q %v %d %v", c.line, o, blob, size, ok)
		}
	}
}

// FuzzParseHeader: a header from git is never trusted to be sane.
func FuzzParseHeader(f *testing.F) {
	f.Add([]byte("89abcdef0123456789abcdef0123456789abcdef blob 123\n"))
	f.Add([]byte("x missing\n"))
	f.Fuzz(func(t *testing.T, line []byte) {
		oid, _, size, ok := parseHeader(line)
		if ok && (size < 0 || !AllHex(oid)) {
			t.Fatalf("accepted %q: oid %q size %d", line, oid, size)
		}
	})
}
