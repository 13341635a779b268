package gitrepo

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitEnv is an environment in which git reads only home's config and the
// repository's: no system file, no -c values, no user's GIT_CONFIG_*.
func gitEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") || k == "HOME" || k == "XDG_CONFIG_HOME" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home, "GIT_CONFIG_NOSYSTEM=1")
}

// isolate points this test's HOME at home and clears what would make it
// read other files than home's and the repository's.
func isolate(t *testing.T, home string) {
	t.Helper()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	for _, k := range []string{"GIT_CONFIG_GLOBAL", "GIT_DIR", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT"} {
		t.Setenv(k, "")
		_ = os.Unsetenv(k)
	}
}

// gitListing is what git config --list --show-origin --show-scope gives
// for the repository at gitDir, in lazy's scopes, one line an entry.
func gitListing(t *testing.T, home, gitDir string) string {
	t.Helper()
	cmd := exec.Command("git", "--git-dir="+gitDir, "config", "-z", "--list", "--show-origin", "--show-scope", "--includes")
	cmd.Env = gitEnv(home)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git config --list in %s: %v", gitDir, err)
	}
	var lines []string
	f := strings.Split(string(out), "\x00")
	for i := 0; i+2 < len(f); i += 3 {
		if f[i] != ScopeGlobal && f[i] != ScopeLocal {
			continue
		}
		file := strings.TrimPrefix(f[i+1], "file:")
		key, value, _ := strings.Cut(f[i+2], "\n")
		lines = append(lines, fmt.Sprintf("%s %s %s=%s", f[i], file, key, value))
	}
	return strings.Join(lines, "\n")
}

// listing is c in gitListing's form.
func listing(c *Config) string {
	var lines []string
	for _, e := range c.entries {
		lines = append(lines, fmt.Sprintf("%s %s %s=%s", e.scope, e.file, e.key, e.value))
	}
	return strings.Join(lines, "\n")
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func gitInit(t *testing.T, home, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"init", "-q"}, append(args, dir)...)...)
	cmd.Env = gitEnv(home)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init %s: %v %s", dir, err, out)
	}
}

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
}

