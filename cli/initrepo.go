package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"github.com/lazyorch/lazy/deploy"
	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/gitcli"
	"github.com/lazyorch/lazy/task"
)

// Refspecs lazy configures. Fetched task state lands in its own
// namespace so `git fetch` never touches local records; lazy pull merges
// from there.
const (
	fetchRefspecFmt = "+refs/lazy/*:refs/lazy-remotes/%s/*"
	pushRefspec     = "refs/lazy/*:refs/lazy/*"
)

type initResult struct {
	HostID        string   `json:"host_id"`
	CreatedHostID bool     `json:"created_host_id"`
	Remotes       []string `json:"remotes_configured"`
	Skipped       []string `json:"remotes_skipped,omitempty"`
	PushRefspec   string   `json:"push_refspec"`
	LazyDir       string   `json:"lazy_dir"`
	Bootstrap     []string `json:"bootstrap,omitempty"`
	// Actions is what lazy init --actions did with the workflow file.
	Actions *deploy.WorkflowWrite `json:"actions,omitempty"`
}

// initRepo sets lazy up in a repository. It is idempotent.
//
// The push refspec goes into lazy.pushRefspec, not remote.<name>.push: a
// remote.<name>.push entry would silently change what a plain `git push`
// pushes, and lazy must not alter the user's everyday git.
func initRepo(repo *gitrepo.Location, cfg *gitrepo.Config) (*initResult, error) {
	ctx := context.Background()
	dir := repo.CommonDir
	res := &initResult{PushRefspec: pushRefspec, LazyDir: repo.LazyDir()}
	if err := os.MkdirAll(repo.LazyDir(), 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", repo.LazyDir(), err)
	}
	host, ok := cfg.Get("lazy.hostid")
	if !ok || host == "" {
		var err error
		host, err = newHostID()
		if err != nil {
			return nil, err
		}
		if err := gitcli.New(dir, "config", "--local", "lazy.hostid", host).Run(ctx); err != nil {
			return nil, err
		}
		res.CreatedHostID = true
	}
	res.HostID = host
	if v, _ := cfg.Get("lazy.pushRefspec"); v != pushRefspec {
		if err := gitcli.New(dir, "config", "--local", "lazy.pushRefspec", pushRefspec).Run(ctx); err != nil {
			return nil, err
		}
	}
	out, err := gitcli.New(dir, "remote").String(ctx)
	if err != nil {
		return nil, err
	}
	for _, name := range strings.Fields(out) {
		if gitstore.ValidRemote(name) != nil {
			res.Skipped = append(res.Skipped, name)
			continue
		}
		spec := fmt.Sprintf(fetchRefspecFmt, name)
		have, _ := gitcli.New(dir, "config", "--local", "--get-all", "remote."+name+".fetch").String(ctx)
		if !containsLine(have, spec) {
			if err := gitcli.New(dir, "config", "--local", "--add", "remote."+name+".fetch", spec).Run(ctx); err != nil {
				return nil, err
			}
		}
		res.Remotes = append(res.Remotes, name)
	}
	return res, nil
}

func containsLine(text, line string) bool {
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

// newHostID names this machine for ownership of sessions: the hostname
// (made ref-safe) plus a random suffix, so two machines with the same
// hostname still differ.
func newHostID() (string, error) {
	name, _ := os.Hostname()
	name = task.Slugify(name)
	if name == "task" {
		name = "host"
	}
	if len(name) > 24 {
		name = strings.TrimRight(name[:24], "-")
	}
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate host id: %w", err)
	}
	return name + "-" + hex.EncodeToString(b[:]), nil
}
