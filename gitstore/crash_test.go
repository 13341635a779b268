package gitstore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// crashEnv makes this test binary a writer that updates one task until
// it is killed, printing the clock of each update it saw committed.
const crashEnv = "LAZY_GITSTORE_CRASH"

// crashWriter runs "dir|id": updates that each write several objects (a
// turn of 64 KiB, a comment, task.json, trees, a commit) and move the
// ref, so a kill lands in any phase of one.
func crashWriter(spec string) int {
	dir, id, _ := strings.Cut(spec, "|")
	repo, err := Discover(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s := Open(repo, WithHost("crash-writer"))
	body := strings.Repeat("turn text ", 6554)
	for {
		sn, _, err := s.Update(context.Background(), id, func(sn *task.Snapshot) (*task.Op, error) {
			sn.AddTurn(task.Turn{Role: "user", Content: body})
			sn.AddComment(task.Comment{Actor: machine.Human, Text: "c"})
			return toggle(sn)
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(sn.Task.Clock) // one write: the line is out before the next update starts
	}
}

// TestKilledWriterLeavesOldOrNewRecord kills a writer process at random
// points of its updates: the task's record is then the last update the
// writer reported or the one it was making, whole (every turn, comment
// and operation of it readable, every object git needs present), never
// a torn one. A lock file the killed writer held stays, as git's own
// would, and is what stops the next write until removed (lazy doctor
// does); after that, writes go on.
func TestKilledWriterLeavesOldOrNewRecord(t *testing.T) {
	testrepo.FullLane(t)
	t.Parallel()
	s, dir := open(t)
	id := parkedTask(t, s)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rounds := 12
	if testing.Short() {
		rounds = 4
	}
	rng := rand.New(rand.NewPCG(45, uint64(os.Getpid())))
	locksSeen := 0
	for round := 0; round < rounds; round++ {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), crashEnv+"="+dir+"|"+id)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		last := uint64(0)
		want := 1 + rng.IntN(6)
		for n := 0; n < want && lines.Scan(); n++ {
			last, _ = strconv.ParseUint(lines.Text(), 10, 64)
		}
		// Kill it in the middle of its next update, somewhere: the delay
		// picks the point, it waits for nothing.
		<-time.After(time.Duration(rng.IntN(15000)) * time.Microsecond)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		for lines.Scan() { // what it printed before the kill
			last, _ = strconv.ParseUint(lines.Text(), 10, 64)
		}
		werr := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(werr, &ee) || ee.ExitCode() != -1 {
			t.Fatalf("round %d: the writer ended on its own (%v): %s", round, werr, stderr.String())
		}
		if last == 0 {
			t.Fatalf("round %d: the writer reported no update: %s", round, stderr.String())
		}
		sn := checkWhole(t, Open(s.repo), dir, id)
		if sn.Task.Clock != last && sn.Task.Clock != last+1 {
			t.Fatalf("round %d: the writer last reported clock %d, the record is at %d", round, last, sn.Task.Clock)
		}
		lock := s.repo.CommonDir + "/" + TaskRef(id) + ".lock"
		if _, err := os.Stat(lock); err == nil {
			locksSeen++
			if _, _, err := s.Update(context.Background(), id, toggle); !errors.Is(err, ErrLocked) {
				t.Fatalf("round %d: an update under the killed writer's lock: %v", round, err)
			}
			if err := os.Remove(lock); err != nil {
				t.Fatal(err)
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	after, _, err := s.Update(context.Background(), id, toggle)
	if err != nil {
		t.Fatalf("an update after the kills: %v", err)
	}
	checkWhole(t, s, dir, id)
	t.Logf("%d kills, %d of them while the ref was locked; clock %d", rounds, locksSeen, after.Task.Clock)
}

// checkWhole loads task id and reads every part of it, failing the test
// on anything missing or unreadable, and has git check that every
// object its refs reach is present and well formed.
func checkWhole(t *testing.T, s *Store, dir, id string) *task.Snapshot {
	t.Helper()
	sn, err := s.Load(id)
	if err != nil {
		t.Fatalf("the record after a kill: %v", err)
	}
	if _, err := sn.Goal(); err != nil {
		t.Fatal(err)
	}
	turns, err := s.Turns(sn)
	if err != nil || len(turns) != sn.Task.Turns {
		t.Fatalf("%d turns of %d: %v", len(turns), sn.Task.Turns, err)
	}
	cs, err := s.Comments(sn)
	if err != nil || len(cs) != sn.Task.Comments {
		t.Fatalf("%d comments of %d: %v", len(cs), sn.Task.Comments, err)
	}
	hist, err := s.History(sn)
	if err != nil || uint64(len(hist)) != sn.Task.Clock {
		t.Fatalf("%d operations in the history of a record at clock %d: %v", len(hist), sn.Task.Clock, err)
	}
	if list, err := s.List(); err != nil || len(list) != 1 || list[0].Err != nil || list[0].Commit != sn.Commit {
		t.Fatalf("list %+v %v", list, err)
	}
	testrepo.Git(t, dir, "fsck", "--no-dangling", "--connectivity-only")
	return sn
}
