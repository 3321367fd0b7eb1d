package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// golden is a checked-in version-1 snapshot (89 objects, 3 tenants, 4 segments).
const golden = "../../fsm/testdata/golden-v1.snap"

const initial = "n1=127.0.0.1:7101,n2=127.0.0.1:7102,n3=127.0.0.1:7103"

func noEnv(string) string { return "" }

// runCmd runs one subcommand line and returns its exit code, stdout and stderr.
func runCmd(t *testing.T, getenv func(string) string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	var code int
	switch args[0] {
	case "restore":
		code = runRestore(args[1:], getenv, &out, &errb)
	case "recover":
		code = runRecover(args[1:], getenv, &out, &errb)
	default:
		t.Fatalf("unknown subcommand %s", args[0])
	}
	return code, out.String(), errb.String()
}

func TestRestoreCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "n2")
	code, out, errs := runCmd(t, noEnv, "restore", "--snapshot", golden, "--data-dir", dir, "--name", "n2",
		"--initial-cluster", initial, "--log-level", "warn")
	if code != 0 || !strings.Contains(out, "snapshot at index 300, term 1: 89 objects, 3 tenants, 4 segments") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "wal", "wal-meta.db")); err != nil { // a new data dir: raft-wal
		t.Fatal(err)
	}
	// A data dir that holds anything is refused.
	code, _, errs = runCmd(t, noEnv, "restore", "--snapshot", golden, "--data-dir", dir, "--name", "n2", "--initial-cluster", initial)
	if code != 1 || !strings.Contains(errs, "data dir is not empty") {
		t.Fatalf("restore into a used data dir: exit %d: %s", code, errs)
	}
}

func TestRestoreCommandRefusesBadFiles(t *testing.T) {
	good, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	future := bytes.Clone(good)
	future[11] = 9
	corrupt := bytes.Clone(good)
	corrupt[len(corrupt)/2] ^= 0x5a
	files := map[string]struct {
		data []byte
		want string
	}{
		"truncated": {good[:len(good)-100], "snapshot is truncated"},
		"foreign":   {[]byte("#!/bin/sh\necho this is not a snapshot\n"), "not a metad snapshot (bad magic)"},
		"future":    {future, "newer than this binary reads"},
		"corrupt":   {corrupt, "snapshot checksum mismatch"},
	}
	for name, f := range files {
		path := filepath.Join(t.TempDir(), name+".snap")
		if err := os.WriteFile(path, f.data, 0o600); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "n1")
		code, _, errs := runCmd(t, noEnv, "restore", "--snapshot", path, "--data-dir", dir, "--name", "n1", "--initial-cluster", initial, "--log-level", "error")
		if code != 1 || !strings.Contains(errs, f.want) || !strings.Contains(errs, "nothing was written") {
			t.Errorf("%s: exit %d: %s", name, code, errs)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s: the refused restore created %s", name, dir)
		}
	}
}

func TestRestoreCommandUsage(t *testing.T) {
	cases := map[string][]string{
		"snapshot: must be set":                 {"--data-dir", "d", "--name", "n1", "--initial-cluster", initial},
		"data-dir: must be set":                 {"--snapshot", golden, "--name", "n1", "--initial-cluster", initial},
		"initial-cluster: must be set":          {"--snapshot", golden, "--data-dir", "d", "--name", "n1"},
		`does not include this member "n9"`:     {"--snapshot", golden, "--data-dir", "d", "--name", "n9", "--initial-cluster", initial},
		`log-level "loud"`:                      {"--snapshot", golden, "--data-dir", "d", "--name", "n1", "--initial-cluster", initial, "--log-level", "loud"},
		"unexpected arguments":                  {"--snapshot", golden, "extra"},
		"flag provided but not defined: -peers": {"--peers", "x"},
	}
	for want, args := range cases {
		code, _, errs := runCmd(t, noEnv, append([]string{"restore"}, args...)...)
		if code != 2 || !strings.Contains(errs, want) {
			t.Errorf("%v: exit %d, want 2 and %q: %s", args, code, want, errs)
		}
	}
}

func TestRestoreCommandReadsDaemonSettings(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "n3")
	// The daemon's own YAML file: the settings restore does not use are ignored.
	file := filepath.Join(t.TempDir(), "metad.yaml")
	yaml := "name: n3\nlisten-client: 127.0.0.1:7003\nlisten-peer: 127.0.0.1:7103\ninitial-cluster: " + initial + "\nlog-level: warn\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"METAD_DATA_DIR": dir}
	code, out, errs := runCmd(t, func(k string) string { return env[k] }, "restore", "--config", file, "--snapshot", golden)
	if code != 0 || !strings.Contains(out, "member n3") {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	if err := os.WriteFile(file, []byte("name: n3\nsnapshott: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs = runCmd(t, noEnv, "restore", "--config", file)
	if code != 2 || !strings.Contains(errs, `unknown setting "snapshott"`) {
		t.Fatalf("unknown YAML key: exit %d: %s", code, errs)
	}
}

func TestRecoverCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "n1")
	if code, out, errs := runCmd(t, noEnv, "restore", "--snapshot", golden, "--data-dir", dir, "--name", "n1", "--initial-cluster", initial, "--log-level", "warn"); code != 0 {
		t.Fatalf("restore: %d %s %s", code, out, errs)
	}
	peers := filepath.Join(t.TempDir(), "peers.json")
	if err := os.WriteFile(peers, []byte(`[{"id": "n1", "address": "127.0.0.1:7101"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCmd(t, noEnv, "recover", "--data-dir", dir, "--peers", peers, "--name", "n1", "--log-level", "warn")
	if code != 0 || !strings.Contains(out, "the cluster is now n1=127.0.0.1:7101") || !strings.Contains(out, "89 objects, 3 tenants") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	code, _, errs = runCmd(t, noEnv, "recover", "--data-dir", t.TempDir(), "--peers", peers, "--log-level", "warn")
	if code != 1 || !strings.Contains(errs, "no Raft state") {
		t.Fatalf("recover an empty dir: exit %d: %s", code, errs)
	}
	code, _, errs = runCmd(t, noEnv, "recover", "--data-dir", dir, "--peers", peers, "--name", "n2")
	if code != 2 || !strings.Contains(errs, `does not list this node "n2"`) {
		t.Fatalf("recover with a name not in the peers: exit %d: %s", code, errs)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`[{"id": "n1", "addr": "127.0.0.1:7101"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs = runCmd(t, noEnv, "recover", "--data-dir", dir, "--peers", bad)
	if code != 2 || !strings.Contains(errs, "bad peer list") {
		t.Fatalf("recover with a bad peers file: exit %d: %s", code, errs)
	}
	code, _, errs = runCmd(t, noEnv, "recover", "--data-dir", dir)
	if code != 2 || !strings.Contains(errs, "peers: must be set") {
		t.Fatalf("recover without peers: exit %d: %s", code, errs)
	}
}
