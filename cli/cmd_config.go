package cli

import (
	"fmt"
	"strings"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/configkeys"
	"github.com/lazyorch/lazy/internal/words"
)

// ConfigCmd is lazy config: the effective settings and where each comes
// from.
type ConfigCmd struct {
	Keys []string `arg:"" optional:"" name:"key" help:"Show only these keys (lazy.gate.timeout, or a prefix such as lazy.gate)." predictor:"configkey"`
	Set  bool     `help:"Show only the keys set in git config, not those at their default."`
	JSON bool     `help:"Print the settings as JSON."`
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
func (c *ConfigCmd) Run(a *app) error {
	if err := a.open(); err != nil {
		return err
	}
	rows := configSettings(a.cfg)
	var out []configSetting
	for _, r := range rows {
		if c.Set && r.Scope == "default" {
			continue
		}
		if len(c.Keys) > 0 && !matchesAny(r.Name, c.Keys) {
			continue
		}
		out = append(out, r)
	}
	if len(c.Keys) > 0 && len(out) == 0 {
		return fmt.Errorf("no lazy setting matches %s; lazy config lists them all", strings.Join(c.Keys, ", "))
	}
	if c.JSON {
		if out == nil {
			out = []configSetting{}
		}
		return a.printJSON(out)
	}
	st := a.style()
	var table [][]cell
	for _, r := range out {
		value := r.Value
		if len(r.Values) > 1 {
			value = strings.Join(r.Values, ", ")
		}
		if r.Scope == "default" {
			value = r.Default
		}
		origin := r.Scope
		if r.File != "" {
			origin += " " + r.File
		}
		sgr := ""
		if r.Scope != "default" {
			sgr = "1"
		}
		table = append(table, []cell{{text: r.Name}, {text: value, sgr: sgr}, {text: origin}})
	}
	if err := st.table(a.stdout, []string{"KEY", "VALUE", "ORIGIN"}, table); err != nil {
		return err
	}
	for _, r := range out {
		switch {
		case r.Error != "":
			fmt.Fprintf(a.stdout, "! %s\n", r.Error)
		case !r.Known:
			fmt.Fprintf(a.stdout, "! %s is set but lazy does not read it%s\n", r.Name, nearestKey(r.Name))
		}
	}
	return nil
}

// configSettings is every registered key with its effective value and
// origin, then the lazy.* keys set that lazy does not read.
func configSettings(cfg *gitrepo.Config) []configSetting {
	var rows []configSetting
	for _, k := range configkeys.All() {
		r := configSetting{Name: k.Name, Scope: "default", Default: configkeys.Plain(k.Default), Kind: k.Kind, Help: configkeys.Plain(k.Help), Known: true}
		if o := cfg.Origins(k.Name); len(o) > 0 {
			last := o[len(o)-1]
			r.Value, r.Scope, r.File = last.Value, last.Scope, last.File
			if k.Kind == configkeys.List {
				for _, v := range o {
					r.Values = append(r.Values, v.Value)
				}
			}
			if err := k.Check(last.Value); err != nil {
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
