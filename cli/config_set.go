package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lazyorch/lazy/configcheck"
	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/configkeys"
	"github.com/lazyorch/lazy/internal/gitcli"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/render"
)

// isChange reports whether the command line changes a key rather than
// lists: --add, --replace-all, --unset, or KEY VALUE (a second argument
// that is not itself a key).
func (c *ConfigCmd) isChange() bool {
	if c.Add || c.ReplaceAll || c.Unset {
		return true
	}
	for _, arg := range c.Args[min(1, len(c.Args)):] {
		if !looksLikeKey(arg) {
			return true
		}
	}
	return false
}

// looksLikeKey is an argument a listing takes: a lazy.* key or prefix.
func looksLikeKey(arg string) bool {
	return strings.HasPrefix(strings.ToLower(arg), "lazy.") || strings.EqualFold(arg, "lazy")
}

// configChange is what lazy config KEY VALUE, --add, --replace-all or
// --unset did, as --json prints it.
type configChange struct {
	// Action is set, add, replace-all or unset.
	Action string `json:"action"`
	Name   string `json:"name"`
	// Scope and File are the config changed: local (the repository's)
	// or global (yours).
	Scope string `json:"scope"`
	File  string `json:"file,omitempty"`
	// Before and After are that file's values of the key (secrets
	// hidden, as everywhere lazy config prints them).
	Before []string `json:"before"`
	After  []string `json:"after"`
	// Changed is false when the config already said so.
	Changed bool `json:"changed"`
	// Effective is the key as lazy reads it now, over both files.
	Effective configSetting `json:"effective"`
	// Note says what else the reader should know (the other file's
	// value wins here).
	Note string `json:"note,omitempty"`
}

// change sets, adds to, replaces or unsets one key, after the checks a
// read of the value applies; a refused value changes nothing.
func (c *ConfigCmd) change(a *app, ctx context.Context) error {
	if len(c.Args) == 0 {
		return errors.New("name the key to change: lazy config KEY VALUE, or lazy config --unset KEY (lazy config lists the keys)")
	}
	if len(c.Args) > 2 {
		return fmt.Errorf("lazy config sets one key to one value; quote a value with spaces: lazy config %s '%s'", sanitize.Field(c.Args[0]), sanitize.Field(strings.Join(c.Args[1:], " ")))
	}
	name := c.Args[0]
	k, ok := configkeys.Lookup(name)
	if !ok {
		if !looksLikeKey(name) {
			return fmt.Errorf("lazy config sets lazy's own keys (lazy.*); set %s with git config", sanitize.Field(name))
		}
		return fmt.Errorf("%s is not a key lazy reads, so lazy config changed nothing%s", sanitize.Field(name), nearestKey(name))
	}
	value, hasValue := "", len(c.Args) == 2
	if hasValue {
		value = c.Args[1]
	}
	action := "set"
	switch {
	case c.Unset:
		action = "unset"
		if hasValue && !k.Multi() {
			return fmt.Errorf("%s takes one value; remove it with lazy config --unset %s", k.Name, k.Name)
		}
	case !hasValue:
		return fmt.Errorf("lazy config %s needs a value: %s (or lazy config --unset %s for the default)", k.Name, configkeys.SetCommand(k.Name), k.Name)
	case (c.Add || c.ReplaceAll) && !k.Multi():
		return fmt.Errorf("%s takes one value, so --add and --replace-all do not apply; set it with lazy config %s VALUE", k.Name, k.Name)
	case c.Add:
		action = "add"
	case c.ReplaceAll:
		action = "replace-all"
	}
	if action != "unset" {
		if err := configcheck.NewValue(k, value); err != nil {
			return err
		}
	}

	scope, dir, cfg, err := c.target(a)
	if err != nil {
		return err
	}
	before, file := cfg.InScope(k.Name, scope)
	ch := configChange{Action: action, Name: k.Name, Scope: scope, File: file, Before: configcheck.HideSecrets(k.Name, before)}
	flag := "--" + scope
	var argv []string
	switch action {
	case "unset":
		switch {
		case len(before) == 0 || (hasValue && !slices.Contains(before, value)):
			// Nothing to remove: said, not failed.
		case hasValue:
			argv = []string{"config", flag, "--fixed-value", "--unset-all", "--", k.Name, value}
		default:
			argv = []string{"config", flag, "--unset-all", "--", k.Name}
		}
	case "add":
		if !slices.Contains(before, value) {
			argv = []string{"config", flag, "--add", "--", k.Name, value}
		}
	case "replace-all":
		if len(before) != 1 || before[0] != value {
			argv = []string{"config", flag, "--replace-all", "--", k.Name, value}
		}
	default:
		same := len(before) == 1 && before[0] == value
		if k.Multi() && len(before) > 0 && !same {
			return fmt.Errorf("%s already has %s in the %s config; add this one beside them with lazy config --add %s VALUE, or replace them with lazy config --replace-all %s VALUE",
				k.Name, countOf(len(before), "value"), scopeWord(scope), k.Name, k.Name)
		}
		if !same {
			// --replace-all: a single-valued key set twice by hand ends
			// as the one value asked for.
			argv = []string{"config", flag, "--replace-all", "--", k.Name, value}
		}
	}
	if argv != nil {
		if err := gitcli.New(dir, argv...).Run(ctx); err != nil {
			return fmt.Errorf("lazy config %s: %w", k.Name, err)
		}
		ch.Changed = true
		if cfg, err = c.reread(a); err != nil {
			return err
		}
	}
	after, afterFile := cfg.InScope(k.Name, scope)
	if ch.File == "" {
		ch.File = afterFile
	}
	ch.After = configcheck.HideSecrets(k.Name, after)
	for _, r := range configSettings(cfg) {
		if r.Name == k.Name {
			ch.Effective = r
		}
	}
	ch.Note = changeNote(ch)
	if c.JSON {
		return a.io.printJSON(ch)
	}
	fmt.Fprintln(a.io.out, sanitize.Field(changeSummary(ch, configcheck.HideSecret(k.Name, value))))
	if ch.Note != "" {
		fmt.Fprintln(a.io.out, sanitize.Field(ch.Note))
	}
	return nil
}

