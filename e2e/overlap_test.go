package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// overlapJSON is the overlap fields of list and show --json.
type overlapJSON struct {
	Slug      string              `json:"slug"`
	Overlaps  map[string][]string `json:"overlaps"`
	Landed    []string            `json:"landed_overlap"`
	Truncated bool                `json:"overlaps_truncated"`
}

func (r *runner) overlapList() map[string]overlapJSON {
	r.t.Helper()
	var ts []overlapJSON
	if err := json.Unmarshal([]byte(r.ok("list", "--json")), &ts); err != nil {
		r.t.Fatal(err)
	}
	out := map[string]overlapJSON{}
	for _, tk := range ts {
		out[tk.Slug] = tk
	}
	return out
}

func (r *runner) overlapShow(slug string) overlapJSON {
	r.t.Helper()
	var tk overlapJSON
	if err := json.Unmarshal([]byte(r.ok("show", "--json", slug)), &tk); err != nil {
		r.t.Fatal(err)
	}
	return tk
}

// rowOf is the line of lazy list's table whose SLUG (its third column:
// ID, STATUS, SLUG) is slug.
func rowOf(t *testing.T, table, slug string) string {
	t.Helper()
	for _, line := range strings.Split(table, "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[2] == slug {
			return line
		}
	}
	t.Fatalf("lazy list has no row for %s:\n%s", slug, table)
	return ""
}

// TestOverlapsAreSeenBeforeAccept runs two agents that edit the same
// file: list, show and their JSON flag both tasks before either is
// accepted; once one is, the other shows that its file landed on main.
func TestOverlapsAreSeenBeforeAccept(t *testing.T) {
	r := newRepo(t)
	alone := workedTask(t, r, "Separate work", "separate.txt s")
	if out := r.ok("list"); strings.Contains(out, "OVERLAPS") {
		t.Fatalf("an OVERLAPS column with nothing overlapping:\n%s", out)
	}
	a := workedTask(t, r, "Edit shared A", "shared.txt alpha", "a.txt a")
	b := workedTask(t, r, "Edit shared B", "shared.txt beta", "b.txt b")

	table := r.ok("list")
	if !strings.Contains(strings.SplitN(table, "\n", 2)[0], "OVERLAPS") {
		t.Fatalf("no OVERLAPS column:\n%s", table)
	}
	// The column counts; lazy show names the other task and the files.
	if row := rowOf(t, table, a.Slug); !strings.Contains(row, "1 file with 1 task") {
		t.Fatalf("a's row does not name b: %q", row)
	}
	if row := rowOf(t, table, b.Slug); !strings.Contains(row, "1 file with 1 task") {
		t.Fatalf("b's row does not name a: %q", row)
	}
	if row := rowOf(t, table, alone.Slug); strings.Contains(row, "file") {
		t.Fatalf("the separate task overlaps: %q", row)
	}
	list := r.overlapList()
	if got := list[a.Slug].Overlaps; !reflect.DeepEqual(got, map[string][]string{b.Slug: {"shared.txt"}}) {
		t.Fatalf("list --json overlaps of a: %v", got)
	}
	if got := list[alone.Slug]; got.Overlaps != nil || got.Landed != nil {
		t.Fatalf("list --json overlaps of the separate task: %+v", got)
	}
	if got := r.overlapShow(b.Slug); !reflect.DeepEqual(got.Overlaps, map[string][]string{a.Slug: {"shared.txt"}}) || got.Landed != nil {
		t.Fatalf("show --json of b: %+v", got)
	}
	if out := r.ok("show", b.Slug); !strings.Contains(out, "\nOverlaps (") || !strings.Contains(out, "  with "+a.Slug+", also merging into main (1 file):\n      shared.txt\n") {
		t.Fatalf("lazy show has no Overlaps section:\n%s", out)
	}

	if res := r.run(nil, "accept", a.Slug); res.Code != 0 {
		t.Fatalf("accept a: %s", res)
	}
	got := r.overlapShow(b.Slug)
	if got.Overlaps != nil || !reflect.DeepEqual(got.Landed, []string{"shared.txt"}) {
		t.Fatalf("after a was accepted, show --json of b: %+v", got)
	}
	if got := r.overlapList()[b.Slug]; !reflect.DeepEqual(got.Landed, []string{"shared.txt"}) {
		t.Fatalf("after a was accepted, list --json of b: %+v", got)
	}
	if row := rowOf(t, r.ok("list"), b.Slug); !strings.Contains(row, "1 file landed") {
		t.Fatalf("after a was accepted, b's row: %q", row)
	}
	if out := r.ok("show", b.Slug); !strings.Contains(out, "  landed on main since the branch forked (1 file; lazy sync "+b.Slug+" merges it in now):\n      shared.txt\n") {
		t.Fatalf("lazy show of b after a was accepted:\n%s", out)
	}
}

// TestListFitsWithAttemptsAndOverlaps is the list a person sees with one
// task tried two ways (both attempts editing the file another task
// edits): on a 120-column terminal every line fits, the group's row says
// it is tried two ways without a command in the cell, the overlaps are
// counted, and the attempts are not flagged against each other (one of
// them lands, the other closes).
func TestListFitsWithAttemptsAndOverlaps(t *testing.T) {
	r := newRepo(t)
	t.Cleanup(func() { killTurns(r) })
	other := workedTask(t, r, "Refactor the session cache so that logout invalidates every token it ever handed out", "shared.txt other")
	agent := writeAgent(t, `printf 'the %s way\n' "$(basename "$PWD")" > shared.txt
git add shared.txt && git commit -q -m "work of $(basename "$PWD")"`)
	g := r.create("Fix the login race that shows up one CI run in ten when the session cache is cold", "--slug", "fix-login")
	r.ok("start", g.Slug, "--attempts", "2", "--command", agent)
	r.waitStatus("fix-login-a1", "blocked")
	r.waitStatus("fix-login-a2", "blocked")

	table := r.with("COLUMNS=120").ok("list")
	for _, l := range strings.Split(strings.TrimRight(table, "\n"), "\n") {
		if n := len([]rune(l)); n > 120 {
			t.Errorf("a line of %d columns: %q", n, l)
		}
	}
	group := ""
	for _, l := range strings.Split(table, "\n") {
		if strings.Contains(l, "  "+g.Slug+"  ") {
			group = l
		}
	}
	if !strings.Contains(group, "backlog (tried 2 ways)") || strings.Contains(table, "lazy show") {
		t.Errorf("the group's row: %q", group)
	}
	for _, slug := range []string{"fix-login-a1", "fix-login-a2"} {
		if row := rowOf(t, r.ok("list"), slug); !strings.Contains(row, "1 file with 1 task") {
			t.Errorf("%s's row: %q", slug, row)
		}
	}
	if row := rowOf(t, r.ok("list"), other.Slug); !strings.Contains(row, "1 file with 2 tasks") {
		t.Errorf("%s's row: %q", other.Slug, row)
	}
	list := r.overlapList()
	if got := list["fix-login-a1"].Overlaps; !reflect.DeepEqual(got, map[string][]string{other.Slug: {"shared.txt"}}) {
		t.Errorf("attempt 1 overlaps %v, want only %s", got, other.Slug)
	}
	if out := r.ok("show", "fix-login-a2"); !strings.Contains(out, "  with "+other.Slug+", also merging into main (1 file):\n      shared.txt\n") || strings.Contains(out, "with fix-login-a1") {
		t.Errorf("show of attempt 2:\n%s", out)
	}
}

// writeAgent is an exec agent running body in its worktree.
func writeAgent(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agent")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}
