package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lazyorch/lazy/configcheck"
	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/configkeys"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/render"
)

// ConfigCmd is lazy config: the effective settings and where each comes
// from, or one key set, added to or unset (config_set.go).
type ConfigCmd struct {
	Args       []string `arg:"" optional:"" name:"key" help:"KEY, or a prefix such as lazy.gate, to show; KEY VALUE to set it." predictor:"configkey"`
	Changed    bool     `help:"List only the keys set in git config, not those at their default."`
	Set        bool     `hidden:"" help:"Renamed --changed."`
	Global     bool     `help:"Change your global git config (~/.gitconfig, or $GIT_CONFIG_GLOBAL) instead of the repository's."`
	Add        bool     `help:"Add VALUE to a repeatable key (lazy.notify, lazy.agent.allow, lazy.gate, ...) beside its other values." xor:"change"`
	ReplaceAll bool     `name:"replace-all" help:"Replace every value of a repeatable key with VALUE." xor:"change"`
	Unset      bool     `help:"Remove KEY from the config: every value, or only VALUE of a repeatable key." xor:"change"`
	JSON       bool     `help:"Print the settings, or what a change did, as JSON."`
}

// configSetting is one row of lazy config.
type configSetting struct {
	Name    string   `json:"name"`
	Value   string   `json:"value"`            // the effective value ("" at a default that is not a value)
	Values  []string `json:"values,omitempty"` // every value of a multi-valued key
	Scope   string   `json:"scope"`            // local, global, or default
	File    string   `json:"file,omitempty"`   // the config file the winning value came from
	Default string   `json:"default"`
	Kind    string   `json:"kind"`
	Help    string   `json:"help"`
	Error   string   `json:"error,omitempty"` // a bad value: the key, the value and the fix
	Known   bool     `json:"known"`           // false: a lazy.* key lazy does not read (a typo?)
}

// Run implements lazy config.
func (c *ConfigCmd) Run(a *app, ctx context.Context) error {
	if c.Set {
		return errors.New("lazy config --set is now --changed (it lists the keys that are set); to set a key, run lazy config KEY VALUE")
	}
	if c.isChange() {
		return c.change(a, ctx)
	}
	if c.Global {
		return errors.New("--global goes with a change: lazy config --global KEY VALUE, --global --add KEY VALUE or --global --unset KEY")
	}
	if err := a.open(); err != nil {
		return err
	}
	rows := configSettings(a.cfg)
	var out []configSetting
	for _, r := range rows {
		if c.Changed && r.Scope == "default" {
			continue
		}
		if len(c.keys()) > 0 && !matchesAny(r.Name, c.keys()) {
			continue
		}
		out = append(out, r)
	}
	if len(c.keys()) > 0 && len(out) == 0 {
		if len(c.keys()) == 1 {
			return fmt.Errorf("no lazy setting matches %s%s", sanitize.Field(c.keys()[0]), nearestKey(c.keys()[0]))
		}
		return fmt.Errorf("no lazy setting matches %s; lazy config lists them all", sanitize.Field(strings.Join(c.keys(), ", ")))
	}
	if c.JSON {
		if out == nil {
			out = []configSetting{}
		}
		return a.io.printJSON(out)
	}
	st := a.io.style(a.now())
	var table [][]render.Cell
	for _, r := range out {
		sgr := ""
		if r.Scope != "default" {
			sgr = "1"
		}
		// The value goes last: one long value (lazy.sandbox.hide's
		// default names sixteen paths) then widens its own line only, not
		// every row of the listing.
		table = append(table, []render.Cell{{Text: r.Name}, {Text: r.origin()}, {Text: r.shown(), SGR: sgr}})
	}
	if err := st.Table(a.io.out, []string{"KEY", "ORIGIN", "VALUE"}, table); err != nil {
		return err
	}
	for _, r := range out {
		switch {
		case r.Error != "":
			fmt.Fprintf(a.io.out, "! %s\n", sanitize.Field(r.Error))
		case !r.Known:
			fmt.Fprintf(a.io.out, "! %s is set but lazy does not read it%s\n", sanitize.Field(r.Name), nearestKey(r.Name))
		}
	}
	return nil
}

// keys are the keys or prefixes a listing shows.
func (c *ConfigCmd) keys() []string { return c.Args }

// shown is the row's value as the listing prints it: every value of a
// repeatable key, or the default.
func (r configSetting) shown() string {
	switch {
	case r.Scope == "default":
		return r.Default
	case len(r.Values) > 1:
		return strings.Join(r.Values, ", ")
	}
	return r.Value
}

// origin is where the row's value comes from: its scope and file.
func (r configSetting) origin() string {
	if r.File != "" {
		return r.Scope + " " + r.File
	}
	return r.Scope
}

// configSettings is every registered key with its effective value and
// origin, then the lazy.* keys set that lazy does not read.
func configSettings(cfg *gitrepo.Config) []configSetting {
	var rows []configSetting
	for _, k := range configkeys.All() {
		r := configSetting{Name: k.Name, Scope: "default", Default: configkeys.Plain(k.Default), Kind: k.Kind, Help: configkeys.Plain(k.Help), Known: true}
		if o := cfg.Origins(k.Name); len(o) > 0 {
			last := o[len(o)-1]
			r.Value, r.Scope, r.File = configcheck.HideSecret(k.Name, last.Value), last.Scope, last.File
			if k.Multi() {
				for _, v := range o {
					r.Values = append(r.Values, configcheck.HideSecret(k.Name, v.Value))
					if err := k.Check(v.Value); err != nil && r.Error == "" {
						r.Error = err.Error()
					}
				}
			}
			if err := configcheck.Setting(k, last.Value); err != nil {
				r.Error = err.Error()
			}
		}
		rows = append(rows, r)
	}
	for _, name := range cfg.Names("lazy.") {
		if _, ok := configkeys.Lookup(name); ok {
			continue
		}
		o := cfg.Origins(name)
		last := o[len(o)-1]
		rows = append(rows, configSetting{Name: name, Value: last.Value, Scope: last.Scope, File: last.File})
	}
	return rows
}

// matchesAny reports whether name is one of keys or under one of them.
func matchesAny(name string, keys []string) bool {
	for _, k := range keys {
		if strings.EqualFold(name, k) || strings.HasPrefix(strings.ToLower(name), strings.ToLower(k)+".") {
			return true
		}
	}
	return false
}

// nearestKey is the did-you-mean of a lazy.* key lazy does not read.
func nearestKey(name string) string {
	best, nearest := 1+len(name)/8, ""
	for _, k := range configkeys.All() {
		if d := words.Distance(strings.ToLower(name), strings.ToLower(k.Name)); d < best {
			best, nearest = d, k.Name
		}
	}
	if nearest == "" {
		return " (lazy config lists the keys it reads)"
	}
	return "; did you mean " + nearest + "?"
}
