package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

type urlT = url.URL

func mustURL(s string) urlT {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return *u
}

const (
	adminUser  = "tern-admin"
	adminGroup = "system:masters"
)

// pki holds the paths of the generated material (and the admin token itself).
type pki struct {
	caCert, caKey           string
	servingCert, servingKey string
	saPrivate, saPublic     string
	tokenFile               string
	token                   string
}

// ensurePKI creates (or reuses, on restart) a CA, a serving certificate for
// 127.0.0.1/localhost, a service-account signing key pair and the admin token.
func ensurePKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{
		caCert:      filepath.Join(dir, "ca.crt"),
		caKey:       filepath.Join(dir, "ca.key"),
		servingCert: filepath.Join(dir, "apiserver.crt"),
		servingKey:  filepath.Join(dir, "apiserver.key"),
		saPrivate:   filepath.Join(dir, "sa.key"),
		saPublic:    filepath.Join(dir, "sa.pub"),
		tokenFile:   filepath.Join(dir, "tokens.csv"),
	}
	if !exists(p.caCert, p.caKey, p.servingCert, p.servingKey, p.saPrivate, p.saPublic, p.tokenFile) {
		if err := p.generate(); err != nil {
			return nil, err
		}
	}
	b, err := os.ReadFile(p.tokenFile)
	if err != nil {
		return nil, err
	}
	tok, _, ok := strings.Cut(string(b), ",")
	if !ok || tok == "" {
		return nil, fmt.Errorf("malformed %s", p.tokenFile)
	}
	p.token = tok
	return p, nil
}

func exists(paths ...string) bool {
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return false
		}
	}
	return true
}

func (p *pki) generate() error {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "tern-test-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}

	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.ParseIP("10.96.0.1")},
		DNSNames: []string{
			"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local",
		},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		return err
	}

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}

	tok := make([]byte, 32)
	if _, err := rand.Read(tok); err != nil {
		return err
	}

	// Write everything; the token file last, since its presence marks completion.
	for _, f := range []struct {
		path  string
		block *pem.Block
	}{
		{p.caCert, &pem.Block{Type: "CERTIFICATE", Bytes: caDER}},
		{p.caKey, ecKeyBlock(caKey)},
		{p.servingCert, &pem.Block{Type: "CERTIFICATE", Bytes: srvDER}},
		{p.servingKey, ecKeyBlock(srvKey)},
		{p.saPrivate, ecKeyBlock(saKey)},
		{p.saPublic, &pem.Block{Type: "PUBLIC KEY", Bytes: saPub}},
	} {
		if f.block == nil {
			return errors.New("cannot encode EC key")
		}
		if err := writeFileAtomic(f.path, pem.EncodeToMemory(f.block)); err != nil {
			return err
		}
	}
	line := fmt.Sprintf("%s,%s,%s,\"%s\"\n", hex.EncodeToString(tok), adminUser, adminUser, adminGroup)
	return writeFileAtomic(p.tokenFile, []byte(line))
}

func ecKeyBlock(k *ecdsa.PrivateKey) *pem.Block {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil
	}
	return &pem.Block{Type: "EC PRIVATE KEY", Bytes: der}
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// writeKubeconfig writes an admin kubeconfig: bearer token, CA data, server URL.
func writeKubeconfig(path, serverURL string, p *pki) error {
	ca, err := os.ReadFile(p.caCert)
	if err != nil {
		return err
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: tern-test
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
    token: %s
contexts:
- name: tern-test
  context:
    cluster: tern-test
    user: %s
current-context: tern-test
preferences: {}
`, serverURL, base64.StdEncoding.EncodeToString(ca), adminUser, p.token, adminUser)
	return writeFileAtomic(path, []byte(cfg))
}
