// Package redacttest lists a secret of every kind package redact takes
// out, for the tests of each surface that must not let one leave
// (notifications, gate tails, lazy show, lazy logs).
package redacttest

// Secret is one secret as it appears in text, and the part of it that
// must not appear in what lazy lets out.
type Secret struct {
	Kind, Text, Secret string
}

// Kinds returns a secret of every kind, each on one line without quotes,
// so it can be echoed by a shell or embedded in a command.
func Kinds() []Secret {
	return []Secret{
		{"assignment", "GITHUB_TOKEN=ghp0abc123zz", "ghp0abc123zz"},
		{"assignment with colon", "password: hunter2xyz", "hunter2xyz"},
		{"url user", "https://bob:s3cr3tpw@example.com/repo", "s3cr3tpw"},
		{"bearer", "Authorization: Bearer abcdefgh12345678", "abcdefgh12345678"},
		{"aws access key id", "AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"},
		{"aws session key id", "ASIAY34FZKBOKMUTVV7A", "ASIAY34FZKBOKMUTVV7A"},
		{"github token", "ghp_16C7e42F292c6912E7710c838347Ae178B4a", "16C7e42F292c6912E7710c838347Ae178B4a"},
		{"anthropic key", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123", "abcdefghijklmnopqrstuvwxyz0123"},
		{"slack token", "xoxb-1234567890-abcdefghij", "1234567890-abcdefghij"},
		{"random run", "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY0", "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY0"},
	}
}

// Target is a configured notify target whose path and query are its
// secret; the host is HookHost.
const (
	HookHost   = "hooks.example"
	HookPath   = "/T000/B000/XXXXSECRETPATH"
	HookQuery  = "token=q5ecretT0ken"
	HookTarget = "https://" + HookHost + HookPath + "?" + HookQuery
)

// HookSecrets are the parts of HookTarget that must not appear.
func HookSecrets() []string {
	return []string{"XXXXSECRETPATH", "q5ecretT0ken", "T000/B000"}
}
