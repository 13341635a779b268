package worktree

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/lazyorch/lazy/gitrepo"
)

// The reads below answer, without a git process, the questions a start
// asks of the repository before its worktree exists (is there a commit,
// which branch is the default, where do the task's and the base's
// branches point): each git process there is a few milliseconds on the
// path from `lazy start` to the agent. Each answers only when it is sure
// to give git's answer (a SHA-1 repository with the files backend, no
// GIT_* variable relocating it, no replace refs, plain ref files) and
// says "unsure" otherwise; the caller then runs git as before. So they
// are a shortcut, never a second opinion.

// localRepo is the repository at dir as the in-process reader sees it,
// or nil when it is not sure to read it as git would.
type localRepo struct {
	loc *gitrepo.Location
	obj *gitrepo.Local
}

// relocating are the variables by which git would read another
// repository, objects or refs than the files under dir.
var relocating = []string{
	"GIT_DIR=", "GIT_COMMON_DIR=", "GIT_WORK_TREE=", "GIT_OBJECT_DIRECTORY=",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES=", "GIT_NAMESPACE=", "GIT_REPLACE_REF_BASE=",
	"GIT_NO_REPLACE_OBJECTS=", "GIT_CONFIG_PARAMETERS=", "GIT_CONFIG_COUNT=",
	"GIT_CEILING_DIRECTORIES=", "GIT_DISCOVERY_ACROSS_FILESYSTEM=",
}

func openLocal(dir string) *localRepo {
	for _, kv := range os.Environ() {
		for _, p := range relocating {
			if strings.HasPrefix(kv, p) {
				return nil
			}
		}
	}
	loc, err := gitrepo.Discover(dir)
	if err != nil || loc.ObjectFormat != gitrepo.SHA1 {
		// A SHA-256 repository's refs are read through git anyway.
		return nil
	}
	if refs, err := loc.ListRefs("refs/replace/"); err != nil || len(refs) > 0 {
		// git would read a replaced object where the reader reads the
		// original.
		return nil
	}
	return &localRepo{loc: loc, obj: gitrepo.OpenLocation(loc)}
}

// refState is what the reader found of one ref.
type refState int

const (
	refUnsure  refState = iota // the reader cannot tell as git would: ask git
	refMissing                 // neither a loose file nor a packed line
	refDirect                  // it names an object
)

// ref reads ref name (under refs/), refusing what git would resolve
// further (a symbolic ref) or differently (a malformed file).
func (r *localRepo) ref(name string) (gitrepo.OID, refState) {
	if gitrepo.ValidRefName(name) != nil {
		return gitrepo.OID{}, refUnsure
	}
	id, ok, err := r.loc.ReadRef(name)
	switch {
	case err != nil:
		return gitrepo.OID{}, refUnsure
	case !ok:
		return gitrepo.OID{}, refMissing
	}
	return id, refDirect
}

// isCommit reports whether id is a commit the reader can read; false
// means unsure (missing, another type, unreadable).
func (r *localRepo) isCommit(id gitrepo.OID) bool {
	_, err := r.obj.ReadCommit(id)
	return err == nil
}

// symbolic reads the file of a ref that may be symbolic (HEAD in gitDir,
// refs/remotes/origin/HEAD in the common directory): the ref it names,
// or the object it holds. git keeps symbolic refs only in loose files
// (packed-refs holds none), so no file means no symbolic ref.
func symbolic(path string) (target string, id gitrepo.OID, st refState) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", gitrepo.OID{}, refMissing
	}
	if err != nil {
		return "", gitrepo.OID{}, refUnsure
	}
	s := strings.TrimRight(string(b), "\n")
	if t, ok := strings.CutPrefix(s, "ref: "); ok {
		if gitrepo.ValidRefName(t) != nil || strings.ContainsAny(t, "\n\r") {
			return "", gitrepo.OID{}, refUnsure
		}
		return t, gitrepo.OID{}, refDirect
	}
	if id, err := gitrepo.ParseOID(s); err == nil && id.Format() == gitrepo.SHA1 {
		return "", id, refDirect
	}
	return "", gitrepo.OID{}, refUnsure
}

// headCommit answers NoCommits's first question, whether HEAD names a
// commit: true when it surely does, false when unsure.
func (r *localRepo) headCommit() bool {
	target, id, st := symbolic(filepath.Join(r.loc.GitDir, "HEAD"))
	if st != refDirect {
		return false
	}
	if target != "" {
		var rs refState
		if id, rs = r.ref(target); rs != refDirect {
			return false
		}
	}
	return r.isCommit(id)
}

