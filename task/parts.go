package task

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lazyorch/lazy/internal/words"
)

// The parts of a stored record, named as a store keeps them (gitstore:
// the entries of a snapshot's tree), and the size limits of each.
// Records come from other machines, and anyone who can push to a shared
// remote can write one of any size, so a store checks a part's size
// before it reads it, and every store refuses to write a part it could
// not read back, in the same words (see EncodePart).
const (
	PartTask       = "task.json"
	PartGoal       = "goal.md"
	PartSession    = "session.json"
	PartViolations = "violations.json"
	PartOp         = "op.json"
	PartTurns      = "turns"    // one entry per turn, named SeqName(seq)
	PartComments   = "comments" // one entry per comment, named SeqName(seq)
	// PartSlug is a slug reservation: one id and a newline.
	PartSlug = "slug"
)

// Size limits of the parts of a record.
const (
	// MaxMetaRecord bounds task.json, session.json and op.json: fields,
	// ids and a title, never long texts (goal.md holds the goal).
	MaxMetaRecord = 1 << 20
	// MaxViolationsRecord bounds violations.json: paths an agent changed
	// outside its allowed paths, which an agent decides the number of.
	MaxViolationsRecord = 8 << 20
	// MaxTextRecord bounds goal.md and each turn and comment: one or two
	// texts of up to MaxText, JSON-escaped.
	MaxTextRecord = 2*MaxText + 1<<20
	// MaxSlugRecord bounds a slug reservation: one id and a newline.
	MaxSlugRecord = 1 << 10
)

// SeqName is the name of turn or comment seq within its part, zero-padded
// so that plain `git ls-tree` lists records in order.
func SeqName(seq int) string { return fmt.Sprintf("%06d.json", seq) }

// PartLimit returns the size limit of a part by its name (a turn or a
// comment as "turns/<SeqName>", "comments/<SeqName>").
func PartLimit(name string) int64 {
	switch {
	case name == PartTask, name == PartSession, name == PartOp:
		return MaxMetaRecord
	case name == PartViolations:
		return MaxViolationsRecord
	case name == PartGoal, strings.HasPrefix(name, PartTurns+"/"), strings.HasPrefix(name, PartComments+"/"):
		return MaxTextRecord
	case name == PartSlug:
		return MaxSlugRecord
	}
	return MaxMetaRecord
}

// CheckPartSize keeps a store's own writes readable: a part it could not
// read back is refused before anything is written.
func CheckPartSize(name string, n int) error {
	if limit := PartLimit(name); int64(n) > limit {
		return fmt.Errorf("%s would be %s, over lazy's limit of %s for it; nothing was saved (shorten the text)", name, words.Bytes(int64(n)), words.Bytes(limit))
	}
	return nil
}

// EncodePart is v as a store writes part name: indented JSON and a
// newline, refused when over the part's limit.
func EncodePart(name string, v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", name, err)
	}
	b = append(b, '\n')
	if err := CheckPartSize(name, len(b)); err != nil {
		return nil, err
	}
	return b, nil
}
