package landing

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// TestLanesMeasure is a measurement, run by hand:
//
//	LAZY_MEASURE_LANES=1 go test ./landing -run TestLanesMeasure -v
//
// Six tasks accepted together, docs and api alternating, the first docs
// one failing a gate of about a second (lazy.gate.parallel 1): how long
// until every api task has landed and the whole train has, and how many
// gate runs it took, as one train and with lanes docs and api.
func TestLanesMeasure(t *testing.T) {
	if os.Getenv("LAZY_MEASURE_LANES") == "" {
		t.Skip("a measurement: set LAZY_MEASURE_LANES=1")
	}
	for _, lanes := range []bool{false, true} {
		ctx := context.Background()
		r := newGateRepo(t, "sleep 1; test ! -e docs/bad.md")
		if lanes {
			testrepo.Git(t, r.dir, "config", "--add", "lazy.gate.lanes", "docs=docs/")
			testrepo.Git(t, r.dir, "config", "--add", "lazy.gate.lanes", "api=api/")
		}
		var ids []string
		for i, f := range []string{"docs/bad.md", "api/a1.go", "docs/d2.md", "api/a2.go", "docs/d3.md", "api/a3.go"} {
			ids = append(ids, r.task(t, fmt.Sprint("t", i), map[string]string{f: "x\n"}).Task.ID)
		}
		start := time.Now()
		apiDone := make(chan time.Duration, 1)
		stop, exited := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(exited)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if strings.Contains(testrepo.Git(t, r.dir, "ls-tree", "-r", "--name-only", "main"), "api/a3.go") {
					apiDone <- time.Since(start)
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
		res := r.e.AcceptMany(ctx, ids, nil, AcceptOptions{})
		total := time.Since(start)
		close(stop)
		<-exited
		runs := 0
		for _, id := range ids {
			runs += len(r.load(t, id).Task.Gate.Runs)
		}
		var api time.Duration
		select {
		case api = <-apiDone:
		default:
		}
		for i, x := range res {
			if (i == 0) != (x.Err != nil) {
				t.Fatalf("task %d: %v", i, x.Err)
			}
		}
		if api == 0 {
			t.Fatal("the api tasks did not all land")
		}
		t.Logf("lanes=%v: api tasks all landed at %.1fs, whole train %.1fs, %d gate runs", lanes, api.Seconds(), total.Seconds(), runs)
	}
}
