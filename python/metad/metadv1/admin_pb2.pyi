from metad.metadv1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
NODE_ROLE_CANDIDATE: NodeRole
NODE_ROLE_FOLLOWER: NodeRole
NODE_ROLE_LEADER: NodeRole
NODE_ROLE_SHUTDOWN: NodeRole
NODE_ROLE_UNSPECIFIED: NodeRole

class AddMemberRequest(_message.Message):
    __slots__ = ["learner", "name", "peer_address"]
    LEARNER_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PEER_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    learner: bool
    name: str
    peer_address: str
    def __init__(self, name: _Optional[str] = ..., peer_address: _Optional[str] = ..., learner: bool = ...) -> None: ...

class AddMemberResponse(_message.Message):
    __slots__ = ["index"]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    index: int
    def __init__(self, index: _Optional[int] = ...) -> None: ...

class CancelDrainRequest(_message.Message):
    __slots__ = ["drain_id", "session"]
    DRAIN_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    drain_id: int
    session: _types_pb2.SessionHeader
    def __init__(self, drain_id: _Optional[int] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class CancelDrainResponse(_message.Message):
    __slots__ = ["drain"]
    DRAIN_FIELD_NUMBER: _ClassVar[int]
    drain: _types_pb2.DrainJob
    def __init__(self, drain: _Optional[_Union[_types_pb2.DrainJob, _Mapping]] = ...) -> None: ...

class CreateKeyRequest(_message.Message):
    __slots__ = ["principal", "ttl_ms"]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    principal: str
    ttl_ms: int
    def __init__(self, principal: _Optional[str] = ..., ttl_ms: _Optional[int] = ...) -> None: ...

class CreateKeyResponse(_message.Message):
    __slots__ = ["expires_ms", "key_id", "token"]
    EXPIRES_MS_FIELD_NUMBER: _ClassVar[int]
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    expires_ms: int
    key_id: str
    token: str
    def __init__(self, key_id: _Optional[str] = ..., token: _Optional[str] = ..., expires_ms: _Optional[int] = ...) -> None: ...

class DrainStatusRequest(_message.Message):
    __slots__ = ["drain_id"]
    DRAIN_ID_FIELD_NUMBER: _ClassVar[int]
    drain_id: int
    def __init__(self, drain_id: _Optional[int] = ...) -> None: ...

class DrainStatusResponse(_message.Message):
    __slots__ = ["drains"]
    DRAINS_FIELD_NUMBER: _ClassVar[int]
    drains: _containers.RepeatedCompositeFieldContainer[_types_pb2.DrainJob]
    def __init__(self, drains: _Optional[_Iterable[_Union[_types_pb2.DrainJob, _Mapping]]] = ...) -> None: ...

class GetQuotaRequest(_message.Message):
    __slots__ = ["stale", "tenant"]
    STALE_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    stale: bool
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., stale: bool = ...) -> None: ...

class GetQuotaResponse(_message.Message):
    __slots__ = ["capacity_bytes", "charged_bytes", "effective_quota_bytes", "requested_quota_bytes"]
    CAPACITY_BYTES_FIELD_NUMBER: _ClassVar[int]
    CHARGED_BYTES_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_QUOTA_BYTES_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_QUOTA_BYTES_FIELD_NUMBER: _ClassVar[int]
    capacity_bytes: int
    charged_bytes: int
    effective_quota_bytes: int
    requested_quota_bytes: int
    def __init__(self, requested_quota_bytes: _Optional[int] = ..., effective_quota_bytes: _Optional[int] = ..., charged_bytes: _Optional[int] = ..., capacity_bytes: _Optional[int] = ...) -> None: ...

class GrantRoleRequest(_message.Message):
    __slots__ = ["principal", "role"]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    principal: str
    role: str
    def __init__(self, principal: _Optional[str] = ..., role: _Optional[str] = ...) -> None: ...

class GrantRoleResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class KeyInfo(_message.Message):
    __slots__ = ["created_ms", "expires_ms", "key_id", "principal"]
    CREATED_MS_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_MS_FIELD_NUMBER: _ClassVar[int]
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    created_ms: int
    expires_ms: int
    key_id: str
    principal: str
    def __init__(self, key_id: _Optional[str] = ..., principal: _Optional[str] = ..., created_ms: _Optional[int] = ..., expires_ms: _Optional[int] = ...) -> None: ...

class Limit(_message.Message):
    __slots__ = ["calls_per_sec", "keys_per_sec", "principal", "role", "streams"]
    CALLS_PER_SEC_FIELD_NUMBER: _ClassVar[int]
    KEYS_PER_SEC_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    STREAMS_FIELD_NUMBER: _ClassVar[int]
    calls_per_sec: int
    keys_per_sec: int
    principal: str
    role: str
    streams: int
    def __init__(self, principal: _Optional[str] = ..., role: _Optional[str] = ..., calls_per_sec: _Optional[int] = ..., keys_per_sec: _Optional[int] = ..., streams: _Optional[int] = ...) -> None: ...

class ListKeysRequest(_message.Message):
    __slots__ = ["stale"]
    STALE_FIELD_NUMBER: _ClassVar[int]
    stale: bool
    def __init__(self, stale: bool = ...) -> None: ...

class ListKeysResponse(_message.Message):
    __slots__ = ["keys"]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedCompositeFieldContainer[KeyInfo]
    def __init__(self, keys: _Optional[_Iterable[_Union[KeyInfo, _Mapping]]] = ...) -> None: ...

class ListLimitsRequest(_message.Message):
    __slots__ = ["principal", "stale"]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    principal: str
    stale: bool
    def __init__(self, stale: bool = ..., principal: _Optional[str] = ...) -> None: ...

class ListLimitsResponse(_message.Message):
    __slots__ = ["effective", "limits"]
    EFFECTIVE_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    effective: Limit
    limits: _containers.RepeatedCompositeFieldContainer[Limit]
    def __init__(self, limits: _Optional[_Iterable[_Union[Limit, _Mapping]]] = ..., effective: _Optional[_Union[Limit, _Mapping]] = ...) -> None: ...

class ListMembersRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListMembersResponse(_message.Message):
    __slots__ = ["index", "members"]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    index: int
    members: _containers.RepeatedCompositeFieldContainer[Member]
    def __init__(self, members: _Optional[_Iterable[_Union[Member, _Mapping]]] = ..., index: _Optional[int] = ...) -> None: ...

class ListRolesRequest(_message.Message):
    __slots__ = ["stale"]
    STALE_FIELD_NUMBER: _ClassVar[int]
    stale: bool
    def __init__(self, stale: bool = ...) -> None: ...

class ListRolesResponse(_message.Message):
    __slots__ = ["auth_revision", "bindings"]
    AUTH_REVISION_FIELD_NUMBER: _ClassVar[int]
    BINDINGS_FIELD_NUMBER: _ClassVar[int]
    auth_revision: int
    bindings: _containers.RepeatedCompositeFieldContainer[RoleBinding]
    def __init__(self, bindings: _Optional[_Iterable[_Union[RoleBinding, _Mapping]]] = ..., auth_revision: _Optional[int] = ...) -> None: ...

