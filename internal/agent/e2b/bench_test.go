package e2b_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"connectrpc.com/connect"

	envdprocess "github.com/kubox-dev/kubox/proto/e2b/envd/process"
)

// BenchmarkStartToEnd is one E2B commands.run of a trivial command through the E2B port: Start,
// the start event, the end event.
func BenchmarkStartToEnd(b *testing.B) {
	s := startSandbox(b)
	for b.Loop() {
		stream, err := s.proc.Start(b.Context(), connect.NewRequest(&envdprocess.StartRequest{
			Process: &envdprocess.ProcessConfig{Cmd: "/bin/true"}}))
		if err != nil {
			b.Fatal(err)
		}
		var ended bool
		for stream.Receive() {
			ended = ended || stream.Msg().GetEvent().GetEnd() != nil
		}
		if err := stream.Err(); err != nil || !ended {
			b.Fatalf("stream: %v, ended %v", err, ended)
		}
	}
}

// BenchmarkUploadDownload64MiB writes and reads back a 64 MiB file over /files.
func BenchmarkUploadDownload64MiB(b *testing.B) {
	s := startSandbox(b)
	data := bytes.Repeat([]byte("0123456789abcdef"), 4<<20)
	b.SetBytes(int64(2 * len(data)))
	for b.Loop() {
		req, _ := http.NewRequestWithContext(b.Context(), http.MethodPost, s.filesURL("/big.bin"), bytes.NewReader(data))
		req.Header.Set("Content-Type", "application/octet-stream")
		res, err := s.http.Do(req)
		if err != nil || res.StatusCode != http.StatusOK {
			b.Fatalf("upload: %v %v", res, err)
		}
		_ = res.Body.Close()
		res, err = s.http.Get(s.filesURL("/big.bin"))
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		if n != int64(len(data)) {
			b.Fatalf("downloaded %d bytes, want %d", n, len(data))
		}
	}
}
