// Package words is how lazy words counts and lists for a person ("1
// task", "3 tasks"; "a, b and c") and finds the names nearest to a typo
// for "did you mean": one wording for every surface, so no message says
// "task(s)" or prints a Go slice.
package words

import (
	"fmt"
	"strconv"
	"strings"
)

// Count is n with the noun that goes with it: "1 task", "3 tasks", "0
// tasks".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// Plural is one when n is 1, else many.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// List joins names as a person lists them: "a", "a and b", "a, b and c";
// none when there are no names.
func List(names []string, none string) string {
	switch len(names) {
	case 0:
		return none
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// Or joins names as alternatives: "a", "a or b", "a, b or c".
func Or(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Closest names the candidates nearest to word, best first: those it is
// a prefix of ("acc" -> accept, for a word of two letters or more), else
// those within a few typos of it ("statsu" -> status; at most a third of
// the word's length, plus one), the nearest only. It returns nil when
// nothing is near.
func Closest(word string, candidates []string) []string {
	var prefixed []string
	for _, n := range candidates {
		if len(word) >= 2 && strings.HasPrefix(n, word) {
			prefixed = append(prefixed, n)
		}
	}
	if len(prefixed) > 0 {
		return prefixed
	}
	best, out := 1+len(word)/3, []string(nil)
	for _, n := range candidates {
		switch d := Distance(word, n); {
		case d < best:
			best, out = d, []string{n}
		case d == best:
			out = append(out, n)
		}
	}
	return out
}

// Distance is the optimal-string-alignment distance between a and b:
// insertions, deletions, substitutions and swaps of two neighbours each
// cost one.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// Bytes is n bytes in the largest binary unit that reads well: "16 MiB",
// "1.5 MiB", "4 KiB", "100 bytes".
func Bytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