class ListSegmentsRequest(_message.Message):
    __slots__ = ["client_id", "stale", "tier"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    stale: bool
    tier: _types_pb2.Tier
    def __init__(self, stale: bool = ..., tier: _Optional[_Union[_types_pb2.Tier, str]] = ..., client_id: _Optional[bytes] = ...) -> None: ...

class ListSegmentsResponse(_message.Message):
    __slots__ = ["segments"]
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    segments: _containers.RepeatedCompositeFieldContainer[SegmentInfo]
    def __init__(self, segments: _Optional[_Iterable[_Union[SegmentInfo, _Mapping]]] = ...) -> None: ...

class ListTenantsRequest(_message.Message):
    __slots__ = ["stale"]
    STALE_FIELD_NUMBER: _ClassVar[int]
    stale: bool
    def __init__(self, stale: bool = ...) -> None: ...

class ListTenantsResponse(_message.Message):
    __slots__ = ["tenants"]
    TENANTS_FIELD_NUMBER: _ClassVar[int]
    tenants: _containers.RepeatedCompositeFieldContainer[TenantInfo]
    def __init__(self, tenants: _Optional[_Iterable[_Union[TenantInfo, _Mapping]]] = ...) -> None: ...

class Member(_message.Message):
    __slots__ = ["applied_index", "client_address", "feature_level", "lag", "leader", "name", "peer_address", "progress_known", "voter"]
    APPLIED_INDEX_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    FEATURE_LEVEL_FIELD_NUMBER: _ClassVar[int]
    LAG_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PEER_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_KNOWN_FIELD_NUMBER: _ClassVar[int]
    VOTER_FIELD_NUMBER: _ClassVar[int]
    applied_index: int
    client_address: str
    feature_level: int
    lag: int
    leader: bool
    name: str
    peer_address: str
    progress_known: bool
    voter: bool
    def __init__(self, name: _Optional[str] = ..., peer_address: _Optional[str] = ..., client_address: _Optional[str] = ..., voter: bool = ..., leader: bool = ..., feature_level: _Optional[int] = ..., applied_index: _Optional[int] = ..., lag: _Optional[int] = ..., progress_known: bool = ...) -> None: ...

class PromoteMemberRequest(_message.Message):
    __slots__ = ["max_lag", "name"]
    MAX_LAG_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    max_lag: int
    name: str
    def __init__(self, name: _Optional[str] = ..., max_lag: _Optional[int] = ...) -> None: ...

class PromoteMemberResponse(_message.Message):
    __slots__ = ["index", "lag"]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    LAG_FIELD_NUMBER: _ClassVar[int]
    index: int
    lag: int
    def __init__(self, index: _Optional[int] = ..., lag: _Optional[int] = ...) -> None: ...

class RecordMemberRequest(_message.Message):
    __slots__ = ["client_address", "feature_level", "name", "peer_address"]
    CLIENT_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    FEATURE_LEVEL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PEER_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    client_address: str
    feature_level: int
    name: str
    peer_address: str
    def __init__(self, name: _Optional[str] = ..., peer_address: _Optional[str] = ..., client_address: _Optional[str] = ..., feature_level: _Optional[int] = ...) -> None: ...

class RecordMemberResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class RegisterTenantRequest(_message.Message):
    __slots__ = ["name", "quota_bytes", "session"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    QUOTA_BYTES_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    quota_bytes: int
    session: _types_pb2.SessionHeader
    def __init__(self, name: _Optional[str] = ..., quota_bytes: _Optional[int] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class RegisterTenantResponse(_message.Message):
    __slots__ = ["instance_id"]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    instance_id: int
    def __init__(self, instance_id: _Optional[int] = ...) -> None: ...

class RemoveMemberRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class RemoveMemberResponse(_message.Message):
    __slots__ = ["index"]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    index: int
    def __init__(self, index: _Optional[int] = ...) -> None: ...

class RevokeKeyRequest(_message.Message):
    __slots__ = ["key_id"]
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    key_id: str
    def __init__(self, key_id: _Optional[str] = ...) -> None: ...

class RevokeKeyResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class RevokeRoleRequest(_message.Message):
    __slots__ = ["principal", "role"]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    principal: str
    role: str
    def __init__(self, principal: _Optional[str] = ..., role: _Optional[str] = ...) -> None: ...

class RevokeRoleResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class RoleBinding(_message.Message):
    __slots__ = ["principal", "roles"]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    principal: str
    roles: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, principal: _Optional[str] = ..., roles: _Optional[_Iterable[str]] = ...) -> None: ...

class SegmentInfo(_message.Message):
    __slots__ = ["arena_free_bytes", "closing", "replicas", "segment", "unmount_at_unix_nano", "used_bytes"]
    ARENA_FREE_BYTES_FIELD_NUMBER: _ClassVar[int]
    CLOSING_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_FIELD_NUMBER: _ClassVar[int]
    UNMOUNT_AT_UNIX_NANO_FIELD_NUMBER: _ClassVar[int]
    USED_BYTES_FIELD_NUMBER: _ClassVar[int]
    arena_free_bytes: int
    closing: bool
    replicas: int
    segment: _types_pb2.SegmentDesc
    unmount_at_unix_nano: int
    used_bytes: int
    def __init__(self, segment: _Optional[_Union[_types_pb2.SegmentDesc, _Mapping]] = ..., used_bytes: _Optional[int] = ..., replicas: _Optional[int] = ..., closing: bool = ..., unmount_at_unix_nano: _Optional[int] = ..., arena_free_bytes: _Optional[int] = ...) -> None: ...

class SetLimitRequest(_message.Message):
    __slots__ = ["limit"]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: Limit
    def __init__(self, limit: _Optional[_Union[Limit, _Mapping]] = ...) -> None: ...

class SetLimitResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class SetQuotaRequest(_message.Message):
    __slots__ = ["quota_bytes", "session", "tenant"]
    QUOTA_BYTES_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    quota_bytes: int
    session: _types_pb2.SessionHeader
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., quota_bytes: _Optional[int] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class SetQuotaResponse(_message.Message):
    __slots__ = ["effective_quota_bytes", "requested_quota_bytes"]
    EFFECTIVE_QUOTA_BYTES_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_QUOTA_BYTES_FIELD_NUMBER: _ClassVar[int]
    effective_quota_bytes: int
    requested_quota_bytes: int
    def __init__(self, requested_quota_bytes: _Optional[int] = ..., effective_quota_bytes: _Optional[int] = ...) -> None: ...

class SnapshotChunk(_message.Message):
    __slots__ = ["data", "offset", "total_bytes"]
    DATA_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    offset: int
    total_bytes: int
    def __init__(self, data: _Optional[bytes] = ..., offset: _Optional[int] = ..., total_bytes: _Optional[int] = ...) -> None: ...

class SnapshotRestoreResponse(_message.Message):
    __slots__ = ["groups", "index", "objects", "segments", "tenants", "term"]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    TENANTS_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    groups: int
    index: int
    objects: int
    segments: int
    tenants: int
    term: int
    def __init__(self, index: _Optional[int] = ..., term: _Optional[int] = ..., tenants: _Optional[int] = ..., segments: _Optional[int] = ..., objects: _Optional[int] = ..., groups: _Optional[int] = ...) -> None: ...

class SnapshotSaveRequest(_message.Message):
    __slots__ = ["allow_stale"]
    ALLOW_STALE_FIELD_NUMBER: _ClassVar[int]
    allow_stale: bool
    def __init__(self, allow_stale: bool = ...) -> None: ...

class StartDrainRequest(_message.Message):
    __slots__ = ["max_concurrency", "segment_ids", "session", "target_segment_ids"]
    MAX_CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TARGET_SEGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    max_concurrency: int
    segment_ids: _containers.RepeatedScalarFieldContainer[bytes]
    session: _types_pb2.SessionHeader
    target_segment_ids: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, segment_ids: _Optional[_Iterable[bytes]] = ..., target_segment_ids: _Optional[_Iterable[bytes]] = ..., max_concurrency: _Optional[int] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class StartDrainResponse(_message.Message):
    __slots__ = ["drain"]
    DRAIN_FIELD_NUMBER: _ClassVar[int]
    drain: _types_pb2.DrainJob
    def __init__(self, drain: _Optional[_Union[_types_pb2.DrainJob, _Mapping]] = ...) -> None: ...

class StatusRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class StatusResponse(_message.Message):
    __slots__ = ["applied_index", "client_address", "commit_index", "last_log_index", "last_snapshot_index", "last_snapshot_term", "leader_address", "leader_name", "name", "objects", "peer_address", "role", "segments", "tenants", "term", "version"]
    APPLIED_INDEX_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    COMMIT_INDEX_FIELD_NUMBER: _ClassVar[int]
    LAST_LOG_INDEX_FIELD_NUMBER: _ClassVar[int]
    LAST_SNAPSHOT_INDEX_FIELD_NUMBER: _ClassVar[int]
    LAST_SNAPSHOT_TERM_FIELD_NUMBER: _ClassVar[int]
    LEADER_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    LEADER_NAME_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    PEER_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    TENANTS_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    applied_index: int
    client_address: str
    commit_index: int
    last_log_index: int
    last_snapshot_index: int
    last_snapshot_term: int
    leader_address: str
    leader_name: str
    name: str
    objects: int
    peer_address: str
    role: NodeRole
    segments: int
    tenants: int
    term: int
    version: str
    def __init__(self, name: _Optional[str] = ..., client_address: _Optional[str] = ..., peer_address: _Optional[str] = ..., role: _Optional[_Union[NodeRole, str]] = ..., term: _Optional[int] = ..., applied_index: _Optional[int] = ..., commit_index: _Optional[int] = ..., last_log_index: _Optional[int] = ..., leader_name: _Optional[str] = ..., leader_address: _Optional[str] = ..., objects: _Optional[int] = ..., tenants: _Optional[int] = ..., segments: _Optional[int] = ..., last_snapshot_index: _Optional[int] = ..., last_snapshot_term: _Optional[int] = ..., version: _Optional[str] = ...) -> None: ...

class TenantInfo(_message.Message):
    __slots__ = ["charged_bytes", "effective_quota_bytes", "groups", "instance_id", "name", "objects", "requested_quota_bytes", "state"]
    CHARGED_BYTES_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_QUOTA_BYTES_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_QUOTA_BYTES_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    charged_bytes: int
    effective_quota_bytes: int
    groups: int
    instance_id: int
    name: str
    objects: int
    requested_quota_bytes: int
    state: _types_pb2.TenantState
    def __init__(self, name: _Optional[str] = ..., instance_id: _Optional[int] = ..., requested_quota_bytes: _Optional[int] = ..., effective_quota_bytes: _Optional[int] = ..., charged_bytes: _Optional[int] = ..., objects: _Optional[int] = ..., groups: _Optional[int] = ..., state: _Optional[_Union[_types_pb2.TenantState, str]] = ...) -> None: ...

class TransferLeaderRequest(_message.Message):
    __slots__ = ["target"]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    target: str
    def __init__(self, target: _Optional[str] = ...) -> None: ...

class TransferLeaderResponse(_message.Message):
    __slots__ = ["leader_address", "leader_name"]
    LEADER_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    LEADER_NAME_FIELD_NUMBER: _ClassVar[int]
    leader_address: str
    leader_name: str
    def __init__(self, leader_name: _Optional[str] = ..., leader_address: _Optional[str] = ...) -> None: ...

class UnregisterTenantRequest(_message.Message):
    __slots__ = ["force", "name", "session"]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    force: bool
    name: str
    session: _types_pb2.SessionHeader
    def __init__(self, name: _Optional[str] = ..., force: bool = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class UnregisterTenantResponse(_message.Message):
    __slots__ = ["groups_removed", "objects_removed"]
    GROUPS_REMOVED_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_REMOVED_FIELD_NUMBER: _ClassVar[int]
    groups_removed: int
    objects_removed: int
    def __init__(self, objects_removed: _Optional[int] = ..., groups_removed: _Optional[int] = ...) -> None: ...

class NodeRole(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
