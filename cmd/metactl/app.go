package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"metad/client"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the operation failed (the cluster said no, or could not be reached)
	exitUsage = 2 // the command line is wrong
)

// app is used by the goroutine running the invocation; load goroutines (bench, worker pings) only
// read its fields and write to stderr. It is one metactl invocation: the global options and where
// output goes.
type app struct {
	ctx    context.Context // cancelled on SIGINT/SIGTERM
	stdout io.Writer
	stderr io.Writer

	// Global options; every verb accepts them too, before or after its own arguments.
	endpoints string
	output    string
	timeout   time.Duration
	attempt   time.Duration // --attempt-timeout: client.Config.AttemptTimeout
	noSession bool          // --no-session: client.Config.NoSession
	// Transport security (client.Security): --cacert, --cert, --key, --api-key, --certs-dir.
	sec client.Security

	// clients opened by this invocation, closed at its end.
	clients []*client.Client
}

// verb is immutable (the table is built once): one metactl command.
type verb struct {
	name    string // "put", or "tenant create" for a verb of a group
	args    string // the synopsis after the name
	summary string
	run     func(a *app, v *verb, args []string) error
}

// verbs is the command table, in the order usage lists it.
var verbs = []*verb{
	{"put", "KEY --size N [--tenant T] [--group G] [--replicas R] [--nof R] [--dfs R] [--client ID]", "place and commit an object (PutStart + PutEnd)", runPut},
	{"put-start", "KEY --size N [--tenant T] [--group G] [--replicas R] [--nof R] [--dfs R] [--client ID]", "place an object; its replicas stay PROCESSING", runPutStart},
	{"put-end", "KEY [--tenant T] [--tier MEMORY|NOF|DISK|DFS] [--client ID]", "commit a put-start", runPutEnd},
	{"put-revoke", "KEY [--tenant T] [--tier MEMORY|NOF|DISK|DFS] [--client ID]", "abandon a put-start", runPutRevoke},
	{"get", "KEY [--tenant T] [--stale]", "show where an object's replicas are", runGet},
	{"exists", "KEY... [--tenant T] [--stale]", "tell which keys have a readable replica", runExists},
	{"rm", "KEY | --regex R [--tenant T] [--force]", "remove an object, or every object whose key a Go regexp matches", runRm},
	{"ls", "[--tenant T] [--prefix P | --regex R] [--limit N] [--stale]", "list a tenant's keys in byte order (--regex: readable objects, leased)", runLs},
	{"watch", "[--tenant T | --all-tenants] [--prefix P] [--kinds K,...] [--from INDEX[.POS]] [--count N]", "print the changes of objects as they happen, one a line (-o json: one JSON object a line)", runWatch},
	{"replica-clear", "KEY... [--segment ID] [--tenant T] [--client ID]", "drop the keys' unleased replicas on the client's segments (an object left with none is erased)", runReplicaClear},
	{"rm-all", "[--tenant T] [--force]", "remove every removable object of a tenant", runRmAll},
	{"copy start", "KEY --source SEG [--to SEG,...] [--replicas N] [--tenant T] [--client ID]", "place new PROCESSING replicas of an object to copy a COMPLETE one into", runCopyStart},
	{"copy end", "KEY [--tenant T] [--client ID]", "make a copy's targets COMPLETE", runCopyEnd},
	{"copy revoke", "KEY [--tenant T] [--client ID]", "abandon a copy: drop its targets", runCopyRevoke},
	{"move start", "KEY --source SEG [--to SEG] [--tenant T] [--client ID]", "place a PROCESSING replica to move a COMPLETE one into", runMoveStart},
	{"move end", "KEY [--tenant T] [--client ID]", "make a move's target COMPLETE and free its source", runMoveEnd},
	{"move revoke", "KEY [--tenant T] [--client ID]", "abandon a move: drop its target", runMoveRevoke},
	{"task create-copy", "KEY [--source SEG] [--to SEG,...] [--replicas N] [--tenant T]", "schedule a copy for the worker that owns the source segment", runTaskCreateCopy},
	{"task create-move", "KEY [--source SEG] [--to SEG] [--tenant T]", "schedule a move for the worker that owns the source segment", runTaskCreateMove},
	{"task ls", "[--tenant T] [--state S] [--after ID] [--limit N]", "list a tenant's scheduled tasks", runTaskLs},
	{"task show", "TASK-ID [--tenant T]", "show a scheduled task", runTaskShow},
	{"drain start", "--segments ID,... [--targets ID,...] [--max-concurrency N] [--wait]", "move every object off segments, which take no new allocation from now", runDrainStart},
	{"drain status", "[JOB] [--wait]", "show drain jobs and their progress (--wait: until JOB ends)", runDrainStatus},
	{"drain cancel", "JOB", "cancel a running drain: its segments take allocations again", runDrainCancel},
	{"group ls", "GROUP [--tenant T] [--stale]", "list the member keys of a group", runGroupLs},
	{"group rm", "GROUP [--tenant T] [--force]", "remove a group and all its members", runGroupRm},
	{"tenant create", "NAME [--quota BYTES]", "register a tenant", runTenantCreate},
	{"tenant rm", "NAME [--force]", "unregister a tenant (--force erases its objects)", runTenantRm},
	{"tenant ls", "[--stale]", "list tenants with quota and usage", runTenantLs},
	{"tenant quota", "NAME [BYTES]", "show, or set, a tenant's quota (0 = unlimited)", runTenantQuota},
	{"segment mount", "--size S [--tier MEMORY|NOF|DISK|DFS] [--client ID] [--id UUID] [--name N] [--base B] [--endpoint E]", "mount a segment for a client", runSegmentMount},
	{"segment unmount", "ID [--client ID] [--grace 30s]", "unmount a segment (its owner is looked up unless given); with --grace, stop its allocations now and unmount it when the grace ends or it empties", runSegmentUnmount},
	{"segment ls", "[--tier MEMORY|NOF|LOCAL_DISK|DISK|DFS] [--client ID] [--stale]", "list mounted segments with usage", runSegmentLs},
	{"disk mount", "--capacity S [--endpoint E] [--offload] [--client ID]", "register a client's local SSD (its LOCAL_DISK segment)", runDiskMount},
	{"disk unmount", "[--client ID]", "drop a client's SSD registration and its LOCAL_DISK replicas", runDiskUnmount},
	{"disk offload", "KEY... [--failed] [--tenant T] [--client ID]", "report the keys offloaded to the client's SSD (LOCAL_DISK replicas of their size)", runDiskOffload},
	{"disk evict", "KEY... [--tenant T] [--client ID]", "report the keys' SSD files removed (their LOCAL_DISK replicas go)", runDiskEvict},
	{"member ls", "", "list the Raft members", runMemberLs},
	{"member add", "[--learner] NAME PEERADDR", "add a voter, or a learner (catches up without voting)", runMemberAdd},
	{"member promote", "[--max-lag N] NAME", "make a caught-up learner a voter", runMemberPromote},
	{"member rm", "NAME", "remove a member", runMemberRm},
	{"leader transfer", "[--to NAME]", "hand leadership to another member", runLeaderTransfer},
	{"status", "", "show every endpoint's node status", runStatus},
	{"snapshot save", "FILE [--allow-stale]", "stream a fresh snapshot of the cluster into FILE, verified (no --timeout)", runSnapshotSave},
	{"snapshot inspect", "FILE", "verify a snapshot file and summarize it (no cluster needed)", runSnapshotInspect},
	{"snapshot restore", "FILE", "replace the cluster's state with a snapshot file, verified first (no --timeout)", runSnapshotRestore},
	{"cert create-ca", "[--certs-dir D] [--validity V]", "create a cluster CA (ca.crt, ca.key) in the certificates directory", runCertCreateCA},
	{"cert create-member", "--name N --hosts H1,H2 [--certs-dir D] [--validity V]", "issue a node certificate for member N, valid for hosts H", runCertCreateMember},
	{"cert create-client", "--name P [--certs-dir D] [--validity V]", "issue a client certificate for principal P", runCertCreateClient},
	{"cert ls", "[--certs-dir D]", "list the certificates of the directory: identity, expiry", runCertLs},
	{"key create", "--principal P [--ttl 720h]", "create an API key and print its token, once (--ttl 0 = never expires)", runKeyCreate},
	{"key ls", "[--stale]", "list API keys (never their secrets)", runKeyLs},
	{"key revoke", "ID", "revoke an API key", runKeyRevoke},
	{"role grant", "PRINCIPAL ROLE", "bind a role (admin, reader, worker:<client-id>, tenant:<tenant>) to a principal", runRoleGrant},
	{"role revoke", "PRINCIPAL ROLE", "remove a principal's role binding", runRoleRevoke},
	{"role ls", "[--stale]", "list role bindings by principal", runRoleLs},
	{"limit set", "--principal P | --role R [--calls-per-sec N] [--keys-per-sec N] [--streams N]", "set the rate limits of a principal, a role, or every principal (--role '*')", runLimitSet},
	{"limit rm", "--principal P | --role R", "remove the rate limits of a principal or a role", runLimitRm},
	{"limit ls", "[--principal P] [--stale]", "list the rate limits, and those that apply to a principal", runLimitLs},
	{"worker", "--segments N --segment-size S [--client ID] [--tier MEMORY|NOF] [--duration D] [--local-disk DIR [--offload] [--promote]]", "simulate a cache worker: mount segments (and a local SSD), ping until stopped", runWorker},
	{"bench", "--clients N --duration D --op put|get|mixed [--batch K] [--size S] [--keys K] [--tenant T] [--rate R] [--watchers W]", "run a load and print ops/s and latency percentiles", runBench},
}