// TestConfigIncludesAgreeWithGit: include.path (absolute, relative to
// the including file, with ~, missing, nested) and includeIf gitdir:,
// gitdir/i: and onbranch: read as git reads them, entry for entry, with
// each included value's scope and origin file, in a main checkout, a
// linked worktree and a repository reached through a symlink.
func TestConfigIncludesAgreeWithGit(t *testing.T) {
	needGit(t)
	base := t.TempDir()
	home := filepath.Join(base, "home")
	isolate(t, home)
	work := filepath.Join(base, "work")
	repo := filepath.Join(work, "proj")
	gitInit(t, home, repo, "-b", "main")
	other := filepath.Join(base, "other", "repo")
	gitInit(t, home, other, "-b", "feature/x")
	link := filepath.Join(base, "linked")
	if err := os.Symlink(work, link); err != nil {
		t.Fatal(err)
	}

	mustWrite(t, filepath.Join(home, ".gitconfig"), `[user]
	name = Someone
[include]
	path = ~/inc/always.inc
	path = inc/relative.inc
	path = inc/missing.inc
[includeIf "gitdir:`+work+`/"]
	path = ~/inc/work.inc
[includeIf "gitdir:`+link+`/"]
	path = ~/inc/linked.inc
[includeIf "gitdir/i:`+strings.ToUpper(work)+`/PROJ/"]
	path = ~/inc/icase.inc
[includeIf "gitdir:proj/.git"]
	path = ~/inc/anywhere.inc
[includeIf "gitdir:`+filepath.Join(base, "other")+`/*/.git"]
	path = ~/inc/star.inc
[includeIf "onbranch:feature/"]
	path = ~/inc/feature.inc
[includeIf "onbranch:main"]
	path = ~/inc/main.inc
[includeIf "nosuchcondition:x"]
	path = ~/inc/never.inc
[lazy]
	agent = claude
`)
	for name, body := range map[string]string{
		"always.inc":        "[lazy]\n\tbudget = 1\n[include]\n\tpath = nested/deeper.inc\n",
		"nested/deeper.inc": "[lazy]\n\tdeep = yes\n",
		"relative.inc":      "[lazy]\n\trelative = yes\n",
		"work.inc":          "[lazy]\n\tagent = codex\n\twork = yes\n",
		"linked.inc":        "[lazy]\n\tlinked = yes\n",
		"icase.inc":         "[lazy]\n\ticase = yes\n",
		"anywhere.inc":      "[lazy]\n\tanywhere = yes\n",
		"star.inc":          "[lazy]\n\tstar = yes\n",
		"feature.inc":       "[lazy]\n\tfeature = yes\n",
		"main.inc":          "[lazy]\n\tmain = yes\n",
		"never.inc":         "[lazy]\n\tnever = yes\n",
	} {
		mustWrite(t, filepath.Join(home, "inc", name), body)
	}
	// The repository's own config includes too, relative to .git/.
	local := filepath.Join(repo, ".git", "config")
	b, err := os.ReadFile(local)
	if err != nil {
		t.Fatal(err)
	}
	// "./" is the including file's directory: .git/ itself, which the
	// git directory is not under (git agrees; the listings say so).
	mustWrite(t, local, string(b)+"[include]\n\tpath = lazy.inc\n[includeIf \"gitdir:./\"]\n\tpath = here.inc\n")
	mustWrite(t, filepath.Join(repo, ".git", "lazy.inc"), "[lazy]\n\tlocalinc = yes\n")
	mustWrite(t, filepath.Join(repo, ".git", "here.inc"), "[lazy]\n\there = yes\n")

	wt := filepath.Join(base, "wt")
	cmd := exec.Command("git", "-C", repo, "worktree", "add", "-q", "-b", "feature/wt", wt)
	cmd.Env = append(gitEnv(home), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@b")
	if out, err := exec.Command("git", "-C", repo, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "--allow-empty", "-m", "x").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("worktree add: %v %s", err, out)
	}
	wtGitDir := filepath.Join(repo, ".git", "worktrees", "wt")

	for _, c := range []struct {
		name              string
		commonDir, gitDir string
		want              []string // keys that must be set
		not               []string
	}{
		{"main checkout", filepath.Join(repo, ".git"), filepath.Join(repo, ".git"),
			[]string{"lazy.budget", "lazy.deep", "lazy.relative", "lazy.work", "lazy.icase", "lazy.anywhere", "lazy.main", "lazy.localinc"},
			[]string{"lazy.star", "lazy.feature", "lazy.never", "lazy.linked"}},
		{"through a symlink", filepath.Join(link, "proj", ".git"), filepath.Join(link, "proj", ".git"),
			[]string{"lazy.work", "lazy.linked"}, []string{"lazy.star"}},
		{"linked worktree", filepath.Join(repo, ".git"), wtGitDir,
			[]string{"lazy.work", "lazy.feature", "lazy.localinc"}, []string{"lazy.main"}},
		{"another repository", filepath.Join(other, ".git"), filepath.Join(other, ".git"),
			[]string{"lazy.star", "lazy.feature", "lazy.budget"}, []string{"lazy.work", "lazy.anywhere", "lazy.main", "lazy.localinc"}},
	} {
		cfg, err := ReadRepoConfig(c.commonDir, c.gitDir)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want := gitListing(t, home, c.gitDir)
		if got := listing(cfg); got != want {
			t.Errorf("%s:\nlazy reads\n%s\ngit reads\n%s", c.name, got, want)
		}
		for _, k := range c.want {
			if _, ok := cfg.Get(k); !ok {
				t.Errorf("%s: %s is not set", c.name, k)
			}
		}
		for _, k := range c.not {
			if v, ok := cfg.Get(k); ok {
				t.Errorf("%s: %s is set (%s)", c.name, k, v)
			}
		}
	}
	// The included value wins where it stands, and says where it is from.
	cfg, err := ReadRepoConfig(filepath.Join(repo, ".git"), filepath.Join(repo, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := cfg.Get("lazy.agent"); v != "claude" {
		t.Errorf("lazy.agent = %s: the [lazy] after the includeIf sets it last", v)
	}
	origins := cfg.Origins("lazy.agent")
	if len(origins) != 2 || origins[0].File != filepath.Join(home, "inc", "work.inc") || origins[0].Scope != ScopeGlobal || origins[0].Value != "codex" {
		t.Errorf("origins of lazy.agent: %+v", origins)
	}
}

// TestConfigIncludeGlobsAgreeWithGit: a few hundred random includeIf
// gitdir: patterns (stars, double stars, ?, classes, escapes, case
// folded, relative and ./ ones) against several repositories: each
// pattern includes a file of its own, and every repository's listing is
// what git's is.
func TestConfigIncludeGlobsAgreeWithGit(t *testing.T) {
	needGit(t)
	base := t.TempDir()
	home := filepath.Join(base, "home")
	isolate(t, home)
	root := filepath.Join(base, "r")
	dirs := []string{"x/y", "xy", "a.b/c", "A/b", "x/y/z", "x-1", "[x]", "q"}
	for _, d := range dirs {
		gitInit(t, home, filepath.Join(root, d))
	}
	r := rand.New(rand.NewPCG(45, 7))
	tokens := []string{"x", "y", "z", "a", "A", "b", "c", ".", "-", "1", "*", "**", "?", "/", "[xy]", "[!x]", "[^a-y]", "[a-z]",
		"[[:alpha:]]", "[[:digit:]]", "[[:upper:]]", "\\x", "\\*", "[]x]", "[x-]", ".git", "**/", "/**", "[", "[:x:]"}
	n := 300
	if testing.Short() {
		n = 80
	}
	var cfg strings.Builder
	for i := range n {
		var p strings.Builder
		for range 1 + r.IntN(5) {
			p.WriteString(tokens[r.IntN(len(tokens))])
		}
		pattern := p.String()
		switch r.IntN(6) {
		case 0:
			// relative: matched anywhere
		case 1:
			pattern = "./r/" + pattern // from the config file's directory
		case 2:
			pattern += "/"
		default:
			pattern = root + "/" + pattern
		}
		cond := "gitdir:"
		if r.IntN(4) == 0 {
			cond = "gitdir/i:"
		}
		quoted := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(cond + pattern)
		fmt.Fprintf(&cfg, "[includeIf \"%s\"]\n\tpath = inc/%d\n", quoted, i)
		mustWrite(t, filepath.Join(home, "inc", fmt.Sprint(i)), fmt.Sprintf("[m]\n\tp%d = %s\n", i, strings.ReplaceAll(quoted, "\\", "\\\\")))
	}
	mustWrite(t, filepath.Join(home, ".gitconfig"), cfg.String())
	matched := 0
	for _, d := range dirs {
		gitDir := filepath.Join(root, d, ".git")
		c, err := ReadRepoConfig(gitDir, gitDir)
		if err != nil {
			t.Fatal(err)
		}
		want := gitListing(t, home, gitDir)
		if got := listing(c); got != want {
			t.Fatalf("%s:\nlazy reads\n%s\ngit reads\n%s", d, diffLines(got, want), "")
		}
		matched += len(c.Names("m."))
	}
	if matched < len(dirs) {
		t.Fatalf("only %d patterns matched a repository: the generator no longer tests matches", matched)
	}
}

// diffLines is the lines of got and want that differ, marked.
func diffLines(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var out []string
	for i := 0; i < max(len(g), len(w)); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			out = append(out, "lazy: "+a, "git:  "+b)
		}
	}
	return strings.Join(out, "\n")
}

