package task

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// ForgeRecord is task.json's record of the pull request lazy submit
// opened for the task. It is written before the push (so a crash can be
// finished by submitting again, which finds the pull request by its head
// branch) and refreshed by every submit and by the daemon's forge sync.
type ForgeRecord struct {
	Kind   string `json:"kind"`   // github, gitea
	Remote string `json:"remote"` // the git remote pushed to
	Head   string `json:"head"`   // the branch pushed
	Base   string `json:"base"`   // the branch the pull request targets
	Number int    `json:"number,omitempty"`
	URL    string `json:"url,omitempty"`
	// HeadSHA is the commit last pushed: the lease of the next push.
	HeadSHA string `json:"head_sha,omitempty"`
	Draft   bool   `json:"draft,omitempty"`
	// State, Checks and Review are the forge's last word (forge.State*,
	// forge.Checks*, forge.Review*), for show, list and status.
	State  string `json:"state,omitempty"`
	Checks string `json:"checks,omitempty"`
	Review string `json:"review,omitempty"`
	// Revising is set by an unblock of a submitted task: the pull
	// request stays open while the agent works on it.
	Revising bool `json:"revising,omitempty"`
	// MergeMethod and MergeRequested record a forge accept's request,
	// MergeCommit the commit the forge merged as.
	MergeMethod    string     `json:"merge_method,omitempty"`
	MergeRequested *time.Time `json:"merge_requested,omitempty"`
	MergeCommit    string     `json:"merge_commit,omitempty"`
	// Delivered lists the checks and comments already delivered to the
	// agent as feedback turns, so none is delivered twice.
	Delivered []string  `json:"delivered,omitempty"`
	SyncedAt  time.Time `json:"synced_at,omitempty"`
}

// MaxDelivered bounds ForgeRecord.Delivered; the oldest keys go first.
const MaxDelivered = 500

// WasDelivered reports whether key was delivered already.
func (f *ForgeRecord) WasDelivered(key string) bool { return slices.Contains(f.Delivered, key) }

// MarkDelivered records key as delivered.
func (f *ForgeRecord) MarkDelivered(key string) {
	if f.WasDelivered(key) {
		return
	}
	f.Delivered = append(f.Delivered, key)
	if n := len(f.Delivered) - MaxDelivered; n > 0 {
		f.Delivered = slices.Delete(f.Delivered, 0, n)
	}
}

// ForgePending reports whether a merging task's merge lives on the forge
// (spec: merging without accept_in_flight_from).
func (t *Task) ForgePending() bool {
	return t.Forge != nil && t.Forge.Number > 0 && t.Accept == nil
}

func (f *ForgeRecord) clone() *ForgeRecord {
	c := *f
	c.Delivered = slices.Clone(f.Delivered)
	if f.MergeRequested != nil {
		t := *f.MergeRequested
		c.MergeRequested = &t
	}
	return &c
}

// checkForge validates a forge record: it comes from remotes and from
// forges, so nothing in it is trusted. The URL is printed as a link and
// the branches and remote reach git's argv.
func checkForge(f *ForgeRecord) error {
	if f == nil {
		return nil
	}
	switch f.Kind {
	case "github", "gitlab", "gitea":
	default:
		return fmt.Errorf("forge record names an unknown forge %q", f.Kind)
	}
	if f.Number < 0 {
		return fmt.Errorf("forge record has a negative pull request number %d", f.Number)
	}
	if f.URL != "" {
		u, err := url.Parse(f.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.ContainsAny(f.URL, " \t\r\n\x00\x1b") {
			return fmt.Errorf("forge record's URL %q is not an http(s) link", f.URL)
		}
	}
	if f.Number > 0 && f.URL == "" {
		return fmt.Errorf("forge record has pull request %d but no URL", f.Number)
	}
	// In a fixed order, so a record with several bad names is always
	// reported the same way (list output and its cache are compared).
	for _, n := range [...]struct{ what, b string }{{"head", f.Head}, {"base", f.Base}, {"remote", f.Remote}} {
		if err := ValidBranchName(n.b); err != nil {
			return fmt.Errorf("forge record's %s: %w", n.what, err)
		}
	}
	for _, sha := range []string{f.HeadSHA, f.MergeCommit} {
		if sha != "" && !ValidHex(sha) {
			return fmt.Errorf("forge record names %q, not a commit id", sha)
		}
	}
	for _, s := range []string{f.State, f.Checks, f.Review, f.MergeMethod} {
		if len(s) > 40 || strings.ContainsAny(s, "\x00\x1b\r\n") {
			return fmt.Errorf("forge record holds a malformed state %q", s)
		}
	}
	return nil
}
