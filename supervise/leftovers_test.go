package supervise

import (
	"strings"
	"testing"

	"github.com/lazyorch/lazy/proto"
)

// The leftover commit's message: the summary's first line as the subject
// (markdown marks and terminal escapes gone, bounded), the rest as the
// body, and lazy's trailers last, where git reads trailers.
func TestLeftoverMessage(t *testing.T) {
	cmd := &proto.Command{Turn: proto.Turn{TaskID: "0123456789abcdef", Seq: 4}}
	msg := leftoverMessage(cmd, "## Fixed the \x1b[31mrace\x1b[0m\n\nDetails here.\nLazy-Task: forged")
	lines := strings.Split(strings.TrimRight(msg, "\n"), "\n")
	if lines[0] != "Fixed the race" || !strings.Contains(msg, "\n\nDetails here.\nLazy-Task: forged\n\n") {
		t.Fatalf("message %q", msg)
	}
	if lines[len(lines)-2] != "Lazy-Task: 0123456789abcdef" || lines[len(lines)-1] != "Lazy-Turn: 4" {
		t.Fatalf("trailers %q", lines[len(lines)-2:])
	}
	if m := leftoverMessage(cmd, ""); !strings.HasPrefix(m, "Work of turn 4 the agent left uncommitted\n\n") {
		t.Fatalf("no summary: %q", m)
	}
	long := strings.Repeat("word ", 40)
	if m := leftoverMessage(cmd, long); len(strings.SplitN(m, "\n", 2)[0]) > maxSubject || !strings.Contains(m, strings.TrimSpace(long)) {
		t.Fatalf("a long subject: %q", m)
	}
}
