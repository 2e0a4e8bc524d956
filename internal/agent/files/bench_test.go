package files

import (
	"io"
	"net/http"
	"testing"
)

// benchSize is the file the throughput benchmarks move: 1 GiB.
const benchSize = 1 << 30

// BenchmarkUpload measures PUT /files/<path> of a 1 GiB file over loopback: the body streamed
// into a temporary file, synced to disk and renamed into place.
//
//	go test ./internal/agent/files -run '^$' -bench 'Upload|Download' -benchtime=3x
func BenchmarkUpload(b *testing.B) {
	srv := serve(b, NewContentHandler(newTree(b).root(), nil))
	b.SetBytes(benchSize)
	for b.Loop() {
		src := newPatternReader(benchSize)
		src.sum = nil
		req, err := http.NewRequest("PUT", srv.URL+"/files/blob.bin", src)
		if err != nil {
			b.Fatal(err)
		}
		req.ContentLength = benchSize
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			b.Fatalf("PUT = %d", resp.StatusCode)
		}
	}
}

// BenchmarkDownload measures GET /files/<path> of a 1 GiB file over loopback (the file is in the
// page cache after the first round).
func BenchmarkDownload(b *testing.B) {
	tr := newTree(b)
	src := newPatternReader(benchSize)
	src.sum = nil
	if _, err := tr.root().WriteFile("blob.bin", src, WriteOptions{}); err != nil {
		b.Fatal(err)
	}
	srv := serve(b, NewContentHandler(tr.root(), nil))
	// The client reads 1 MiB at a time, as a real one would (io.Discard alone reads 8 KiB at a time).
	buf := make([]byte, 1<<20)
	b.SetBytes(benchSize)
	for b.Loop() {
		resp, err := http.Get(srv.URL + "/files/blob.bin")
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.CopyBuffer(struct{ io.Writer }{io.Discard}, resp.Body, buf)
		_ = resp.Body.Close()
		if err != nil || n != benchSize {
			b.Fatalf("GET read %d bytes: %v", n, err)
		}
	}
}
