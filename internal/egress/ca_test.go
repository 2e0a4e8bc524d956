package egress

import (
	"crypto/x509"
	"testing"
)

// TestCATrustsOnlyItsDomains checks the property the sandbox relies on: a certificate this CA
// signs for any other name does not verify, even though the CA key could sign it.
func TestCATrustsOnlyItsDomains(t *testing.T) {
	ca, err := NewCA("ns/box", []string{"api.test", "*.models.test"})
	if err != nil {
		t.Fatal(err)
	}
	for host, ok := range map[string]bool{"api.test": true, "eu.models.test": true, "models.test": false, "pypi.org": false, "api.test.evil.com": false} {
		leaf, err := ca.Leaf(host)
		if err != nil {
			t.Fatal(err)
		}
		_, err = leaf.Leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: ca.Pool()})
		if (err == nil) != ok {
			t.Errorf("a leaf for %s verifies: %v; want %v", host, err, ok)
		}
	}
	again, _ := ca.Leaf("API.test")
	first, _ := ca.Leaf("api.test")
	if again != first {
		t.Error("the leaf of a host was minted twice")
	}
	if _, err := NewCA("ns/box", nil); err == nil {
		t.Error("a CA without domains was made")
	}
}

func TestLoadCA(t *testing.T) {
	ca, err := NewCA("ns/sb", []string{"api.test"})
	if err != nil {
		t.Fatal(err)
	}
	key, err := ca.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadCA(ca.PEM, key)
	if err != nil {
		t.Fatalf("LoadCA: %v", err)
	}
	leaf, err := loaded.Leaf("api.test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{DNSName: "api.test", Roots: ca.Pool()}); err != nil {
		t.Errorf("a leaf of the loaded CA does not verify against the original: %v", err)
	}
	other, _ := NewCA("ns/other", []string{"api.test"})
	otherKey, _ := other.KeyPEM()
	if _, err := LoadCA(ca.PEM, otherKey); err == nil {
		t.Error("LoadCA accepted another CA's key")
	}
}
