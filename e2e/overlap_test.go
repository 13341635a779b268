package e2e

import (
	"encoding/json"
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
	if row := rowOf(t, table, a.Slug); !strings.Contains(row, b.Slug+" (1 file)") {
		t.Fatalf("a's row does not name b: %q", row)
	}
	if row := rowOf(t, table, b.Slug); !strings.Contains(row, a.Slug+" (1 file)") {
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
	if row := rowOf(t, r.ok("list"), b.Slug); !strings.Contains(row, "landed (1)") {
		t.Fatalf("after a was accepted, b's row: %q", row)
	}
	if out := r.ok("show", b.Slug); !strings.Contains(out, "  landed on main since the branch forked (1 file; lazy sync "+b.Slug+" merges it in now):\n      shared.txt\n") {
		t.Fatalf("lazy show of b after a was accepted:\n%s", out)
	}
}
