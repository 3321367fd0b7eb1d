package ha

import (
	"errors"
	"fmt"

	metadv1 "metad/proto/metadv1"
)

// Raft-level failures: the command may or may not have been applied (ErrUnknown) or was certainly
// not (ErrNotLeader, ErrShutdown, ErrTimeout: Raft did not take the entry within the apply timeout).
// A command's deterministic rejection is never an error here: it comes back as an fsm.Result value.
var (
	ErrNotLeader = errors.New("not the leader")
	ErrShutdown  = errors.New("node is shutting down")
	ErrTimeout   = errors.New("timed out waiting for the cluster (no quorum?)")
	ErrUnknown   = errors.New("outcome unknown: leadership was lost after the command was sent")
)

// Peer transport failures under PeerTLS.
var (
	// ErrPeerRefused: the transport closed an accepted peer connection: its TLS handshake failed,
	// its certificate names no member, or an RPC on it names another sender than that member.
	ErrPeerRefused = errors.New("ha: peer connection refused")
	// ErrPeerNotMember: a dialed peer's certificate names no cluster member.
	ErrPeerNotMember = errors.New("ha: peer certificate names no member")
)

// NotLeaderError is ErrNotLeader with the leader this node knows of (empty when none is known).
type NotLeaderError struct {
	LeaderName string // Raft server name
	LeaderAddr string // client (gRPC) address
}

func (e *NotLeaderError) Error() string {
	if e.LeaderName == "" {
		return "not the leader; no leader is known"
	}
	return fmt.Sprintf("not the leader; the leader is %s at %s", e.LeaderName, e.LeaderAddr)
}

// Is makes errors.Is(err, ErrNotLeader) true.
func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader }

// Membership requests refused before Raft sees them (nothing is appended to the log for them). Their
// texts start with the reason a client is given for them, MEMBER_NOT_FOUND or INVALID_PARAMS, as
// every deterministic rejection's does.
var (
	// ErrMemberNotFound matches (errors.Is) every *MemberNotFoundError.
	ErrMemberNotFound = errors.New("member not found")
	// ErrInvalidMember matches (errors.Is) every *InvalidMemberError.
	ErrInvalidMember = errors.New("invalid member")
)

// MemberNotFoundError is a membership request naming a member that is not a server of Raft's
// configuration.
type MemberNotFoundError struct {
	Name string
}

func (e *MemberNotFoundError) Error() string {
	return fmt.Sprintf("MEMBER_NOT_FOUND: member %.80q is not in the cluster's configuration", e.Name)
}

// Is makes errors.Is(err, ErrMemberNotFound) true.
func (e *MemberNotFoundError) Is(target error) bool { return target == ErrMemberNotFound }

// InvalidMemberError is a membership request whose member name or address breaks the member rules
// (fsm.ValidateMemberName, fsm.ValidateMemberAddress).
type InvalidMemberError struct {
	Msg string // what is wrong, as the rule says it
}

func (e *InvalidMemberError) Error() string { return "INVALID_PARAMS: " + e.Msg }

// Is makes errors.Is(err, ErrInvalidMember) true.
func (e *InvalidMemberError) Is(target error) bool { return target == ErrInvalidMember }

// invalidMember is nil when err is, and err as an *InvalidMemberError otherwise.
func invalidMember(err error) error {
	if err == nil {
		return nil
	}
	return &InvalidMemberError{Msg: err.Error()}
}

// ErrFeatureLevel: a command needs a feature level that some member of the configuration does
// not record yet (a member of an older binary, or one not recorded yet); nothing was proposed.
var ErrFeatureLevel = errors.New("ha: the cluster's feature level is below the command's")

// FeatureLevelError is ErrFeatureLevel for one command: it needs level Need, and Member records
// Have.
type FeatureLevelError struct {
	Command    *metadv1.Command
	Need, Have uint32
	Member     string
}

func (e *FeatureLevelError) Error() string {
	op := "command"
	if fd := e.Command.ProtoReflect().WhichOneof(e.Command.ProtoReflect().Descriptor().Oneofs().ByName("op")); fd != nil {
		op = string(fd.Name())
	}
	return fmt.Sprintf("%s needs every member at feature level %d; member %s is at level %d (upgrade it first)", op, e.Need, e.Member, e.Have)
}

func (e *FeatureLevelError) Unwrap() error { return ErrFeatureLevel }