// shortRules are git's rules for spelling a full ref name short, in its
// order (refs.c ref_rev_parse_rules).
var shortRules = []string{"%s", "refs/%s", "refs/tags/%s", "refs/heads/%s", "refs/remotes/%s", "refs/remotes/%s/HEAD"}

// nameExists is whether the name a rule makes of short may resolve
// (then git's shortening or lookup may differ from the plain one): a
// loose file, a packed line, or anything the reader cannot rule out.
func (r *localRepo) nameExists(full string) bool {
	if !strings.HasPrefix(full, "refs/") {
		// A name outside refs/ is a file in a git directory, if anything.
		for _, d := range []string{r.loc.GitDir, r.loc.CommonDir} {
			if _, err := os.Lstat(filepath.Join(d, filepath.FromSlash(full))); !errors.Is(err, fs.ErrNotExist) {
				return true
			}
		}
		return false
	}
	_, st := r.ref(full)
	return st != refMissing
}

// short is `git symbolic-ref --short`'s spelling of full ref name ref,
// known to be under prefix (refs/heads/ or refs/remotes/): the name
// without the prefix's rule, when no other rule makes that short name
// name something ("" when one might: git's call).
func (r *localRepo) short(ref string) string {
	var short string
	switch {
	case strings.HasPrefix(ref, "refs/heads/"):
		short = strings.TrimPrefix(ref, "refs/heads/")
	case strings.HasPrefix(ref, "refs/remotes/") && !strings.HasSuffix(ref, "/HEAD"):
		short = strings.TrimPrefix(ref, "refs/remotes/")
	default:
		return ""
	}
	for _, rule := range shortRules {
		if full := strings.Replace(rule, "%s", short, 1); full != ref && r.nameExists(full) {
			return ""
		}
	}
	// A target that is itself symbolic is resolved further by git.
	if _, st := r.ref(ref); st == refUnsure {
		return ""
	}
	return short
}

// symrefShort is `git symbolic-ref --quiet --short` of the file at path
// (a symbolic ref to a ref under refs/heads/ or refs/remotes/): the
// short name and refDirect; refMissing when git would say it is no
// symbolic ref (no file, or an object name in it); refUnsure otherwise.
func (r *localRepo) symrefShort(path string) (string, refState) {
	target, _, st := symbolic(path)
	switch {
	case st != refDirect:
		return "", st
	case target == "":
		return "", refMissing // a detached HEAD, an origin/HEAD holding an object
	}
	s := r.short(target)
	if s == "" {
		return "", refUnsure
	}
	return s, refDirect
}

// describeLike is whether name ends the way git reads as `git describe`
// output (…-g<hex>), which it would look up as an abbreviated object
// name when no ref has the name.
func describeLike(name string) bool {
	i := strings.LastIndex(name, "-g")
	if i < 0 {
		return false
	}
	hex := name[i+2:]
	if len(hex) < 4 {
		return false
	}
	for _, c := range hex {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}

// commitOf is `git cat-file --batch-check` of "<ref>^{commit}" for a
// full ref name: the commit it names, "" when git would say missing, and
// false when unsure.
func (r *localRepo) commitOf(ref string) (string, bool) {
	id, st := r.ref(ref)
	switch st {
	case refDirect:
		if !r.isCommit(id) {
			return "", false
		}
		return id.String(), true
	case refMissing:
		// git goes on to the other rules, then to describe output.
		for _, rule := range shortRules[1:] {
			if r.nameExists(strings.Replace(rule, "%s", ref, 1)) {
				return "", false
			}
		}
		if describeLike(ref) {
			return "", false
		}
		return "", true
	}
	return "", false
}

// defaultBranch is DefaultBranch read in process: origin's HEAD if it is
// a symbolic ref, else the branch HEAD names; false when unsure, and for
// a detached HEAD (whose error DefaultBranch words).
func (r *localRepo) defaultBranch() (string, bool) {
	origin, st := r.symrefShort(filepath.Join(r.loc.CommonDir, "refs", "remotes", "origin", "HEAD"))
	switch st {
	case refUnsure:
		return "", false
	case refDirect:
		if origin != "" {
			return strings.TrimPrefix(origin, "origin/"), true
		}
	}
	head, st := r.symrefShort(filepath.Join(r.loc.GitDir, "HEAD"))
	if st != refDirect || head == "" {
		return "", false
	}
	return head, true
}
