package landing

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/forge"
	"github.com/lazyorch/lazy/task"
)

// TestRemoteAcceptNumbersAcrossARevisedPlan: when the pre-accept turn
// moves the branch, the plan is announced again with the resubmit phase,
// and the phases go on being numbered from where they were.
func TestRemoteAcceptNumbersAcrossARevisedPlan(t *testing.T) {
	rec := &stepNarrator{}
	a := &remoteAccept{say: func(f func(Narrator)) { f(rec) }}
	a.announce(RemoteAcceptPlan(true, false, false))
	a.begin("pre-accept")
	a.announce(RemoteAcceptPlan(true, true, false))
	for _, id := range []string{"resubmit", "record", "request-merge", "check-remote", "finish", "cleanup"} {
		a.begin(id)
	}
	want := []string{
		"plan pre-accept,record,request-merge,check-remote,finish,cleanup", "step pre-accept 1/6",
		"plan pre-accept,resubmit,record,request-merge,check-remote,finish,cleanup",
		"step resubmit 2/7", "step record 3/7", "step request-merge 4/7", "step check-remote 5/7", "step finish 6/7", "step cleanup 7/7",
	}
	if strings.Join(rec.heard, "|") != strings.Join(want, "|") {
		t.Fatalf("heard %q, want %q", rec.heard, want)
	}
}

// viewFails is a forge whose pull requests cannot be read back.
type viewFails struct{ forge.Forge }

func (viewFails) View(context.Context, int) (*forge.PR, error) {
	return nil, errors.New("HTTP 502")
}

// TestRemoteAcceptCheckRemoteSaysTheMergeWasRequested: a pull request
// that cannot be read back after its merge was requested is an error
// that says the merge was asked for and that lazy accept checks again.
func TestRemoteAcceptCheckRemoteSaysTheMergeWasRequested(t *testing.T) {
	a := &remoteAccept{say: func(func(Narrator)) {}, slug: "fix-it", fg: viewFails{},
		rec: &task.ForgeRecord{Number: 7}, res: &AcceptResult{}}
	_, err := a.checkRemote(context.Background())
	if err == nil || !strings.Contains(err.Error(), "merge of pull request #7 was requested") || !strings.Contains(err.Error(), "lazy accept fix-it checks again") {
		t.Fatalf("got %v", err)
	}
	if a.res.PR != nil {
		t.Fatalf("a pull request nobody read was recorded: %+v", a.res.PR)
	}
}
