package audit

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/minio/minio-go/v7"

	"github.com/kubox-dev/kubox/api/contract"
	auditrec "github.com/kubox-dev/kubox/internal/audit"
	"github.com/kubox-dev/kubox/internal/objstore"
	"github.com/kubox-dev/kubox/internal/router"
	"github.com/kubox-dev/kubox/internal/testutil/s3server"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestGracefulStopWritesEveryRecord stops the router (as SIGTERM does) right after commands ran
// through it, with a flush window far longer than the test: every command's record still
// reaches the sink, and with $KUBOX_SEAWEEDFS also a real S3 bucket, before Serve returns.
func TestGracefulStopWritesEveryRecord(t *testing.T) {
	ns := env.NewNamespace(t)
	sink := &memorySink{}
	sinks := []auditrec.Sink{sink}
	var bucket *s3server.Server
	if os.Getenv("KUBOX_SEAWEEDFS") != "" {
		bucket = s3server.Start(t)
		s3, err := auditrec.NewS3(auditrec.S3Config{Config: objstore.Config{Endpoint: bucket.Endpoint, Bucket: bucket.Bucket, Prefix: "audit", Insecure: true,
			AccessKeyIDFile: bucket.AccessKeyIDFile, SecretAccessKeyFile: bucket.SecretAccessKeyFile}})
		if err != nil {
			t.Fatal(err)
		}
		sinks = append(sinks, s3)
	}
	cfg := router.DefaultConfig()
	cfg.AgentTokenKey, cfg.Namespace, cfg.AllowLoopbackPodIP, cfg.ShutdownTimeout = key, ns, true, 10*time.Second
	cfg.Log = slog.New(slog.NewJSONHandler(framework.TestWriter{T: t}, nil))
	cfg.AuditSinks, cfg.AuditQueue = sinks, auditrec.QueueConfig{FlushInterval: time.Hour}
	rt, err := router.New(cfg, env.Config)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	served := make(chan error, 1)
	go func() { served <- rt.Serve(ctx, l) }()
	if !rt.WaitForCacheSync(ctx) {
		t.Fatal("the router's cache did not sync")
	}
	startAgentSandbox(t, ns, "box")
	tok, _ := serviceAccount(t, ns, "alice", "box")
	procs := agentv1connect.NewProcessServiceClient(contract.BearerClient(tok), "http://"+l.Addr().String()+"/sandboxes/"+ns+"/box")
	const commands = 20
	run := func(i int) error {
		_, err := procs.RunProcess(ctx, connect.NewRequest(&agentv1.RunProcessRequest{Spec: &agentv1.ProcessSpec{Argv: []string{"echo", strconv.Itoa(i)}}}))
		return err
	}
	// The router's cache may not have the sandbox's Ready status at once: retry the first.
	framework.Eventually(t, func() (bool, string) {
		err := run(0)
		return err == nil, fmt.Sprintf("RunProcess: %v", err)
	})
	for i := 1; i < commands; i++ {
		if err := run(i); err != nil {
			t.Fatalf("RunProcess %d: %v", i, err)
		}
	}
	stop()
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	got := map[string]bool{}
	for _, r := range sink.records {
		if r.Operation != nil && r.Status == 200 && len(r.Operation.Command) == 2 {
			got[r.Operation.Command[1]] = true
		}
	}
	if len(got) != commands {
		t.Errorf("after the router stopped, the sink has the records of %d of the %d commands: %+v", len(got), commands, sink.records)
	}
	if bucket != nil {
		lines := 0
		for obj := range bucket.Client.ListObjects(t.Context(), bucket.Bucket, minio.ListObjectsOptions{Prefix: "audit/", Recursive: true}) {
			if obj.Err != nil {
				t.Fatal(obj.Err)
			}
			lines += countLines(t, bucket, obj.Key)
		}
		if lines != len(sink.records) {
			t.Errorf("the bucket holds %d records, the memory sink %d", lines, len(sink.records))
		}
	}
}

// countLines counts the lines of object key.
func countLines(t *testing.T, s *s3server.Server, key string) int {
	t.Helper()
	obj, err := s.Client.GetObject(t.Context(), s.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = obj.Close() }()
	b, err := io.ReadAll(obj)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}
