// Command lazy is a git-native orchestrator for AI coding agents: tasks,
// sessions and turns live as commits under refs/lazy/* in the repository.
package main

import (
	"os"

	"github.com/lazyorch/lazy/cli"
)

// version is stamped at build time (-ldflags "-X main.version=...").
var version = "dev"

func main() {
	os.Exit(cli.Run(version, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
