package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"google.golang.org/grpc/credentials"

	"metad/tlsconf"
)

// Environment variables of the client's transport security (SecurityFromEnv reads them; metactl
// takes them as the defaults of its flags).
const (
	// EnvCACert names the PEM file of the CA certificates that verify the nodes (several
	// certificates allowed: an overlap bundle during a CA rotation). Setting it turns TLS on.
	EnvCACert = "METAD_CACERT"
	// EnvCert and EnvKey name the PEM files of the client certificate and its key (optional: a
	// client may authenticate by API key alone).
	EnvCert = "METAD_CERT"
	EnvKey  = "METAD_KEY"
	// EnvAPIKey is the API key sent on every call (needs TLS).
	EnvAPIKey = "METAD_API_KEY"
	// EnvCertsDir names a certificates directory (`metactl cert` writes one): when no CA file is
	// given and <dir>/ca.crt exists, TLS is on with that CA, and, when neither a certificate nor a
	// key is given, the client certificate of the root principal there (client.root.crt/.key) is
	// presented if present.
	EnvCertsDir = "METAD_CERTS_DIR"
)

// RootPrincipal is the bootstrap principal whose certificate a certificates directory may hold
// (client.root.crt): admin always.
const RootPrincipal = "root"

// Errors of the transport security configuration.
var (
	// ErrKeyWithoutTLS: Config.APIKey is set but Config.TLS is nil; a key is never sent in clear.
	ErrKeyWithoutTLS = errors.New("client: an API key needs TLS (set Config.TLS, or METAD_CACERT / --cacert)")
	// ErrBadTLSFiles: a CA, certificate or key file is missing, unreadable or malformed.
	ErrBadTLSFiles = errors.New("client: bad TLS files")
)

