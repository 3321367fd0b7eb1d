from metad.metadv1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
EVICT_KIND_MEMORY: EvictKind
EVICT_KIND_NOF: EvictKind
EVICT_KIND_TENANT_QUOTA: EvictKind
EVICT_KIND_UNSPECIFIED: EvictKind
PLACEMENT_STRATEGY_FREE_RATIO_FIRST: PlacementStrategy
PLACEMENT_STRATEGY_RANDOM: PlacementStrategy
PLACEMENT_STRATEGY_UNSPECIFIED: PlacementStrategy
UNMOUNT_REASON_CLIENT_EXPIRED: UnmountReason
UNMOUNT_REASON_CLIENT_REQUEST: UnmountReason
UNMOUNT_REASON_UNSPECIFIED: UnmountReason

class ArenaGrant(_message.Message):
    __slots__ = ["arenas", "term"]
    ARENAS_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    arenas: _containers.RepeatedCompositeFieldContainer[ArenaSpec]
    term: int
    def __init__(self, term: _Optional[int] = ..., arenas: _Optional[_Iterable[_Union[ArenaSpec, _Mapping]]] = ...) -> None: ...

class ArenaRetire(_message.Message):
    __slots__ = ["arena_ids"]
    ARENA_IDS_FIELD_NUMBER: _ClassVar[int]
    arena_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, arena_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class ArenaSpec(_message.Message):
    __slots__ = ["segment_id", "size"]
    SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    segment_id: bytes
    size: int
    def __init__(self, segment_id: _Optional[bytes] = ..., size: _Optional[int] = ...) -> None: ...

class BatchPutEnd(_message.Message):
    __slots__ = ["client_id", "keys", "tenant", "tier"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    keys: _containers.RepeatedScalarFieldContainer[bytes]
    tenant: str
    tier: _types_pb2.Tier
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., keys: _Optional[_Iterable[bytes]] = ..., tier: _Optional[_Union[_types_pb2.Tier, str]] = ...) -> None: ...

class BatchPutRevoke(_message.Message):
    __slots__ = ["client_id", "keys", "tenant", "tier"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    keys: _containers.RepeatedScalarFieldContainer[bytes]
    tenant: str
    tier: _types_pb2.Tier
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., keys: _Optional[_Iterable[bytes]] = ..., tier: _Optional[_Union[_types_pb2.Tier, str]] = ...) -> None: ...

class BatchPutStart(_message.Message):
    __slots__ = ["client_id", "config", "items", "placement", "put_discard_timeout_ms", "tenant"]
    class Item(_message.Message):
        __slots__ = ["group", "key", "reserved", "size"]
        GROUP_FIELD_NUMBER: _ClassVar[int]
        KEY_FIELD_NUMBER: _ClassVar[int]
        RESERVED_FIELD_NUMBER: _ClassVar[int]
        SIZE_FIELD_NUMBER: _ClassVar[int]
        group: bytes
        key: bytes
        reserved: bool
        size: int
        def __init__(self, key: _Optional[bytes] = ..., group: _Optional[bytes] = ..., size: _Optional[int] = ..., reserved: bool = ...) -> None: ...
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    PUT_DISCARD_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    config: _types_pb2.ReplicaConfig
    items: _containers.RepeatedCompositeFieldContainer[BatchPutStart.Item]
    placement: PlacementStrategy
    put_discard_timeout_ms: int
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., config: _Optional[_Union[_types_pb2.ReplicaConfig, _Mapping]] = ..., items: _Optional[_Iterable[_Union[BatchPutStart.Item, _Mapping]]] = ..., placement: _Optional[_Union[PlacementStrategy, str]] = ..., put_discard_timeout_ms: _Optional[int] = ...) -> None: ...

class BatchRemove(_message.Message):
    __slots__ = ["force", "items", "keyed", "state_epoch", "tenant", "tenant_instance_id"]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    KEYED_FIELD_NUMBER: _ClassVar[int]
    STATE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TENANT_INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    force: bool
    items: _containers.RepeatedCompositeFieldContainer[ObjectRef]
    keyed: bool
    state_epoch: int
    tenant: str
    tenant_instance_id: int
    def __init__(self, tenant: _Optional[str] = ..., force: bool = ..., tenant_instance_id: _Optional[int] = ..., items: _Optional[_Iterable[_Union[ObjectRef, _Mapping]]] = ..., state_epoch: _Optional[int] = ..., keyed: bool = ...) -> None: ...

