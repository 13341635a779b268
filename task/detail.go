package task

import "github.com/lazyorch/lazy/agent"

// Detail is the public JSON shape of one task, shared by lazy show --json
// and the MCP lazy_show tool so a script and an LLM read the same keys.
// Every list is [] rather than null; hashes are hex; times RFC 3339.
type Detail struct {
	Summary
	Live string `json:"live_substate,omitempty"`
	// Permissions is what the task's agent may do on this machine, for
	// the caller to fill (nil: another machine runs it).
	Permissions *agent.TaskPermissions `json:"permissions,omitempty"`
	Refused     []Refused              `json:"merge_refused_ops,omitempty"`
	// GateRecord is every merge-gate run the task keeps, and a skip.
	GateRecord *GateRecord `json:"gate_record,omitempty"`
	Goal       string      `json:"goal"`
	Session    *Session    `json:"session,omitempty"`
	Violations *Violations `json:"violations,omitempty"`
	// PendingViolations are the files that still owe a decision (see
	// lazy unblock --approve-file).
	PendingViolations []string `json:"pending_violations"`
	TurnList          []Turn   `json:"turn_list"`
	TurnsOmitted      int      `json:"turns_omitted"` // earlier turns left out (lastTurns)
	// Truncated says, in words for a user, what this view left out or
	// cut: a record over lazy's limits for one read (gitstore.MaxRecordBytes,
	// MaxRecordEntries), or texts cut by Clip. Empty when nothing was.
	Truncated   []string  `json:"truncated"`
	CommentList []Comment `json:"comment_list"`
	Journal     []Comment `json:"journal"`
	History     []Change  `json:"history"`
	Commit      string    `json:"commit"`
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Clip cuts every text d shows to max bytes (see ClipText), visibly, and
// notes it in Truncated; hint, if not empty, says how to see them whole.
func (d *Detail) Clip(max int, hint string) {
	n := clipAll(&d.Goal, d.TurnList, d.CommentList, max, hint) + clipAll(new(string), nil, d.Journal, max, hint)
	if n > 0 {
		d.Truncated = append(d.Truncated, clipped(n, max))
	}
}

// NewDetail is the Detail of sn, from its texts and history as a store
// read them (within the bounds of one read of a record); cut says that
// the history stopped at its bound ("" when it did not). lastTurns > 0
// keeps only the most recent turns (the MCP view, bounded for a context
// window); the live substate is the caller's to fill.
func NewDetail(sn *Snapshot, tx *Texts, hist []Change, cut string, lastTurns int) *Detail {
	all := tx.Comments
	d := &Detail{Summary: NewSummary(&sn.Task), Goal: tx.Goal, Session: sn.Session, Refused: sn.Task.MergeRefused, GateRecord: sn.Task.Gate,
		PendingViolations: append([]string{}, sn.Violations.Pending...), TurnList: append([]Turn{}, tx.Turns...),
		CommentList: []Comment{}, Journal: []Comment{}, History: append([]Change{}, hist...), Commit: sn.Commit.String(),
		Truncated: append([]string{}, tx.Truncated...)}
	if cut != "" {
		d.Truncated = append(d.Truncated, cut)
	}
	if lastTurns > 0 && len(d.TurnList) > lastTurns {
		d.TurnsOmitted = len(d.TurnList) - lastTurns
		d.TurnList = d.TurnList[d.TurnsOmitted:]
	}
	for _, c := range all {
		if c.Journal != nil {
			// A record from a remote or edited by hand may say null:
			// the shape promises lists.
			j := *c.Journal
			j.Decisions, j.Deferrals = nonNilStrings(j.Decisions), nonNilStrings(j.Deferrals)
			c.Journal = &j
			d.Journal = append(d.Journal, c)
		} else {
			d.CommentList = append(d.CommentList, c)
		}
	}
	if len(sn.Violations.Pending) > 0 || len(sn.Violations.Decided) > 0 {
		v := sn.Violations
		v.Pending = nonNilStrings(v.Pending)
		d.Violations = &v
	}
	return d
}
