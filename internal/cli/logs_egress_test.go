package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubox-dev/kubox/internal/testutil"
)

func TestIsEgressLineOf(t *testing.T) {
	cases := map[string]bool{
		`{"msg":"Egress","sandbox":"ns/box","domain":"pypi.org","verdict":"allowed"}`:   true,
		`{"msg":"Egress","sandbox":"ns/box-2","domain":"pypi.org","verdict":"allowed"}`: false,
		`{"msg":"Egress","sandbox":"other/box","domain":"pypi.org"}`:                    false,
		`{"msg":"Starting","sandbox":"ns/box"}`:                                         false,
		`not json ns/box`:                                                               false,
	}
	for line, want := range cases {
		if got := isEgressLineOf([]byte(line), "ns/box"); got != want {
			t.Errorf("isEgressLineOf(%s) = %v, want %v", line, got, want)
		}
	}
}

func TestEgressLogsWithoutProxy(t *testing.T) {
	noLocal(t, "")
	var out bytes.Buffer
	err := egressLogs(t.Context(), fake.NewClientset(), "ns", "box", &logsOptions{tail: -1, egressNS: "kubox-system"}, &out, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "no kubox-egress Pod in namespace kubox-system: set --egress-namespace") {
		t.Errorf("egressLogs without kubox-egress: %v; want the fix", err)
	}
}

// noLocal makes the local node's kubox-egress log path for the test.
func noLocal(t *testing.T, path string) {
	saved := localEgressLog
	localEgressLog = func() string { return path }
	t.Cleanup(func() { localEgressLog = saved })
}

const egressLog = `{"msg":"Starting","component":"kubox-egress"}
{"msg":"Egress","sandbox":"ns/box","domain":"a.test","verdict":"allowed"}
{"msg":"Egress","sandbox":"ns/other","domain":"b.test","verdict":"allowed"}
{"msg":"Egress","sandbox":"ns/box","domain":"c.test","verdict":"denied"}
{"msg":"Egress","sandbox":"ns/box","domain":"d.test","verdict":"denied"}
`

// TestEgressLogsFromTheLocalNode: with no kubox-egress Pod, the local node's log file is read,
// the sandbox's lines only, the last --tail of them, and --follow prints lines appended later,
// including one written in two pieces.
func TestEgressLogsFromTheLocalNode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubox-egress.log")
	if err := os.WriteFile(path, []byte(egressLog), 0o600); err != nil {
		t.Fatal(err)
	}
	noLocal(t, path)
	var out, notes bytes.Buffer
	if err := egressLogs(t.Context(), fake.NewClientset(), "ns", "box", &logsOptions{tail: 2, egressNS: "kubox-system"}, &out, &notes); err != nil {
		t.Fatal(err)
	}
	if got := domains(out.String()); got != "c.test d.test" {
		t.Errorf("--tail 2 printed %q, want c.test d.test", got)
	}
	if !strings.Contains(notes.String(), path) {
		t.Errorf("no note names the file read: %q", notes.String())
	}

	ctx, cancel := context.WithCancel(t.Context())
	w := &testutil.SyncBuffer{}
	done := make(chan error, 1)
	go func() { done <- egressLogFile(ctx, path, &logsOptions{tail: 0, follow: true}, "ns/box", w) }()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	_, _ = f.WriteString(`{"msg":"Egress","sandbox":"ns/other","domain":"x.test"}` + "\n" + `{"msg":"Egress","sandbox":"ns/bo`)
	time.Sleep(300 * time.Millisecond) // the follower reads the partial line before its end is written
	_, _ = f.WriteString(`x","domain":"e.test"}` + "\n")
	deadline := time.Now().Add(10 * time.Second)
	for domains(w.String()) != "e.test" && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := domains(w.String()); got != "e.test" {
		t.Errorf("--follow --tail 0 printed %q, want only the appended e.test", got)
	}
}

func domains(out string) string {
	var ds []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var l struct{ Domain string }
		if json.Unmarshal([]byte(line), &l) == nil {
			ds = append(ds, l.Domain)
		}
	}
	return strings.Join(ds, " ")
}
