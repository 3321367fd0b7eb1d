from metad.metadv1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ArenaRecord(_message.Message):
    __slots__ = ["arena_id", "free", "offset", "segment_index", "size", "term"]
    ARENA_ID_FIELD_NUMBER: _ClassVar[int]
    FREE_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_INDEX_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    arena_id: int
    free: _containers.RepeatedCompositeFieldContainer[ArenaSpan]
    offset: int
    segment_index: int
    size: int
    term: int
    def __init__(self, arena_id: _Optional[int] = ..., term: _Optional[int] = ..., segment_index: _Optional[int] = ..., offset: _Optional[int] = ..., size: _Optional[int] = ..., free: _Optional[_Iterable[_Union[ArenaSpan, _Mapping]]] = ...) -> None: ...

class ArenaSpan(_message.Message):
    __slots__ = ["offset", "size"]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    offset: int
    size: int
    def __init__(self, offset: _Optional[int] = ..., size: _Optional[int] = ...) -> None: ...

class CachedResult(_message.Message):
    __slots__ = ["result", "seq"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    result: ResultRecord
    seq: int
    def __init__(self, seq: _Optional[int] = ..., result: _Optional[_Union[ResultRecord, _Mapping]] = ...) -> None: ...

class KeyRecord(_message.Message):
    __slots__ = ["created_ms", "expires_ms", "id", "principal", "sha256"]
    CREATED_MS_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_MS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    created_ms: int
    expires_ms: int
    id: str
    principal: str
    sha256: bytes
    def __init__(self, id: _Optional[str] = ..., principal: _Optional[str] = ..., sha256: _Optional[bytes] = ..., created_ms: _Optional[int] = ..., expires_ms: _Optional[int] = ...) -> None: ...

class MemberRecord(_message.Message):
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

class ObjectRecord(_message.Message):
    __slots__ = ["charged_bytes", "data_type", "group", "group_id", "hard_pin", "key", "object_id", "put_start_unix_nano", "replicas", "size", "soft_pin_deadline_unix_nano", "soft_pin_ttl_ms", "task", "version", "writer_client_id"]
    CHARGED_BYTES_FIELD_NUMBER: _ClassVar[int]
    DATA_TYPE_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    HARD_PIN_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    OBJECT_ID_FIELD_NUMBER: _ClassVar[int]
    PUT_START_UNIX_NANO_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    SOFT_PIN_DEADLINE_UNIX_NANO_FIELD_NUMBER: _ClassVar[int]
    SOFT_PIN_TTL_MS_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    WRITER_CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    charged_bytes: int
    data_type: int
    group: bytes
    group_id: int
    hard_pin: bool
    key: bytes
    object_id: int
    put_start_unix_nano: int
    replicas: _containers.RepeatedCompositeFieldContainer[ReplicaRecord]
    size: int
    soft_pin_deadline_unix_nano: int
    soft_pin_ttl_ms: int
    task: ReplicaTaskRecord
    version: int
    writer_client_id: bytes
    def __init__(self, key: _Optional[bytes] = ..., object_id: _Optional[int] = ..., version: _Optional[int] = ..., size: _Optional[int] = ..., writer_client_id: _Optional[bytes] = ..., put_start_unix_nano: _Optional[int] = ..., replicas: _Optional[_Iterable[_Union[ReplicaRecord, _Mapping]]] = ..., charged_bytes: _Optional[int] = ..., group: _Optional[bytes] = ..., group_id: _Optional[int] = ..., data_type: _Optional[int] = ..., hard_pin: bool = ..., soft_pin_ttl_ms: _Optional[int] = ..., soft_pin_deadline_unix_nano: _Optional[int] = ..., task: _Optional[_Union[ReplicaTaskRecord, _Mapping]] = ...) -> None: ...

class Record(_message.Message):
    __slots__ = ["arena", "drain", "key", "member", "object", "role", "segment", "session", "task", "tenant"]
    ARENA_FIELD_NUMBER: _ClassVar[int]
    DRAIN_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    MEMBER_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    arena: ArenaRecord
    drain: _types_pb2.DrainJob
    key: KeyRecord
    member: MemberRecord
    object: ObjectRecord
    role: RoleRecord
    segment: SegmentRecord
    session: SessionRecord
    task: _types_pb2.ScheduledTask
    tenant: TenantRecord
    def __init__(self, tenant: _Optional[_Union[TenantRecord, _Mapping]] = ..., segment: _Optional[_Union[SegmentRecord, _Mapping]] = ..., object: _Optional[_Union[ObjectRecord, _Mapping]] = ..., member: _Optional[_Union[MemberRecord, _Mapping]] = ..., session: _Optional[_Union[SessionRecord, _Mapping]] = ..., key: _Optional[_Union[KeyRecord, _Mapping]] = ..., role: _Optional[_Union[RoleRecord, _Mapping]] = ..., task: _Optional[_Union[_types_pb2.ScheduledTask, _Mapping]] = ..., drain: _Optional[_Union[_types_pb2.DrainJob, _Mapping]] = ..., arena: _Optional[_Union[ArenaRecord, _Mapping]] = ...) -> None: ...

class ReplicaRecord(_message.Message):
    __slots__ = ["offset", "replica_id", "segment_index", "size", "status", "tier"]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_INDEX_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    offset: int
    replica_id: int
    segment_index: int
    size: int
    status: _types_pb2.ReplicaStatus
    tier: _types_pb2.Tier
    def __init__(self, replica_id: _Optional[int] = ..., segment_index: _Optional[int] = ..., offset: _Optional[int] = ..., status: _Optional[_Union[_types_pb2.ReplicaStatus, str]] = ..., tier: _Optional[_Union[_types_pb2.Tier, str]] = ..., size: _Optional[int] = ...) -> None: ...

class ReplicaTaskRecord(_message.Message):
    __slots__ = ["client_id", "kind", "source_replica_id", "started_unix_nano", "target_replica_ids"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    SOURCE_REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_UNIX_NANO_FIELD_NUMBER: _ClassVar[int]
    TARGET_REPLICA_IDS_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    kind: _types_pb2.TaskKind
    source_replica_id: int
    started_unix_nano: int
    target_replica_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, kind: _Optional[_Union[_types_pb2.TaskKind, str]] = ..., client_id: _Optional[bytes] = ..., started_unix_nano: _Optional[int] = ..., source_replica_id: _Optional[int] = ..., target_replica_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class ResultRecord(_message.Message):
    __slots__ = ["bytes", "count", "created", "drain", "instance", "items", "key", "message", "reason", "replicas", "reused", "session", "tasks", "unmount_at_unix_nano", "unmount_erased", "unmount_replicas", "unmount_segments"]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    DRAIN_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    REUSED_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    UNMOUNT_AT_UNIX_NANO_FIELD_NUMBER: _ClassVar[int]
    UNMOUNT_ERASED_FIELD_NUMBER: _ClassVar[int]
    UNMOUNT_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    UNMOUNT_SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    bytes: int
    count: int
    created: bool
    drain: _types_pb2.DrainJob
    instance: int
    items: _containers.RepeatedCompositeFieldContainer[ResultRecord]
    key: bytes
    message: str
    reason: int
    replicas: _containers.RepeatedCompositeFieldContainer[ResultReplica]
    reused: bool
    session: int
    tasks: _containers.RepeatedCompositeFieldContainer[_types_pb2.ScheduledTask]
    unmount_at_unix_nano: int
    unmount_erased: int
    unmount_replicas: int
    unmount_segments: int
    def __init__(self, reason: _Optional[int] = ..., message: _Optional[str] = ..., replicas: _Optional[_Iterable[_Union[ResultReplica, _Mapping]]] = ..., reused: bool = ..., count: _Optional[int] = ..., bytes: _Optional[int] = ..., instance: _Optional[int] = ..., created: bool = ..., unmount_segments: _Optional[int] = ..., unmount_replicas: _Optional[int] = ..., unmount_erased: _Optional[int] = ..., items: _Optional[_Iterable[_Union[ResultRecord, _Mapping]]] = ..., session: _Optional[int] = ..., unmount_at_unix_nano: _Optional[int] = ..., key: _Optional[bytes] = ..., tasks: _Optional[_Iterable[_Union[_types_pb2.ScheduledTask, _Mapping]]] = ..., drain: _Optional[_Union[_types_pb2.DrainJob, _Mapping]] = ...) -> None: ...

class ResultReplica(_message.Message):
    __slots__ = ["offset", "replica_id", "segment_id", "size", "status", "tier"]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    offset: int
    replica_id: int
    segment_id: bytes
    size: int
    status: _types_pb2.ReplicaStatus
    tier: _types_pb2.Tier
    def __init__(self, replica_id: _Optional[int] = ..., segment_id: _Optional[bytes] = ..., offset: _Optional[int] = ..., size: _Optional[int] = ..., tier: _Optional[_Union[_types_pb2.Tier, str]] = ..., status: _Optional[_Union[_types_pb2.ReplicaStatus, str]] = ...) -> None: ...

class RoleRecord(_message.Message):
    __slots__ = ["principal", "roles"]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    principal: str
    roles: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, principal: _Optional[str] = ..., roles: _Optional[_Iterable[str]] = ...) -> None: ...

class SegmentRecord(_message.Message):
    __slots__ = ["closing", "segment", "unmount_at_unix_nano"]
    CLOSING_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_FIELD_NUMBER: _ClassVar[int]
    UNMOUNT_AT_UNIX_NANO_FIELD_NUMBER: _ClassVar[int]
    closing: bool
    segment: _types_pb2.SegmentDesc
    unmount_at_unix_nano: int
    def __init__(self, segment: _Optional[_Union[_types_pb2.SegmentDesc, _Mapping]] = ..., closing: bool = ..., unmount_at_unix_nano: _Optional[int] = ...) -> None: ...

class SessionRecord(_message.Message):
    __slots__ = ["floor", "id", "last_active_unix_nano", "owned", "principal", "results", "ttl_ms", "window"]
    FLOOR_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LAST_ACTIVE_UNIX_NANO_FIELD_NUMBER: _ClassVar[int]
    OWNED_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    floor: int
    id: int
    last_active_unix_nano: int
    owned: bool
    principal: str
    results: _containers.RepeatedCompositeFieldContainer[CachedResult]
    ttl_ms: int
    window: int
    def __init__(self, id: _Optional[int] = ..., ttl_ms: _Optional[int] = ..., window: _Optional[int] = ..., last_active_unix_nano: _Optional[int] = ..., floor: _Optional[int] = ..., results: _Optional[_Iterable[_Union[CachedResult, _Mapping]]] = ..., principal: _Optional[str] = ..., owned: bool = ...) -> None: ...

class SnapshotHeader(_message.Message):
    __slots__ = ["arenas", "auth_revision", "created_at_unix_nano", "drains", "format_version", "groups", "index", "keys", "last_arena_id", "last_drain_id", "last_task_id", "next_session_id", "next_tenant_instance_id", "objects", "role_bindings", "segments", "state_epoch", "tasks", "tenants", "term"]
    ARENAS_FIELD_NUMBER: _ClassVar[int]
    AUTH_REVISION_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_UNIX_NANO_FIELD_NUMBER: _ClassVar[int]
    DRAINS_FIELD_NUMBER: _ClassVar[int]
    FORMAT_VERSION_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    LAST_ARENA_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_DRAIN_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_TASK_ID_FIELD_NUMBER: _ClassVar[int]
    NEXT_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    NEXT_TENANT_INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    ROLE_BINDINGS_FIELD_NUMBER: _ClassVar[int]
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    STATE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    TENANTS_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    arenas: int
    auth_revision: int
    created_at_unix_nano: int
    drains: int
    format_version: int
    groups: int
    index: int
    keys: int
    last_arena_id: int
    last_drain_id: int
    last_task_id: int
    next_session_id: int
    next_tenant_instance_id: int
    objects: int
    role_bindings: int
    segments: int
    state_epoch: int
    tasks: int
    tenants: int
    term: int
    def __init__(self, format_version: _Optional[int] = ..., index: _Optional[int] = ..., term: _Optional[int] = ..., created_at_unix_nano: _Optional[int] = ..., tenants: _Optional[int] = ..., segments: _Optional[int] = ..., objects: _Optional[int] = ..., groups: _Optional[int] = ..., next_tenant_instance_id: _Optional[int] = ..., state_epoch: _Optional[int] = ..., next_session_id: _Optional[int] = ..., auth_revision: _Optional[int] = ..., keys: _Optional[int] = ..., role_bindings: _Optional[int] = ..., last_task_id: _Optional[int] = ..., tasks: _Optional[int] = ..., last_drain_id: _Optional[int] = ..., drains: _Optional[int] = ..., last_arena_id: _Optional[int] = ..., arenas: _Optional[int] = ...) -> None: ...

class TenantRecord(_message.Message):
    __slots__ = ["instance_id", "name", "next_group_id", "next_object_id", "next_replica_id", "requested_quota_bytes", "state"]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NEXT_GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    NEXT_OBJECT_ID_FIELD_NUMBER: _ClassVar[int]
    NEXT_REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_QUOTA_BYTES_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    instance_id: int
    name: str
    next_group_id: int
    next_object_id: int
    next_replica_id: int
    requested_quota_bytes: int
    state: _types_pb2.TenantState
    def __init__(self, name: _Optional[str] = ..., instance_id: _Optional[int] = ..., requested_quota_bytes: _Optional[int] = ..., state: _Optional[_Union[_types_pb2.TenantState, str]] = ..., next_object_id: _Optional[int] = ..., next_group_id: _Optional[int] = ..., next_replica_id: _Optional[int] = ...) -> None: ...
