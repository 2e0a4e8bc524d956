package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// execute runs kubox with args as main does, with no kubeconfig to fall back on, and returns
// what it printed and its exit code.
func execute(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append([]string{"--kubeconfig", filepath.Join(t.TempDir(), "missing-kubeconfig")}, args...)
	code = Execute(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), code
}

// ownCommands are the commands whose help this package writes (not dev's, nor cobra's own).
func ownCommands() []*cobra.Command {
	var cmds []*cobra.Command
	for _, c := range NewCommand().Commands() {
		switch c.Name() {
		case "dev", "help", "completion":
			continue
		}
		cmds = append(cmds, c)
	}
	return cmds
}

func TestEveryCommandHelpHasExamples(t *testing.T) {
	cmds := ownCommands()
	if len(cmds) < 9 {
		t.Fatalf("found %d commands, want claim, run, exec, cp, get, suspend, resume, delete and logs", len(cmds))
	}
	for _, c := range append(cmds, NewCommand()) {
		args := []string{c.Name(), "--help"}
		if c.Name() == "kubox" {
			args = args[1:]
		}
		out, _, code := execute(t, args...)
		if code != 0 {
			t.Errorf("kubox %s exited %d", strings.Join(args, " "), code)
		}
		_, examples, _ := strings.Cut(out, "Examples:\n")
		examples, _, _ = strings.Cut(examples, "\n\n")
		if !strings.Contains("\n"+examples, "\n  kubox ") {
			t.Errorf("kubox %s has no example:\n%s", strings.Join(args, " "), out)
		}
	}
}

func TestRootListsCommandsAndConnectionFlags(t *testing.T) {
	out, _, _ := execute(t, "--help")
	for _, want := range []string{"claim ", "run ", "exec ", "cp ", "get ", "suspend ", "resume ", "delete ", "logs ", "token ", "dev ", "completion ",
		"--kubeconfig", "--context", "-n, --namespace", "--router-url", "--connection", "--router-namespace", "--token", "--ready-timeout"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubox --help lacks %q", want)
		}
	}
	if strings.Contains(out, "Bearer token for authentication to the API server") {
		t.Error("--token is kubectl's API server token; want it to be the router's token")
	}
}

