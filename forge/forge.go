// Package forge talks to the code forge a repository merges through:
// GitHub through the user's gh CLI, GitLab through the user's glab CLI,
// Gitea and Forgejo through their REST API. lazy submit opens or updates a pull request there, lazy accept
// asks the forge to merge it, and the daemon reads its state back.
//
// Adding a forge is one file implementing Forge and one case in Open;
// the operations never name a forge.
package forge

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Forge is a pull-request host for one repository.
type Forge interface {
	// Kind names the forge (github, gitlab, gitea).
	Kind() string
	// Ready fails with a one-sentence error when the forge cannot be used
	// (its CLI is missing, nobody is logged in, no token). It is called
	// before anything is pushed.
	Ready(ctx context.Context) error
	// Open opens the pull request of spec.Head, or updates the open one
	// that already has that head branch: a pull request is always found
	// by its head before one is created, so retrying never makes two.
	Open(ctx context.Context, spec Spec) (*PR, error)
	// View reads a pull request's state, checks, reviews and comments.
	View(ctx context.Context, number int) (*PR, error)
	// Merge asks the forge to merge with method (squash, merge or rebase,
	// see Methods). When checks or reviews still block the merge it asks
	// the forge to merge once they pass where the forge supports that,
	// and returns with the pull request still open; the caller views it
	// to learn which.
	Merge(ctx context.Context, number int, method string) error
	// Methods lists the merge methods the repository allows.
	Methods(ctx context.Context) ([]string, error)
	// Comment adds a comment to the pull request.
	Comment(ctx context.Context, number int, body string) error
	// Close closes the pull request unmerged, after commenting why.
	Close(ctx context.Context, number int, comment string) error
}

// Spec is what a pull request should say.
type Spec struct {
	Head, Base  string // branch names, validated by the caller
	Title, Body string
	Draft       bool
}

// PR states, normalized across forges.
const (
	StateOpen   = "open"
	StateMerged = "merged"
	StateClosed = "closed" // closed without merging
)

// Check summaries, normalized.
const (
	ChecksPassing = "passing"
	ChecksFailing = "failing"
	ChecksPending = "pending"
	ChecksNone    = ""
)

// Review decisions, normalized.
const (
	ReviewApproved         = "approved"
	ReviewChangesRequested = "changes_requested"
	ReviewRequired         = "review_required"
)

// PR is a pull request as lazy sees it.
type PR struct {
	Number      int
	URL         string
	State       string // StateOpen, StateMerged or StateClosed
	Draft       bool
	Head, Base  string
	HeadSHA     string
	MergeCommit string
	Review      string // ReviewApproved, ReviewChangesRequested, ReviewRequired or ""
	// Blocked is the forge's own word on why an open pull request cannot
	// merge yet, when it says (GitHub's mergeStateStatus: BLOCKED,
	// BEHIND, DIRTY...); "" when mergeable or unknown.
	Blocked  string
	Checks   []Check
	Comments []Comment // reviews and conversation comments, oldest first
}

// Check is one CI status check.
type Check struct {
	Name  string
	State string // ChecksPassing, ChecksFailing or ChecksPending
	URL   string
	// Summary is what the forge says about the result (a description or
	// title), bounded by the reader.
	Summary string
	// Log is the tail of a failed check's CI log, when the forge can
	// read it (see LogReader); bounded.
	Log string
}

// MaxLog bounds a CI log excerpt: the tail, where the failure is.
const MaxLog = 3000

// LogReader is implemented by forges that can read a failed check's CI
// log. Optional: feedback without it carries the check's summary and link.
type LogReader interface {
	CheckLog(ctx context.Context, c Check) (string, error)
}

// Tail keeps the last n bytes of s on a line boundary, marking the cut.
func Tail(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	if len(s) <= n {
		return s
	}
	cut := len(s) - n
	if i := strings.IndexByte(s[cut:], '\n'); i >= 0 {
		cut += i + 1
	}
	return "[... " + fmt.Sprint(cut) + " earlier bytes cut by lazy]\n" + s[cut:]
}

// Comment is a review or a conversation comment.
type Comment struct {
	ID     string // unique per forge and pull request
	Author string
	Body   string
	URL    string
	At     time.Time
	// Review is the review state for a review (changes_requested,
	// commented, approved), "" for a plain comment.
	Review string
}

