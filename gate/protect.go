package gate

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/lazyorch/lazy/internal/allowpath"
)

// A task must not be able to decide its own gate: a change to what the
// gate runs (its script, the Makefile it calls, lazy's own settings, the
// forge's CI configuration) would make "the gate passed" mean whatever
// the task wanted. Such paths are protected: a change that touches one
// lands only when a human approves it, whatever the gate said.

// DefaultProtected are the paths protected in every repository with a
// gate: lazy's own directory (the committed .lazy/gate) and the CI
// configuration of the forges lazy merges through and of the common CI
// services (they are the gate of a forge accept, lazy.gate.forge checks).
var DefaultProtected = []string{
	".lazy/",
	".github/workflows/",
	".gitlab-ci.yml",
	".gitea/workflows/",
	".forgejo/workflows/",
	".circleci/",
	".buildkite/",
	".travis.yml",
	".drone.yml",
	".woodpecker/",
	".woodpecker.yml",
	"azure-pipelines.yml",
	"bitbucket-pipelines.yml",
	"Jenkinsfile",
}

// toolFiles are the files a tool named in a gate command reads its
// recipe from: the task could otherwise rewrite what "make test" or
// "npm test" runs without touching a file the command names.
var toolFiles = map[string][]string{
	"make":  {"Makefile", "makefile", "GNUmakefile"},
	"gmake": {"Makefile", "makefile", "GNUmakefile"},
	"npm":   {"package.json"},
	"yarn":  {"package.json"},
	"pnpm":  {"package.json"},
	"bun":   {"package.json"},
	"just":  {"justfile", "Justfile", ".justfile"},
	"tox":   {"tox.ini"},
	"nox":   {"noxfile.py"},
	"rake":  {"Rakefile"},
	"task":  {"Taskfile.yml", "Taskfile.yaml"},
}

// MaxProtect bounds lazy.gate.protect.
const MaxProtect = 256

// maxNamed bounds the candidate paths read from the gate's commands.
const maxNamed = 256

// protectGlobs checks the values of lazy.gate.protect; an empty one
// clears those before it (a repository can drop what a global config
// adds; the defaults always hold).
func protectGlobs(vals []string) ([]string, error) {
	var out []string
	for _, v := range vals {
		g := strings.TrimSpace(v)
		if g == "" {
			out = nil
			continue
		}
		if err := checkGlob(g); err != nil {
			return nil, fmt.Errorf("git config %s = %q: %w; give a path or glob relative to the repository's root, such as \"scripts/\" or \"**/*_test.go\"", keyProtect, short(v), err)
		}
		out = append(out, strings.TrimPrefix(g, "./"))
	}
	if len(out) > MaxProtect {
		return nil, fmt.Errorf("git config %s has %d values, more than %d; protect a directory instead of its files", keyProtect, len(out), MaxProtect)
	}
	return out, nil
}

// CheckProtect checks one value of lazy.gate.protect as Load does (lazy
// config refuses what the gate would refuse to read).
func CheckProtect(value string) error {
	_, err := protectGlobs([]string{value})
	return err
}

// checkGlob holds a protect glob to what allowpath can match.
func checkGlob(g string) error {
	switch {
	case strings.IndexByte(g, 0) >= 0:
		return fmt.Errorf("it holds a NUL byte")
	case len(g) > MaxCommandBytes:
		return fmt.Errorf("it is %d bytes long, more than %d", len(g), MaxCommandBytes)
	case strings.HasPrefix(g, "/"):
		return fmt.Errorf("it is absolute")
	}
	for _, seg := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(g, "./"), "/"), "/") {
		if seg == ".." {
			return fmt.Errorf("it leaves the repository (..)")
		}
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("%q is not a valid glob", seg)
		}
	}
	return nil
}

// Protecting reports whether a gate of cmds with these settings
// protects paths: there is a gate to decide (or the forge's checks are
// the gate), or the repository names protected paths itself.
func (s Settings) Protecting(cmds []string, forgeChecks bool) bool {
	return Enabled(cmds) || forgeChecks || len(s.Protect) > 0
}

// Named returns the repository paths the commands could be reading their
// recipe from: each word that is a plain relative path ("check.sh",
// "./scripts/test.sh", the value of "--file=ci/run.sh"), and the recipe
// files of the tools they run (the Makefile of make, the package.json
// of npm). Which of them exist at the target is the caller's question
// (only those are protected: a path the target lacks is the task's to
// create, such as an output file the gate checks for). Words lazy cannot
// resolve without running a shell ($VAR, globs, ~) are not paths.
func Named(cmds []string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if !seen[p] && len(out) < maxNamed {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, c := range cmds {
		for _, w := range shellWords(c) {
			if files, ok := toolFiles[path.Base(w)]; ok {
				for _, f := range files {
					add(f)
				}
			}
			if _, v, ok := strings.Cut(w, "="); ok {
				w = v // --file=x, VAR=x
			}
			w = strings.TrimPrefix(w, "./")
			for strings.HasPrefix(w, "./") {
				w = strings.TrimPrefix(w, "./")
			}
			if plainPath(w) {
				add(w)
			}
		}
	}
	return out
}

// plainPath reports whether w can only mean one file of the repository.
func plainPath(w string) bool {
	if w == "" || len(w) > MaxCommandBytes || strings.HasPrefix(w, "-") || strings.HasPrefix(w, "/") ||
		strings.ContainsAny(w, "$*?[]{}~\\`\"'=:\x00") {
		return false
	}
	for _, seg := range strings.Split(w, "/") {
		if strings.Trim(seg, ".") == "" {
			return false // "", ".", "..", and go's "./..."
		}
	}
	return true
}

// shellWords splits a command into its words roughly as sh would,
// without expanding anything: operators and redirections separate
// words, quotes are removed (their content kept whole).
func shellWords(c string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
		}
		cur.Reset()
		inWord = false
	}
	for i := 0; i < len(c); i++ {
		ch := c[i]
		switch {
		case ch == '\'' || ch == '"':
			j := strings.IndexByte(c[i+1:], ch)
			if j < 0 {
				j = len(c) - i - 1
			}
			cur.WriteString(c[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case ch == '\\' && i+1 < len(c):
			cur.WriteByte(c[i+1])
			inWord = true
			i++
		case strings.IndexByte(" \t\n\r;&|()<>`", ch) >= 0:
			flush()
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	flush()
	return words
}

// Protection is what a task may not change on its own in one repository:
// glob patterns as internal/allowpath reads them.
type Protection struct {
	Patterns []string
}

// Protected is the protection of a gate: the defaults, the files its
// commands name that exist at the target (existing: Named(cmds)
// filtered by the caller), and lazy.gate.protect.
func (s Settings) Protected(existing []string) Protection {
	var p Protection
	seen := map[string]bool{}
	for _, list := range [][]string{DefaultProtected, existing, s.Protect} {
		for _, g := range list {
			if !seen[g] {
				seen[g] = true
				p.Patterns = append(p.Patterns, g)
			}
		}
	}
	return p
}

// Touched returns the files among changed that the protection covers,
// sorted.
func (p Protection) Touched(changed []string) []string {
	var out []string
	for _, f := range changed {
		if len(p.Patterns) > 0 && allowpath.Allowed(p.Patterns, f) {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
