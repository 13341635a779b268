package cli

import "github.com/lazyorch/lazy/ops"

func opsCreateInput(c *CreateCmd, goal string) ops.CreateInput {
	return ops.CreateInput{Title: c.Title, Goal: goal, Slug: c.Slug, Parent: c.Parent, TargetBranch: c.TargetBranch, AllowedPaths: c.Allow, Sandbox: c.Sandbox, After: c.After}
}
