// Package glstate is the state file of the fake glab (internal/testfakes/fakeglab):
// the fake reads and writes it, and the e2e tests play GitLab by editing
// it, so both use these one declarations and cannot drift apart.
package glstate

// State is the fake GitLab: one project and its merge requests.
type State struct {
	LoggedOut bool   `json:"logged_out,omitempty"`
	Host      string `json:"host"`                 // what --hostname and -R must name
	Project   string `json:"project"`              // GROUP/NAME
	RemoteDir string `json:"remote_dir,omitempty"` // bare repository for sha
	// SquashOption is the project's squash_option: always, never,
	// default_on or default_off (the default).
	SquashOption string `json:"squash_option,omitempty"`
	// HangBefore and HangAfter name an operation ("mr create", "mr
	// merge") during which fakeglab blocks until killed.
	HangBefore string `json:"hang_before,omitempty"`
	HangAfter  string `json:"hang_after,omitempty"`
	MRs        []*MR  `json:"mrs"`
	// Traces maps a job id to its log.
	Traces map[string]string `json:"traces,omitempty"`
}

// MR is one merge request. Jobs and Notes are in the API's vocabulary.
type MR struct {
	IID              int              `json:"iid"`
	State            string           `json:"state"` // opened, closed, merged
	Title            string           `json:"title"`
	Description      string           `json:"description"`
	SourceBranch     string           `json:"source_branch"`
	TargetBranch     string           `json:"target_branch"`
	SHA              string           `json:"sha"`
	MergeCommitSHA   string           `json:"merge_commit_sha,omitempty"`
	SquashCommitSHA  string           `json:"squash_commit_sha,omitempty"`
	AutoMerge        bool             `json:"merge_when_pipeline_succeeds"`
	Squash           bool             `json:"squash"`
	ApprovalsLeft    int              `json:"approvals_left"`
	ApprovedBy       []string         `json:"approved_by,omitempty"`
	ChangesRequested bool             `json:"changes_requested,omitempty"`
	Pipeline         *Pipeline        `json:"head_pipeline,omitempty"`
	Jobs             []map[string]any `json:"jobs,omitempty"` // the head pipeline's
	Notes            []map[string]any `json:"notes"`
}

// Pipeline is a merge request's head pipeline.
type Pipeline struct {
	ID     int64  `json:"id"`
	Status string `json:"status"` // created, pending, running, success, failed, canceled...
}

// Hangs implements fakecli.State.
func (st *State) Hangs() (before, after string) { return st.HangBefore, st.HangAfter }
