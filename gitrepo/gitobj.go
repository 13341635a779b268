package gitrepo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// ParsedCommit is what lazy reads of a git commit. go-git's object.Commit
// would do, but its package links OpenPGP and its ciphers into every lazy
// process (240 packages, a fifth of the package inits lazy runs at start)
// for signatures lazy never checks.
type ParsedCommit struct {
	TreeHash     OID
	ParentHashes []OID
	Committer    Signature
	// Message is everything after the headers' blank line, as stored.
	Message string
}

// Signature is the part of an author or committer line lazy reads.
type Signature struct {
	When time.Time
}

// ParsedTree is a decoded git tree.
type ParsedTree struct {
	Entries []TreeItem
}

// TreeItem is one entry of a decoded tree.
type TreeItem struct {
	Name string
	Mode filemode.FileMode
	Hash OID
}

var errBadObject = errors.New("malformed object")

// content reads the bytes of obj, which must be of type typ; read has
// already checked its size against the limit for its kind.
func content(obj plumbing.EncodedObject, typ plumbing.ObjectType) ([]byte, error) {
	if obj.Type() != typ {
		return nil, fmt.Errorf("%s is a %s, not a %s: %w", obj.Hash(), obj.Type(), typ, errBadObject)
	}
	rd, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	defer func() { _ = rd.Close() }()
	return io.ReadAll(rd)
}

// decodeCommit parses a commit object: the tree and parent headers, the
// committer's time, and the message. Other headers (author, gpgsig,
// mergetag, encoding) are skipped, continuation lines included.
func decodeCommit(obj plumbing.EncodedObject) (*ParsedCommit, error) {
	b, err := content(obj, plumbing.CommitObject)
	if err != nil {
		return nil, err
	}
	return parseCommit(b)
}

func parseCommit(b []byte) (*ParsedCommit, error) {
	c := &ParsedCommit{}
	for len(b) > 0 {
		line, rest, found := bytes.Cut(b, []byte{'\n'})
		if !found {
			// Headers without the blank line: no message, as git reads it.
			line, rest = b, nil
		}
		b = rest
		if len(line) == 0 {
			c.Message = string(b)
			return c, nil
		}
		if line[0] == ' ' {
			continue // continues a multi-line header (gpgsig, mergetag)
		}
		key, val, _ := bytes.Cut(line, []byte{' '})
		switch string(key) {
		case "tree":
			h, ok := parseHash(val)
			if !ok {
				return nil, fmt.Errorf("commit tree %q: %w", val, errBadObject)
			}
			c.TreeHash = h
		case "parent":
			h, ok := parseHash(val)
			if !ok {
				return nil, fmt.Errorf("commit parent %q: %w", val, errBadObject)
			}
			c.ParentHashes = append(c.ParentHashes, h)
		case "committer":
			c.Committer.When = signatureTime(val)
		}
	}
	return c, nil
}

// parseHash reads a SHA-1 or SHA-256 id in hex.
func parseHash(b []byte) (OID, bool) { return ParseOIDBytes(b) }

// signatureTime reads the instant of "Name <email> 1700000000 +0100":
// the seconds after the last '>'. The zone only says how the author's
// clock showed that instant, and lazy shows times in UTC, so it is not
// read. A line without a time is the zero time.
func signatureTime(val []byte) time.Time {
	i := bytes.LastIndexByte(val, '>')
	if i < 0 {
		return time.Time{}
	}
	fields := bytes.Fields(val[i+1:])
	if len(fields) == 0 {
		return time.Time{}
	}
	sec, err := strconv.ParseInt(string(fields[0]), 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(sec, 0).UTC()
}

// decodeTree parses a tree object's "<octal mode> <name>\0<20-byte id>"
// entries (the in-process reader reads SHA-1 repositories only).
func decodeTree(obj plumbing.EncodedObject) (*ParsedTree, error) {
	b, err := content(obj, plumbing.TreeObject)
	if err != nil {
		return nil, err
	}
	return parseTree(b)
}

func parseTree(b []byte) (*ParsedTree, error) { return parseTreeIDs(b, 20) }

// parseTreeIDs parses a tree whose ids are size bytes: 20 (SHA-1) or 32
// (SHA-256).
func parseTreeIDs(b []byte, size int) (*ParsedTree, error) {
	t := &ParsedTree{}
	for len(b) > 0 {
		sp := bytes.IndexByte(b, ' ')
		if sp <= 0 {
			return nil, fmt.Errorf("tree entry without a mode: %w", errBadObject)
		}
		mode, err := strconv.ParseUint(string(b[:sp]), 8, 32)
		if err != nil {
			return nil, fmt.Errorf("tree entry mode %q: %w", b[:sp], errBadObject)
		}
		b = b[sp+1:]
		nul := bytes.IndexByte(b, 0)
		if nul < 0 {
			return nil, fmt.Errorf("tree entry without a name: %w", errBadObject)
		}
		name := string(b[:nul])
		b = b[nul+1:]
		if len(b) < size {
			return nil, fmt.Errorf("tree entry %q cut short: %w", name, errBadObject)
		}
		id, _ := FromBytes(b[:size])
		b = b[size:]
		t.Entries = append(t.Entries, TreeItem{Name: name, Mode: filemode.FileMode(mode), Hash: id})
	}
	return t, nil
}
