package devenv

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// PKI is the set of files the control plane needs, as PEM, keyed by file name in Layout.PKI.
type PKI map[string][]byte

// certValidity is long enough for a dev environment that lives until `kubox dev down`.
const certValidity = 5 * 365 * 24 * time.Hour

type certSpec struct {
	name     string
	cn       string
	orgs     []string
	server   bool
	ips      []net.IP
	dnsNames []string
}

// EgressTestCA names the files (.crt, .key) of a second CA in Layout.PKI, trusted by the local
// node's kubox-egress for the servers of credential domains besides the system's roots: a local
// HTTPS server that stands in for an API (as the e2e tests' api.test) gets its certificate from it.
// It signs nothing else and nothing else trusts it.
const EgressTestCA = "egress-test-ca"

// NewPKI creates a CA, the API server's and the kubelet's serving certificates, client
// certificates for the admin (also used by the controllers and the kubelet: system:masters) and
// for the API server's calls to the kubelet, the service-account signing key pair, and the EgressTestCA.
func NewPKI(c Config, now time.Time) (PKI, error) {
	p := PKI{}
	caKey, caCert, err := p.addCA("ca", "kubox-dev-ca", now)
	if err != nil {
		return nil, err
	}
	if _, _, err := p.addCA(EgressTestCA, "kubox-dev egress test CA", now); err != nil {
		return nil, err
	}
	for _, s := range certSpecs(c) {
		if err := p.issue(s, caCert, caKey, now); err != nil {
			return nil, fmt.Errorf("issue %s certificate: %w", s.name, err)
		}
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	if err := p.addKey("sa.key", saKey); err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	p["sa.pub"] = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	return p, nil
}

func certSpecs(c Config) []certSpec {
	return []certSpec{
		{name: "apiserver", cn: "kube-apiserver", server: true,
			ips:      []net.IP{net.IPv4(127, 0, 0, 1), net.IP(c.NodeIP().AsSlice()), net.IP(c.KubernetesServiceIP().AsSlice())},
			dnsNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"}},
		{name: "admin", cn: "kubox-admin", orgs: []string{"system:masters"}},
		{name: "apiserver-kubelet-client", cn: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"}},
		// the kubelet's serving certificate, signed by the cluster CA as serverTLSBootstrap gets
		// one: clients that check it (kubox-controller reading /metrics/resource) trust the CA.
		{name: "kubelet", cn: "system:node:" + c.NodeName, orgs: []string{"system:nodes"}, server: true,
			ips: []net.IP{net.IP(c.NodeIP().AsSlice())}, dnsNames: []string{c.NodeName}},
	}
}

// addCA creates a CA named cn and adds it as name.crt and name.key.
func (p PKI) addCA(name, cn string, now time.Time) (*ecdsa.PrivateKey, *x509.Certificate, error) {
	key, cert, err := newCA(cn, now)
	if err != nil {
		return nil, nil, err
	}
	p[name+".crt"] = pemCert(cert.Raw)
	return key, cert, p.addKey(name+".key", key)
}

func newCA(cn string, now time.Time) (*ecdsa.PrivateKey, *x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(certValidity),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return key, cert, err
}

func (p PKI) issue(s certSpec, ca *x509.Certificate, caKey crypto.Signer, now time.Time) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	usage := x509.ExtKeyUsageClientAuth
	if s.server {
		usage = x509.ExtKeyUsageServerAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: s.cn, Organization: s.orgs},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(certValidity),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: s.ips, DNSNames: s.dnsNames,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	p[s.name+".crt"] = pemCert(der)
	return p.addKey(s.name+".key", key)
}

func (p PKI) addKey(name string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	p[name] = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	return nil
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// Write stores the PKI in dir, keys readable by the owner only.
func (p PKI) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, data := range p {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// EnsureKey writes 48 random bytes, base64-encoded, to path (mode 0600) unless the file exists:
// the agent token key survives `up` after `up`, so running sandboxes keep valid tokens.
func EnsureKey(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	raw := make([]byte, 48)
	if _, err := rand.Read(raw); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(raw)+"\n"), 0o600)
}

// ensureToken returns the bearer token stored at path, creating it (EnsureKey) the first time.
func ensureToken(path string) (string, error) {
	if err := EnsureKey(path); err != nil {
		return "", err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}
