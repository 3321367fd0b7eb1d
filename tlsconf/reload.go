package tlsconf

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Files names the PEM files of a Reloader.
type Files struct {
	// CA is the CA bundle that peers' certificates must chain to: one or more certificates (during a
	// CA rotation, the old and the new CA together: an overlap bundle).
	CA string
	// Cert and Key are this side's certificate (leaf first, then any intermediates) and its private
	// key. Both empty: no certificate of its own (a client that authenticates otherwise).
	Cert, Key string
}

// Errors of loading TLS material (wrapped with the file they concern).
var (
	// ErrBadMaterial: a file does not hold what it must (no PEM block, unparsable, a key that does
	// not match the certificate, an empty CA bundle).
	ErrBadMaterial = errors.New("tlsconf: bad TLS material")
	// ErrNotValidNow: the certificate is expired or not yet valid.
	ErrNotValidNow = errors.New("tlsconf: certificate not valid now")
	// ErrUntrusted: the certificate does not chain to the CA bundle it is loaded with.
	ErrUntrusted = errors.New("tlsconf: certificate does not chain to the CA bundle")
	// ErrIdentityChanged: a reloaded certificate names another identity than the first one did.
	ErrIdentityChanged = errors.New("tlsconf: reloaded certificate names another identity")
)

// material is one consistent load of the three files. Immutable once built.
type material struct {
	cert *tls.Certificate // nil when Files has no Cert/Key; Leaf is set
	pool *x509.CertPool
	id   Identity
	sum  [sha256.Size]byte // of the files' contents, as read
}

// Reloader is safe for concurrent use. It holds the current TLS material of one side (a member's
// node certificate, or a client's) and the CA bundle it trusts, re-read from their files by Reload
// (metad calls it on SIGHUP) and by Run (when a file's content changes). A load that fails keeps
// the last good material. The configurations it hands out read the current material at every
// handshake, so a reload applies to new connections at once; connections already open keep the
// material they were set up with.
type Reloader struct {
	files Files
	log   *slog.Logger
	cur   atomic.Pointer[material] // never nil after NewReloader

	mu   sync.Mutex        // serializes loads and guards seen; a leaf
	seen [sha256.Size]byte // the content hash last tried (good or bad): Run retries only on a change

	reloads *prometheus.CounterVec // metad_tls_reloads_total{result}
}

// NewReloader loads f once; it fails if the files are bad now. log nil discards.
func NewReloader(f Files, log *slog.Logger) (*Reloader, error) {
	if f.CA == "" || (f.Cert == "") != (f.Key == "") {
		return nil, fmt.Errorf("%w: want a CA bundle, and a certificate and its key together", ErrBadMaterial)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Reloader{files: f, log: log, reloads: newReloadsCounter()}
	m, err := load(f)
	if err != nil {
		return nil, err
	}
	r.cur.Store(m)
	r.seen = m.sum
	return r, nil
}

// Reload re-reads the files now. On error the last good material stays, and the error is logged
// and counted (metad_tls_reloads_total{result="error"}).
func (r *Reloader) Reload() error { return r.reload(true) }

// Run re-reads the files every `every` and loads them when their content has changed since the
// last load tried, until ctx is done. A bad content is tried (and logged) once, not at every tick.
func (r *Reloader) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = r.reload(false)
		}
	}
}

// reload loads the files; unless force, only when their content differs from the last tried.
func (r *Reloader) reload(force bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	raw, sum, err := readAll(r.files)
	if !force && sum == r.seen {
		return nil
	}
	r.seen = sum
	old := r.cur.Load()
	var m *material
	if err == nil {
		m, err = parse(r.files, raw, sum)
	}
	if err == nil && m.id != old.id {
		err = fmt.Errorf("%w: %s, was %s", ErrIdentityChanged, m.id, old.id)
	}
	if err != nil {
		r.reloads.WithLabelValues("error").Inc()
		r.log.Error("TLS reload failed; the current certificate and CA bundle stay", "err", err,
			"cert", r.files.Cert, "ca", r.files.CA)
		return err
	}
	r.cur.Store(m)
	r.reloads.WithLabelValues("ok").Inc()
	attrs := []any{"identity", m.id.String(), "cert", r.files.Cert, "ca", r.files.CA}
	if m.cert != nil {
		attrs = append(attrs, "not_after", m.cert.Leaf.NotAfter)
	}
	r.log.Info("TLS material reloaded", attrs...)
	return nil
}

