package gitrepo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// ErrNotRepo is returned when no git repository encloses the directory.
var ErrNotRepo = errors.New("not inside a git repository (run lazy inside a git checkout, or git init first)")

// Location locates the parts of a git repository lazy uses: its
// checkout, its git directories, its object format, its refs and its
// configuration. It is where the repository is, not how lazy stores
// tasks in it, so every layer above may hold one.
type Location struct {
	// WorkTree is the top of the checkout ("" for a bare repository).
	WorkTree string
	// GitDir is this worktree's git directory (.git or .git/worktrees/x).
	GitDir string
	// CommonDir holds refs and objects shared by every worktree.
	CommonDir string
	// ObjectFormat is how the repository names objects: SHA1 or
	// SHA256.
	ObjectFormat string

	// Refs reads and writes the refs (files backend; a SHA-256
	// repository's are read through git); copies of the Location share its
	// packed-refs map.
	*Refs

	// config is the configuration read last, kept while its files are
	// unchanged; copies of the Location share it.
	config *configCache
}

// configCache holds a Location's configuration between reads.
type configCache struct {
	mu  sync.Mutex
	cfg *Config
}

// Discover finds the repository enclosing dir, honouring GIT_DIR the way
// git does.
func Discover(dir string) (*Location, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", dir, err)
	}
	if gd := os.Getenv("GIT_DIR"); gd != "" {
		if !filepath.IsAbs(gd) {
			gd = filepath.Join(abs, gd)
		}
		return fromGitDir(gd, os.Getenv("GIT_WORK_TREE"))
	}
	for d := abs; ; d = filepath.Dir(d) {
		dotgit := filepath.Join(d, ".git")
		fi, err := os.Stat(dotgit)
		if err == nil {
			if fi.IsDir() {
				return fromGitDir(dotgit, d)
			}
			gd, err := readGitFile(dotgit)
			if err != nil {
				return nil, err
			}
			return fromGitDir(gd, d)
		}
		if isGitDir(d) {
			return fromGitDir(d, "")
		}
		if filepath.Dir(d) == d {
			return nil, ErrNotRepo
		}
	}
}

func isGitDir(d string) bool {
	for _, p := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Stat(filepath.Join(d, p)); err != nil {
			return false
		}
	}
	return true
}

// readGitFile follows a ".git" file ("gitdir: <path>") as linked worktrees
// and submodules use.
func readGitFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	line := strings.TrimSpace(string(b))
	gd, ok := strings.CutPrefix(line, "gitdir:")
	if !ok {
		return "", fmt.Errorf("%s is not a gitdir file", path)
	}
	gd = strings.TrimSpace(gd)
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(filepath.Dir(path), gd)
	}
	return gd, nil
}

func fromGitDir(gitDir, workTree string) (*Location, error) {
	gitDir = filepath.Clean(gitDir)
	if !isGitDir(gitDir) {
		if _, err := os.Stat(filepath.Join(gitDir, "commondir")); err != nil {
			return nil, fmt.Errorf("%s is not a git directory: %w", gitDir, ErrNotRepo)
		}
	}
	common := gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		common = filepath.Clean(c)
	}
	r := &Location{WorkTree: workTree, GitDir: gitDir, CommonDir: common, config: &configCache{}}
	if err := r.checkFormat(); err != nil {
		return nil, err
	}
	r.Refs = NewRefsFor(common, r.ObjectFormat)
	return r, nil
}

// checkFormat records the repository's object format (SHA-1 or
// SHA-256), refusing a repository lazy cannot read (see
// DetectFormat).
func (r *Location) checkFormat() error {
	format, err := DetectFormat(r.CommonDir, r.LazyDir("format"))
	if err != nil {
		return err
	}
	r.ObjectFormat = format
	return nil
}

// Top is the top of the repository's main worktree, whichever of its
// worktrees (or its git directory, where the daemon runs) lazy was
// started in: the checkout holding the common git directory as its
// .git, or this checkout when it is the main one. "" for a bare
// repository.
func (r *Location) Top() string {
	if r.WorkTree != "" && filepath.Clean(r.GitDir) == filepath.Clean(r.CommonDir) {
		return r.WorkTree
	}
	if filepath.Base(r.CommonDir) == ".git" {
		return filepath.Dir(r.CommonDir)
	}
	return ""
}

// Name is the repository's name as lazy shows it to a person (in
// notifications): the directory name of its main worktree, the same
// from any of its worktrees and from its git directory; for a bare
// repository its directory's name without ".git".
func (r *Location) Name() string {
	if top := r.Top(); top != "" {
		return filepath.Base(top)
	}
	return strings.TrimSuffix(filepath.Base(r.CommonDir), ".git")
}

// Config reads the global and repository configuration, as git reads it
// in this worktree (includeIf "gitdir:" matches its git directory). A
// process reads it once: the Config is kept, and read again only when
// one of its files (an included one too) changed, so a daemon still
// sees a change the moment it is made.
func (r *Location) Config() (*Config, error) {
	if r.config == nil {
		return ReadRepoConfig(r.CommonDir, r.GitDir)
	}
	r.config.mu.Lock()
	defer r.config.mu.Unlock()
	if c := r.config.cfg; c != nil && c.Fresh() {
		return c, nil
	}
	c, err := ReadRepoConfig(r.CommonDir, r.GitDir)
	if err != nil {
		return nil, err
	}
	r.config.cfg = c
	return c, nil
}

// LazyDir is the host-local runtime directory (locks, cache, logs).
// Nothing in it is needed to rebuild task state.
func (r *Location) LazyDir(parts ...string) string {
	return filepath.Join(append([]string{r.CommonDir, "lazy"}, parts...)...)
}

// RefStampPaths are the files that stamp the refs under prefix (which
// must end in "/"): packed-refs and prefix's directory (see
// gitstore.RefStamp).
func (r *Location) RefStampPaths(prefix string) []string {
	return r.StampPaths(prefix)
}
