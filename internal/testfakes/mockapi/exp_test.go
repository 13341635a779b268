package mockapi

import (
	"encoding/json"
	"os"
	"os/exec"
	"testing"
)

func TestExp(t *testing.T) {
	var replies []Reply
	if err := json.Unmarshal([]byte(os.Getenv("EXP_REPLIES")), &replies); err != nil {
		t.Fatal(err)
	}
	srv, _ := Start(replies, replies)
	defer srv.Close()
	home := t.TempDir()
	c := exec.Command("sh", "-c", os.Getenv("EXP_CMD"))
	c.Dir = t.TempDir()
	c.Env = append(os.Environ(), "HOME="+home, "ANTHROPIC_BASE_URL="+srv.URL, "MOCK_URL="+srv.URL,
		"CLAUDE_CODE_MAX_RETRIES=0", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "PATH=/root/.cache/lazy-agent-clis/bin:"+os.Getenv("PATH"))
	out, _ := c.Output()
	os.WriteFile(os.Getenv("EXP_OUT"), out, 0o644)
}