// load reads and parses f.
func load(f Files) (*material, error) {
	raw, sum, err := readAll(f)
	if err != nil {
		return nil, err
	}
	return parse(f, raw, sum)
}

// readAll reads the files of f (CA, Cert, Key; unnamed ones empty) and hashes what it found: their
// contents, or the error reading one, so that a file that stays unreadable hashes alike.
func readAll(f Files) ([3][]byte, [sha256.Size]byte, error) {
	var raw [3][]byte
	var errs []error
	h := sha256.New()
	for i, p := range []string{f.CA, f.Cert, f.Key} {
		if p != "" {
			b, err := os.ReadFile(p)
			if err != nil {
				errs = append(errs, fmt.Errorf("%w: %w", ErrBadMaterial, err))
				fmt.Fprintf(h, "error %q;", err.Error())
				continue
			}
			raw[i] = b
		}
		fmt.Fprintf(h, "%d:", len(raw[i]))
		h.Write(raw[i])
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return raw, sum, errors.Join(errs...)
}

// parse checks the contents read from f: a CA bundle of at least one certificate; a certificate
// and key that match, valid now, chaining to the bundle, naming one metad identity.
func parse(f Files, raw [3][]byte, sum [sha256.Size]byte) (*material, error) {
	pool := x509.NewCertPool()
	n := 0
	for rest := raw[0]; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBadMaterial, f.CA, err)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: %s: no PEM certificate in the CA bundle", ErrBadMaterial, f.CA)
	}
	m := &material{pool: pool, sum: sum}
	if f.Cert == "" {
		return m, nil
	}
	if len(bytes.TrimSpace(raw[1])) == 0 || len(bytes.TrimSpace(raw[2])) == 0 {
		return nil, fmt.Errorf("%w: %s or %s is empty", ErrBadMaterial, f.Cert, f.Key)
	}
	kp, err := tls.X509KeyPair(raw[1], raw[2])
	if err != nil {
		return nil, fmt.Errorf("%w: %s and %s: %w", ErrBadMaterial, f.Cert, f.Key, err)
	}
	leaf := kp.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(kp.Certificate[0]); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBadMaterial, f.Cert, err)
		}
		kp.Leaf = leaf
	}
	now := time.Now()
	if now.Before(leaf.NotBefore) || now.After(leaf.NotAfter) {
		return nil, fmt.Errorf("%w: %s is valid from %s to %s", ErrNotValidNow, f.Cert,
			leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	inter := x509.NewCertPool()
	for _, der := range kp.Certificate[1:] {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBadMaterial, f.Cert, err)
		}
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return nil, fmt.Errorf("%w: %s and %s: %w", ErrUntrusted, f.Cert, f.CA, err)
	}
	id, err := IdentityOf(leaf)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Cert, err)
	}
	m.cert, m.id = &kp, id
	return m, nil
}

// Identity returns the identity the current certificate names (the zero Identity without one).
// A reload never changes it: one naming another identity is refused.
func (r *Reloader) Identity() Identity { return r.cur.Load().id }

// NotAfter returns when the current certificate expires (zero without one).
func (r *Reloader) NotAfter() time.Time {
	if m := r.cur.Load(); m.cert != nil {
		return m.cert.Leaf.NotAfter
	}
	return time.Time{}
}

