package main

import (
	"flag"

	"github.com/prometheus/client_golang/prometheus"

	"metad/audit"
)

// auditFlags are the audit log's flags (package audit; server/audit.go says which calls get a line).
func (c *Config) auditFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.AuditLog, "audit-log", c.AuditLog, "write a JSON line for every call that may change the state and every call refused for who made it to this file (empty: off); its directory must exist")
	fs.Int64Var(&c.AuditLogMaxBytes, "audit-log-max-bytes", c.AuditLogMaxBytes, "rotate the audit log when it would pass this many bytes (FILE becomes FILE.1)")
	fs.IntVar(&c.AuditLogMaxFiles, "audit-log-max-files", c.AuditLogMaxFiles, "rotated audit log files to keep (FILE.1 is the newest); older ones are deleted")
}

func (c *Config) auditConfig() audit.Config {
	return audit.Config{Path: c.AuditLog, MaxBytes: c.AuditLogMaxBytes, MaxFiles: c.AuditLogMaxFiles, Member: c.Name}
}

// validateAudit checks the audit log's flags when it is on.
func (c *Config) validateAudit() []error {
	if c.AuditLog == "" {
		return nil
	}
	if err := c.auditConfig().Validate(); err != nil {
		return []error{err}
	}
	return nil
}

// openAudit opens the audit log when --audit-log is set (nil when it is off), its metrics on reg.
func openAudit(cfg Config, reg prometheus.Registerer) (*audit.Log, error) {
	if cfg.AuditLog == "" {
		return nil, nil
	}
	return audit.Open(cfg.auditConfig(), reg)
}