// groups are the verbs that take a sub-verb.
var groups = map[string]bool{"group": true, "tenant": true, "segment": true, "member": true, "leader": true, "snapshot": true,
	"cert": true, "key": true, "role": true, "limit": true, "copy": true, "move": true, "task": true, "drain": true, "disk": true}

// usageError is a command-line mistake: exit 2 with the message and the verb's synopsis.
type usageError struct {
	verb *verb // nil for a global mistake
	msg  string
}

func (e *usageError) Error() string { return e.msg }

// errUsageShown is a usage error that the flag package has already reported.
var errUsageShown = errors.New("usage error already reported")

// errHelp asks for exit 0 after printing help.
var errHelp = errors.New("help")

func usagef(v *verb, format string, args ...any) error {
	return &usageError{verb: v, msg: fmt.Sprintf(format, args...)}
}

// globalFlags registers the global options on fs; their defaults are the current values, so a
// verb's flag set leaves what the global parse set.
func (a *app) globalFlags(fs *flag.FlagSet) {
	fs.StringVar(&a.endpoints, "endpoints", a.endpoints, "comma-separated client addresses of the cluster (env "+client.EnvEndpoints+")")
	fs.StringVar(&a.output, "o", a.output, "output format: table or json")
	fs.DurationVar(&a.timeout, "timeout", a.timeout, "deadline of each call to the cluster, retries included")
	fs.BoolVar(&a.noSession, "no-session", a.noSession, "write without a client session (each write at most once, its outcome unknown when its answer is lost)")
	fs.StringVar(&a.sec.CACert, "cacert", a.sec.CACert, "PEM file of the CA certificates that verify the nodes; turns TLS on (env "+client.EnvCACert+")")
	fs.StringVar(&a.sec.Cert, "cert", a.sec.Cert, "PEM client certificate to authenticate with (env "+client.EnvCert+")")
	fs.StringVar(&a.sec.Key, "key", a.sec.Key, "PEM key of --cert (env "+client.EnvKey+")")
	fs.StringVar(&a.sec.APIKey, "api-key", a.sec.APIKey, "API key to authenticate with; needs TLS (env "+client.EnvAPIKey+")")
	fs.StringVar(&a.sec.CertsDir, "certs-dir", a.sec.CertsDir, "certificates directory: without --cacert, its ca.crt turns TLS on and, without --cert and --api-key, its client.root.crt is presented (env "+client.EnvCertsDir+"); the directory of the cert verbs")
	fs.DurationVar(&a.attempt, "attempt-timeout", a.attempt, "how long a node may show no sign of life (no answer to a call or a health probe) before the call moves to the next; busy nodes and long calls get longer (negative: wait for --timeout)")
}

