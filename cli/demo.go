package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/lazyorch/lazy/demo"
)

// DemoCmd runs a guided tour in a scratch repository with the real lazy
// binary, checking each step as it goes, so `go run . demo` is both a
// tour and a smoke test.
type DemoCmd struct {
	Keep bool   `help:"Keep the scratch repository and print its path."`
	Dir  string `help:"Create the scratch repository under DIR (default: the system temp dir)." placeholder:"DIR"`
}

// Run implements lazy demo.
func (c *DemoCmd) Run(a *app, ctx context.Context) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("demo: find the lazy binary: %w", err)
	}
	return demo.Run(ctx, a.io.out, exe, c.Dir, c.Keep)
}