// target is the config a change writes: the repository's (local), or
// with --global the user's, which needs no repository; dir is where git
// runs, cfg the config as read before the change.
func (c *ConfigCmd) target(a *app) (scope, dir string, cfg *gitrepo.Config, err error) {
	if !c.Global {
		if err := a.open(); err != nil {
			return "", "", nil, err
		}
		return gitrepo.ScopeLocal, a.repoDir(), a.cfg, nil
	}
	cfg, err = c.reread(a)
	if err != nil {
		return "", "", nil, err
	}
	return gitrepo.ScopeGlobal, a.dir, cfg, nil
}

// reread reads the config again after a change: the repository's and
// the global one, or only the global one outside a repository.
func (c *ConfigCmd) reread(a *app) (*gitrepo.Config, error) {
	if a.repo == nil {
		if repo, err := gitrepo.Discover(a.dir); err == nil {
			a.repo = repo
		} else if c.Global {
			return gitrepo.ReadConfig("")
		} else {
			return nil, err
		}
	}
	return gitrepo.ReadRepoConfig(a.repo.CommonDir, a.repo.GitDir)
}

// changeSummary is the line a change prints.
func changeSummary(ch configChange, value string) string {
	where := scopeWord(ch.Scope) + " config"
	if ch.File != "" {
		where += " " + ch.File
	}
	was := "it was not set there"
	if len(ch.Before) > 0 {
		was = "it was " + strings.Join(ch.Before, ", ")
	}
	switch {
	case !ch.Changed && ch.Action == "unset":
		return fmt.Sprintf("%s is not set in the %s; nothing changed", ch.Name, where)
	case !ch.Changed && ch.Action == "add":
		return fmt.Sprintf("%s already has %s in the %s; nothing changed", ch.Name, value, where)
	case !ch.Changed:
		return fmt.Sprintf("%s is already %s in the %s; nothing changed", ch.Name, value, where)
	case ch.Action == "unset" && len(ch.After) > 0:
		return fmt.Sprintf("%s: removed %s from the %s; it keeps %s", ch.Name, value, where, strings.Join(ch.After, ", "))
	case ch.Action == "unset":
		return fmt.Sprintf("%s: removed from the %s (%s)", ch.Name, where, was)
	case ch.Action == "add":
		return fmt.Sprintf("%s: added %s in the %s; it has %s now", ch.Name, value, where, countOf(len(ch.After), "value"))
	}
	return fmt.Sprintf("%s = %s in the %s (%s)", ch.Name, value, where, was)
}

// changeNote says how the change reads over both files: the other
// file's value that wins here, or the default or value now in force.
func changeNote(ch configChange) string {
	e := ch.Effective
	switch {
	case ch.Scope == gitrepo.ScopeGlobal && e.Scope == gitrepo.ScopeLocal:
		return fmt.Sprintf("In this repository its own value %s wins over yours (lazy config --unset %s uses yours here).", e.shown(), ch.Name)
	case ch.Action == "unset" && e.Scope == "default":
		return fmt.Sprintf("It is at its default now: %s.", e.Default)
	case ch.Action == "unset" && e.Scope != ch.Scope:
		return fmt.Sprintf("It reads %s now, from the %s config %s.", e.shown(), scopeWord(e.Scope), e.File)
	}
	return ""
}

func scopeWord(scope string) string {
	if scope == gitrepo.ScopeGlobal {
		return "global"
	}
	return "repository's"
}

// countOf is "1 value", "2 values".
func countOf(n int, what string) string {
	return fmt.Sprintf("%d %s", n, render.Plural(n, what, what+"s"))
}
