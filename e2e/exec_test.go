package e2e

import (
	"os"
	osexec "os/exec"
)

func gitCmd(dir string, args ...string) *osexec.Cmd {
	cmd := osexec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	return cmd
}
