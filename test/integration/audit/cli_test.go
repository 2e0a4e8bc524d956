package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/kubox-dev/kubox/api/contract"
	auditrec "github.com/kubox-dev/kubox/internal/audit"
	"github.com/kubox-dev/kubox/internal/cli"
	"github.com/kubox-dev/kubox/internal/objstore"
	"github.com/kubox-dev/kubox/internal/testutil/s3server"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestKuboxAuditPrintsTheTimeline runs commands in two sandboxes through a router that writes
// its records to a real S3 bucket (SeaweedFS, only with $KUBOX_SEAWEEDFS), then runs
// `kubox audit box` with the bucket's flags: it prints box's commands, in order, with the
// caller, and nothing of the other sandbox; -o json prints the records as the bucket holds them.
func TestKuboxAuditPrintsTheTimeline(t *testing.T) {
	bucket := s3server.Start(t)
	ns := env.NewNamespace(t)
	cfg := objstore.Config{Endpoint: bucket.Endpoint, Bucket: bucket.Bucket, Prefix: "audit", Insecure: true,
		AccessKeyIDFile: bucket.AccessKeyIDFile, SecretAccessKeyFile: bucket.SecretAccessKeyFile}
	s3, err := auditrec.NewS3(auditrec.S3Config{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	url := startAuditRouter(t, ns, s3)
	startAgentSandbox(t, ns, "box")
	startAgentSandbox(t, ns, "other")
	aliceTok, alice := serviceAccount(t, ns, "alice", "box")
	bobTok, _ := serviceAccount(t, ns, "bob", "other")
	echo := func(tok, sandbox, word string) {
		t.Helper()
		procs := agentv1connect.NewProcessServiceClient(contract.BearerClient(tok), url+"/sandboxes/"+ns+"/"+sandbox)
		// The router's cache may not have the sandbox's Ready status at once: retry.
		framework.Eventually(t, func() (bool, string) {
			_, err := procs.RunProcess(t.Context(), connect.NewRequest(&agentv1.RunProcessRequest{Spec: &agentv1.ProcessSpec{Argv: []string{"echo", word}}}))
			return err == nil, fmt.Sprintf("RunProcess in %s: %v", sandbox, err)
		})
	}
	echo(aliceTok, "box", "first")
	echo(bobTok, "other", "elsewhere")
	echo(aliceTok, "box", "second")

	flags := []string{"--kubeconfig", "/dev/null", "-n", ns, "--audit-s3-endpoint", bucket.Endpoint, "--audit-s3-bucket", bucket.Bucket,
		"--audit-s3-prefix", "audit", "--audit-s3-insecure", "--audit-s3-access-key-id-file", bucket.AccessKeyIDFile,
		"--audit-s3-secret-access-key-file", bucket.SecretAccessKeyFile, "--since", "1h"}
	var commands []string
	framework.Eventually(t, func() (bool, string) {
		out, _ := kubox(t, append([]string{"audit", "box", "-o", "json"}, flags...)...)
		commands = nil
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			var r auditrec.Record
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("kubox audit -o json printed a line that is not a record: %q: %v", sc.Text(), err)
			}
			if r.Sandbox != "box" || r.Namespace != ns {
				t.Fatalf("kubox audit box printed a record of %s/%s: %+v", r.Namespace, r.Sandbox, r)
			}
			if r.Status == 200 && r.Operation != nil && r.Operation.Kind == auditrec.OpExec {
				commands = append(commands, r.Principal+" "+strings.Join(r.Operation.Command, " "))
			}
		}
		return len(commands) == 2, fmt.Sprintf("kubox audit box -o json printed the commands %q (output %q)", commands, out)
	})
	if want := []string{alice + " echo first", alice + " echo second"}; commands[0] != want[0] || commands[1] != want[1] {
		t.Errorf("kubox audit box printed the commands %q, want %q in that order", commands, want)
	}
	table, _ := kubox(t, append([]string{"audit", "box"}, flags...)...)
	for _, want := range []string{"PRINCIPAL", alice, "exec echo first", "exec echo second"} {
		if !strings.Contains(table, want) {
			t.Errorf("kubox audit box's table does not show %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "elsewhere") {
		t.Errorf("kubox audit box's table shows the other sandbox's command:\n%s", table)
	}
}

// kubox runs the kubox command line with args and returns what it printed on stdout and stderr.
func kubox(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	cmd := cli.NewCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(t.Context()); err != nil {
		t.Fatalf("kubox %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), errOut.String()
}