// TLSFromFiles returns a TLS 1.3 client configuration that verifies the nodes against the CA
// certificates in caFile (one or several PEM certificates: an overlap bundle during a CA
// rotation) and, when certFile and keyFile are given, presents that client certificate. Both or
// neither of certFile and keyFile must be given: a client may authenticate by API key alone.
//
// The certificate files are read now (an error if they are bad) and again at every handshake
// that asks for a client certificate, so new connections present a renewed certificate as soon
// as both files hold a matching pair; while they do not (half-written, mismatched, removed) the
// last good certificate is presented. The CA file is read once.
func TLSFromFiles(caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" {
		return nil, fmt.Errorf("%w: no CA file", ErrBadTLSFiles)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("%w: CA file: %w", ErrBadTLSFiles, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w: CA file %s: no PEM certificate", ErrBadTLSFiles, caFile)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: pool}
	if (certFile == "") != (keyFile == "") {
		return nil, fmt.Errorf("%w: a client certificate needs both its certificate and its key file (got cert %q, key %q)",
			ErrBadTLSFiles, certFile, keyFile)
	}
	if certFile != "" {
		kp := &keyPairFiles{cert: certFile, key: keyFile}
		if _, err := kp.load(); err != nil {
			return nil, err
		}
		cfg.GetClientCertificate = kp.get
	}
	return cfg, nil
}

// keyPairFiles is safe for concurrent use (handshakes of several connections): a client
// certificate re-read from its files when their content changes.
type keyPairFiles struct {
	cert, key string // paths

	// mu guards the last good pair and the file contents it was parsed from.
	mu              sync.Mutex
	certPEM, keyPEM []byte
	pair            *tls.Certificate
}

// load reads both files and returns the pair they hold, parsing it only when their content
// changed since the last good read. A bad read leaves the last good pair in place.
func (k *keyPairFiles) load() (*tls.Certificate, error) {
	c, err := os.ReadFile(k.cert)
	if err != nil {
		return nil, fmt.Errorf("%w: certificate file: %w", ErrBadTLSFiles, err)
	}
	kb, err := os.ReadFile(k.key)
	if err != nil {
		return nil, fmt.Errorf("%w: key file: %w", ErrBadTLSFiles, err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.pair != nil && bytes.Equal(c, k.certPEM) && bytes.Equal(kb, k.keyPEM) {
		return k.pair, nil
	}
	pair, err := tls.X509KeyPair(c, kb)
	if err != nil {
		return nil, fmt.Errorf("%w: %s and %s: %w", ErrBadTLSFiles, k.cert, k.key, err)
	}
	k.certPEM, k.keyPEM, k.pair = c, kb, &pair
	return &pair, nil
}

// get is the GetClientCertificate hook: the current pair, or the last good one when the files
// are unreadable or do not match right now.
func (k *keyPairFiles) get(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	if p, err := k.load(); err == nil {
		return p, nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.pair, nil
}

// Security names the transport security material of a client by file: what metactl's flags and
// the METAD_* environment variables give. The zero value is plaintext.
type Security struct {
	CACert   string // PEM CA file; "" with no usable CertsDir: plaintext
	Cert     string // PEM client certificate file (optional)
	Key      string // PEM key file of Cert
	APIKey   string // API key sent on every call (needs TLS)
	CertsDir string // certificates directory consulted when CACert is ""
}

// SecurityFromEnv returns the Security named by METAD_CACERT, METAD_CERT, METAD_KEY,
// METAD_API_KEY and METAD_CERTS_DIR.
func SecurityFromEnv() Security {
	return Security{
		CACert:   os.Getenv(EnvCACert),
		Cert:     os.Getenv(EnvCert),
		Key:      os.Getenv(EnvKey),
		APIKey:   os.Getenv(EnvAPIKey),
		CertsDir: os.Getenv(EnvCertsDir),
	}
}

// Resolve fills in what s leaves to its certificates directory: when CACert is "" and
// <CertsDir>/ca.crt exists, CACert becomes that file and, when none of Cert, Key and APIKey is
// given, Cert and Key become the root principal's client certificate there if both its files
// exist. Everything else is returned unchanged.
func (s Security) Resolve() Security {
	if s.CACert != "" || s.CertsDir == "" {
		return s
	}
	ca := filepath.Join(s.CertsDir, tlsconf.CACertFile)
	if !exists(ca) {
		return s
	}
	s.CACert = ca
	if s.Cert == "" && s.Key == "" && s.APIKey == "" {
		if cert, key := tlsconf.ClientFiles(s.CertsDir, RootPrincipal); exists(cert) && exists(key) {
			s.Cert, s.Key = cert, key
		}
	}
	return s
}

// Apply resolves s (Resolve) and sets cfg.TLS and cfg.APIKey from it: TLS when a CA file is
// named, the API key as given (New refuses a key without TLS). A certificate without a CA file is
// an error: it would never be sent.
func (s Security) Apply(cfg *Config) error {
	s = s.Resolve()
	cfg.APIKey = s.APIKey
	if s.CACert == "" {
		if s.Cert != "" || s.Key != "" {
			return fmt.Errorf("%w: a client certificate needs a CA file to verify the nodes (METAD_CACERT / --cacert)", ErrBadTLSFiles)
		}
		cfg.TLS = nil
		return nil
	}
	t, err := TLSFromFiles(s.CACert, s.Cert, s.Key)
	if err != nil {
		return err
	}
	cfg.TLS = t
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// bearer is immutable: the per-RPC credentials that send an API key as `authorization: Bearer
// <key>` on every call, over secure transports only.
type bearer struct{ header string }

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": b.header}, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials: gRPC refuses to send the key
// over a connection without TLS.
func (bearer) RequireTransportSecurity() bool { return true }

var _ credentials.PerRPCCredentials = bearer{}

// validAPIKey checks that key can travel in a header: printable ASCII without spaces.
func validAPIKey(key string) error {
	for i := 0; i < len(key); i++ {
		if c := key[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("client: APIKey: printable ASCII without spaces, got a byte %#x at %d", c, i)
		}
	}
	return nil
}
