// Package e2e holds process-level tests: they build the real binaries, start three metad processes
// on loopback ports, drive them with the Go client and metactl, and kill processes with SIGKILL.
// Every process a test starts is stopped by the test; every wait polls a condition with a deadline.
package e2e
