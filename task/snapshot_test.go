package task

import (
	"errors"
	"slices"
	"testing"
)

// source is a Source that counts its reads.
type source struct {
	goal  string
	turns []Turn
	reads int
	err   error
}

func (s *source) ReadGoal(*Snapshot) (string, error) { s.reads++; return s.goal, s.err }
func (s *source) Turns(*Snapshot) ([]Turn, error) {
	s.reads++
	return slices.Clone(s.turns), s.err
}

// A snapshot reads its goal through its source once, and the changes an
// operation makes are pending, for the store to commit, in a clone only.
func TestSnapshotReadsThroughItsSource(t *testing.T) {
	src := &source{goal: "the goal", turns: []Turn{{Seq: 1, Role: RoleHuman, FeedbackDelivery: FeedbackPending}, {Seq: 2, Role: RoleAgent}}}
	sn := &Snapshot{Task: Task{ID: "0123456789abcdef", Turns: 2, Metadata: map[string]string{"k": "v"}}}
	if g, err := sn.Goal(); err != nil || g != "" || sn.Source() != nil {
		t.Fatalf("an unbound snapshot's goal: %q %v", g, err)
	}
	state := map[string]int{"tree": 1}
	sn.Bind(src, state)
	if sn.Source() != src || sn.State().(map[string]int)["tree"] != 1 {
		t.Fatal("Bind did not keep the source and the state")
	}
	for range 2 {
		if g, err := sn.Goal(); err != nil || g != "the goal" {
			t.Fatalf("Goal = %q, %v", g, err)
		}
	}
	if src.reads != 1 {
		t.Fatalf("the goal was read %d times, want once", src.reads)
	}
	if _, changed := sn.GoalChange(); changed {
		t.Fatal("reading the goal made it a change")
	}

	next := sn.Clone()
	next.Task.Metadata["k"] = "changed"
	next.SetGoal("new goal")
	added := next.AddTurn(Turn{Role: RoleHuman, Content: "more"})
	next.AddComment(Comment{Text: "a note"})
	if err := next.EditTurns(func(t *Turn) bool {
		if t.FeedbackDelivery != FeedbackPending {
			return false
		}
		t.FeedbackDelivery = FeedbackConsumed
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if sn.Task.Metadata["k"] != "v" || sn.Task.Turns != 2 || len(sn.NewTurns()) != 0 || len(sn.NewComments()) != 0 {
		t.Fatal("changing a clone changed the snapshot it was cloned from")
	}
	if g, changed := next.GoalChange(); !changed || g != "new goal" {
		t.Fatalf("GoalChange = %q, %v", g, changed)
	}
	if added.Seq != 3 || len(next.NewTurns()) != 1 || next.NewTurns()[0].Content != "more" {
		t.Fatalf("AddTurn: %+v, new turns %+v", added, next.NewTurns())
	}
	if c := next.NewComments(); len(c) != 1 || c[0].Seq != 1 || next.Task.Comments != 1 {
		t.Fatalf("AddComment: %+v", c)
	}
	if e := next.EditedTurns(); len(e) != 1 || e[0].Seq != 1 || e[0].FeedbackDelivery != FeedbackConsumed {
		t.Fatalf("EditTurns rewrote %+v", e)
	}
	if next.Source() != src || next.State().(map[string]int)["tree"] != 1 {
		t.Fatal("a clone does not share its source and state")
	}
	again := next.Clone()
	if _, changed := again.GoalChange(); changed || len(again.NewTurns()) != 0 || len(again.EditedTurns()) != 0 || len(again.NewComments()) != 0 {
		t.Fatal("a clone carries its original's pending changes")
	}

	src.err = errors.New("unreadable")
	fresh := &Snapshot{}
	fresh.Bind(src, nil)
	if _, err := fresh.Goal(); !errors.Is(err, src.err) {
		t.Fatalf("a source's error is not the goal's: %v", err)
	}
	if err := fresh.EditTurns(func(*Turn) bool { return true }); !errors.Is(err, src.err) {
		t.Fatalf("a source's error is not EditTurns': %v", err)
	}
}
