package tlsconf

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"slices"
)

// Kind is the kind of identity a certificate names.
type Kind int

const (
	// Member is a cluster member (metad://member/<name>).
	Member Kind = iota + 1
	// Principal is a principal of the API (metad://principal/<name>).
	Principal
)

func (k Kind) String() string {
	switch k {
	case Member:
		return "member"
	case Principal:
		return "principal"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// uriScheme is the scheme of the identity URIs.
const uriScheme = "metad"

// Identity is what a certificate says its holder is.
type Identity struct {
	Kind Kind
	Name string
}

// URI is the identity as its certificate carries it.
func (id Identity) URI() *url.URL {
	return &url.URL{Scheme: uriScheme, Host: id.Kind.String(), Path: "/" + id.Name}
}

func (id Identity) String() string { return id.URI().String() }

// Errors of IdentityOf and ValidName.
var (
	// ErrNoIdentity: the certificate names no metad identity.
	ErrNoIdentity = errors.New("tlsconf: certificate names no metad identity")
	// ErrManyIdentities: the certificate names more than one metad identity.
	ErrManyIdentities = errors.New("tlsconf: certificate names more than one metad identity")
	// ErrBadName: a member or principal name breaks the naming rules.
	ErrBadName = errors.New("tlsconf: bad name")
	// ErrNotMemberCert: a certificate is not a member certificate (MemberOf).
	ErrNotMemberCert = errors.New("tlsconf: not a member certificate")
)

// MaxNameBytes bounds a member or principal name, as SEMANTICS section 1 bounds tenant ids.
const MaxNameBytes = 128

// ValidName checks a member or principal name: 1 to MaxNameBytes bytes of ASCII letters, digits,
// '.', '_' and '-', starting with a letter or digit.
func ValidName(name string) error {
	if name == "" || len(name) > MaxNameBytes {
		return fmt.Errorf("%w: %q: 1 to %d bytes", ErrBadName, name, MaxNameBytes)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return fmt.Errorf("%w: %q: letters, digits, '.', '_' and '-', starting with a letter or digit", ErrBadName, name)
		}
	}
	return nil
}

// IdentityOf returns the one metad identity that cert names. A certificate with none, with more
// than one, or with a malformed one is refused; verifying the certificate's chain is the TLS
// handshake's work, not this function's.
func IdentityOf(cert *x509.Certificate) (Identity, error) {
	var found []Identity
	for _, u := range cert.URIs {
		if u.Scheme != uriScheme {
			continue
		}
		var k Kind
		switch u.Host {
		case Member.String():
			k = Member
		case Principal.String():
			k = Principal
		default:
			return Identity{}, fmt.Errorf("%w: unknown kind in %s", ErrNoIdentity, u)
		}
		if len(u.Path) < 2 || u.Path[0] != '/' {
			return Identity{}, fmt.Errorf("%w: no name in %s", ErrNoIdentity, u)
		}
		name := u.Path[1:]
		if err := ValidName(name); err != nil {
			return Identity{}, err
		}
		found = append(found, Identity{Kind: k, Name: name})
	}
	switch len(found) {
	case 0:
		return Identity{}, ErrNoIdentity
	case 1:
		return found[0], nil
	}
	return Identity{}, ErrManyIdentities
}

// MemberOf returns the member that cert is the certificate of: it names metad://member/<name>
// (IdentityOf) and carries the serverAuth extended key usage, as every certificate IssueMember
// writes does and none that IssueClient writes. Any other certificate, a principal's or one that
// names a member without serverAuth, is ErrNotMemberCert (or IdentityOf's error). Only a member
// certificate speaks for a member beyond its own calls: package server believes the principal a
// connection forwards a call for only from one (and only while its member is in the cluster's
// configuration). As with IdentityOf, verifying the chain is the TLS handshake's work.
func MemberOf(cert *x509.Certificate) (string, error) {
	id, err := IdentityOf(cert)
	switch {
	case err != nil:
		return "", err
	case id.Kind != Member:
		return "", fmt.Errorf("%w: it names %s", ErrNotMemberCert, id)
	case !slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageServerAuth):
		return "", fmt.Errorf("%w: it names %s but lacks the serverAuth extended key usage that member certificates carry", ErrNotMemberCert, id)
	}
	return id.Name, nil
}
