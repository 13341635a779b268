package session

import (
	"strings"
	"testing"

	"github.com/lazyorch/lazy/machine"
)

func TestActorFromEnvNeverGrantsSystem(t *testing.T) {
	t.Setenv("LAZY_ACTOR", "system")
	if _, err := ActorFromEnv(); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Fatalf("LAZY_ACTOR=system: %v", err)
	}
	t.Setenv("LAZY_ACTOR", "agent")
	if a, err := ActorFromEnv(); err != nil || a != machine.Agent {
		t.Fatalf("LAZY_ACTOR=agent: %v %v", a, err)
	}
}
