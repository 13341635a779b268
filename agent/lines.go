package agent

import "bytes"

// Lines splits a byte stream written in arbitrary chunks into lines,
// dropping the CR a pty puts before each LF. It is not safe for
// concurrent use; callers hold their own lock.
type Lines struct {
	partial []byte
}

// Feed appends p and calls fn for every complete line.
func (l *Lines) Feed(p []byte, fn func(line string)) {
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			return
		}
		fn(string(bytes.TrimRight(l.partial[:i], "\r")))
		l.partial = l.partial[i+1:]
	}
}

// Flush calls fn for a last line that lacked its newline.
func (l *Lines) Flush(fn func(line string)) {
	if len(l.partial) > 0 {
		fn(string(bytes.TrimRight(l.partial, "\r")))
		l.partial = nil
	}
}
