// Package s3server runs a real S3 server for tests: SeaweedFS's `weed mini` (the pinned tool
// hack/tools/seaweedfs, built by `hack/tools/install.sh seaweedfs`) on 127.0.0.1, in a temporary
// folder, with one bucket and one access key, stopped by its PID when the test ends.
package s3server

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Server is a running S3 server.
type Server struct {
	Endpoint                     string // host:port, plain HTTP
	Bucket                       string
	AccessKeyID, SecretAccessKey string
	// AccessKeyIDFile and SecretAccessKeyFile hold the credentials, as a mounted Secret would.
	AccessKeyIDFile, SecretAccessKeyFile string
	Client                               *minio.Client
}

// Weed returns the weed binary named by $KUBOX_SEAWEEDFS, which the integration tier sets
// (make test-integration); without it the tests that need a server skip, so that the unit tier
// (make test-unit) stays pure Go even where the tool cache holds SeaweedFS.
func Weed() (string, error) {
	p := os.Getenv("KUBOX_SEAWEEDFS")
	if p == "" {
		return "", fmt.Errorf("KUBOX_SEAWEEDFS is not set")
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("KUBOX_SEAWEEDFS=%s: %w", p, err)
	}
	return p, nil
}

// Start starts a server with the bucket "kubox", or skips t when SeaweedFS is not built.
func Start(t testing.TB) *Server {
	t.Helper()
	weed, err := Weed()
	if err != nil {
		t.Skipf("needs SeaweedFS: %v (run make test-integration, or set KUBOX_SEAWEEDFS=$(hack/tools/install.sh dir seaweedfs)/weed after hack/tools/install.sh seaweedfs)", err)
	}
	dir := t.TempDir()
	s := &Server{Bucket: "kubox", AccessKeyID: "kuboxtest", SecretAccessKey: "kuboxtestsecret0123456789"}
	s.AccessKeyIDFile = writeFile(t, dir, "access-key-id", s.AccessKeyID)
	s.SecretAccessKeyFile = writeFile(t, dir, "secret-access-key", s.SecretAccessKey)
	config := writeConfig(t, dir, s)
	ports := freePorts(t, 9)
	s.Endpoint = "127.0.0.1:" + strconv.Itoa(ports[6])
	args := []string{"-logdir=" + dir, "mini", "-dir=" + filepath.Join(dir, "data"), "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-webdav=false", "-admin.ui=false", "-s3.port.iceberg=0", "-s3.port.lance=0", "-s3.config=" + config,
		"-master.port=" + strconv.Itoa(ports[0]), "-master.port.grpc=" + strconv.Itoa(ports[1]),
		"-volume.port=" + strconv.Itoa(ports[2]), "-volume.port.grpc=" + strconv.Itoa(ports[3]),
		"-filer.port=" + strconv.Itoa(ports[4]), "-filer.port.grpc=" + strconv.Itoa(ports[5]),
		"-s3.port=" + strconv.Itoa(ports[6]), "-s3.port.grpc=" + strconv.Itoa(ports[7]),
		"-debug.port=" + strconv.Itoa(ports[8])}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "weed.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(weed, args...)
	cmd.Stdout, cmd.Stderr, cmd.Dir = log, log, dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", weed, err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		_ = cmd.Wait()
		_ = log.Close()
	})
	s.Client, err = minio.New(s.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(s.AccessKeyID, s.SecretAccessKey, "")})
	if err != nil {
		t.Fatal(err)
	}
	s.waitAndMakeBucket(t, filepath.Join(dir, "weed.log"))
	return s
}

// waitAndMakeBucket waits until the S3 API answers and creates the bucket.
func (s *Server) waitAndMakeBucket(t testing.TB, logPath string) {
	t.Helper()
	var err error
	for range 600 {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		err = s.Client.MakeBucket(ctx, s.Bucket, minio.MakeBucketOptions{})
		if err != nil {
			if ok, e := s.Client.BucketExists(ctx, s.Bucket); e == nil && ok {
				err = nil
			}
		}
		cancel()
		if err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	b, _ := os.ReadFile(logPath)
	t.Fatalf("SeaweedFS's S3 API on %s did not create bucket %s: %v\nweed log:\n%s", s.Endpoint, s.Bucket, err, b)
}

func writeFile(t testing.TB, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeConfig writes SeaweedFS's S3 identities: one admin with the server's access key.
func writeConfig(t testing.TB, dir string, s *Server) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"identities": []any{map[string]any{
		"name":        "kubox",
		"credentials": []any{map[string]string{"accessKey": s.AccessKeyID, "secretKey": s.SecretAccessKey}},
		"actions":     []string{"Admin", "Read", "Write", "List", "Tagging"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, "s3.json", string(b))
}

// freePorts returns n free TCP ports of 127.0.0.1.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return ports
}
