package main

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"metad/client"
	"metad/tlsconf"
)

// The cert verbs make and list a cluster's certificates with Go's crypto (package tlsconf); they
// need no cluster. They work in --certs-dir and never overwrite a file.

// validityFlag is a flag.Value holding a validity: a Go duration, or a whole number of days
// ("365d"). 0 means tlsconf's default.
type validityFlag struct{ d time.Duration }

func (f *validityFlag) String() string {
	if f.d == 0 {
		return "default"
	}
	return f.d.String()
}

func (f *validityFlag) Set(s string) error {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days <= 0 {
			return fmt.Errorf("want a positive number of days (365d) or a duration (8760h)")
		}
		f.d = time.Duration(days) * 24 * time.Hour
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return fmt.Errorf("want a positive number of days (365d) or a duration (8760h)")
	}
	f.d = d
	return nil
}

// certCreated is what the create verbs print.
type certCreated struct {
	Identity string   `json:"identity"`
	Files    []string `json:"files"`
	NotAfter string   `json:"not_after"`
}

func (a *app) emitCreated(v certCreated) error {
	return a.printer().emit(v, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "created %s, valid until %s:\n", v.Identity, v.NotAfter)
		for _, f := range v.Files {
			fmt.Fprintf(tw, "  %s\n", f)
		}
	})
}

// certError explains a refusal to overwrite.
func certError(err error) error {
	if errors.Is(err, tlsconf.ErrExists) {
		return fmt.Errorf("%w (nothing was written; remove it or choose another --certs-dir or --name)", err)
	}
	return err
}

func runCertCreateCA(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	var validity validityFlag
	fs.Var(&validity, "validity", "how long the CA is valid: days (3650d) or a duration (default 10 years)")
	if _, err := a.parse(v, fs, args, 0, 0); err != nil {
		return err
	}
	ca, err := tlsconf.CreateCA(a.sec.CertsDir, tlsconf.Options{Validity: validity.d})
	if err != nil {
		return certError(err)
	}
	return a.emitCreated(certCreated{Identity: "cluster CA",
		Files:    []string{filepath.Join(a.sec.CertsDir, tlsconf.CACertFile), filepath.Join(a.sec.CertsDir, tlsconf.CAKeyFile)},
		NotAfter: ca.Cert.NotAfter.UTC().Format(time.RFC3339)})
}

func runCertCreateMember(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	name := fs.String("name", "", "member name (as metad's --name)")
	hosts := fs.String("hosts", "", "comma-separated IP addresses and DNS names that clients and peers dial")
	var validity validityFlag
	fs.Var(&validity, "validity", "how long the certificate is valid: days (365d) or a duration (default 1 year, at most the CA's)")
	if _, err := a.parse(v, fs, args, 0, 0); err != nil {
		return err
	}
	hs := client.SplitEndpoints(*hosts)
	switch {
	case *name == "":
		return usagef(v, "--name is required")
	case len(hs) == 0:
		return usagef(v, "--hosts is required")
	}
	return a.issue(tlsconf.Identity{Kind: tlsconf.Member, Name: *name}, func(ca *tlsconf.CA) (string, string, error) {
		return ca.IssueMember(a.sec.CertsDir, *name, hs, tlsconf.Options{Validity: validity.d})
	})
}

func runCertCreateClient(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	name := fs.String("name", "", "principal name (root is the bootstrap admin)")
	var validity validityFlag
	fs.Var(&validity, "validity", "how long the certificate is valid: days (365d) or a duration (default 1 year, at most the CA's)")
	if _, err := a.parse(v, fs, args, 0, 0); err != nil {
		return err
	}
	if *name == "" {
		return usagef(v, "--name is required")
	}
	return a.issue(tlsconf.Identity{Kind: tlsconf.Principal, Name: *name}, func(ca *tlsconf.CA) (string, string, error) {
		return ca.IssueClient(a.sec.CertsDir, *name, tlsconf.Options{Validity: validity.d})
	})
}

// issue loads the CA of --certs-dir and issues a certificate with it.
func (a *app) issue(id tlsconf.Identity, issue func(*tlsconf.CA) (string, string, error)) error {
	ca, err := tlsconf.LoadCA(a.sec.CertsDir)
	if err != nil {
		return fmt.Errorf("the CA of --certs-dir %s (create it with `metactl cert create-ca`): %w", a.sec.CertsDir, err)
	}
	certPath, keyPath, err := issue(ca)
	if err != nil {
		return certError(err)
	}
	certs, err := readCerts(certPath)
	if err != nil {
		return err
	}
	return a.emitCreated(certCreated{Identity: id.String(), Files: []string{certPath, keyPath},
		NotAfter: certs[0].NotAfter.UTC().Format(time.RFC3339)})
}

// certView is one certificate as `cert ls` shows it.
type certView struct {
	File     string `json:"file"`
	Identity string `json:"identity"`
	NotAfter string `json:"not_after"`
	Expired  bool   `json:"expired"`
	Status   string `json:"status"` // "expired" or "expires in <d>"
}

func runCertLs(a *app, v *verb, args []string) error {
	fs := a.flags(v)
	if _, err := a.parse(v, fs, args, 0, 0); err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(a.sec.CertsDir, "*.crt"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no certificates (*.crt) in --certs-dir %s", a.sec.CertsDir)
	}
	sort.Strings(files)
	now := time.Now()
	views := []certView{}
	for _, f := range files {
		certs, err := readCerts(f)
		if err != nil {
			return err
		}
		for _, c := range certs {
			views = append(views, certView{File: filepath.Base(f), Identity: identityName(c), NotAfter: c.NotAfter.UTC().Format(time.RFC3339),
				Expired: !now.Before(c.NotAfter), Status: expiry(c.NotAfter, now)})
		}
	}
	return a.printer().emit(views, func(tw *tabwriter.Writer) {
		row(tw, "FILE", "IDENTITY", "NOT AFTER", "STATUS")
		for _, c := range views {
			row(tw, c.File, c.Identity, c.NotAfter, c.Status)
		}
	})
}

// identityName is what a certificate is: "ca" for a CA, its metad identity, or "-" with none.
func identityName(c *x509.Certificate) string {
	if c.IsCA {
		return "ca"
	}
	id, err := tlsconf.IdentityOf(c)
	if err != nil {
		return "-"
	}
	return id.String()
}

// expiry says "expired", or "expires in" a whole number of days (hours, minutes under a day).
func expiry(notAfter, now time.Time) string {
	left := notAfter.Sub(now)
	switch {
	case left <= 0:
		return "expired"
	case left >= 48*time.Hour:
		return fmt.Sprintf("expires in %dd", int(left/(24*time.Hour)))
	case left >= 2*time.Hour:
		return fmt.Sprintf("expires in %dh", int(left/time.Hour))
	}
	return fmt.Sprintf("expires in %dm", int(left/time.Minute))
}

// readCerts parses every PEM certificate in path (a CA bundle may hold several).
func readCerts(path string) ([]*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no PEM certificate", path)
	}
	return out, nil
}