func (a *app) dispatch(args []string) error {
	a.endpoints = strings.Join(client.DefaultEndpoints(), ",")
	a.output = "table"
	a.timeout = 10 * time.Second
	a.attempt = client.DefaultAttemptTimeout
	a.sec = client.SecurityFromEnv()
	if a.sec.CertsDir == "" {
		a.sec.CertsDir = defaultCertsDir
	}
	fs := flag.NewFlagSet("metactl", flag.ContinueOnError)
	fs.SetOutput(a.stderr)
	a.globalFlags(fs)
	fs.Usage = func() { a.usage(a.stderr) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return errUsageShown
	}
	rest := fs.Args()
	if len(rest) == 0 {
		a.usage(a.stderr)
		return errUsageShown
	}
	name := rest[0]
	if name == "help" {
		if len(rest) > 1 {
			if v := findVerb(rest[1:]); v != nil {
				a.verbUsage(v, nil)
				return errHelp
			}
		}
		a.usage(a.stdout)
		return errHelp
	}
	sub := rest[1:]
	if groups[name] {
		if len(sub) == 0 || strings.HasPrefix(sub[0], "-") {
			return usagef(nil, "%q needs a sub-verb: %s", name, strings.Join(subVerbs(name), ", "))
		}
		name += " " + sub[0]
		sub = sub[1:]
	}
	v := findVerb(strings.Fields(name))
	if v == nil {
		return usagef(nil, "unknown verb %q", name)
	}
	return v.run(a, v, sub)
}

// findVerb looks up a verb by its words (["tenant", "ls"] or ["put"]).
func findVerb(words []string) *verb {
	name := words[0]
	if groups[name] && len(words) > 1 {
		name += " " + words[1]
	}
	for _, v := range verbs {
		if v.name == name {
			return v
		}
	}
	return nil
}

