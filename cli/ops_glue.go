package cli

import "github.com/lazyorch/lazy/lifecycle"

func opsCreateInput(c *CreateCmd, goal string) lifecycle.CreateInput {
	return lifecycle.CreateInput{Title: c.Title, Goal: goal, Slug: c.Slug, Parent: c.Parent, TargetBranch: c.TargetBranch, AllowedPaths: c.Allow, Sandbox: c.Sandbox, After: c.After}
}