// ChecksState summarizes the checks: failing if any failed, else pending if
// any is pending, else passing; "" with no checks.
func (p *PR) ChecksState() string {
	out := ChecksNone
	for _, c := range p.Checks {
		switch c.State {
		case ChecksFailing:
			return ChecksFailing
		case ChecksPending:
			out = ChecksPending
		case ChecksPassing:
			if out == ChecksNone {
				out = ChecksPassing
			}
		}
	}
	return out
}

// Methods lazy knows, in the order it prefers them.
var knownMethods = [...]string{"squash", "merge", "rebase"}

// PickMethod returns want when allowed, else the first allowed method
// in lazy's order of preference.
func PickMethod(want string, allowed []string) (string, error) {
	has := func(m string) bool {
		for _, a := range allowed {
			if a == m {
				return true
			}
		}
		return false
	}
	if want == "" {
		want = "squash"
	}
	valid := false
	for _, m := range knownMethods {
		valid = valid || m == want
	}
	if !valid {
		return "", fmt.Errorf("git config lazy.forge.mergeMethod = %q is not squash, merge or rebase", want)
	}
	if has(want) || len(allowed) == 0 {
		return want, nil
	}
	for _, m := range knownMethods {
		if has(m) {
			return m, nil
		}
	}
	return "", errors.New("the repository on the forge allows no merge method lazy knows (squash, merge, rebase)")
}

// Config is what Open needs, read from git config by the caller.
type Config struct {
	// Kind is lazy.forge (github, gitlab, gitea, forgejo), or "" to infer
	// it from RemoteURL.
	Kind string
	// RemoteURL is the URL of the remote lazy pushes to.
	RemoteURL string
	// Repo overrides the OWNER/NAME (or HOST/OWNER/NAME) parsed from the
	// remote URL (lazy.forge.repo).
	Repo string
	// Token is lazy.forge.token, for REST forges.
	Token string
	// Dir is the repository's working directory, where CLIs run.
	Dir string
	// GH is the gh executable (default "gh"); tests point it at a fake.
	GH string
	// Glab is the glab executable (default "glab").
	Glab string
	// Credential asks git's credential helper for a token for a URL; nil
	// means none.
	Credential func(ctx context.Context, u *url.URL) (string, error)
}

// Open returns the forge that cfg names.
func Open(cfg Config) (Forge, error) {
	kind := strings.ToLower(strings.TrimSpace(cfg.Kind))
	// GitLab projects may sit in nested groups (group/sub/name); the
	// other forges have exactly OWNER/NAME.
	loc, err := parseRemote(cfg.RemoteURL, true)
	if err == nil && strings.Contains(loc.Owner, "/") && kind != "gitlab" && (kind != "" || !gitLabHost(loc.Host)) {
		loc, err = ParseRemote(cfg.RemoteURL)
	}
	if err != nil && cfg.Repo == "" {
		return nil, err
	}
	if kind == "" {
		switch {
		case loc == nil:
			return nil, errors.New("cannot tell which forge the remote is on; set git config lazy.forge to github, gitlab or gitea")
		case loc.Host == "github.com" || strings.HasPrefix(loc.Host, "github."):
			kind = "github"
		case gitLabHost(loc.Host):
			kind = "gitlab"
		case strings.Contains(loc.Host, "gitea") || strings.Contains(loc.Host, "forgejo") || loc.Host == "codeberg.org":
			kind = "gitea"
		default:
			return nil, fmt.Errorf("cannot tell which forge %s is; set git config lazy.forge to github, gitlab or gitea", loc.Host)
		}
	}
	switch kind {
	case "github":
		return newGitHub(cfg, loc)
	case "gitlab":
		return newGitLab(cfg, loc)
	case "gitea", "forgejo":
		return newGitea(cfg, loc)
	}
	return nil, fmt.Errorf("git config lazy.forge = %q is not a forge lazy supports (github, gitlab, gitea, forgejo)", cfg.Kind)
}

// gitLabHost reports whether a host is GitLab's by its name: gitlab.com
// and the usual gitlab.example.com of a self-hosted instance. Any other
// host is GitLab when git config lazy.forge says so.
func gitLabHost(h string) bool {
	return h == "gitlab.com" || strings.HasPrefix(h, "gitlab.")
}