// TestFlagValidation runs commands whose flags or arguments are wrong: each must fail with a
// message that says what to do, before talking to a cluster (there is no kubeconfig).
func TestFlagValidation(t *testing.T) {
	tests := map[string]struct {
		args []string
		want string
	}{
		"run without a source":   {[]string{"run", "--", "true"}, "kubox run needs --pool NAME or --template NAME"},
		"claim without a source": {[]string{"claim"}, "kubox claim needs --pool NAME or --template NAME"},
		"claim with both sources": {[]string{"claim", "--pool", "p", "--template", "t"},
			"if any flags in the group [pool template] are set none of the others can be"},
		"run without --":           {[]string{"run", "--pool", "p", "echo", "hi"}, "put -- before the command"},
		"run without a command":    {[]string{"run", "--pool", "p", "--"}, "requires at least 1 arg"},
		"claim with a bad env":     {[]string{"claim", "--pool", "p", "--env", "NOVALUE"}, `--env "NOVALUE" is not KEY=VALUE`},
		"claim with a bad label":   {[]string{"claim", "--pool", "p", "--label", "=x"}, `--label "=x" is not KEY=VALUE`},
		"claim with negative ttl":  {[]string{"claim", "--pool", "p", "--ttl", "-1h"}, "--ttl -1h0m0s is negative"},
		"claim suspended too soon": {[]string{"claim", "--pool", "p", "--suspend-after", "10s"}, "--suspend-after 10s is outside 30s to 8760h0m0s"},
		"run suspended too late":   {[]string{"run", "--pool", "p", "--suspend-after", "9000h", "--", "true"}, "--suspend-after 9000h0m0s is outside"},
		"claim with a bad output":  {[]string{"claim", "--pool", "p", "-o", "wide"}, `-o "wide" is not one of table, json, yaml`},
		"run with a bad domain":    {[]string{"run", "--pool", "p", "--allow-domain", "PyPI.org", "--", "true"}, `--allow-domain/--deny-domain "PyPI.org" is not a domain`},
		"claim with a bad CIDR":    {[]string{"claim", "--pool", "p", "--deny-cidr", "10.0.0.1"}, `--deny-cidr "10.0.0.1" is not a CIDR`},
		"get with a bad output":    {[]string{"get", "-o", "xml"}, `-o "xml" is not one of table, json, yaml`},
		"bad connection":           {[]string{"--connection", "ssh", "get"}, `--connection "ssh" is not one of auto, router, direct, port-forward`},
		"exec without --":          {[]string{"exec", "box", "ls"}, "put -- before the command"},
		"exec without NAME":        {[]string{"exec", "--", "ls"}, "NAME is missing before --"},
		"exec with two names":      {[]string{"exec", "a", "b", "--", "ls"}, `one NAME before --, got ["a" "b"]`},
		"exec without a command":   {[]string{"exec", "box", "--"}, "the command after -- is missing"},
		"cp with no remote side":   {[]string{"cp", "./a", "/tmp/b"}, "neither side is in a sandbox: write one as NAME:/path"},
		"cp between sandboxes":     {[]string{"cp", "a:/x", "b:/y"}, "copies between this machine and one sandbox"},
		"cp with no remote path":   {[]string{"cp", "./a", "box:"}, `"box:" names no file in box`},
		"cp with one argument":     {[]string{"cp", "box:/a"}, "accepts 2 arg(s), received 1"},
		"suspend without a name":   {[]string{"suspend"}, "accepts 1 arg(s), received 0"},
		"delete without a name":    {[]string{"delete"}, "requires at least 1 arg(s)"},
		"logs with two names":      {[]string{"logs", "a", "b"}, "accepts 1 arg(s), received 2"},
		"token without a claim":    {[]string{"token"}, "accepts 1 arg(s), received 0"},
		"token with negative ttl":  {[]string{"token", "c", "--ttl", "-5m"}, "--ttl -5m0s is negative"},
		"token with a bad output":  {[]string{"token", "c", "-o", "yaml"}, `-o "yaml" is not json`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := execute(t, tc.args...)
			if code != ExitError {
				t.Errorf("kubox %s exited %d, want %d", strings.Join(tc.args, " "), code, ExitError)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Errorf("kubox %s printed %q on stderr, want it to contain %q", strings.Join(tc.args, " "), errOut, tc.want)
			}
			if !strings.HasPrefix(errOut, "error: ") {
				t.Errorf("stderr %q does not start with \"error: \"", errOut)
			}
			if out != "" {
				t.Errorf("stdout = %q, want nothing", out)
			}
		})
	}
}

func TestExitCode(t *testing.T) {
	tests := map[string]struct {
		err      error
		wantCode int
		wantMsg  string
	}{
		"success":               {nil, 0, ""},
		"remote exit 3":         {&exitCodeError{code: 3}, 3, ""},
		"remote exit 255":       {&exitCodeError{code: 255}, 255, ""},
		"remote killed by KILL": {&exitCodeError{code: 137}, 137, ""},
		"negative signal code":  {&exitCodeError{code: -9}, 137, ""},
		"out of range code":     {&exitCodeError{code: 300}, 1, ""},
		"wrapped remote code":   {fmt.Errorf("x: %w", &exitCodeError{code: 7}), 7, ""},
		"kubox error":           {errors.New("claim x: not found"), 1, "claim x: not found"},
		"interrupted":           {fmt.Errorf("waiting: %w", context.Canceled), 130, "interrupted"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, msg := exitCode(tc.err)
			if code != tc.wantCode || msg != tc.wantMsg {
				t.Errorf("exitCode(%v) = %d, %q; want %d, %q", tc.err, code, msg, tc.wantCode, tc.wantMsg)
			}
		})
	}
}

func TestKubeconfigRouterURL(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: dev
  cluster:
    server: https://127.0.0.1:16443
    extensions:
    - name: kubox.dev/router
      extension:
        url: http://127.0.0.1:16090
- name: other
  cluster:
    server: https://127.0.0.1:6443
users:
- name: admin
  user: {token: x}
contexts:
- name: dev
  context: {cluster: dev, user: admin}
- name: other
  context: {cluster: other, user: admin}
current-context: dev
`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		context string
		want    string
	}{
		"current context":           {"", "http://127.0.0.1:16090"},
		"context without extension": {"other", ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := newGlobalOptions()
			*g.kube.KubeConfig = kubeconfig
			*g.kube.Context = tc.context
			if got := g.kubeconfigRouterURL(); got != tc.want {
				t.Errorf("router URL = %q, want %q", got, tc.want)
			}
		})
	}
}