// TestConfigIncludeErrors: a loop of includes, an include.path without a
// value and a bad line in an included file are errors that name the
// file, as git refuses them too.
func TestConfigIncludeErrors(t *testing.T) {
	home := t.TempDir()
	isolate(t, home)
	for name, c := range map[string]struct{ files map[string]string }{
		"loop":     {map[string]string{".gitconfig": "[include]\n\tpath = a.inc\n", "a.inc": "[include]\n\tpath = .gitconfig\n"}},
		"no value": {map[string]string{".gitconfig": "[include]\n\tpath\n"}},
		"bad line": {map[string]string{".gitconfig": "[include]\n\tpath = bad.inc\n", "bad.inc": "[lazy\n"}},
	} {
		for f, body := range c.files {
			mustWrite(t, filepath.Join(home, f), body)
		}
		_, err := ReadConfig("")
		if err == nil || !strings.Contains(err.Error(), home) {
			t.Errorf("%s: %v, want an error naming the file", name, err)
		}
		for f := range c.files {
			_ = os.Remove(filepath.Join(home, f))
		}
	}
}

// TestConfigHasconfigGoesThroughGit: a condition lazy does not evaluate
// (hasconfig:remote.*.url:) sends the read to git, which gives the same
// listing as for git itself.
func TestConfigHasconfigGoesThroughGit(t *testing.T) {
	needGit(t)
	base := t.TempDir()
	home := filepath.Join(base, "home")
	isolate(t, home)
	repo := filepath.Join(base, "repo")
	gitInit(t, home, repo)
	cmd := exec.Command("git", "-C", repo, "remote", "add", "origin", "https://example.com/team/repo.git")
	cmd.Env = gitEnv(home)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	mustWrite(t, filepath.Join(home, ".gitconfig"), "[includeIf \"hasconfig:remote.*.url:https://example.com/team/**\"]\n\tpath = team.inc\n")
	mustWrite(t, filepath.Join(home, "team.inc"), "[lazy]\n\tagent = team-agent\n")
	gitDir := filepath.Join(repo, ".git")
	c, err := ReadRepoConfig(gitDir, gitDir)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := c.Get("lazy.agent"); v != "team-agent" {
		t.Errorf("lazy.agent = %q through hasconfig", v)
	}
	if got, want := listing(c), gitListing(t, home, gitDir); got != want {
		t.Errorf("lazy reads\n%s\ngit reads\n%s", got, want)
	}
	if !c.Fresh() {
		t.Error("a config just read through git is not fresh")
	}
}

