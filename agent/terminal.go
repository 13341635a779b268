package agent

import "strings"

// StripTerminal removes terminal escape sequences (CSI such as
// "\x1b[?25h", OSC titles, charset and keypad switches) and the other
// control characters a CLI under a pty writes, keeping newlines and tabs.
// Claude Code, for one, restores its terminal modes on exit; those bytes
// must not become a recorded failure reason.
func StripTerminal(s string) string {
	if !strings.ContainsFunc(s, isStrippable) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != 0x1b {
			if !isStrippable(rune(c)) {
				b.WriteByte(c)
			}
			continue
		}
		i = skipEscape(s, i)
	}
	return b.String()
}

// isStrippable reports control characters other than tab, newline and
// carriage return (bytes >= 0x80 are UTF-8 and pass).
func isStrippable(r rune) bool {
	return (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f
}

// skipEscape returns the index of the last byte of the escape sequence
// that starts at s[i] == ESC.
func skipEscape(s string, i int) int {
	if i+1 >= len(s) {
		return i
	}
	switch s[i+1] {
	case '[': // CSI: parameters and intermediates, then one final byte
		j := i + 2
		for j < len(s) && s[j] >= 0x20 && s[j] <= 0x3f {
			j++
		}
		for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f {
			j++
		}
		if j < len(s) {
			return j
		}
		return len(s) - 1
	case ']', 'P', '_', '^': // OSC, DCS, APC, PM: up to BEL or ST
		for j := i + 2; j < len(s); j++ {
			if s[j] == 0x07 {
				return j
			}
			if s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\' {
				return j + 1
			}
		}
		return len(s) - 1
	case '(', ')', '*', '+', '#', '%': // charset and line attributes: one more byte
		if i+2 < len(s) {
			return i + 2
		}
		return len(s) - 1
	default: // two-byte sequences such as ESC = and ESC >
		return i + 1
	}
}