// Location is where a remote URL points: a host and an OWNER/NAME path.
type Location struct {
	Scheme string // https or http ("https" for ssh remotes)
	Host   string // host[:port]
	// Owner is the user or organization; on GitLab it may be a nested
	// group path (group/subgroup).
	Owner string
	Name  string
}

// ParseRemote understands https://host/owner/name(.git),
// ssh://git@host/owner/name and the scp form git@host:owner/name.
func ParseRemote(raw string) (*Location, error) { return parseRemote(raw, false) }

// parseRemote is ParseRemote; nested also takes GitLab's
// group/subgroup/name paths, the groups going into Owner.
func parseRemote(raw string, nested bool) (*Location, error) {
	raw = strings.TrimSpace(raw)
	bad := fmt.Errorf("the remote URL %q does not name a forge repository (https://HOST/OWNER/NAME or git@HOST:OWNER/NAME); set git config lazy.forge.repo to OWNER/NAME", raw)
	var host, path, scheme string
	switch {
	case strings.Contains(raw, "://"):
		u, err := url.Parse(raw)
		if err != nil {
			return nil, bad
		}
		host, path, scheme = u.Host, u.Path, u.Scheme
		if scheme != "http" && scheme != "https" {
			scheme = "https"
			host = u.Hostname()
		}
	case strings.Contains(raw, ":") && !strings.HasPrefix(raw, "/"):
		at := strings.LastIndex(raw[:strings.Index(raw, ":")], "@")
		host, path, _ = strings.Cut(raw[at+1:], ":")
		scheme = "https"
	default:
		return nil, bad
	}
	parts := strings.Split(strings.Trim(strings.TrimSuffix(path, ".git"), "/"), "/")
	if host == "" || len(parts) < 2 || (len(parts) > 2 && !nested) || len(parts) > 20 || !validHost(host) {
		return nil, bad
	}
	for _, p := range parts {
		if !validSegment(p) {
			return nil, bad
		}
	}
	n := len(parts) - 1
	return &Location{Scheme: scheme, Host: host, Owner: strings.Join(parts[:n], "/"), Name: parts[n]}, nil
}

func validSegment(s string) bool {
	if s == "" || strings.HasPrefix(s, "-") || strings.HasPrefix(s, ".") || len(s) > 100 {
		return false
	}
	return onlyRunes(s, "-_.")
}

func validHost(h string) bool {
	if h == "" || strings.HasPrefix(h, "-") || len(h) > 255 {
		return false
	}
	return onlyRunes(h, "-.:[]")
}

// onlyRunes reports whether s holds only ASCII letters, digits and the
// runes of extra.
func onlyRunes(s, extra string) bool {
	for _, r := range s {
		alnum := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !alnum && !strings.ContainsRune(extra, r) {
			return false
		}
	}
	return true
}

// repoOverride parses lazy.forge.repo: OWNER/NAME or HOST/OWNER/NAME.
func repoOverride(s string, loc *Location) (*Location, error) {
	parts := strings.Split(strings.TrimSpace(s), "/")
	out := &Location{Scheme: "https"}
	if loc != nil {
		*out = *loc
	}
	switch len(parts) {
	case 2:
		out.Owner, out.Name = parts[0], parts[1]
	case 3:
		out.Host, out.Owner, out.Name = parts[0], parts[1], parts[2]
	default:
		return nil, fmt.Errorf("git config lazy.forge.repo = %q is not OWNER/NAME or HOST/OWNER/NAME", s)
	}
	if !validSegment(out.Owner) || !validSegment(out.Name) || (out.Host != "" && !validHost(out.Host)) {
		return nil, fmt.Errorf("git config lazy.forge.repo = %q is not OWNER/NAME or HOST/OWNER/NAME", s)
	}
	return out, nil
}

// Bound cuts text to at most n bytes on a rune boundary, marking the cut.
func Bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "\n[... cut by lazy: " + fmt.Sprint(len(s)-cut) + " more bytes]"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// ValidURL reports whether u is an absolute http(s) URL: the only kind
// lazy stores or prints as a link, since forge replies are untrusted.
func ValidURL(u string) bool {
	p, err := url.Parse(u)
	return err == nil && (p.Scheme == "https" || p.Scheme == "http") && p.Host != "" && !strings.ContainsAny(u, " \t\r\n\x00")
}