// TestConfigFresh: a Config is fresh until a file it was read from, an
// included one or one it looked for and did not find, changes.
func TestConfigFresh(t *testing.T) {
	home := t.TempDir()
	isolate(t, home)
	repo := t.TempDir()
	mustWrite(t, filepath.Join(home, ".gitconfig"), "[include]\n\tpath = inc\n")
	mustWrite(t, filepath.Join(home, "inc"), "[lazy]\n\tagent = a\n")
	read := func() *Config {
		c, err := ReadConfig(repo)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := read()
	if !c.Fresh() {
		t.Fatal("a config just read is not fresh")
	}
	for _, step := range []struct {
		name   string
		change func()
	}{
		{"the included file", func() { mustWrite(t, filepath.Join(home, "inc"), "[lazy]\n\tagent = bb\n") }},
		{"the global file, replaced as git config does", func() {
			tmp := filepath.Join(home, ".gitconfig.lock")
			mustWrite(t, tmp, "[include]\n\tpath = inc\n")
			if err := os.Rename(tmp, filepath.Join(home, ".gitconfig")); err != nil {
				t.Fatal(err)
			}
		}},
		{"a repository config that did not exist", func() { mustWrite(t, filepath.Join(repo, "config"), "[lazy]\n\tagent = c\n") }},
		{"the repository config removed", func() { _ = os.Remove(filepath.Join(repo, "config")) }},
	} {
		name, change := step.name, step.change
		c := read()
		// Each change moves a size, an inode or a file's existence, so
		// none waits on the file system's clock.
		change()
		if c.Fresh() {
			t.Errorf("%s changed and the config still reads as fresh", name)
		}
		if !read().Fresh() {
			t.Errorf("after %s changed, a new read is not fresh", name)
		}
	}
}