// ServerConfig returns a listener's configuration: TLS 1.3, and every handshake uses the current
// certificate and CA bundle (through GetConfigForClient), so a reloaded bundle applies to the next
// handshake. clientAuth says whether clients must present a certificate (tls.NoClientCert,
// VerifyClientCertIfGiven, RequireAndVerifyClientCert); one presented is verified against the
// current bundle. Session tickets are off, so that a resumed session never skips verifying a
// client certificate against the current bundle (a CA removed from it must stop being trusted).
func (r *Reloader) ServerConfig(clientAuth tls.ClientAuthType) *tls.Config {
	return &tls.Config{
		MinVersion:             tls.VersionTLS13,
		SessionTicketsDisabled: true,
		ClientAuth:             clientAuth, // what every handshake's config asks; says so to whoever inspects this one
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			m := r.cur.Load()
			if m.cert == nil {
				return nil, fmt.Errorf("%w: no certificate to serve", ErrBadMaterial)
			}
			return &tls.Config{
				MinVersion:             tls.VersionTLS13,
				SessionTicketsDisabled: true,
				Certificates:           []tls.Certificate{*m.cert},
				ClientCAs:              m.pool,
				ClientAuth:             clientAuth,
			}, nil
		},
	}
}

// ClientConfig returns a dialer's configuration: TLS 1.3, presenting the current certificate (if
// any) and verifying the server's chain against the current CA bundle in VerifyConnection. The
// server must hold a server certificate (extended key usage serverAuth, which only member
// certificates have) naming a metad identity; when the handshake carries a DNS server name (the
// dialed host, which gRPC sets), the certificate must be valid for it. A dialed IP address is not
// sent in the handshake, so it is not compared: the CA bundle and the member identity are what
// authenticate the server then. (InsecureSkipVerify only turns off crypto/tls's own verification
// with a fixed pool; this one replaces it.)
func (r *Reloader) ClientConfig() *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		InsecureSkipVerify: true, // verified in VerifyConnection against the current bundle
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if m := r.cur.Load(); m.cert != nil {
				return m.cert, nil
			}
			return &tls.Certificate{}, nil // none: the server decides whether that is enough
		},
		VerifyConnection: func(cs tls.ConnectionState) error { return r.verifyServer(cs) },
	}
}

// verifyServer verifies the server's certificate of a handshake against the current bundle.
func (r *Reloader) verifyServer(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return fmt.Errorf("%w: the server presented no certificate", ErrUntrusted)
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	leaf := cs.PeerCertificates[0]
	opts := x509.VerifyOptions{Roots: r.cur.Load().pool, Intermediates: inter, DNSName: cs.ServerName,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if _, err := leaf.Verify(opts); err != nil {
		return fmt.Errorf("%w: server certificate: %w", ErrUntrusted, err)
	}
	if _, err := IdentityOf(leaf); err != nil {
		return fmt.Errorf("server certificate: %w", err)
	}
	return nil
}

func newReloadsCounter() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "metad_tls_reloads_total",
		Help: "Loads of the TLS certificate, key and CA bundle after the first, by result (ok, error: the last good material stays).",
	}, []string{"result"})
	c.WithLabelValues("ok")
	c.WithLabelValues("error")
	return c
}

// RegisterMetrics registers on reg metad_tls_cert_expiry_seconds{listener} (seconds until the
// current certificate's NotAfter; negative once past it) for the named listener, and
// metad_tls_reloads_total{result}. Call it once per listener that serves this Reloader's
// material; the reloads counter is registered with the first.
func (r *Reloader) RegisterMetrics(reg prometheus.Registerer, listener string) error {
	if reg == nil {
		return nil
	}
	expiry := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "metad_tls_cert_expiry_seconds",
		Help:        "Seconds until the certificate a listener currently serves expires.",
		ConstLabels: prometheus.Labels{"listener": listener},
	}, func() float64 {
		na := r.NotAfter()
		if na.IsZero() {
			return 0
		}
		return time.Until(na).Seconds()
	})
	if err := reg.Register(expiry); err != nil {
		return fmt.Errorf("tlsconf: metrics of listener %s: %w", listener, err)
	}
	if err := reg.Register(r.reloads); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) || are.ExistingCollector != r.reloads {
			return fmt.Errorf("tlsconf: reload metrics: %w", err)
		}
	}
	return nil
}
