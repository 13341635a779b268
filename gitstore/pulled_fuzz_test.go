package gitstore

import (
	"testing"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/task"
)

// FuzzPulledRecord feeds arbitrary bytes as every file of a task record
// (task, session, violations, goal, a turn, a comment, the operation) to
// what pull and every read path do with a fetched commit: load it,
// validate it, read its turns, comments and history, and summarize it. No
// input may panic, and a record that passes validation has only fields
// that are safe to hand to git and the filesystem.
func FuzzPulledRecord(f *testing.F) {
	f.Add([]byte(`{"version":1,"id":"0123456789abcdef","slug":"x","title":"x","status":"interrupted","clock":1}`),
		[]byte(`{"id":"0123456789abcdef","number":1,"host":"h","agent":"exec","exec_command":["/bin/sh","-c","id"],"worktree":"/tmp/x","branch":"lazy/x"}`),
		[]byte(`{"pending":["../x"],"bases":{"a":"zz"}}`), []byte(`{"seq":1,"role":"human","content":"\u001b]52;c;aGk=\u0007"}`),
		[]byte(`{"op":"start","to":"working"}`))
	f.Add([]byte(`{"version":1,"id":"0123456789abcdef","slug":"@{-1}","title":"t","status":"merging","accept":{"accept_in_flight_from":"blocked","into":"--upload-pack=x","into_sha":"-x","dest":"rel/path","stash_sha":"nothex"}}`),
		[]byte(`{"id":"-rf","agent_session_id":"--dangerous","worktree":"/a/../b"}`), []byte(`null`), []byte(`[]`), []byte(`{}`))
	f.Add([]byte(`{`), []byte(`{"branch":"-x"}`), []byte(`{"decided":{"/etc/passwd":"approved"}}`), []byte(`1e999`), []byte("\xff\xfe"))
	const id = "0123456789abcdef"
	f.Fuzz(func(t *testing.T, record, session, violations, turn, op []byte) {
		s, _ := open(t)
		blob := func(b []byte) gitrepo.OID {
			h, err := s.objs.Write(gitrepo.Blob, b)
			if err != nil {
				t.Fatal(err)
			}
			return h
		}
		turnsTree, err := gitrepo.WriteTree(s.objs, []treeEntry{{Name: seqName(1), Hash: blob(turn)}})
		if err != nil {
			t.Fatal(err)
		}
		commentsTree, err := gitrepo.WriteTree(s.objs, []treeEntry{{Name: seqName(1), Hash: blob(turn)}})
		if err != nil {
			t.Fatal(err)
		}
		tree, err := gitrepo.WriteTree(s.objs, []treeEntry{
			{Name: fileTask, Hash: blob(record)}, {Name: fileSession, Hash: blob(session)},
			{Name: fileViolations, Hash: blob(violations)}, {Name: fileGoal, Hash: blob(turn)},
			{Name: fileOp, Hash: blob(op)},
			{Name: dirTurns, Hash: turnsTree, Dir: true}, {Name: dirComments, Hash: commentsTree, Dir: true},
		})
		if err != nil {
			t.Fatal(err)
		}
		commit, err := s.objs.Write(gitrepo.Commit, encodeCommit(tree, gitrepo.OID{}, "remote", time.Unix(0, 0), "crafted\n\nLazy-Op: x\nLazy-Clock: 99999999999999999999\n"))
		if err != nil {
			t.Fatal(err)
		}
		sn, err := s.loadAt(id, commit)
		if err != nil {
			return // refused as corrupt: what pull reports and skips
		}
		if err := task.ValidateRecord(sn); err != nil {
			return // refused as malformed
		}
		_, _ = sn.Goal()
		_, _ = s.Turns(sn)
		_, _ = s.Comments(sn)
		_, _ = s.History(sn)
		_ = summaryJSON(&sn.Task)
		// What survived validation is safe for argv and paths.
		if ss := sn.Session; ss != nil {
			if ss.Branch != "" && task.ValidBranchName(ss.Branch) != nil {
				t.Fatalf("an invalid branch %q passed validation", ss.Branch)
			}
			if ss.AgentSessionID != "" && !task.ValidAgentSession(ss.AgentSessionID) {
				t.Fatalf("agent session %q passed validation", ss.AgentSessionID)
			}
		}
		if a := sn.Task.Accept; a != nil && task.ValidBranchName(a.Into) != nil {
			t.Fatalf("accept into %q passed validation", a.Into)
		}
	})
}
