package web

import (
	"context"
	"github.com/lazyorch/lazy/attempts"
	"net/http"
	"strings"

	"github.com/lazyorch/lazy/internal/gitcli"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/review"
	"github.com/lazyorch/lazy/task"
)

// Diff bounds: a page shows this much unless asked for all of it, so a
// vendored directory in a diff cannot make the page unusable.
const (
	diffFiles     = 30
	diffFileLines = 400
	diffAllLines  = 20000
)

// diffFile is one file of a unified diff.
type diffFile struct {
	Name    string
	Lines   []diffLine
	Hidden  int // lines left out by the bound
	Added   int
	Removed int
}

type diffLine struct {
	Class string // add, del, hunk, meta or ""
	Text  string
}

// diff is a bounded, parsed diff.
type diff struct {
	Files       []diffFile
	HiddenFiles int
	Bounded     bool // something was left out; "show more" shows all
	Empty       bool
}

// parseDiff splits git's unified diff by file, classifies each line, and
// keeps at most maxFiles files of at most maxLines lines each.
func parseDiff(out string, maxFiles, maxLines int) diff {
	var d diff
	var cur *diffFile
	total := 0
	for line := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(line, "diff --git ") {
			if len(d.Files) >= maxFiles {
				d.HiddenFiles++
				d.Bounded = true
				cur = nil
				continue
			}
			name := strings.TrimPrefix(line, "diff --git ")
			if i := strings.Index(name, " b/"); i >= 0 {
				name = name[i+3:]
			}
			d.Files = append(d.Files, diffFile{Name: name})
			cur = &d.Files[len(d.Files)-1]
			continue
		}
		if cur == nil || line == "" {
			continue // every diff line has a prefix; "" is the output's end
		}
		var cls string
		switch {
		case strings.HasPrefix(line, "+++ "), strings.HasPrefix(line, "--- "), strings.HasPrefix(line, "index "), strings.HasPrefix(line, "new file"), strings.HasPrefix(line, "deleted file"), strings.HasPrefix(line, "similarity"), strings.HasPrefix(line, "rename "), strings.HasPrefix(line, "Binary files"):
			cls = "meta"
		case strings.HasPrefix(line, "@@"):
			cls = "hunk"
		case strings.HasPrefix(line, "+"):
			cls = "add"
			cur.Added++
		case strings.HasPrefix(line, "-"):
			cls = "del"
			cur.Removed++
		}
		if cls == "meta" && !strings.HasPrefix(line, "Binary") && !strings.HasPrefix(line, "new file") && !strings.HasPrefix(line, "deleted file") && !strings.HasPrefix(line, "rename") {
			continue // the file header says it already
		}
		if len(cur.Lines) >= maxLines || total >= diffAllLines {
			cur.Hidden++
			d.Bounded = true
			continue
		}
		total++
		cur.Lines = append(cur.Lines, diffLine{Class: cls, Text: line})
	}
	d.Empty = len(d.Files) == 0
	return d
}

