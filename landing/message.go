package landing

import (
	"github.com/lazyorch/lazy/task"
)

// acceptMessage is the squash commit's message for sn, with what the
// task and its subtasks cost in its trailers.
func (e *Service) acceptMessage(sn *task.Snapshot, branch string) (string, error) {
	spent, err := e.spending().Spent(sn)
	if err != nil {
		return "", err
	}
	return squashMessage(sn, branch, spent), nil
}
