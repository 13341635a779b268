// Package ghstate is the state file of the fake gh (internal/testfakes/fakegh): the
// fake reads and writes it, and the e2e tests play the forge by editing
// it, so both use these one declarations and cannot drift apart.
package ghstate

// State is the fake forge: one repository's settings and pull requests.
type State struct {
	LoggedOut bool   `json:"logged_out,omitempty"`
	Repo      string `json:"repo"`                 // what -R must say
	RemoteDir string `json:"remote_dir,omitempty"` // bare repository for headRefOid
	// Disallowed merge methods (squash, merge, rebase).
	Disallowed []string `json:"disallowed,omitempty"`
	// HangBefore and HangAfter name a command ("pr create") during which
	// fakegh blocks until killed, before acting or after its effect is
	// saved: the kill -9 tests use them. The pid of a hanging fakegh is
	// written to FAKEGH_STATE.hang.
	// NoAutoMerge refuses --auto, as repositories without auto-merge do.
	NoAutoMerge bool   `json:"no_auto_merge,omitempty"`
	HangBefore  string `json:"hang_before,omitempty"`
	HangAfter   string `json:"hang_after,omitempty"`
	PRs         []*PR  `json:"prs"`
	// Logs maps an Actions job id to its failed steps' log.
	Logs map[string]string `json:"logs,omitempty"`
}

// PR is one pull request in gh's --json vocabulary.
type PR struct {
	Number            int              `json:"number"`
	State             string           `json:"state"` // OPEN, CLOSED, MERGED
	IsDraft           bool             `json:"isDraft"`
	Head              string           `json:"headRefName"`
	Base              string           `json:"baseRefName"`
	Title             string           `json:"title"`
	Body              string           `json:"body"`
	HeadOid           string           `json:"headRefOid"`
	ReviewDecision    string           `json:"reviewDecision"`
	MergeStateStatus  string           `json:"mergeStateStatus"`
	MergeCommit       string           `json:"merge_commit,omitempty"`
	AutoMerge         string           `json:"auto_merge,omitempty"`
	StatusCheckRollup []map[string]any `json:"statusCheckRollup"`
	Reviews           []map[string]any `json:"reviews"`
	Comments          []map[string]any `json:"comments"`
}

// Hangs implements fakecli.State.
func (st *State) Hangs() (before, after string) { return st.HangBefore, st.HangAfter }