// reviewRange is the range lazy diff shows (review's range): the
// branch this machine made for the task (or the one its slug derives,
// never a name from the record) against its merge base with the branch
// it merges into, so work merged in from upstream is not counted as the
// task's. The worktree's uncommitted files come with it.
func (s *Server) reviewRange(ctx context.Context, id string) (*review.Review, []string, error) {
	env := s.Env()
	r, err := env.Review().ReviewRange(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	var uncommitted []string
	if d, err := env.Review().Diff(ctx, id, false, 0); err == nil {
		uncommitted = d.Uncommitted
	}
	return r, uncommitted, nil
}

// branchDiff is the change from one commit to another.
func (s *Server) branchDiff(ctx context.Context, from, to string, all bool) diff {
	if !task.ValidHex(from) || !task.ValidHex(to) {
		return diff{Empty: true}
	}
	out, err := gitcli.New(s.RepoDir, "diff", "--no-color", "--no-ext-diff", "--find-renames", from, to).String(ctx)
	if err != nil {
		return diff{Empty: true}
	}
	if all {
		return parseDiff(out, 1<<30, diffAllLines)
	}
	return parseDiff(out, diffFiles, diffFileLines)
}

// diffStat is git's summary of the same change.
func (s *Server) diffStat(ctx context.Context, from, to string) string {
	if !task.ValidHex(from) || !task.ValidHex(to) {
		return ""
	}
	out, err := gitcli.New(s.RepoDir, "diff", "--stat", from, to).String(ctx)
	if err != nil {
		return ""
	}
	return strings.TrimRight(out, "\n")
}

// pageClip is how much of one text the task page shows.
const pageClip = 64 << 10

// taskData is what the task page shows: the record as one bounded read
// loads it (Store.ReadTexts), every text cut to pageClip.
func (s *Server) taskData(r *http.Request, id string) (map[string]any, error) {
	sn, err := s.Store.Load(id)
	if err != nil {
		return nil, err
	}
	tx, err := s.Store.ReadTexts(sn)
	if err != nil {
		// The page still shows the task: its status and actions matter most.
		tx = &task.Texts{Truncated: []string{"its goal, turns and comments could not be read: " + err.Error()}}
	}
	tx.Clip(pageClip, "lazy show "+sn.Task.Slug+" --full shows it whole")
	goal, turns, comments := tx.Goal, tx.Turns, tx.Comments
	hist, _ := s.Store.History(sn)
	if cut := s.Store.HistoryCut(len(hist)); cut != "" {
		tx.Truncated = append(tx.Truncated, cut)
	}
	sum := task.NewSummary(&sn.Task)
	all := r.URL.Query().Get("diff") == "all"
	d, stat := diff{Empty: true}, ""
	var uncommitted []string
	if rg, unc, err := s.reviewRange(r.Context(), sn.Task.ID); err == nil {
		d, stat, uncommitted = s.branchDiff(r.Context(), rg.MergeBase, rg.BranchSHA, all), s.diffStat(r.Context(), rg.MergeBase, rg.BranchSHA), unc
	}
	overlaps := s.taskOverlaps(r.Context(), sn)
	// A gate run is this machine's only if its own record says so; the
	// protected paths the change touches wait for a human.
	env := s.Env()
	protected, _ := env.Landing().Gates().ProtectedChanges(r.Context(), sn)
	attempts, of := s.attempts(r.Context(), sn)
	entries, offset := readLog(proto.ForTask(s.LazyDir, sn.Task.ID), logPageEntries)
	session := s.session(r)
	act := s.canAct(r)
	data := map[string]any{
		"Task": sum, "Live": s.Marks.Substate(&sum), "Progress": s.progress(&sum), "Goal": goal, "Session": sn.Session,
		"Turns": turns, "Comments": comments, "Truncated": tx.Truncated, "History": hist, "Diff": d, "DiffStat": stat, "Uncommitted": uncommitted,
		"DiffAll": all, "Pending": sn.Violations.Pending, "Overlaps": overlaps, "GateRecord": env.Landing().Gates().VerifyGate(sn.Task.ID, sn.Task.Gate), "Protected": protected, "Log": entries, "LogOffset": offset,
		"Working": sn.Task.Status == machine.Working, "Head": headOf(sn), "Attempts": attempts, "AttemptOf": of,
		"Actions": act, "CSRF": "", "Can": allowed(sn.Task.Status),
		"Flash": actionWords[r.URL.Query().Get("done")], "Error": "", "Draft": map[string]string{},
	}
	if act {
		data["CSRF"] = csrf(session)
	}
	return data, nil
}

// taskOverlaps is the task's overlaps: only an unfinished task started
// on this machine has a branch here to compare, so any other has none
// and costs no list.
func (s *Server) taskOverlaps(ctx context.Context, sn *task.Snapshot) review.TaskOverlaps {
	env := s.Env()
	if sn.Task.Status.IsTerminal() || !env.Owns(sn) {
		return review.TaskOverlaps{}
	}
	entries, err := s.recentList()
	if err != nil {
		return review.TaskOverlaps{}
	}
	return s.overlaps(ctx, entries)[sn.Task.ID]
}

// attemptOf is what an attempt's page says of its group, to lead back
// to the comparison.
type attemptOf struct {
	K              int
	GroupID, Group string
}

// attempts is the comparison of a group's attempts (what lazy show
// prints: the capabilities build it for every surface), or for an attempt its
// group; nil for any other task.
func (s *Server) attempts(ctx context.Context, sn *task.Snapshot) (*attempts.Comparison, *attemptOf) {
	switch {
	case sn.Task.IsAttemptGroup():
		env := s.Env()
		v, err := env.Attempts().Compare(ctx, sn.Task.ID)
		if err != nil {
			return nil, nil
		}
		return v, nil
	case sn.Task.AttemptOf != "":
		of := &attemptOf{K: sn.Task.Attempt, GroupID: sn.Task.AttemptOf, Group: sn.Task.AttemptOf}
		if g, err := s.Store.Load(sn.Task.AttemptOf); err == nil {
			of.Group = g.Task.Slug
		}
		return nil, of
	}
	return nil, nil
}

func headOf(sn *task.Snapshot) string {
	return sn.Commit.String()
}

func (s *Server) task(w http.ResponseWriter, r *http.Request) {
	id, err := s.Store.Resolve(r.PathValue("id"))
	if err != nil {
		fail(w, http.StatusNotFound, err.Error())
		return
	}
	data, err := s.taskData(r, id)
	if err != nil {
		fail(w, http.StatusInternalServerError, "lazy could not read the task: "+err.Error())
		return
	}
	s.render(w, "task.html", data)
}
