package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strings"

	"github.com/lazyorch/lazy/internal/gitcli"
)

// Config files include others as git's do (git-config(1), "Includes"):
//
//	[include] path = FILE
//	[includeIf "gitdir:PATTERN"] path = FILE   (also gitdir/i:, onbranch:)
//
// The included file's variables are read where the directive stands, in
// the includer's scope, with the included file as their origin; a
// relative FILE is relative to the including file; a missing one is
// skipped. lazy reads them itself, as it reads the files (a git process
// per command would cost more than the rest of lazy list): only a
// condition it does not evaluate (hasconfig:, or onbranch: in a
// repository whose refs are not files) sends the whole read to git
// config. TestConfigIncludesAgreeWithGit holds both to git.

// maxIncludeDepth is git's MAX_INCLUDE_DEPTH: deeper is taken for a loop.
const maxIncludeDepth = 10

// configReader reads the files of one configuration.
type configReader struct {
	gitDir  string // the worktree's git directory ("" outside any repository)
	c       *Config
	needGit bool // a condition only git evaluates was met
}

// file reads the config file at path, and what it includes, into r.c.
func (r *configReader) file(path, scope string, depth int) error {
	// The stamp before the read: a change between the two makes the
	// Config stale at once rather than never.
	r.c.read = append(r.c.read, stampOf(path))
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read git config %s: %w", path, err)
	}
	entries, err := parseConfig(b)
	if err != nil {
		return fmt.Errorf("parse git config %s: %w (git config --file %s --list says more)", path, err, path)
	}
	for _, e := range entries {
		e.file, e.scope = path, scope
		r.c.entries = append(r.c.entries, e)
		target, ok, err := r.includes(e, path)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if depth+1 > maxIncludeDepth {
			return fmt.Errorf("git config %s includes %s past %d levels deep: an include loop? (git config --list says the same)", path, target, maxIncludeDepth)
		}
		if err := r.file(target, scope, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// includes reports whether entry e of the file at from includes a file,
// and which: include.path, or includeIf.<condition>.path whose
// condition holds.
func (r *configReader) includes(e configEntry, from string) (string, bool, error) {
	var cond string
	switch {
	case e.key == "include.path":
	case strings.HasPrefix(e.key, "includeif.") && strings.HasSuffix(e.key, ".path") && len(e.key) > len("includeif..path"):
		cond = e.key[len("includeif.") : len(e.key)-len(".path")]
		if !r.condition(cond, from) {
			return "", false, nil
		}
	default:
		return "", false, nil
	}
	if e.bare {
		return "", false, fmt.Errorf("git config %s: %s has no value; give it a file to include", from, e.key)
	}
	path, ok := r.expand(e.value, false)
	if !ok {
		return "", false, nil
	}
	if !filepath.IsAbs(path) {
		// git joins the including file's directory and the path as they
		// are written, and names the origin so.
		path = from[:strings.LastIndexByte(from, '/')+1] + path
	}
	return path, true, nil
}

// condition evaluates an includeIf condition for a file read from from.
// A condition git does not know is false, as in git.
func (r *configReader) condition(cond, from string) bool {
	switch {
	case strings.HasPrefix(cond, "gitdir:"):
		return r.gitdirMatches(cond[len("gitdir:"):], from, false)
	case strings.HasPrefix(cond, "gitdir/i:"):
		return r.gitdirMatches(cond[len("gitdir/i:"):], from, true)
	case strings.HasPrefix(cond, "onbranch:"):
		branch, ok := r.headBranch()
		if !ok {
			return false
		}
		pattern := cond[len("onbranch:"):]
		if strings.HasSuffix(pattern, "/") {
			pattern += "**"
		}
		return wildmatch(pattern, branch, false)
	case strings.HasPrefix(cond, "hasconfig:"):
		// Whether any file sets a matching remote URL: git reads that
		// in a pass of its own.
		r.needGit = true
		return false
	}
	return false
}

// gitdirMatches is git's include_by_gitdir: the pattern, with ~
// expanded, "./" read as the including file's directory, a relative
// pattern anywhere ("**/" before it) and a trailing "/" as everything
// under it, matched against the git directory with symlinks resolved,
// then as it was given.
func (r *configReader) gitdirMatches(pattern, from string, fold bool) bool {
	if r.gitDir == "" {
		return false
	}
	if p, ok := r.expand(pattern, true); ok {
		pattern = p
	}
	prefix := 0
	switch {
	case strings.HasPrefix(pattern, "./"):
		dir := from
		if real, err := filepath.EvalSymlinks(from); err == nil {
			dir = real
		}
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		dir = dir[:strings.LastIndexByte(dir, '/')]
		pattern = dir + pattern[1:]
		prefix = len(dir) + 1
	case !filepath.IsAbs(pattern):
		pattern = "**/" + pattern
	}
	if strings.HasSuffix(pattern, "/") {
		pattern += "**"
	}
	texts := []string{}
	if real, err := filepath.EvalSymlinks(r.gitDir); err == nil {
		texts = append(texts, real)
	}
	if abs, err := filepath.Abs(r.gitDir); err == nil {
		texts = append(texts, abs)
	}
	for _, text := range texts {
		if len(text) < prefix {
			continue
		}
		lit, rest := pattern[:prefix], text[:prefix]
		if !fold && lit != rest || fold && !strings.EqualFold(lit, rest) {
			continue
		}
		if wildmatch(pattern[prefix:], text[prefix:], fold) {
			return true
		}
	}
	return false
}

// headBranch is the branch the worktree's HEAD names, as git's
// include_by_branch reads it: none for a detached HEAD. A repository
// whose refs are not files (reftable) leaves the answer to git.
func (r *configReader) headBranch() (string, bool) {
	if r.gitDir == "" {
		return "", false
	}
	head := filepath.Join(r.gitDir, "HEAD")
	r.c.read = append(r.c.read, stampOf(head))
	b, err := os.ReadFile(head)
	if err != nil {
		return "", false
	}
	ref, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "ref:")
	if !ok {
		return "", false
	}
	ref = strings.TrimSpace(ref)
	if ref == "refs/heads/.invalid" {
		r.needGit = true // reftable's placeholder HEAD
		return "", false
	}
	return strings.CutPrefix(ref, "refs/heads/")
}

// expand is git's interpolate_path: a leading ~/ is $HOME (resolved,
// for a gitdir: pattern), ~user/ that user's home. What git cannot
// expand is skipped; %(prefix)/, git's own install prefix, is git's to
// expand.
func (r *configReader) expand(path string, realHome bool) (string, bool) {
	switch {
	case strings.HasPrefix(path, "%(prefix)/"):
		r.needGit = true
		return "", false
	case path == "~" || strings.HasPrefix(path, "~/"):
		home := os.Getenv("HOME")
		if home == "" {
			return "", false
		}
		if realHome {
			if real, err := filepath.EvalSymlinks(home); err == nil {
				home = real
			}
		}
		return home + path[1:], true
	case strings.HasPrefix(path, "~"):
		name, rest, _ := strings.Cut(path[1:], "/")
		u, err := user.Lookup(name)
		if err != nil {
			return "", false
		}
		if rest == "" && !strings.Contains(path, "/") {
			return u.HomeDir, true
		}
		return u.HomeDir + "/" + rest, true
	}
	return path, true
}

// readConfigWithGit reads the configuration through git config, for a
// condition only git evaluates: the global and local scopes, as lazy
// reads them (never the system file or -c values).
func readConfigWithGit(gitDir string, inRepo bool, read []fileStamp) (*Config, error) {
	args := []string{"config", "-z", "--list", "--show-origin", "--show-scope", "--includes"}
	dir := gitDir
	if inRepo {
		args = append([]string{"--git-dir=" + gitDir}, args...)
	} else {
		args = append(args, "--global")
		dir = os.TempDir()
	}
	out, err := gitcli.New(dir, args...).Output(context.Background())
	if err != nil {
		return nil, fmt.Errorf("read git config: %w", err)
	}
	c := &Config{read: read}
	fields := bytes.Split(out, []byte{0})
	for i := 0; i+2 < len(fields); i += 3 {
		scope, origin, kv := string(fields[i]), string(fields[i+1]), string(fields[i+2])
		if scope != ScopeGlobal && scope != ScopeLocal {
			continue
		}
		file, _ := strings.CutPrefix(origin, "file:")
		if !filepath.IsAbs(file) && inRepo {
			file = filepath.Join(gitDir, file)
		}
		key, value, hasValue := strings.Cut(kv, "\n")
		c.entries = append(c.entries, configEntry{key: key, value: value, bare: !hasValue, file: file, scope: scope})
		c.read = append(c.read, stampOf(file))
	}
	return c, nil
}

// fileStamp is what a file was when the configuration was read: its
// identity, size and time, or that it was absent.
type fileStamp struct {
	path string
	info os.FileInfo // nil: absent (or unreadable)
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{path: path}
	}
	return fileStamp{path: path, info: fi}
}

// same reports whether the file is still as stamped.
func (s fileStamp) same() bool {
	fi, err := os.Stat(s.path)
	if err != nil || s.info == nil {
		return err != nil && s.info == nil
	}
	return os.SameFile(s.info, fi) && fi.Size() == s.info.Size() && fi.ModTime().Equal(s.info.ModTime())
}

// Fresh reports whether every file c was read from (or looked for) is
// as it was then, so that c is still what a read would give: what lets
// a long-lived process (the daemon) keep a Config until one changes.
// A file changed within the same clock tick with the same size can
// escape it; git config rewrites a file under a new inode, which never
// does.
func (c *Config) Fresh() bool {
	for _, s := range c.read {
		if !s.same() {
			return false
		}
	}
	return len(c.read) > 0
}
