package review

import (
	"os"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
)

// TestMain makes the repository testrepo.New copies once for the
// package, instead of six git processes per test.
func TestMain(m *testing.M) { os.Exit(testrepo.Main(m)) }
