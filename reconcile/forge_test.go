package reconcile

import (
	"testing"
	"time"
)

func TestForgeSyncIsRateLimitedPerForge(t *testing.T) {
	fs := &ForgeSync{Interval: time.Minute}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if !fs.due("github origin", t0) {
		t.Fatal("the first sync of a forge was not due")
	}
	if fs.due("github origin", t0.Add(59*time.Second)) {
		t.Fatal("a forge was asked again within its interval")
	}
	if !fs.due("gitea upstream", t0.Add(time.Second)) {
		t.Fatal("another forge waited for the first one's interval")
	}
	if !fs.due("github origin", t0.Add(time.Minute)) {
		t.Fatal("a forge was not asked again after its interval")
	}
	var def ForgeSync
	def.due("k", t0)
	if def.due("k", t0.Add(DefaultForgeInterval-time.Second)) || !def.due("k", t0.Add(DefaultForgeInterval)) {
		t.Fatal("the default interval is not DefaultForgeInterval")
	}
}
