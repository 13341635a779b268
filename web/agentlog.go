package web

import (
	"bytes"
	"io"
	"os"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/proto"
)

// LogEntry is one readable item of an agent's output as the page and its
// live stream carry it; agent.Render decides what the items are and the
// kind is the entry's CSS class.
type LogEntry struct {
	Kind string `json:"k"` // text, tool, result, note, error, out, turn, hold
	Text string `json:"t"`
}

// Bounds on what the log view reads and keeps.
const (
	logPageEntries = 300       // entries a page renders
	logTailBytes   = 256 << 10 // bytes of the log a page or a poll reads at most
)

// renderLine is one line of the agent log as the page's entries.
func renderLine(line string) []LogEntry {
	var out []LogEntry
	for _, e := range agent.Render(line) {
		out = append(out, LogEntry{Kind: e.Kind, Text: e.Text})
	}
	return out
}

// renderChunk renders the complete lines of chunk, which starts at
// offset off of the log, and reports how many bytes they span: a line
// still being written is left for the next read. marks is the log's
// index (an older lazy's log needs it to tell its launches apart).
func renderChunk(chunk []byte, off int64, marks []proto.LogMark) ([]LogEntry, int) {
	var out []LogEntry
	n := agent.SplitLog(chunk, off, marks, func(line string) {
		out = append(out, renderLine(line)...)
	})
	return out, n
}

// readLog renders the tail of a task's agent log, the last max entries,
// and returns the offset a live stream continues from.
func readLog(pd proto.Dir, maxEntries int) ([]LogEntry, int64) {
	f, err := os.Open(pd.Path(proto.LogFile))
	if err != nil {
		return nil, 0
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0
	}
	start := max(0, fi.Size()-logTailBytes)
	buf := make([]byte, fi.Size()-start)
	if _, err := f.ReadAt(buf, start); err != nil && err != io.EOF {
		return nil, 0
	}
	skip := 0
	if start > 0 {
		// Started mid-line: that line is not whole.
		skip = bytes.IndexByte(buf, '\n') + 1
	}
	entries, n := renderChunk(buf[skip:], start+int64(skip), pd.LogMarks())
	if len(entries) > maxEntries {
		entries = entries[len(entries)-maxEntries:]
	}
	return entries, start + int64(skip+n)
}

// readLogFrom renders what was appended to a task's agent log since
// offset. A log shorter than offset was replaced: it starts over.
func readLogFrom(pd proto.Dir, offset int64) ([]LogEntry, int64) {
	f, err := os.Open(pd.Path(proto.LogFile))
	if err != nil {
		return nil, offset
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, offset
	}
	if fi.Size() < offset {
		offset = 0
	}
	if fi.Size() == offset {
		return nil, offset
	}
	if fi.Size()-offset > logTailBytes {
		// Far behind: skip to the tail, as a page load would.
		entries, off := readLog(pd, logPageEntries)
		return entries, off
	}
	buf := make([]byte, fi.Size()-offset)
	if _, err := f.ReadAt(buf, offset); err != nil && err != io.EOF {
		return nil, offset
	}
	entries, n := renderChunk(buf, offset, pd.LogMarks())
	return entries, offset + int64(n)
}