func subVerbs(group string) []string {
	var out []string
	for _, v := range verbs {
		if g, s, ok := strings.Cut(v.name, " "); ok && g == group {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

func (a *app) usage(w io.Writer) {
	fmt.Fprintf(w, "metactl: the client and operator tool of metad\n\n")
	fmt.Fprintf(w, "usage: metactl [--endpoints A,B,C] [-o table|json] [--timeout D] [--attempt-timeout D]\n               [--cacert F] [--cert F --key F] [--api-key K] [--certs-dir D] VERB [ARGS] [FLAGS]\n\nverbs:\n")
	for _, v := range verbs {
		fmt.Fprintf(w, "  %-16s %s\n", v.name, v.summary)
	}
	fmt.Fprintf(w, "\nRun 'metactl help VERB' or 'metactl VERB -h' for a verb's flags. Global flags may also follow the verb.\n")
	fmt.Fprintf(w, "Endpoints default to $%s or 127.0.0.1:6001,127.0.0.1:6002,127.0.0.1:6003.\n", client.EnvEndpoints)
	fmt.Fprintf(w, "TLS is on with --cacert, or when <certs-dir>/ca.crt exists (--certs-dir, default %s): then the root\n", defaultCertsDir)
	fmt.Fprintf(w, "client certificate there is presented unless --cert or --api-key is given. Otherwise plaintext.\n")
	fmt.Fprintf(w, "Sizes take units: 4096, 4KiB (= 4K), 1GiB, 1GB (= 10^9).\n")
}

// verbUsage prints v's synopsis and, given its flag set, its flags.
func (a *app) verbUsage(v *verb, fs *flag.FlagSet) {
	w := a.stdout
	fmt.Fprintf(w, "usage: metactl %s %s\n\n%s\n", v.name, v.args, v.summary)
	if fs != nil {
		fmt.Fprintln(w, "\nflags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(a.stderr)
	}
}

// flags returns a flag set for v with the global options registered.
func (a *app) flags(v *verb) *flag.FlagSet {
	fs := flag.NewFlagSet("metactl "+v.name, flag.ContinueOnError)
	fs.SetOutput(a.stderr)
	a.globalFlags(fs)
	fs.Usage = func() {}
	return fs
}

// parse parses a verb's arguments (flags anywhere), checks the global options, and checks the
// number of positional arguments is within [minPos, maxPos] (maxPos < 0: no upper bound).
func (a *app) parse(v *verb, fs *flag.FlagSet, args []string, minPos, maxPos int) ([]string, error) {
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			a.verbUsage(v, fs)
			return nil, errHelp
		}
		return nil, &usageError{verb: v, msg: err.Error()}
	}
	if a.output != "table" && a.output != "json" {
		return nil, usagef(v, "-o %q: want table or json", a.output)
	}
	if a.timeout <= 0 {
		return nil, usagef(v, "--timeout must be positive")
	}
	if len(client.SplitEndpoints(a.endpoints)) == 0 {
		return nil, usagef(v, "--endpoints is empty")
	}
	switch {
	case len(pos) < minPos:
		return nil, usagef(v, "missing arguments")
	case maxPos >= 0 && len(pos) > maxPos:
		return nil, usagef(v, "unexpected arguments: %s", strings.Join(pos[maxPos:], " "))
	}
	return pos, nil
}

// printer returns the printer for the chosen output format.
func (a *app) printer() *printer { return &printer{w: a.stdout, json: a.output == "json"} }

// defaultCertsDir is where `make run` writes the certificates of its cluster.
const defaultCertsDir = "data/certs"

// client opens a client of the cluster acting as id, over TLS and with the credentials the
// security options name (client.Security.Apply); it is closed when the invocation ends.
func (a *app) client(id client.UUID) (*client.Client, error) {
	return a.clientAt(client.SplitEndpoints(a.endpoints), id)
}

// clientAt is client with other endpoints, in the order the client tries them.
func (a *app) clientAt(endpoints []string, id client.UUID) (*client.Client, error) {
	cfg := client.Config{Endpoints: endpoints, ClientID: id, AttemptTimeout: a.attempt, NoSession: a.noSession}
	if err := a.sec.Apply(&cfg); err != nil {
		return nil, err
	}
	c, err := client.New(cfg)
	if err != nil {
		return nil, &usageError{msg: err.Error()}
	}
	a.clients = append(a.clients, c)
	return c, nil
}

func (a *app) closeClients() {
	for _, c := range a.clients {
		c.Close()
	}
}

// callCtx is the context of one call to the cluster: the invocation's, bounded by --timeout.
func (a *app) callCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(a.ctx, a.timeout)
}
