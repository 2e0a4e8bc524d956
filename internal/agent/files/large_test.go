package files

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"testing"
)

// patternReader yields size bytes: one random 1 MiB block repeated, each copy stamped with its
// index so that a misplaced or repeated block changes the hash. It records the hash of what it
// yielded, unless sum is set to nil.
type patternReader struct {
	block []byte
	size  int64
	off   int64
	sum   hash.Hash
}

func newPatternReader(size int64) *patternReader {
	block := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < len(block); i += 8 {
		binary.LittleEndian.PutUint64(block[i:], rng.Uint64())
	}
	return &patternReader{block: block, size: size, sum: sha256.New()}
}

func (p *patternReader) Read(b []byte) (int, error) {
	if p.off >= p.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(b)), p.size-p.off))
	written := 0
	for written < n {
		i := (p.off + int64(written)) % int64(len(p.block))
		if i == 0 {
			binary.LittleEndian.PutUint64(p.block, uint64(p.off+int64(written)))
		}
		written += copy(b[written:n], p.block[i:])
	}
	if p.sum != nil {
		p.sum.Write(b[:n])
	}
	p.off += int64(n)
	return n, nil
}

// allocated returns the bytes allocated by the whole process so far (client and server alike).
func allocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// TestLargeFileStreams uploads and downloads a 320 MiB file through the content handler and
// checks that the content arrives intact (SHA-256) and that neither direction holds the file in
// memory: everything the process allocates during a transfer (client, server and handler
// together) stays under a sixteenth of the file's size.
func TestLargeFileStreams(t *testing.T) {
	const size = 320 << 20
	tr := newTree(t)
	srv := serve(t, NewContentHandler(tr.root(), nil))

	src := newPatternReader(size)
	before := allocated()
	req, err := http.NewRequest("PUT", srv.URL+"/files/big/blob.bin", src)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = size
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	upload := allocated() - before
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT = %d", resp.StatusCode)
	}

	before = allocated()
	resp, err = http.Get(srv.URL + "/files/big/blob.bin")
	if err != nil {
		t.Fatal(err)
	}
	got := sha256.New()
	n, err := io.Copy(got, resp.Body)
	_ = resp.Body.Close()
	download := allocated() - before
	if err != nil || n != size || resp.ContentLength != size {
		t.Fatalf("GET read %d bytes (Content-Length %d): %v; want %d", n, resp.ContentLength, err, size)
	}
	if !bytes.Equal(got.Sum(nil), src.sum.Sum(nil)) {
		t.Fatal("the downloaded file differs from the uploaded one")
	}
	t.Logf("allocated during the upload: %s, the download: %s, for a %s file", mib(upload), mib(download), mib(size))
	for what, a := range map[string]uint64{"upload": upload, "download": download} {
		if a > size/16 {
			t.Errorf("the %s allocated %s for a %s file: it is buffering the file", what, mib(a), mib(size))
		}
	}
}

func mib(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
