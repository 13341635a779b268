// Package configcheck checks a value of one of lazy's git config keys
// as the code that reads the key does: by the key's kind (the table in
// internal/configkeys), then, for the free-text keys, with their
// readers' own functions (notify, gate, gitstore, sandbox). It also
// hides secrets as lazy config prints them. It sits above those readers
// so that configkeys, below them all, stays a table.
package configcheck

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lazyorch/lazy/gate"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/configkeys"
	"github.com/lazyorch/lazy/notify"
	"github.com/lazyorch/lazy/sandbox"
)

// NewValue refuses a value lazy would refuse to read, worded for
// lazy config: what is wrong, that nothing changed, and a value it
// takes.
func NewValue(k configkeys.Key, value string) error {
	if strings.TrimSpace(value) == "" {
		return fmt.Errorf("an empty %s would mean nothing, so lazy config changed nothing; go back to the default with lazy config --unset %s", k.Name, k.Name)
	}
	if strings.ContainsAny(value, "\n\r") {
		return fmt.Errorf("%s is one line, so lazy config changed nothing; give the value without line breaks", k.Name)
	}
	why, err := problem(k, value)
	switch {
	case why != "":
		return configkeys.Refused(k.Name, value, why)
	case err != nil:
		return fmt.Errorf("%w; lazy config changed nothing", err)
	}
	return nil
}

// Setting is what a read finds wrong with a value of k: its kind
// (configkeys.Invalid's sentence), then what the key's reader checks.
func Setting(k configkeys.Key, value string) error {
	why, err := problem(k, value)
	if why != "" {
		return configkeys.Invalid(k.Name, value, why)
	}
	return err
}

// problem checks value as the code that reads k does: by kind
// (why, the middle of configkeys' sentences), then, for the free-text
// keys whose readers check them, with those readers' own functions (err,
// a whole sentence).
func problem(k configkeys.Key, value string) (why string, err error) {
	if why := k.Why(value); why != "" {
		return why, nil
	}
	switch k.Name {
	case notify.KeyTargets:
		_, err = notify.ParseTarget(value)
	case notify.KeyEvents:
		if _, problems := notify.ParseEvents(value); len(problems) > 0 {
			err = errors.New(problems[0])
		}
	case notify.KeyPerMinute:
		_, err = notify.ParsePerMinute(value)
	case "lazy.sandbox.network":
		_, _, err = sandbox.ParseNetworkSetting(value)
	case "lazy.sandbox.expose":
		err = sandbox.CheckExposed(value)
	case "lazy.pushRefspec":
		err = gitstore.CheckPushRefspec(value)
	case "lazy.gate.protect":
		err = gate.CheckProtect(value)
	case "lazy.gate.lanes":
		err = gate.CheckLanes(value)
	}
	return "", err
}

// HideSecret is a value as lazy config prints it: a notification
// target as lazy notify names it (a webhook's path and query hidden),
// a token not at all.
func HideSecret(key, value string) string {
	switch {
	case strings.EqualFold(key, notify.KeyTargets):
		return notify.Redact(value)
	case strings.EqualFold(key, "lazy.forge.token"):
		return "(hidden)"
	}
	return value
}

// HideSecrets is HideSecret of each value, never nil (--json prints
// an empty list, not null).
func HideSecrets(key string, values []string) []string {
	out := []string{}
	for _, v := range values {
		out = append(out, HideSecret(key, v))
	}
	return out
}
