package machine

import (
	"errors"
	"strings"
	"testing"
)

// allowed is the spec's transition list ("Valid State Transitions"),
// transcribed by hand rather than derived from table, so that a change to
// the table that drifts from the spec fails here. zombie is listed
// separately because it is system-only.
var allowed = map[Status][]Status{
	Backlog:     {Working, Abandoned, Complete},
	Working:     {Blocked, Conflict, Submitted, Interrupted},
	Blocked:     {Working, Conflict, Pairing, Merging, Submitted, Abandoned, Backlog},
	Conflict:    {Working, Blocked, Pairing, Abandoned},
	Interrupted: {Working, Pairing, Abandoned},
	Pairing:     {Blocked, Conflict},
	Merging:     {Complete, Blocked, Conflict, Submitted},
	Submitted:   {Merging, Working, Blocked, Abandoned},
	Zombie:      {Complete},
	// A reopen parks, and a park derives conflict from pending
	// violations (spec: "conflict is DERIVED"): the one addition.
	Complete:  {Blocked, Conflict, Backlog},
	Abandoned: {Backlog, Blocked, Conflict},
}

func contains(list []Status, s Status) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestEveryTripleAllowedOrRefusedAsSpecified(t *testing.T) {
	checked := 0
	for _, from := range Statuses() {
		for _, to := range Statuses() {
			for _, actor := range Actors() {
				checked++
				err := Validate(from, to, actor)
				want := contains(allowed[from], to)
				if to == Zombie && !from.IsTerminal() && from != Zombie {
					want = actor == System
				}
				if want && err != nil {
					t.Errorf("%s -> %s by %s: refused (%v), spec allows it", from, to, actor, err)
				}
				if !want {
					if err == nil {
						t.Errorf("%s -> %s by %s: allowed, spec refuses it", from, to, actor)
						continue
					}
					if !errors.Is(err, ErrTransition) {
						t.Errorf("%s -> %s: error %v does not match ErrTransition", from, to, err)
					}
					if !strings.Contains(err.Error(), string(from)) || !strings.Contains(err.Error(), string(to)) {
						t.Errorf("%s -> %s: error %q does not name both statuses", from, to, err)
					}
				}
			}
		}
	}
	if want := 11 * 11 * 5; checked != want {
		t.Fatalf("checked %d triples, want %d", checked, want)
	}
}

func TestZombieIsSystemOnly(t *testing.T) {
	for _, from := range Statuses() {
		if from.IsTerminal() || from == Zombie {
			if err := Validate(from, Zombie, System); err == nil {
				t.Errorf("%s -> zombie allowed for system; terminal and zombie itself must refuse", from)
			}
			continue
		}
		for _, a := range Actors() {
			err := Validate(from, Zombie, a)
			if a == System && err != nil {
				t.Errorf("%s -> zombie refused for system: %v", from, err)
			}
			if a != System {
				if err == nil {
					t.Errorf("%s -> zombie allowed for %s", from, a)
				} else if !strings.Contains(err.Error(), "only the system") {
					t.Errorf("%s -> zombie by %s: unclear error %q", from, a, err)
				}
			}
		}
	}
}

func TestEveryEdgeHasATrigger(t *testing.T) {
	for _, e := range Edges() {
		if len(e.Triggers) == 0 {
			t.Errorf("%s -> %s has no trigger", e.From, e.To)
		}
	}
}

func TestClassification(t *testing.T) {
	want := map[Status]Category{
		Backlog: CategoryResting, Working: CategoryActive, Blocked: CategoryBlocked,
		Conflict: CategoryBlocked, Pairing: CategoryActive, Interrupted: CategoryActive,
		Merging: CategoryActive, Submitted: CategoryResting, Zombie: CategoryResting,
		Complete: CategoryTerminal, Abandoned: CategoryTerminal,
	}
	if len(want) != len(Statuses()) {
		t.Fatalf("classification table covers %d of %d statuses", len(want), len(Statuses()))
	}
	for s, c := range want {
		if got := s.Category(); got != c {
			t.Errorf("%s: category %s, want %s", s, got, c)
		}
		if s.IsTerminal() != (c == CategoryTerminal) || s.IsBlocked() != (c == CategoryBlocked) || s.IsActive() != (c == CategoryActive) {
			t.Errorf("%s: predicates disagree with category %s", s, c)
		}
	}
}

func TestTerminalStatusesAreFrozenExceptReopen(t *testing.T) {
	for _, s := range []Status{Complete, Abandoned} {
		for _, n := range Next(s, Human) {
			if n != Blocked && n != Conflict && n != Backlog {
				t.Errorf("terminal %s can reach %s; only reopen (a park, or backlog) may leave it", s, n)
			}
		}
	}
}

func TestParkIsDerivedFromPendingSet(t *testing.T) {
	if Park(0) != Blocked {
		t.Errorf("Park(0) = %s, want blocked", Park(0))
	}
	for _, n := range []int{1, 2, 1000} {
		if Park(n) != Conflict {
			t.Errorf("Park(%d) = %s, want conflict", n, Park(n))
		}
	}
	// Every status a task can be parked from must accept both labels,
	// except where it already wears it.
	for _, from := range []Status{Working, Pairing, Merging} {
		for _, n := range []int{0, 1} {
			if err := Validate(from, Park(n), System); err != nil {
				t.Errorf("park from %s with %d pending: %v", from, n, err)
			}
		}
	}
}

func TestRefusalsExplain(t *testing.T) {
	cases := []struct {
		from, to Status
		want     string
	}{
		{Blocked, Complete, "lazy accept"},
		{Conflict, Merging, "approve"},
		{Working, Abandoned, "lazy stop"},
		{Merging, Abandoned, "restores"},
		{Backlog, Blocked, "from backlog a task can go to: working, complete, abandoned"},
		{Blocked, Blocked, "already blocked"},
		{"nonsense", Blocked, "not a status"},
	}
	for _, c := range cases {
		err := Validate(c.from, c.to, Human)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s -> %s: error %v, want it to mention %q", c.from, c.to, err, c.want)
		}
	}
	if err := Validate(Blocked, Working, "robot"); err == nil || !strings.Contains(err.Error(), "not an actor") {
		t.Errorf("unknown actor: %v", err)
	}
}

func TestParse(t *testing.T) {
	for _, s := range Statuses() {
		got, err := ParseStatus(" " + strings.ToUpper(string(s)) + " ")
		if err != nil || got != s {
			t.Errorf("ParseStatus(%s) = %s, %v", s, got, err)
		}
	}
	if _, err := ParseStatus("done"); err == nil || !strings.Contains(err.Error(), "backlog") {
		t.Errorf("ParseStatus(done): %v", err)
	}
	for _, a := range Actors() {
		if got, err := ParseActor(string(a)); err != nil || got != a {
			t.Errorf("ParseActor(%s) = %s, %v", a, got, err)
		}
	}
	if _, err := ParseActor("root"); err == nil {
		t.Error("ParseActor(root) accepted")
	}
}
