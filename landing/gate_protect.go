package landing

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lazyorch/lazy/gate"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// Protected paths: a task's change that touches what decides its own
// gate (the script the gate runs, the Makefile behind "make test", the
// committed .lazy/gate, the forge's CI configuration, lazy.gate.protect)
// does not land because the gate passed: the candidate would have
// decided its own verdict. It lands only when a human approves those
// files on the accept's own command line (--approve-protected), which is
// recorded on the task and in the landing commit's trailer. No agent,
// builder or daemon path can give that approval.

// ProtectedError says a task's change touches protected paths that no
// human approved: nothing was merged.
type ProtectedError struct {
	Task  string
	Files []string
	// Truncated: the change has more files than lazy reads, so some were
	// not checked (it needs the approval all the same).
	Truncated bool
	// Actor is who asked for the accept: anyone but a human is told a
	// human must run the command.
	Actor machine.Actor
}

func (p *ProtectedError) Error() string {
	files := listProtected(p.Files, p.Truncated)
	who := "a human lands it with"
	if p.Actor != machine.Human {
		who = "only a human can approve them (an agent, a builder or the merge queue never can): ask one to review them and run"
	}
	return fmt.Sprintf("accept %s: its change touches protected paths, which the gate alone may not decide (%s); nothing was merged: review them with lazy diff %s, then %s lazy accept %s --approve-protected",
		p.Task, files, p.Task, who, p.Task)
}

// QueueWhy is why the queue let the task go, short enough for its log.
func (p *ProtectedError) QueueWhy() string {
	return fmt.Sprintf("touches protected paths (%s): parked for a human's lazy accept %s --approve-protected", listProtected(p.Files, p.Truncated), p.Task)
}

// listProtected names the files for a sentence, escaped and bounded.
func listProtected(files []string, truncated bool) string {
	const show = 20
	names := sanitizeAll(files)
	s := strings.Join(names, ", ")
	if len(names) > show {
		s = strings.Join(names[:show], ", ") + fmt.Sprintf(" and %d more", len(names)-show)
	}
	if truncated {
		s += ", and the files past the first " + fmt.Sprint(worktree.MaxRangeFiles) + ", which lazy did not read"
	}
	return s
}

// protectionOf is what an accept into a target whose tip is tip protects
// with gate plan gp, or nil when nothing is (no gate, no forge checks and
// no lazy.gate.protect).
func (e *Gates) protectionOf(ctx context.Context, gp *gatePlan, tip string, forgeChecks bool) (*gate.Protection, error) {
	if gp == nil || !gp.Protecting(gp.cmds, forgeChecks) {
		return nil, nil
	}
	existing, err := e.git().ExistingFiles(ctx, e.Dir(), tip, gate.Named(gp.cmds))
	if err != nil {
		return nil, fmt.Errorf("find the files the gate's commands name: %w", err)
	}
	p := gp.Protected(existing)
	return &p, nil
}

// protectedTouched lists the protected files among what branchTip
// changed since it forked from tip (what an accept onto tip would land
// of it), and whether the change had more files than lazy reads.
func (e *Gates) protectedTouched(ctx context.Context, p *gate.Protection, tip, branchTip string) ([]string, bool, error) {
	if p == nil {
		return nil, false, nil
	}
	names, truncated, err := e.git().RangeFiles(ctx, e.Dir(), tip, branchTip)
	if err != nil {
		return nil, false, fmt.Errorf("list the files the change touches: %w", err)
	}
	return p.Touched(names), truncated, nil
}

