package session

import (
	"github.com/lazyorch/lazy/internal/redact"
	"github.com/lazyorch/lazy/notify"
)

// Secrets takes out of text what looks like a credential and what this
// repository's configuration says is secret: the paths and queries of
// the URLs lazy.notify names. A gate's output goes through it before it
// is recorded (the record is pushed), shown or sent.
func (e *Env) Secrets() *redact.Redactor {
	cfg, err := e.Repo.Config()
	if err != nil {
		return redact.New()
	}
	return redact.New(cfg.All(notify.KeyTargets)...)
}
