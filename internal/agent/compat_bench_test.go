package agent

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/kubox-dev/kubox/internal/agent/compat/pyruntime"
)

// BenchmarkCompatExecuteOutput runs commands writing text (5 and 48 MiB) and NUL bytes (5 MiB,
// which JSON escapes as six bytes each) to stdout through python-runtime's /execute on a real
// agent. The client checks the answer's SHA-256 as it streams in, so what the process allocates
// per call (reported in MiB next to the output's size) is the agent's: capturing the output and
// writing the answer.
//
//	go test ./internal/agent -run '^$' -bench CompatExecuteOutput -benchtime 3x
func BenchmarkCompatExecuteOutput(b *testing.B) {
	for _, bc := range []struct {
		name, source, unit string
		mib                int
	}{
		{"text-5MiB", "yes 0123456789abcdef", "0123456789abcdef\n", 5},
		{"text-48MiB", "yes 0123456789abcdef", "0123456789abcdef\n", 48},
		{"nul-5MiB", "cat /dev/zero", "\x00", 5},
	} {
		b.Run(bc.name, func(b *testing.B) {
			_, _, compat := startAgent(b, nil)
			size := bc.mib << 20
			command := `sh -c "` + bc.source + ` | head -c ` + strconv.Itoa(size) + `"`
			out := strings.Repeat(bc.unit, size/len(bc.unit)+1)[:size]
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(pyruntime.ExecuteResponse{Stdout: out})
			wantSum := sha256.Sum256(bytes.TrimSuffix(want.Bytes(), []byte("\n")))
			payload, _ := json.Marshal(map[string]string{"command": command})
			before := allocated()
			for b.Loop() {
				req, _ := http.NewRequestWithContext(b.Context(), http.MethodPost, compat+"/execute", bytes.NewReader(payload))
				req.Header.Set("Authorization", "Bearer "+testToken)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				h := sha256.New()
				n, err := io.Copy(h, resp.Body)
				_ = resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(h.Sum(nil), wantSum[:]) {
					b.Fatalf("POST /execute = %d, %d bytes (%v); want 200 and the %d bytes of python-runtime's answer", resp.StatusCode, n, err, want.Len()-1)
				}
			}
			b.ReportMetric(float64(allocated()-before)/float64(b.N)/(1<<20), "alloc-MiB/op")
			b.ReportMetric(float64(bc.mib), "output-MiB")
		})
	}
}

// allocated returns the bytes the whole process allocated so far.
func allocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}
