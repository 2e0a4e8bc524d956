// Package ingress stands in, in tests, for the ingress a production install puts in front of
// kubox-router: TLS on 127.0.0.1 for a wildcard domain (E2B's SDKs dial https), every request
// passed on with its Host, streamed both ways.
package ingress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TLS serves TLS (HTTP/2 and HTTP/1.1) for *.{domain} and domain on 127.0.0.1 and passes every
// request, Host unchanged, to target (the router's URL) until the test ends. It returns its
// address and the file of its self-signed certificate (for NODE_EXTRA_CA_CERTS or a client's
// root pool).
//
// Like a real ingress it streams a request body after the response has begun: Go's HTTP/1
// server would otherwise make the body unreadable once the response headers are written, and
// a client that sends its body slowly (Node's fetch under load) had its answer cut off.
func TLS(t testing.TB, target, domain string) (string, string) {
	t.Helper()
	cert, pemCert := selfSigned(t, "*."+domain, domain)
	caFile := filepath.Join(t.TempDir(), "ingress.pem")
	if err := os.WriteFile(caFile, pemCert, 0o600); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u); r.Out.Host = r.In.Host },
		FlushInterval: -1,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_ = http.NewResponseController(w).EnableFullDuplex() // HTTP/2: full duplex already
			proxy.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String(), caFile
}

// selfSigned makes a P-256 certificate for names that signs itself (a client trusts it as its
// own root), valid for a day.
func selfSigned(t testing.TB, names ...string) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: names[0]},
		DNSNames: names, NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:        true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
