package tlsconf

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// File names in a certificates directory (`metactl cert` writes them, `make run` uses them):
//
//	ca.crt, ca.key                        the cluster CA
//	member.<name>.crt, member.<name>.key  a member's node certificate
//	client.<name>.crt, client.<name>.key  a principal's client certificate
const (
	CACertFile = "ca.crt"
	CAKeyFile  = "ca.key"
)

// MemberFiles returns the certificate and key paths of member name's node certificate in dir.
func MemberFiles(dir, name string) (cert, key string) {
	return filepath.Join(dir, "member."+name+".crt"), filepath.Join(dir, "member."+name+".key")
}

// ClientFiles returns the certificate and key paths of principal name's client certificate in dir.
func ClientFiles(dir, name string) (cert, key string) {
	return filepath.Join(dir, "client."+name+".crt"), filepath.Join(dir, "client."+name+".key")
}

// Default validities.
const (
	DefaultCAValidity   = 10 * 365 * 24 * time.Hour
	DefaultCertValidity = 365 * 24 * time.Hour
)

// Options shape a certificate being created. The zero value means: valid from a minute ago for
// the default validity.
type Options struct {
	// Validity is how long the certificate is valid. Default: DefaultCAValidity for a CA,
	// DefaultCertValidity otherwise.
	Validity time.Duration
	// NotBefore is when it starts being valid. Default: a minute before now (for clocks a little
	// behind).
	NotBefore time.Time
}

func (o Options) window(def time.Duration) (time.Time, time.Time) {
	nb := o.NotBefore
	if nb.IsZero() {
		nb = time.Now().Add(-time.Minute)
	}
	v := o.Validity
	if v == 0 {
		v = def
	}
	return nb, nb.Add(v)
}

// ErrExists: a file that creating would write already exists (nothing is overwritten).
var ErrExists = errors.New("tlsconf: file exists")

// CA is a certificate authority that issues a cluster's certificates.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// CreateCA creates a cluster CA in dir (ca.crt, and ca.key readable by the owner only) and returns
// it. It refuses to overwrite an existing CA.
func CreateCA(dir string, o Options) (*CA, error) {
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	if err := absent(certPath, keyPath); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	nb, na := o.window(DefaultCAValidity)
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "metad cluster CA", Organization: []string{"metad"}},
		NotBefore:             nb,
		NotAfter:              na,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	cert, der, err := sign(tmpl, tmpl, key, key)
	if err != nil {
		return nil, err
	}
	if err := write(dir, certPath, keyPath, der, key); err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key}, nil
}

// LoadCA reads the CA in dir (ca.crt and ca.key).
func LoadCA(dir string) (*CA, error) {
	cert, err := readCert(filepath.Join(dir, CACertFile))
	if err != nil {
		return nil, err
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("tlsconf: %s is not a CA certificate", filepath.Join(dir, CACertFile))
	}
	key, err := readKey(filepath.Join(dir, CAKeyFile))
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key}, nil
}

// IssueMember writes a node certificate for member name into dir (MemberFiles), for server and
// client use, valid for hosts (IP addresses or DNS names: every address clients and peers dial)
// and naming metad://member/<name>. It refuses to overwrite existing files.
func (ca *CA) IssueMember(dir, name string, hosts []string, o Options) (certPath, keyPath string, err error) {
	if len(hosts) == 0 {
		return "", "", fmt.Errorf("tlsconf: member %s: no hosts", name)
	}
	certPath, keyPath = MemberFiles(dir, name)
	return certPath, keyPath, ca.issue(dir, certPath, keyPath, Identity{Kind: Member, Name: name}, hosts, o)
}

// IssueClient writes a client certificate for principal name into dir (ClientFiles), naming
// metad://principal/<name>. It refuses to overwrite existing files.
func (ca *CA) IssueClient(dir, name string, o Options) (certPath, keyPath string, err error) {
	certPath, keyPath = ClientFiles(dir, name)
	return certPath, keyPath, ca.issue(dir, certPath, keyPath, Identity{Kind: Principal, Name: name}, nil, o)
}

func (ca *CA) issue(dir, certPath, keyPath string, id Identity, hosts []string, o Options) error {
	if err := ValidName(id.Name); err != nil {
		return err
	}
	if err := absent(certPath, keyPath); err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	nb, na := o.window(DefaultCertValidity)
	if na.After(ca.Cert.NotAfter) {
		na = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: id.Name, Organization: []string{"metad " + id.Kind.String()}},
		NotBefore:   nb,
		NotAfter:    na,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		URIs:        []*url.URL{id.URI()},
	}
	if id.Kind == Member {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
	}
	_, der, err := sign(tmpl, ca.Cert, key, ca.Key)
	if err != nil {
		return err
	}
	return write(dir, certPath, keyPath, der, key)
}

func sign(tmpl, parent *x509.Certificate, key *ecdsa.PrivateKey, signer crypto.Signer) (*x509.Certificate, []byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signer)
	if err != nil {
		return nil, nil, fmt.Errorf("tlsconf: sign %s: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	return cert, der, err
}

func absent(paths ...string) error {
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return fmt.Errorf("%w: %s", ErrExists, p)
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// write writes the certificate (0644) and its key (0600) into dir, creating dir (0700) if needed.
func write(dir, certPath, keyPath string, der []byte, key *ecdsa.PrivateKey) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func readCert(path string) (*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("tlsconf: %s: no PEM certificate", path)
	}
	return x509.ParseCertificate(blk.Bytes)
}

func readKey(path string) (crypto.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("tlsconf: %s: no PEM private key", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: %s: %w", path, err)
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("tlsconf: %s: not a signing key", path)
	}
	return s, nil
}
