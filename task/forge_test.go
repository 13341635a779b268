package task

import (
	"strings"
	"testing"
)

func TestCheckForgeRefusesUntrustedRecords(t *testing.T) {
	good := ForgeRecord{Kind: "github", Remote: "origin", Head: "lazy/x", Base: "main", Number: 3, URL: "https://github.com/o/r/pull/3", HeadSHA: strings.Repeat("a", 40)}
	if err := checkForge(&good); err != nil {
		t.Fatalf("a good record was refused: %v", err)
	}
	for name, mutate := range map[string]func(f *ForgeRecord){
		"javascript URL":  func(f *ForgeRecord) { f.URL = "javascript:alert(1)" },
		"file URL":        func(f *ForgeRecord) { f.URL = "file:///etc/passwd" },
		"escape in URL":   func(f *ForgeRecord) { f.URL = "https://x/\x1b[2J" },
		"negative number": func(f *ForgeRecord) { f.Number = -1 },
		"number, no URL":  func(f *ForgeRecord) { f.URL = "" },
		"dash remote":     func(f *ForgeRecord) { f.Remote = "--upload-pack=evil" },
		"dash head":       func(f *ForgeRecord) { f.Head = "-x" },
		"bad sha":         func(f *ForgeRecord) { f.HeadSHA = "HEAD~1" },
		"unknown forge":   func(f *ForgeRecord) { f.Kind = "evil" },
	} {
		f := good
		mutate(&f)
		if err := checkForge(&f); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestMarkDeliveredIsBoundedAndIdempotent(t *testing.T) {
	var f ForgeRecord
	for i := 0; i < MaxDelivered+10; i++ {
		f.MarkDelivered("k" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + string(rune('A'+i/26%26)) + string(rune('0'+i/676)))
	}
	if len(f.Delivered) != MaxDelivered {
		t.Fatalf("delivered has %d keys, want %d", len(f.Delivered), MaxDelivered)
	}
	f.MarkDelivered(f.Delivered[0])
	if len(f.Delivered) != MaxDelivered {
		t.Fatal("a key was delivered twice")
	}
}
