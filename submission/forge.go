package submission

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/lazyorch/lazy/forge"
	"github.com/lazyorch/lazy/task"
)

// DefaultRemote is the remote lazy submit pushes to unless --remote or
// git config lazy.forge.remote names another.
const DefaultRemote = "origin"

// submitRemote picks the remote: the flag, the task's earlier submission,
// git config lazy.forge.remote, origin.
func (sv *Service) submitRemote(sn *task.Snapshot, flag string) (string, error) {
	e := sv.Env
	r := strings.TrimSpace(flag)
	if r == "" && sn.Task.Forge != nil {
		r = sn.Task.Forge.Remote
	}
	if r == "" {
		if cfg, err := e.Repo.Config(); err == nil {
			r, _ = cfg.Get("lazy.forge.remote")
		}
	}
	if r == "" {
		r = DefaultRemote
	}
	if err := task.ValidBranchName(r); err != nil {
		return "", fmt.Errorf("remote %q is not a remote name: %w", r, err)
	}
	return r, nil
}

// OpenForge returns the forge behind remote, from git config lazy.forge
// (github, gitlab, gitea, forgejo; inferred from the remote URL when unset),
// lazy.forge.repo and lazy.forge.token. GitHub and GitLab run the gh and
// glab found on PATH.
func (sv *Service) OpenForge(ctx context.Context, remote string) (forge.Forge, error) {
	e := sv.Env
	if err := task.ValidBranchName(remote); err != nil {
		return nil, fmt.Errorf("remote %q is not a remote name: %w", remote, err)
	}
	cfg, err := e.Repo.Config()
	if err != nil {
		return nil, err
	}
	u, err := sv.git().RemoteURL(ctx, e.Dir(), remote)
	if err != nil {
		return nil, fmt.Errorf("the repository has no remote %q; add it (git remote add %s URL) or pass --remote", remote, remote)
	}
	fc := forge.Config{RemoteURL: u, Dir: e.Dir(), Credential: sv.credentialFill}
	fc.Kind, _ = cfg.Get("lazy.forge")
	fc.Repo, _ = cfg.Get("lazy.forge.repo")
	fc.Token, _ = cfg.Get("lazy.forge.token")
	return sv.openForge(fc)
}

// credentialFill asks git's credential helpers for u's password (the
// token), never prompting.
func (sv *Service) credentialFill(ctx context.Context, u *url.URL) (string, error) {
	e := sv.Env
	if strings.ContainsAny(u.Host+u.Path, "\n\x00") {
		return "", fmt.Errorf("malformed URL")
	}
	in := "protocol=" + u.Scheme + "\nhost=" + u.Host + "\npath=" + strings.TrimPrefix(u.Path, "/") + "\n\n"
	out, err := sv.git().CredentialFill(ctx, e.Dir(), []byte(in))
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "password="); ok && v != "" {
			return v, nil
		}
	}
	return "", fmt.Errorf("no credential for %s", u.Host)
}

// ForgeOf opens the forge a task was submitted to.
func (sv *Service) ForgeOf(ctx context.Context, sn *task.Snapshot) (forge.Forge, error) {
	if sn.Task.Forge == nil {
		return nil, fmt.Errorf("%s was never submitted to a forge", sn.Task.Slug)
	}
	return sv.OpenForge(ctx, sn.Task.Forge.Remote)
}

// RecordPR copies what the forge says about a pull request into the
// task's forge record.
func RecordPR(f *task.ForgeRecord, pr *forge.PR, now time.Time) {
	f.Number, f.URL, f.State, f.Checks, f.Review, f.Draft = pr.Number, pr.URL, pr.State, pr.ChecksState(), pr.Review, pr.Draft
	if task.ValidHex(pr.MergeCommit) {
		f.MergeCommit = pr.MergeCommit
	}
	f.SyncedAt = now.UTC().Truncate(time.Second)
}

// ClosePR closes a task's open pull request with a comment saying why,
// for reject and close. It records the outcome as a task comment: the
// task is already abandoned, so a forge failure is reported, not fatal.
func (sv *Service) ClosePR(ctx context.Context, sn *task.Snapshot, why string) error {
	e := sv.Env
	f := sn.Task.Forge
	if f == nil || f.Number <= 0 || f.State == forge.StateMerged || f.State == forge.StateClosed {
		return nil
	}
	fg, err := sv.ForgeOf(ctx, sn)
	if err == nil {
		err = fg.Close(ctx, f.Number, "lazy: "+why+"\n\n"+forgeMarker)
	}
	now := time.Now().UTC().Truncate(time.Second)
	text := fmt.Sprintf("closed pull request #%d (%s)", f.Number, f.URL)
	if err != nil {
		text = fmt.Sprintf("could not close pull request #%d (%s); close it on the forge: %v", f.Number, f.URL, err)
	}
	_, _, uerr := e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Forge != nil && err == nil {
			s.Task.Forge.State = forge.StateClosed
		}
		s.AddComment(task.Comment{Actor: e.Actor, At: now, Text: text})
		return &task.Op{Name: "pr-close", Actor: e.Actor}, nil
	})
	if err != nil {
		return fmt.Errorf("%s is abandoned, but its pull request #%d is still open; close it on the forge (%s): %w", sn.Task.Slug, f.Number, f.URL, err)
	}
	return uerr
}

// forgeMarker ends every comment lazy writes on a forge, so the sync
// never delivers lazy's own words back to the agent as review feedback.
const forgeMarker = "<!-- lazy -->"

// IsLazyComment reports whether a forge comment was written by lazy.
func IsLazyComment(body string) bool { return strings.Contains(body, forgeMarker) }
