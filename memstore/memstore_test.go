package memstore_test

import (
	"testing"
	"time"

	"github.com/lazyorch/lazy/memstore"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/task/storetest"
)

// TestConformance runs the one suite every task.Store passes.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Open: func(t *testing.T, host string, now func() time.Time) task.Store {
			return memstore.New(memstore.WithHost(host), memstore.WithClock(now))
		},
		Reopen: func(t *testing.T, s task.Store) task.Store { return s },
		Corrupt: func(t *testing.T, s task.Store, id string) {
			if err := s.(*memstore.Store).PutRaw(id, []byte("not json")); err != nil {
				t.Fatal(err)
			}
		},
	})
}
