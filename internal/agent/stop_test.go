package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kubox-dev/kubox/internal/agent/compat/pyruntime"
	"github.com/kubox-dev/kubox/internal/agent/process"
	"github.com/kubox-dev/kubox/internal/agent/process/proctest"
)

// testStopGrace is the agent's grace period between SIGTERM and SIGKILL in these tests.
const testStopGrace = 300 * time.Millisecond

// python-runtime's /execute ends a command at its timeout, or when its caller goes away, as the
// agent's other process APIs do: SIGTERM to the process group, SIGKILL to the group after the
// grace period (which reaches the child that ignores SIGTERM once its shell has exited), and no
// zombie is left. A timeout is still answered with Python's TimeoutExpired message.
func TestCompatExecuteEndsACommandGracefully(t *testing.T) {
	cases := map[string]struct {
		// execute runs command and, once the script is ready, may end the call.
		execute func(t *testing.T, compat, command string, s proctest.Stubborn)
	}{
		"the timeout": {
			execute: func(t *testing.T, compat, command string, s proctest.Stubborn) {
				code, got := execute(t, compat, command)
				want := pyruntime.ExecuteResponse{ExitCode: 1,
					Stderr: "Failed to execute command: Command '['sh', '" + s.Path + "']' timed out after 2.0 seconds"}
				if code != http.StatusOK || got != want {
					t.Errorf("POST /execute = %d %+v, want 200 %+v", code, got, want)
				}
			},
		},
		"the caller went away": {
			execute: func(t *testing.T, compat, command string, s proctest.Stubborn) {
				ctx, cancel := context.WithCancel(t.Context())
				payload, _ := json.Marshal(map[string]string{"command": command})
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, compat+"/execute", bytes.NewReader(payload))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+testToken)
				errc := make(chan error, 1)
				go func() {
					res, err := http.DefaultClient.Do(req)
					if err == nil {
						_ = res.Body.Close()
					}
					errc <- err
				}()
				s.Ready(t)
				cancel()
				if err := <-errc; !errors.Is(err, context.Canceled) {
					t.Errorf("POST /execute after the caller went away: %v, want the call cancelled", err)
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, compat := startAgent(t, func(c *Config) {
				// Long enough for sh to set its trap first; the test never measures it.
				c.ExecTimeout = 2 * time.Second
				c.StopGrace = new(testStopGrace)
			})
			s := proctest.NewStubborn(t, false)
			tc.execute(t, compat, s.Command(), s)
			s.AssertEndedGracefully(t)
		})
	}
}

// The grace period is kubox-agent's --stop-grace, else $KUBOX_STOP_GRACE, else the default; a
// value that is not a positive duration stops the agent with an error naming where it was set.
func TestTheStopGraceIsASetting(t *testing.T) {
	cases := map[string]struct {
		flag    *time.Duration
		env     string
		want    time.Duration
		wantErr string
	}{
		"default":                 {want: process.DefaultStopGrace},
		"flag":                    {flag: new(2 * time.Second), want: 2 * time.Second},
		"environment variable":    {env: "750ms", want: 750 * time.Millisecond},
		"flag over variable":      {flag: new(2 * time.Second), env: "750ms", want: 2 * time.Second},
		"zero flag":               {flag: new(time.Duration(0)), wantErr: "--" + FlagStopGrace},
		"variable not a duration": {env: "soon", wantErr: "$" + EnvStopGrace},
		"negative variable":       {env: "-1s", wantErr: "$" + EnvStopGrace},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a, err := New(Config{WorkDir: t.TempDir(), StopGrace: tc.flag, LookupEnv: env(EnvStopGrace, tc.env)})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("New: %v; want an error naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if got := a.cfg.Process.StopGrace; got != tc.want {
				t.Errorf("the process manager's grace period is %s, want %s", got, tc.want)
			}
		})
	}
}
