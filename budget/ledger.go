package budget

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/lazyorch/lazy/task"
)

// Ledger is this machine's record of what agent turns cost, a file of
// JSON lines per local day under Dir. Only the host that recorded a
// turn writes it, and it is never pushed: lazy.budget.day is a budget of
// this machine's spending.
type Ledger struct {
	Dir string
}

// Entry is one agent turn's cost. Task, Session and Seq identify the
// turn: an entry written twice (a record retried after a crash) counts
// once, the newest.
type Entry struct {
	Task    string    `json:"task"`
	Session string    `json:"session"`
	Seq     int       `json:"seq"`
	At      time.Time `json:"at"`
	CostUSD float64   `json:"cost_usd"`
}

// dayFile is the ledger's file for the local day of t.
func (l Ledger) dayFile(t time.Time) string {
	return filepath.Join(l.Dir, t.Local().Format("2006-01-02")+".jsonl")
}

// Add appends e to its day's file in one write, so concurrent writers
// never interleave a line.
func (l Ledger) Add(e Entry) error {
	if err := os.MkdirAll(l.Dir, 0o755); err != nil {
		return fmt.Errorf("record the turn's cost: %w", err)
	}
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("record the turn's cost: %w", err)
	}
	f, err := os.OpenFile(l.dayFile(e.At), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("record the turn's cost: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("record the turn's cost: %w", err)
	}
	return nil
}

// Day sums what this machine's turns cost on the local day of t. A line
// that does not parse (a write cut by a crash) is skipped.
func (l Ledger) Day(t time.Time) (float64, error) {
	f, err := os.Open(l.dayFile(t))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read this machine's spending of the day: %w", err)
	}
	defer func() { _ = f.Close() }()
	type key struct {
		task, session string
		seq           int
	}
	cost := map[key]float64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		var e Entry
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.CostUSD < 0 || e.CostUSD > task.MaxTurnUSD {
			continue // torn by a crash, or a figure no turn can cost
		}
		cost[key{e.Task, e.Session, e.Seq}] = e.CostUSD
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read this machine's spending of the day: %w", err)
	}
	sum := 0.0
	for _, c := range cost {
		sum = task.RoundUSD(sum + c)
	}
	return sum, nil
}
