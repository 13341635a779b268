package task

import "github.com/lazyorch/lazy/machine"

// Refused is an operation a merge could not replay: after ordering both
// sides' operations, its transition was no longer valid. Its commit stays
// in history; the task lists it so show and doctor report it.
type Refused struct {
	Commit string         `json:"commit"`
	Op     string         `json:"op"`
	Actor  machine.Actor  `json:"actor"`
	From   machine.Status `json:"from,omitempty"`
	To     machine.Status `json:"to"`
	Clock  uint64         `json:"clock"`
	Host   string         `json:"host"`
	Reason string         `json:"reason"`
	// Task and KeptLocal are set in a pull's report: the task's slug,
	// and whether the whole pulled change was refused (the local record
	// stayed where it was) rather than one operation of a merge.
	Task      string `json:"task,omitempty"`
	KeptLocal bool   `json:"kept_local,omitempty"`
}

// MergeHost is the host a merge commit is attributed to: not the machine
// that computed it, so that every machine computes the same commit.
const MergeHost = "merge"
