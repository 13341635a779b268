package session

import (
	"strings"
	"testing"

	"github.com/lazyorch/lazy/task"
)

func TestOlderMessagesPastTheBudgetAreNamedNotDropped(t *testing.T) {
	big := strings.Repeat("x", maxOlderFeedback)
	older := []task.Turn{
		{Seq: 2, Kind: "unblock", Content: "small one", FeedbackDelivery: task.FeedbackPending},
		{Seq: 3, Kind: "unblock", Content: big, FeedbackDelivery: task.FeedbackPending},
	}
	p := WithUndelivered("new", "slug", older)
	if !strings.HasPrefix(p, "new\n\n---") || !strings.Contains(p, "small one") || strings.Contains(p, big) || !strings.Contains(p, "turns 3; read them with lazy_show or lazy show slug") {
		t.Fatalf("prompt %.300q", p)
	}
	if WithUndelivered("only", "slug", nil) != "only" {
		t.Fatal("nothing pending must leave the prompt as it was")
	}
}
