package devenv

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"testing"
	"time"
)

func TestNewPKI(t *testing.T) {
	c := DefaultConfig()
	p, err := NewPKI(c, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(p["ca.crt"])
	server := parseCert(t, p["apiserver.crt"])
	for _, ip := range []string{"127.0.0.1", "10.77.0.1", "10.78.0.1"} {
		if _, err := server.Verify(x509.VerifyOptions{Roots: roots, DNSName: ip}); err != nil {
			t.Errorf("apiserver certificate for %s: %v", ip, err)
		}
	}
	if !server.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)) {
		t.Errorf("first SAN = %v", server.IPAddresses[0])
	}
	admin := parseCert(t, p["admin.crt"])
	if _, err := admin.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("admin client certificate: %v", err)
	}
	if got := admin.Subject.Organization; len(got) != 1 || got[0] != "system:masters" {
		t.Errorf("admin organization = %v, want [system:masters]", got)
	}
	for _, f := range []string{"ca.key", "apiserver.key", "admin.key", "apiserver-kubelet-client.crt", "sa.key", "sa.pub"} {
		if len(p[f]) == 0 {
			t.Errorf("%s is missing", f)
		}
	}
}

func parseCert(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(data)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
