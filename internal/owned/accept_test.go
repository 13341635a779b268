package owned

import (
	"errors"
	"testing"
)

func TestAcceptMatchesOnlyItsOwnID(t *testing.T) {
	d := AcceptsFor(t.TempDir())
	const task, id = "0123456789abcdef", "fedcba9876543210"
	if _, err := d.Match(task, id); !errors.Is(err, ErrNoAccept) {
		t.Fatalf("no record: %v", err)
	}
	if err := d.Save(Accept{TaskID: task, ID: id, Into: "main"}); err != nil {
		t.Fatal(err)
	}
	if a, err := d.Match(task, id); err != nil || a.Into != "main" {
		t.Fatalf("own accept: %+v, %v", a, err)
	}
	for _, other := range []string{"", "0000000000000000", "../../etc/passwd"} {
		if _, err := d.Match(task, other); !errors.Is(err, ErrNoAccept) {
			t.Fatalf("accept id %q matched: %v", other, err)
		}
	}
	if _, err := d.Match("../x", id); !errors.Is(err, ErrNoAccept) {
		t.Fatalf("a path as task id: %v", err)
	}
	d.Forget(task, "0000000000000000") // another accept's: kept
	if _, err := d.Match(task, id); err != nil {
		t.Fatal("Forget of another accept id removed the record")
	}
	d.Forget(task, id)
	if _, err := d.Match(task, id); !errors.Is(err, ErrNoAccept) {
		t.Fatalf("after Forget: %v", err)
	}
}