class BatchReplicaClear(_message.Message):
    __slots__ = ["client_id", "items", "segment_id", "state_epoch", "tenant", "tenant_instance_id"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TENANT_INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    items: _containers.RepeatedCompositeFieldContainer[ObjectRef]
    segment_id: bytes
    state_epoch: int
    tenant: str
    tenant_instance_id: int
    def __init__(self, tenant: _Optional[str] = ..., tenant_instance_id: _Optional[int] = ..., client_id: _Optional[bytes] = ..., segment_id: _Optional[bytes] = ..., items: _Optional[_Iterable[_Union[ObjectRef, _Mapping]]] = ..., state_epoch: _Optional[int] = ...) -> None: ...

class CancelDrain(_message.Message):
    __slots__ = ["drain_id"]
    DRAIN_ID_FIELD_NUMBER: _ClassVar[int]
    drain_id: int
    def __init__(self, drain_id: _Optional[int] = ...) -> None: ...

class CloseSegment(_message.Message):
    __slots__ = ["client_id", "segment_id", "unmount_at_unix_nano"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    UNMOUNT_AT_UNIX_NANO_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    segment_id: bytes
    unmount_at_unix_nano: int
    def __init__(self, client_id: _Optional[bytes] = ..., segment_id: _Optional[bytes] = ..., unmount_at_unix_nano: _Optional[int] = ...) -> None: ...

class Command(_message.Message):
    __slots__ = ["arena_grant", "arena_retire", "auth_revision", "batch_put_end", "batch_put_revoke", "batch_put_start", "batch_remove", "batch_replica_clear", "cancel_drain", "close_segment", "complete_task", "create_key", "create_task", "evict", "fetch_tasks", "finish_drain", "forget_member", "grant_role", "mount_segment", "open_session", "principal", "put_commit", "put_end", "put_revoke", "put_start", "register_tenant", "remove", "remove_all", "remove_group", "replica_task_end", "replica_task_revoke", "replica_task_start", "revoke_expired", "revoke_key", "revoke_role", "schedule_drain_moves", "session", "set_member", "set_quota", "start_drain", "unmount_closed", "unmount_segment", "unregister_tenant", "upsert_end", "upsert_revoke", "upsert_start"]
    ARENA_GRANT_FIELD_NUMBER: _ClassVar[int]
    ARENA_RETIRE_FIELD_NUMBER: _ClassVar[int]
    AUTH_REVISION_FIELD_NUMBER: _ClassVar[int]
    BATCH_PUT_END_FIELD_NUMBER: _ClassVar[int]
    BATCH_PUT_REVOKE_FIELD_NUMBER: _ClassVar[int]
    BATCH_PUT_START_FIELD_NUMBER: _ClassVar[int]
    BATCH_REMOVE_FIELD_NUMBER: _ClassVar[int]
    BATCH_REPLICA_CLEAR_FIELD_NUMBER: _ClassVar[int]
    CANCEL_DRAIN_FIELD_NUMBER: _ClassVar[int]
    CLOSE_SEGMENT_FIELD_NUMBER: _ClassVar[int]
    COMPLETE_TASK_FIELD_NUMBER: _ClassVar[int]
    CREATE_KEY_FIELD_NUMBER: _ClassVar[int]
    CREATE_TASK_FIELD_NUMBER: _ClassVar[int]
    EVICT_FIELD_NUMBER: _ClassVar[int]
    FETCH_TASKS_FIELD_NUMBER: _ClassVar[int]
    FINISH_DRAIN_FIELD_NUMBER: _ClassVar[int]
    FORGET_MEMBER_FIELD_NUMBER: _ClassVar[int]
    GRANT_ROLE_FIELD_NUMBER: _ClassVar[int]
    MOUNT_SEGMENT_FIELD_NUMBER: _ClassVar[int]
    OPEN_SESSION_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    PUT_COMMIT_FIELD_NUMBER: _ClassVar[int]
    PUT_END_FIELD_NUMBER: _ClassVar[int]
    PUT_REVOKE_FIELD_NUMBER: _ClassVar[int]
    PUT_START_FIELD_NUMBER: _ClassVar[int]
    REGISTER_TENANT_FIELD_NUMBER: _ClassVar[int]
    REMOVE_ALL_FIELD_NUMBER: _ClassVar[int]
    REMOVE_FIELD_NUMBER: _ClassVar[int]
    REMOVE_GROUP_FIELD_NUMBER: _ClassVar[int]
    REPLICA_TASK_END_FIELD_NUMBER: _ClassVar[int]
    REPLICA_TASK_REVOKE_FIELD_NUMBER: _ClassVar[int]
    REPLICA_TASK_START_FIELD_NUMBER: _ClassVar[int]
    REVOKE_EXPIRED_FIELD_NUMBER: _ClassVar[int]
    REVOKE_KEY_FIELD_NUMBER: _ClassVar[int]
    REVOKE_ROLE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_DRAIN_MOVES_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    SET_MEMBER_FIELD_NUMBER: _ClassVar[int]
    SET_QUOTA_FIELD_NUMBER: _ClassVar[int]
    START_DRAIN_FIELD_NUMBER: _ClassVar[int]
    UNMOUNT_CLOSED_FIELD_NUMBER: _ClassVar[int]
    UNMOUNT_SEGMENT_FIELD_NUMBER: _ClassVar[int]
    UNREGISTER_TENANT_FIELD_NUMBER: _ClassVar[int]
    UPSERT_END_FIELD_NUMBER: _ClassVar[int]
    UPSERT_REVOKE_FIELD_NUMBER: _ClassVar[int]
    UPSERT_START_FIELD_NUMBER: _ClassVar[int]
    arena_grant: ArenaGrant
    arena_retire: ArenaRetire
    auth_revision: int
    batch_put_end: BatchPutEnd
    batch_put_revoke: BatchPutRevoke
    batch_put_start: BatchPutStart
    batch_remove: BatchRemove
    batch_replica_clear: BatchReplicaClear
    cancel_drain: CancelDrain
    close_segment: CloseSegment
    complete_task: CompleteTask
    create_key: CreateKey
    create_task: CreateTask
    evict: Evict
    fetch_tasks: FetchTasks
    finish_drain: FinishDrain
    forget_member: ForgetMember
    grant_role: GrantRole
    mount_segment: MountSegment
    open_session: OpenSession
    principal: str
    put_commit: PutCommit
    put_end: PutEnd
    put_revoke: PutRevoke
    put_start: PutStart
    register_tenant: RegisterTenant
    remove: Remove
    remove_all: RemoveAll
    remove_group: RemoveGroup
    replica_task_end: ReplicaTaskEnd
    replica_task_revoke: ReplicaTaskRevoke
    replica_task_start: ReplicaTaskStart
    revoke_expired: RevokeExpired
    revoke_key: RevokeKey
    revoke_role: RevokeRole
    schedule_drain_moves: ScheduleDrainMoves
    session: _types_pb2.SessionHeader
    set_member: SetMember
    set_quota: SetQuota
    start_drain: StartDrain
    unmount_closed: UnmountClosed
    unmount_segment: UnmountSegment
    unregister_tenant: UnregisterTenant
    upsert_end: UpsertEnd
    upsert_revoke: UpsertRevoke
    upsert_start: UpsertStart
    def __init__(self, put_start: _Optional[_Union[PutStart, _Mapping]] = ..., put_end: _Optional[_Union[PutEnd, _Mapping]] = ..., put_revoke: _Optional[_Union[PutRevoke, _Mapping]] = ..., upsert_start: _Optional[_Union[UpsertStart, _Mapping]] = ..., upsert_end: _Optional[_Union[UpsertEnd, _Mapping]] = ..., upsert_revoke: _Optional[_Union[UpsertRevoke, _Mapping]] = ..., remove: _Optional[_Union[Remove, _Mapping]] = ..., remove_all: _Optional[_Union[RemoveAll, _Mapping]] = ..., remove_group: _Optional[_Union[RemoveGroup, _Mapping]] = ..., batch_put_start: _Optional[_Union[BatchPutStart, _Mapping]] = ..., batch_put_end: _Optional[_Union[BatchPutEnd, _Mapping]] = ..., batch_put_revoke: _Optional[_Union[BatchPutRevoke, _Mapping]] = ..., batch_remove: _Optional[_Union[BatchRemove, _Mapping]] = ..., evict: _Optional[_Union[Evict, _Mapping]] = ..., revoke_expired: _Optional[_Union[RevokeExpired, _Mapping]] = ..., mount_segment: _Optional[_Union[MountSegment, _Mapping]] = ..., unmount_segment: _Optional[_Union[UnmountSegment, _Mapping]] = ..., register_tenant: _Optional[_Union[RegisterTenant, _Mapping]] = ..., unregister_tenant: _Optional[_Union[UnregisterTenant, _Mapping]] = ..., set_quota: _Optional[_Union[SetQuota, _Mapping]] = ..., set_member: _Optional[_Union[SetMember, _Mapping]] = ..., forget_member: _Optional[_Union[ForgetMember, _Mapping]] = ..., open_session: _Optional[_Union[OpenSession, _Mapping]] = ..., create_key: _Optional[_Union[CreateKey, _Mapping]] = ..., revoke_key: _Optional[_Union[RevokeKey, _Mapping]] = ..., grant_role: _Optional[_Union[GrantRole, _Mapping]] = ..., revoke_role: _Optional[_Union[RevokeRole, _Mapping]] = ..., close_segment: _Optional[_Union[CloseSegment, _Mapping]] = ..., unmount_closed: _Optional[_Union[UnmountClosed, _Mapping]] = ..., batch_replica_clear: _Optional[_Union[BatchReplicaClear, _Mapping]] = ..., replica_task_start: _Optional[_Union[ReplicaTaskStart, _Mapping]] = ..., replica_task_end: _Optional[_Union[ReplicaTaskEnd, _Mapping]] = ..., replica_task_revoke: _Optional[_Union[ReplicaTaskRevoke, _Mapping]] = ..., create_task: _Optional[_Union[CreateTask, _Mapping]] = ..., fetch_tasks: _Optional[_Union[FetchTasks, _Mapping]] = ..., complete_task: _Optional[_Union[CompleteTask, _Mapping]] = ..., start_drain: _Optional[_Union[StartDrain, _Mapping]] = ..., cancel_drain: _Optional[_Union[CancelDrain, _Mapping]] = ..., schedule_drain_moves: _Optional[_Union[ScheduleDrainMoves, _Mapping]] = ..., finish_drain: _Optional[_Union[FinishDrain, _Mapping]] = ..., arena_grant: _Optional[_Union[ArenaGrant, _Mapping]] = ..., arena_retire: _Optional[_Union[ArenaRetire, _Mapping]] = ..., put_commit: _Optional[_Union[PutCommit, _Mapping]] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ..., principal: _Optional[str] = ..., auth_revision: _Optional[int] = ...) -> None: ...

class CommitItem(_message.Message):
    __slots__ = ["config", "group", "key", "put_start_unix_nano", "replicas", "size"]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    PUT_START_UNIX_NANO_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    config: _types_pb2.ReplicaConfig
    group: bytes
    key: bytes
    put_start_unix_nano: int
    replicas: _containers.RepeatedCompositeFieldContainer[CommitReplica]
    size: int
    def __init__(self, key: _Optional[bytes] = ..., group: _Optional[bytes] = ..., size: _Optional[int] = ..., config: _Optional[_Union[_types_pb2.ReplicaConfig, _Mapping]] = ..., replicas: _Optional[_Iterable[_Union[CommitReplica, _Mapping]]] = ..., put_start_unix_nano: _Optional[int] = ...) -> None: ...

class CommitReplica(_message.Message):
    __slots__ = ["offset", "segment_id", "size", "tier"]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    offset: int
    segment_id: bytes
    size: int
    tier: _types_pb2.Tier
    def __init__(self, tier: _Optional[_Union[_types_pb2.Tier, str]] = ..., segment_id: _Optional[bytes] = ..., offset: _Optional[int] = ..., size: _Optional[int] = ...) -> None: ...

class CompleteTask(_message.Message):
    __slots__ = ["client_id", "message", "success", "task_id"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    message: str
    success: bool
    task_id: int
    def __init__(self, client_id: _Optional[bytes] = ..., task_id: _Optional[int] = ..., success: bool = ..., message: _Optional[str] = ...) -> None: ...

class CreateKey(_message.Message):
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

class CreateTask(_message.Message):
    __slots__ = ["key", "kind", "replicas", "source_segment_id", "target_segment_ids", "tenant"]
    KEY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_SEGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    kind: _types_pb2.TaskKind
    replicas: int
    source_segment_id: bytes
    target_segment_ids: _containers.RepeatedScalarFieldContainer[bytes]
    tenant: str
    def __init__(self, kind: _Optional[_Union[_types_pb2.TaskKind, str]] = ..., tenant: _Optional[str] = ..., key: _Optional[bytes] = ..., source_segment_id: _Optional[bytes] = ..., target_segment_ids: _Optional[_Iterable[bytes]] = ..., replicas: _Optional[int] = ...) -> None: ...

class DrainMove(_message.Message):
    __slots__ = ["key", "source_segment_id", "target_segment_id", "tenant"]
    KEY_FIELD_NUMBER: _ClassVar[int]
    SOURCE_SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    source_segment_id: bytes
    target_segment_id: bytes
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., key: _Optional[bytes] = ..., source_segment_id: _Optional[bytes] = ..., target_segment_id: _Optional[bytes] = ...) -> None: ...

class Envelope(_message.Message):
    __slots__ = ["commands", "format_version", "leader_time_unix_nano", "rules_version", "seed"]
    COMMANDS_FIELD_NUMBER: _ClassVar[int]
    FORMAT_VERSION_FIELD_NUMBER: _ClassVar[int]
    LEADER_TIME_UNIX_NANO_FIELD_NUMBER: _ClassVar[int]
    RULES_VERSION_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    commands: _containers.RepeatedCompositeFieldContainer[Command]
    format_version: int
    leader_time_unix_nano: int
    rules_version: int
    seed: int
    def __init__(self, format_version: _Optional[int] = ..., leader_time_unix_nano: _Optional[int] = ..., seed: _Optional[int] = ..., commands: _Optional[_Iterable[_Union[Command, _Mapping]]] = ..., rules_version: _Optional[int] = ...) -> None: ...

class Evict(_message.Message):
    __slots__ = ["columns", "kind", "state_epoch", "tier", "tokens", "unit_sizes"]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    STATE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    UNIT_SIZES_FIELD_NUMBER: _ClassVar[int]
    columns: TokenColumns
    kind: EvictKind
    state_epoch: int
    tier: _types_pb2.Tier
    tokens: _containers.RepeatedCompositeFieldContainer[ObjectToken]
    unit_sizes: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, tokens: _Optional[_Iterable[_Union[ObjectToken, _Mapping]]] = ..., tier: _Optional[_Union[_types_pb2.Tier, str]] = ..., kind: _Optional[_Union[EvictKind, str]] = ..., unit_sizes: _Optional[_Iterable[int]] = ..., state_epoch: _Optional[int] = ..., columns: _Optional[_Union[TokenColumns, _Mapping]] = ...) -> None: ...

class FetchTasks(_message.Message):
    __slots__ = ["batch", "client_id"]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    batch: int
    client_id: bytes
    def __init__(self, client_id: _Optional[bytes] = ..., batch: _Optional[int] = ...) -> None: ...

class FinishDrain(_message.Message):
    __slots__ = ["drain_id"]
    DRAIN_ID_FIELD_NUMBER: _ClassVar[int]
    drain_id: int
    def __init__(self, drain_id: _Optional[int] = ...) -> None: ...

class ForgetMember(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GrantRole(_message.Message):
    __slots__ = ["principal", "role"]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    principal: str
    role: str
    def __init__(self, principal: _Optional[str] = ..., role: _Optional[str] = ...) -> None: ...

class MountSegment(_message.Message):
    __slots__ = ["segment"]
    SEGMENT_FIELD_NUMBER: _ClassVar[int]
    segment: _types_pb2.SegmentDesc
    def __init__(self, segment: _Optional[_Union[_types_pb2.SegmentDesc, _Mapping]] = ...) -> None: ...

class ObjectRef(_message.Message):
    __slots__ = ["key", "object_id", "refused", "refused_message"]
    KEY_FIELD_NUMBER: _ClassVar[int]
    OBJECT_ID_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    REFUSED_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    object_id: int
    refused: _types_pb2.Reason
    refused_message: str
    def __init__(self, key: _Optional[bytes] = ..., object_id: _Optional[int] = ..., refused: _Optional[_Union[_types_pb2.Reason, str]] = ..., refused_message: _Optional[str] = ...) -> None: ...

class ObjectToken(_message.Message):
    __slots__ = ["key", "object_id", "tenant", "tenant_instance_id", "version"]
    KEY_FIELD_NUMBER: _ClassVar[int]
    OBJECT_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TENANT_INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    object_id: int
    tenant: str
    tenant_instance_id: int
    version: int
    def __init__(self, tenant: _Optional[str] = ..., tenant_instance_id: _Optional[int] = ..., key: _Optional[bytes] = ..., object_id: _Optional[int] = ..., version: _Optional[int] = ...) -> None: ...

class OpenSession(_message.Message):
    __slots__ = ["ttl_ms", "window"]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    ttl_ms: int
    window: int
    def __init__(self, ttl_ms: _Optional[int] = ..., window: _Optional[int] = ...) -> None: ...

class PutCommit(_message.Message):
    __slots__ = ["client_id", "items", "tenant", "tier"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    items: _containers.RepeatedCompositeFieldContainer[CommitItem]
    tenant: str
    tier: _types_pb2.Tier
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., tier: _Optional[_Union[_types_pb2.Tier, str]] = ..., items: _Optional[_Iterable[_Union[CommitItem, _Mapping]]] = ...) -> None: ...

class PutEnd(_message.Message):
    __slots__ = ["client_id", "key", "tenant", "tier"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    key: bytes
    tenant: str
    tier: _types_pb2.Tier
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., key: _Optional[bytes] = ..., tier: _Optional[_Union[_types_pb2.Tier, str]] = ...) -> None: ...

class PutRevoke(_message.Message):
    __slots__ = ["client_id", "key", "tenant", "tier"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    key: bytes
    tenant: str
    tier: _types_pb2.Tier
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., key: _Optional[bytes] = ..., tier: _Optional[_Union[_types_pb2.Tier, str]] = ...) -> None: ...

class PutStart(_message.Message):
    __slots__ = ["client_id", "config", "group", "key", "placement", "put_discard_timeout_ms", "size", "tenant"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    PUT_DISCARD_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    config: _types_pb2.ReplicaConfig
    group: bytes
    key: bytes
    placement: PlacementStrategy
    put_discard_timeout_ms: int
    size: int
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., key: _Optional[bytes] = ..., group: _Optional[bytes] = ..., size: _Optional[int] = ..., config: _Optional[_Union[_types_pb2.ReplicaConfig, _Mapping]] = ..., placement: _Optional[_Union[PlacementStrategy, str]] = ..., put_discard_timeout_ms: _Optional[int] = ...) -> None: ...

class RegisterTenant(_message.Message):
    __slots__ = ["name", "quota_bytes"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    QUOTA_BYTES_FIELD_NUMBER: _ClassVar[int]
    name: str
    quota_bytes: int
    def __init__(self, name: _Optional[str] = ..., quota_bytes: _Optional[int] = ...) -> None: ...

class Remove(_message.Message):
    __slots__ = ["force", "key", "object_id", "state_epoch", "tenant", "tenant_instance_id"]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    OBJECT_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TENANT_INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    force: bool
    key: bytes
    object_id: int
    state_epoch: int
    tenant: str
    tenant_instance_id: int
    def __init__(self, tenant: _Optional[str] = ..., key: _Optional[bytes] = ..., force: bool = ..., tenant_instance_id: _Optional[int] = ..., object_id: _Optional[int] = ..., state_epoch: _Optional[int] = ...) -> None: ...

class RemoveAll(_message.Message):
    __slots__ = ["force", "state_epoch", "targets", "tenant", "tenant_instance_id"]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    STATE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    TARGETS_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TENANT_INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    force: bool
    state_epoch: int
    targets: _containers.RepeatedCompositeFieldContainer[ObjectRef]
    tenant: str
    tenant_instance_id: int
    def __init__(self, tenant: _Optional[str] = ..., force: bool = ..., tenant_instance_id: _Optional[int] = ..., targets: _Optional[_Iterable[_Union[ObjectRef, _Mapping]]] = ..., state_epoch: _Optional[int] = ...) -> None: ...

class RemoveGroup(_message.Message):
    __slots__ = ["force", "group", "group_id", "max_object_id", "state_epoch", "tenant", "tenant_instance_id"]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_OBJECT_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TENANT_INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    force: bool
    group: bytes
    group_id: int
    max_object_id: int
    state_epoch: int
    tenant: str
    tenant_instance_id: int
    def __init__(self, tenant: _Optional[str] = ..., group: _Optional[bytes] = ..., force: bool = ..., tenant_instance_id: _Optional[int] = ..., group_id: _Optional[int] = ..., max_object_id: _Optional[int] = ..., state_epoch: _Optional[int] = ...) -> None: ...

class ReplicaTaskEnd(_message.Message):
    __slots__ = ["client_id", "key", "kind", "tenant"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    key: bytes
    kind: _types_pb2.TaskKind
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., key: _Optional[bytes] = ..., kind: _Optional[_Union[_types_pb2.TaskKind, str]] = ...) -> None: ...

class ReplicaTaskRevoke(_message.Message):
    __slots__ = ["client_id", "key", "kind", "tenant"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    key: bytes
    kind: _types_pb2.TaskKind
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., key: _Optional[bytes] = ..., kind: _Optional[_Union[_types_pb2.TaskKind, str]] = ...) -> None: ...

class ReplicaTaskStart(_message.Message):
    __slots__ = ["client_id", "key", "kind", "placement", "replicas", "source_segment_id", "target_segment_ids", "tenant"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_SEGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    key: bytes
    kind: _types_pb2.TaskKind
    placement: PlacementStrategy
    replicas: int
    source_segment_id: bytes
    target_segment_ids: _containers.RepeatedScalarFieldContainer[bytes]
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., key: _Optional[bytes] = ..., kind: _Optional[_Union[_types_pb2.TaskKind, str]] = ..., source_segment_id: _Optional[bytes] = ..., target_segment_ids: _Optional[_Iterable[bytes]] = ..., replicas: _Optional[int] = ..., placement: _Optional[_Union[PlacementStrategy, str]] = ...) -> None: ...

class RevokeExpired(_message.Message):
    __slots__ = ["state_epoch", "task_ids", "task_timeout_ns", "tokens"]
    STATE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    TASK_IDS_FIELD_NUMBER: _ClassVar[int]
    TASK_TIMEOUT_NS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    state_epoch: int
    task_ids: _containers.RepeatedScalarFieldContainer[int]
    task_timeout_ns: int
    tokens: _containers.RepeatedCompositeFieldContainer[ObjectToken]
    def __init__(self, tokens: _Optional[_Iterable[_Union[ObjectToken, _Mapping]]] = ..., state_epoch: _Optional[int] = ..., task_ids: _Optional[_Iterable[int]] = ..., task_timeout_ns: _Optional[int] = ...) -> None: ...

class RevokeKey(_message.Message):
    __slots__ = ["id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class RevokeRole(_message.Message):
    __slots__ = ["principal", "role"]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    principal: str
    role: str
    def __init__(self, principal: _Optional[str] = ..., role: _Optional[str] = ...) -> None: ...

class ScheduleDrainMoves(_message.Message):
    __slots__ = ["drain_id", "moves"]
    DRAIN_ID_FIELD_NUMBER: _ClassVar[int]
    MOVES_FIELD_NUMBER: _ClassVar[int]
    drain_id: int
    moves: _containers.RepeatedCompositeFieldContainer[DrainMove]
    def __init__(self, drain_id: _Optional[int] = ..., moves: _Optional[_Iterable[_Union[DrainMove, _Mapping]]] = ...) -> None: ...

class SetMember(_message.Message):
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

class SetQuota(_message.Message):
    __slots__ = ["quota_bytes", "tenant"]
    QUOTA_BYTES_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    quota_bytes: int
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., quota_bytes: _Optional[int] = ...) -> None: ...

class StartDrain(_message.Message):
    __slots__ = ["max_concurrency", "segment_ids", "target_segment_ids"]
    MAX_CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    TARGET_SEGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    max_concurrency: int
    segment_ids: _containers.RepeatedScalarFieldContainer[bytes]
    target_segment_ids: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, segment_ids: _Optional[_Iterable[bytes]] = ..., target_segment_ids: _Optional[_Iterable[bytes]] = ..., max_concurrency: _Optional[int] = ...) -> None: ...

class TokenColumns(_message.Message):
    __slots__ = ["key_lengths", "keys", "object_ids", "tenant_index", "tenant_instance_ids", "tenants", "versions"]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    KEY_LENGTHS_FIELD_NUMBER: _ClassVar[int]
    OBJECT_IDS_FIELD_NUMBER: _ClassVar[int]
    TENANTS_FIELD_NUMBER: _ClassVar[int]
    TENANT_INDEX_FIELD_NUMBER: _ClassVar[int]
    TENANT_INSTANCE_IDS_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    key_lengths: _containers.RepeatedScalarFieldContainer[int]
    keys: bytes
    object_ids: _containers.RepeatedScalarFieldContainer[int]
    tenant_index: _containers.RepeatedScalarFieldContainer[int]
    tenant_instance_ids: _containers.RepeatedScalarFieldContainer[int]
    tenants: _containers.RepeatedScalarFieldContainer[str]
    versions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, tenants: _Optional[_Iterable[str]] = ..., tenant_instance_ids: _Optional[_Iterable[int]] = ..., tenant_index: _Optional[_Iterable[int]] = ..., key_lengths: _Optional[_Iterable[int]] = ..., keys: _Optional[bytes] = ..., object_ids: _Optional[_Iterable[int]] = ..., versions: _Optional[_Iterable[int]] = ...) -> None: ...

class UnmountClosed(_message.Message):
    __slots__ = ["segment_id", "unmount_at_unix_nano"]
    SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    UNMOUNT_AT_UNIX_NANO_FIELD_NUMBER: _ClassVar[int]
    segment_id: bytes
    unmount_at_unix_nano: int
    def __init__(self, segment_id: _Optional[bytes] = ..., unmount_at_unix_nano: _Optional[int] = ...) -> None: ...

class UnmountSegment(_message.Message):
    __slots__ = ["client_id", "reason", "segment_ids"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    reason: UnmountReason
    segment_ids: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, client_id: _Optional[bytes] = ..., segment_ids: _Optional[_Iterable[bytes]] = ..., reason: _Optional[_Union[UnmountReason, str]] = ...) -> None: ...

class UnregisterTenant(_message.Message):
    __slots__ = ["force", "name"]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    force: bool
    name: str
    def __init__(self, name: _Optional[str] = ..., force: bool = ...) -> None: ...

class UpsertEnd(_message.Message):
    __slots__ = ["client_id", "key", "tenant", "tier"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    key: bytes
    tenant: str
    tier: _types_pb2.Tier
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., key: _Optional[bytes] = ..., tier: _Optional[_Union[_types_pb2.Tier, str]] = ...) -> None: ...

class UpsertRevoke(_message.Message):
    __slots__ = ["client_id", "key", "tenant", "tier"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    key: bytes
    tenant: str
    tier: _types_pb2.Tier
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., key: _Optional[bytes] = ..., tier: _Optional[_Union[_types_pb2.Tier, str]] = ...) -> None: ...

class UpsertStart(_message.Message):
    __slots__ = ["client_id", "config", "group", "key", "placement", "put_discard_timeout_ms", "size", "tenant"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    PUT_DISCARD_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    config: _types_pb2.ReplicaConfig
    group: bytes
    key: bytes
    placement: PlacementStrategy
    put_discard_timeout_ms: int
    size: int
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., key: _Optional[bytes] = ..., group: _Optional[bytes] = ..., size: _Optional[int] = ..., config: _Optional[_Union[_types_pb2.ReplicaConfig, _Mapping]] = ..., placement: _Optional[_Union[PlacementStrategy, str]] = ..., put_discard_timeout_ms: _Optional[int] = ...) -> None: ...

class PlacementStrategy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class EvictKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class UnmountReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
