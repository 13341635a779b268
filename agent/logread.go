package agent

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/lazyorch/lazy/proto"
)

// SplitLog splits b, the bytes of an agent log from offset off on, into
// its lines and calls fn for each complete one; it returns how many bytes
// of b those lines span (a line still being written is left for the next
// read). marks is the log's index: a log an older lazy wrote has no
// frame where a launch begins, and may have the launch's first line glued
// to what the previous one printed last (its exit escapes, no newline).
// There SplitLog ends the line at the launch's offset and gives the frame
// the index describes, so every log reads as one this lazy wrote.
func SplitLog(b []byte, off int64, marks []proto.LogMark, fn func(line string)) int {
	done := 0
	for done < len(b) {
		end, whole := lineEnd(b, done, off, marks)
		if !whole {
			return done
		}
		emit(b[done:end], off+int64(done), marks, fn)
		done = end
		if done < len(b) && b[done] == '\n' {
			done++
		}
	}
	return done
}

// FlushLog calls fn for what SplitLog left of b: a last line without its
// newline, read once the log will grow no more.
func FlushLog(b []byte, off int64, marks []proto.LogMark, fn func(line string)) {
	if n := SplitLog(b, off, marks, fn); n < len(b) {
		emit(b[n:], off+int64(n), marks, fn)
	}
}

// emit gives fn the line that begins at offset at, after the frame of a
// launch that begins there and has none in the log.
func emit(line []byte, at int64, marks []proto.LogMark, fn func(line string)) {
	for _, m := range marks {
		if m.Offset != at {
			continue
		}
		if f, ok := proto.ParseLogLine(string(line)); !ok || f.Lazy != proto.LogTurn || f.Turn != m.Seq {
			fn(frameLine(proto.LogLine{Lazy: proto.LogTurn, Turn: m.Seq, Kind: m.Kind, At: m.At}))
		}
		break
	}
	fn(string(line))
}

func frameLine(l proto.LogLine) string { return strings.TrimSuffix(string(l.Bytes()), "\n") }

// lineEnd is where the line that starts at b[i] ends: at its newline, or
// at the next launch's offset (an older lazy's log). whole is false when
// neither is in b yet.
func lineEnd(b []byte, i int, off int64, marks []proto.LogMark) (int, bool) {
	nl := bytes.IndexByte(b[i:], '\n')
	for _, m := range marks {
		if at := m.Offset - off; at > int64(i) && at <= int64(len(b)) && (nl < 0 || at < int64(i+nl)) {
			return int(at), true
		}
	}
	if nl < 0 {
		return 0, false
	}
	return i + nl, true
}

// RawLine is one log line as lazy logs --raw prints it, a JSON value on
// one line: an agent's JSON event as the agent wrote it (an older lazy's
// log loses the escapes around it), one of lazy's own lines as it is, and
// any other text the agent printed as an out line. ok is false for a
// line with nothing in it.
func RawLine(line string) (string, bool) {
	if _, ok := proto.ParseLogLine(line); ok {
		return strings.TrimRight(line, "\r\n"), true
	}
	clean, ok := CleanLine(line)
	if !ok || strings.TrimSpace(clean) == "" {
		return "", false
	}
	if t := strings.TrimSpace(clean); json.Valid([]byte(t)) && !looksLazy(t) {
		return t, true
	}
	if _, ok := proto.ParseLogLine(clean); ok {
		return clean, true // an agent's line the capture wrapped already
	}
	return frameLine(proto.LogLine{Lazy: proto.LogOut, Text: clean}), true
}
