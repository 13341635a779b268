package task

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "abc", "<>&", "\"\\", "\b\f\n\r\t\x00\x1f\x7f", "\u2028\u2029", "\xff\xfe", "é日\U0001F600", "a\xc3"} {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "<a&b>", "\u2028", "\xff", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	})
}

// FuzzAppendUTC holds AppendUTC to the Format it replaces.
func FuzzAppendUTC(f *testing.F) {
	f.Add(int64(1796304623), int64(0))
	f.Add(int64(-62135596800), int64(5))
	f.Add(int64(253402300799), int64(999999999))
	f.Add(int64(253402300800), int64(0))
	f.Fuzz(func(t *testing.T, sec, nsec int64) {
		tm := time.Unix(sec, nsec).In(time.FixedZone("x", 3600))
		if got, want := string(AppendUTC(nil, tm)), tm.UTC().Format(TimeLayout); got != want {
			t.Fatalf("AppendUTC(%v) = %q, want %q", tm, got, want)
		}
	})
}
