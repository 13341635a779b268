package reconcile

import (
	"context"
	"fmt"
	"strings"
)

// checkCleanups finds accepts this machine recorded complete and killed
// before their cleanup was done (the local record of the accept says
// what was still to remove) and, when repairing, finishes each: an
// accepted task's worktree and branch go as the accept would have
// removed them, or stay, recorded on the task with why.
// It returns the worktrees and branches its findings name, which the
// checks after it leave to them.
func (d *doctor) checkCleanups(ctx context.Context, only string, repair bool) ([]Finding, map[string]bool) {
	covered := map[string]bool{}
	pending, err := d.env.Landing().Cleanups().PendingCleanups()
	if err != nil {
		return []Finding{{Kind: "interrupted-cleanup", Detail: "could not list this machine's accept records", Error: err.Error()}}, covered
	}
	var out []Finding
	for _, p := range pending {
		if only != "" && p.TaskID != only {
			continue
		}
		if !repair {
			covered[p.Worktree], covered[p.Branch] = true, true
		}
		f := Finding{TaskID: p.TaskID, Slug: p.Slug, Kind: "interrupted-cleanup", Detail: p.Describe(),
			Action: "would remove them, as the accept would have (a worktree with uncommitted changes stays, recorded on the task)"}
		if repair {
			done, err := d.env.Landing().Cleanups().FinishCleanup(ctx, p)
			if err != nil {
				f.Error = err.Error()
			} else {
				f.Action, f.Repaired = strings.Join(done, "; "), true
			}
		}
		out = append(out, f)
	}
	return out, covered
}

// checkLeftCheckouts finds the checkouts accepts made to merge into a
// branch no worktree has checked out, and left when they were killed:
// a clean one is removed, one with changes is reported.
func (d *doctor) checkLeftCheckouts(ctx context.Context, only string, repair bool) []Finding {
	var out []Finding
	for _, l := range d.env.Landing().Cleanups().LeftCheckouts(ctx) {
		if only != "" && l.TaskID != only {
			continue
		}
		f := Finding{TaskID: l.TaskID, Kind: "left-accept-checkout"}
		if e := d.entry(l.TaskID); e != "" {
			f.Slug = e
		}
		if l.Dirty {
			f.Detail = fmt.Sprintf("%s is a checkout of %s an accept made to merge in and left when it was killed; it has uncommitted changes, so lazy leaves it (inspect them, then git worktree remove --force %s)", l.Dir, l.Branch, l.Dir)
			out = append(out, f)
			continue
		}
		f.Detail = fmt.Sprintf("%s is a checkout of %s an accept made to merge in and left when it was killed", l.Dir, l.Branch)
		f.Action = "would remove it (it holds no changes)"
		if repair {
			if err := d.env.Landing().Cleanups().RemoveLeftCheckout(ctx, l); err != nil {
				f.Error = err.Error()
			} else {
				f.Action, f.Repaired = "removed it (it held no changes)", true
			}
		}
		out = append(out, f)
	}
	return out
}

// entry is the slug of task id, or "".
func (d *doctor) entry(id string) string {
	if sn, err := d.snapshots.load(id); err == nil {
		return sn.Task.Slug
	}
	return ""
}
