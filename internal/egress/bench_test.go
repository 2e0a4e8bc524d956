package egress

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"
)

// BenchmarkEgress measures what the egress path adds, on loopback: a new HTTPS connection
// (CONNECT, dial, TLS handshake, one request), a request on an open connection, and a large
// download, each direct and through the proxy (pass-through tunnel, and inspected with a
// credential). It reports p50/p99 latency per operation and MB/s.
//
//	go test -run '^$' -bench BenchmarkEgress -benchtime 2000x ./internal/egress/
func BenchmarkEgress(b *testing.B) {
	w := newWorld(b)
	url := func(host string) string { return fmt.Sprintf("https://%s:%d/", host, port(b, w.tls)) }
	go func() {
		for range w.seen { // drain what the server records
		}
	}()
	clients := map[string]func(keepAlive bool) *http.Client{
		"direct": func(keepAlive bool) *http.Client {
			return &http.Client{Transport: &http.Transport{DisableKeepAlives: !keepAlive,
				DialContext:     (&net.Dialer{}).DialContext,
				TLSClientConfig: &tls.Config{RootCAs: w.upstream, ServerName: "allowed.test"}}}
		},
		"tunnel": func(keepAlive bool) *http.Client {
			c := w.client("127.0.0.1", w.upstream)
			c.Transport.(*http.Transport).DisableKeepAlives = !keepAlive
			return c
		},
		"inspected": func(keepAlive bool) *http.Client {
			c := w.client("127.0.0.1", w.ca.Pool())
			c.Transport.(*http.Transport).DisableKeepAlives = !keepAlive
			return c
		},
	}
	target := map[string]string{
		"direct":    fmt.Sprintf("https://127.0.0.1:%d/", port(b, w.tls)),
		"tunnel":    url("allowed.test"),
		"inspected": url("api.test"),
	}
	for _, path := range []string{"direct", "tunnel", "inspected"} {
		for _, op := range []string{"new-connection", "request"} {
			b.Run(path+"/"+op, func(b *testing.B) {
				c := clients[path](op == "request")
				if _, _, err := get(c, target[path]); err != nil {
					b.Fatal(err)
				}
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for range b.N {
					start := time.Now()
					if code, _, err := get(c, target[path]); err != nil || code != 200 {
						b.Fatalf("%d %v", code, err)
					}
					lat = append(lat, time.Since(start))
				}
				reportPercentiles(b, lat)
			})
		}
		b.Run(path+"/download-8MiB", func(b *testing.B) {
			c := clients[path](true)
			b.SetBytes(8 << 20)
			for range b.N {
				resp, err := c.Get(target[path] + "big")
				if err != nil {
					b.Fatal(err)
				}
				if n, _ := io.Copy(io.Discard, resp.Body); n != 8<<20 {
					b.Fatalf("%d bytes", n)
				}
				_ = resp.Body.Close()
			}
		})
	}
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	at := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(at(0.5), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}
