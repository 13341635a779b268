package landing

import "testing"

func TestParseCrashPointIsInertUnlessExact(t *testing.T) {
	for _, v := range []string{"", "merge:", "merge:0", "merge:-1", "merge:x", "Merge", " merge", "merge ", "nosuch", "merge:1:2", "../merge"} {
		if c := ParseCrashPoint(v); c != nil {
			t.Errorf("ParseCrashPoint(%q) = %+v, want nil (inert)", v, c)
		}
	}
	for v, want := range map[string]struct {
		phase string
		n     int64
	}{"merge": {"merge", 1}, "record:3": {"record", 3}, "cleanup:1": {"cleanup", 1}} {
		c := ParseCrashPoint(v)
		if c == nil || c.phase != want.phase || c.n != want.n {
			t.Errorf("ParseCrashPoint(%q) = %+v, want %+v", v, c, want)
		}
	}
}

func TestCrashPointCountsOnlyItsPhase(t *testing.T) {
	var none *CrashPoint
	none.reached("merge") // a nil crash point does nothing
	c := ParseCrashPoint("merge:3")
	for _, p := range []string{"record", "merge", "stash", "merge", "finish"} {
		c.reached(p) // the 3rd merge would kill the test: it must not come
	}
	if got := c.hits.Load(); got != 2 {
		t.Fatalf("hits = %d, want 2 (only merge counts)", got)
	}
}
