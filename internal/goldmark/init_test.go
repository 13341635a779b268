package goldmark_test

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// probeEnv makes this test binary exit as soon as its package inits have
// run, so TestForkCostsLittleAtStart can read what they cost.
const probeEnv = "LAZY_GOLDMARK_INIT_PROBE"

func TestMain(m *testing.M) {
	if os.Getenv(probeEnv) != "" {
		os.Exit(0) // every init has run: that is all the probe wants
	}
	os.Exit(m.Run())
}

// initLine is a line of GODEBUG=inittrace=1: package, heap bytes.
var initLine = regexp.MustCompile(`(?m)^init (\S+) @[^,]*, [^,]*, (\d+) bytes, \d+ allocs$`)

// TestForkCostsLittleAtStart holds the point of the fork: a process that
// links goldmark but renders nothing, every lazy command but lazy web,
// allocates next to nothing in its inits. Upstream's inits allocate about
// 60 KB (regexps, the attribute filters, the default parser), and every
// page of it is a page fault at start.
func TestForkCostsLittleAtStart(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), probeEnv+"=1", "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the init probe failed: %v\n%s", err, out)
	}
	const perPackage, total = 8 << 10, 16 << 10
	var sum, seen int
	for _, m := range initLine.FindAllStringSubmatch(string(out), -1) {
		if m[1] != forkPath && !strings.HasPrefix(m[1], forkPath+"/") {
			continue
		}
		seen++
		n, err := strconv.Atoi(m[2])
		if err != nil {
			t.Fatal(err)
		}
		sum += n
		if n > perPackage {
			t.Errorf("%s allocates %d bytes at start (at most %d): a package-level value is built eagerly; teach fork_test.go to defer it", m[1], n, perPackage)
		}
	}
	// The parser, the HTML renderer, the AST and the extensions all have
	// inits; fewer lines means the trace was not read.
	if seen < 4 {
		t.Fatalf("found inittrace lines for %d forked packages, want at least 4:\n%s", seen, out)
	}
	if sum > total {
		t.Errorf("the forked packages allocate %d bytes at start, want at most %d", sum, total)
	}
}
