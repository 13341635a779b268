package proc

import "golang.org/x/sys/unix"

// BecomeSubreaper makes this process the child subreaper of everything
// it starts (prctl PR_SET_CHILD_SUBREAPER): a descendant whose parent
// dies is re-parented to it rather than to init, so a process that left
// its process group and session (setsid, a daemonizing double fork) and
// cleared its environment is still found among this process's children.
// Only a process that starts nothing it means to outlive it should ask.
func BecomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}