// checkProtected refuses an accept of slug whose change (branch onto
// the target at tip) touches protected paths, unless a human approves
// them with this very accept. It returns the files approved ("" none).
func (e *Gates) checkProtected(ctx context.Context, slug string, gp *gatePlan, tip, branch string, forgeChecks bool, opts AcceptOptions) ([]string, error) {
	p, err := e.protectionOf(ctx, gp, tip, forgeChecks)
	if err != nil || p == nil {
		if err != nil {
			err = fmt.Errorf("accept %s: %w", slug, err)
		}
		return nil, err
	}
	branchTip, err := e.git().BranchCommit(ctx, e.Dir(), branch)
	if err != nil {
		return nil, fmt.Errorf("accept %s: its branch %s is missing: %w", slug, branch, err)
	}
	files, truncated, err := e.protectedTouched(ctx, p, tip, branchTip)
	if err != nil {
		return nil, fmt.Errorf("accept %s: %w", slug, err)
	}
	if len(files) == 0 && !truncated {
		return nil, nil
	}
	if !opts.ApproveProtected || e.Actor != machine.Human {
		return nil, &ProtectedError{Task: slug, Files: files, Truncated: truncated, Actor: e.Actor}
	}
	if truncated {
		files = append(files, fmt.Sprintf("(and whatever else of the change past its first %d files)", worktree.MaxRangeFiles))
	}
	return files, nil
}

// approval is the record of a human's approval of files on branchTip.
func (e *Gates) approval(files []string, branchTip string, at time.Time) *task.ProtectedApproval {
	if len(files) > task.MaxApprovedFiles {
		n := len(files) - task.MaxApprovedFiles + 1
		files = append(append([]string(nil), files[:task.MaxApprovedFiles-1]...), fmt.Sprintf("(and %d more)", n))
	}
	return &task.ProtectedApproval{By: string(e.Actor), At: at.UTC().Truncate(time.Second), Files: files, BranchTip: branchTip}
}

// approvedTrailer is the landing commit's record of the approval: the
// files, escaped onto one line and bounded.
func approvedTrailer(files []string) string {
	if len(files) == 0 {
		return ""
	}
	s := listProtected(files, false)
	if len(s) > 1000 {
		s = strings.ToValidUTF8(s[:1000], "") + " ..."
	}
	return "Lazy-Approved-Protected: " + strings.Join(strings.Fields(s), " ") + "\n"
}

// ProtectedView is what a surface shows of a task's protected changes.
type ProtectedView struct {
	// Files are the protected paths the task's change touches (escaped).
	Files []string `json:"files"`
	// Truncated: the change has more files than lazy reads.
	Truncated bool `json:"truncated,omitempty"`
	// Approve is the command a human runs to land it.
	Approve string `json:"approve"`
}

// Line is the one sentence every text surface prints.
func (p *ProtectedView) Line() string {
	return fmt.Sprintf("touches protected paths the gate alone may not decide: %s; it lands only when a human approves them: %s",
		listProtected(p.Files, p.Truncated), p.Approve)
}

// ProtectedChanges reports the protected paths a started, unfinished
// task's change touches against its target's tip now: nil when it
// touches none, or nothing is protected, or it has no branch here.
func (e *Gates) ProtectedChanges(ctx context.Context, sn *task.Snapshot) (*ProtectedView, error) {
	if sn.Session == nil || sn.Task.Status.IsTerminal() || sn.Task.IsAttemptGroup() {
		return nil, nil
	}
	r, _, err := e.review().Measure(ctx, sn, "no work")
	if err != nil {
		return nil, nil // no branch here: nothing to check
	}
	tip, err := e.git().BranchCommit(ctx, e.Dir(), r.Into)
	if err != nil {
		return nil, nil
	}
	gp, err := e.gateAt(ctx, r.Into, tip)
	if err != nil {
		return nil, err
	}
	forgeChecks := gp.Forge == gate.ForgeChecks && (sn.Task.Status == machine.Submitted || sn.Task.Forge != nil)
	p, err := e.protectionOf(ctx, gp, tip, forgeChecks)
	if err != nil || p == nil {
		return nil, err
	}
	files, truncated, err := e.protectedTouched(ctx, p, tip, r.BranchSHA)
	if err != nil || (len(files) == 0 && !truncated) {
		return nil, err
	}
	out := &ProtectedView{Files: []string{}, Truncated: truncated, Approve: "lazy accept " + sanitize.Field(sn.Task.Slug) + " --approve-protected"}
	for _, f := range files {
		out.Files = append(out.Files, sanitize.Field(f))
	}
	return out, nil
}
