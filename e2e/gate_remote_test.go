package e2e

import (
	"strings"
	"testing"
)

// TestAForgedPulledGateRunIsNotEvidence: an attacker clone crafts, with
// git plumbing, a passing gate run on the victim's own task (the victim's
// host id, the exact tree its accept would gate, and "origin": "here"),
// pushes it to the shared bare remote, and the victim pulls. Every
// surface shows the run as "remote, not verified here", never as passed,
// and the victim's accept runs its own gate, which fails: nothing lands.
func TestAForgedPulledGateRunIsNotEvidence(t *testing.T) {
	victim, attacker := clones(t)
	victim = withDaemon(t, victim)
	victim.git("config", "lazy.gate", "test ! -e bad.txt")
	mine := workedTask(t, victim, "victim work", "bad.txt b")
	victim.ok("push")
	attacker.ok("init")
	host := attacker.lazyHost(mine.ID)
	base := strings.TrimSpace(victim.git("rev-parse", "main"))
	tree := strings.TrimSpace(victim.git("merge-tree", "--write-tree", "main", "lazy/"+mine.Slug))
	const forged = "0123456789abcdef"

	ref := "refs/lazy/tasks/" + mine.ID
	craft(t, attacker.dir, ref, func(f map[string][]byte) {
		setJSON(t, f, "task.json", map[string]any{"gate": map[string]any{"runs": []any{map[string]any{
			"id": forged, "at": "2026-12-06T04:00:00Z", "duration_ms": 61000, "host": host, "source": "git config lazy.gate",
			"target": "main", "base": base, "tree": tree, "branch_tip": base,
			"commands": []any{map[string]any{"cmd": "test ! -e bad.txt", "exit": 0, "duration_ms": 61000}},
			"passed":   true, "origin": "here",
		}}}})
	})
	attacker.git("push", "-q", "origin", ref+":"+ref)
	victim.run(nil, "pull")
	// However pull judged the crafted commit, place it as a pull that
	// took it would: the surfaces must hold on their own.
	victim.git("fetch", "-q", "origin", "+"+ref+":refs/crafted/"+mine.ID)
	victim.git("update-ref", ref, "refs/crafted/"+mine.ID)

	out := victim.ok("show", mine.Slug)
	if !strings.Contains(out, "run "+forged+" remote, not verified here (its record says passed, host \""+host+"\")") || strings.Contains(out, "run "+forged+" passed") {
		t.Fatalf("show presents the forged run as evidence:\n%s", out)
	}
	s := victim.protectedShow(mine.Slug)
	if s.GateRecord == nil || len(s.GateRecord.Runs) != 1 || s.GateRecord.Runs[0].Origin != "remote, not verified here" {
		t.Fatalf("show --json: %+v", s.GateRecord)
	}
	if s.Gate == nil || s.Gate.State != "passed" || s.Gate.Origin != "remote, not verified here" {
		t.Fatalf("show --json gate summary: %+v", s.Gate)
	}
	mcp, _ := mcpClient(t, victim, nil, "mcp")
	var shown protectedShow
	decodeInto(t, call(t, mcp, "lazy_show", map[string]any{"task": mine.ID}, false), &shown)
	if shown.GateRecord == nil || len(shown.GateRecord.Runs) != 1 || shown.GateRecord.Runs[0].Origin != "remote, not verified here" {
		t.Fatalf("lazy_show: %+v", shown.GateRecord)
	}
	full, base2 := webURL(t, victim)
	_, token, _ := strings.Cut(full, "?token=")
	page := get(t, base2+"/task/"+mine.ID+"?token="+token, "")
	if !strings.Contains(page, "<b>run "+forged+`</b> <span class="gate-remote"`) || strings.Contains(page, "<b>run "+forged+`</b> <span class="gate-passed">`) {
		t.Fatalf("the task page presents the forged run as evidence:\n%s", page)
	}
	if list := get(t, full, ""); !strings.Contains(list, "gate: remote, not verified here") {
		t.Fatalf("the list presents the forged run as evidence:\n%s", list)
	}

	// The accept runs its own gate on that very tree, which fails.
	res := victim.run(nil, "accept", mine.Slug)
	if res.Code == 0 || !strings.Contains(res.Stderr, "the task's record says gate run "+forged+" passed on this tree; it is remote, not verified here, so the gate runs here") ||
		!strings.Contains(res.Stderr, `the gate failed: "test ! -e bad.txt" exited 1`) {
		t.Fatalf("accept: %s", res)
	}
	if got := strings.TrimSpace(victim.git("rev-parse", "main")); got != base {
		t.Fatalf("main moved to %s", got)
	}
	out = victim.ok("show", mine.Slug)
	if !strings.Contains(out, " failed  ") || !strings.Contains(out, "run "+forged+" remote, not verified here") {
		t.Fatalf("show after the local run:\n%s", out)
	}
}
