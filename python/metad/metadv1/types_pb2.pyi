from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
DRAIN_STATE_CANCELLED: DrainState
DRAIN_STATE_DONE: DrainState
DRAIN_STATE_RUNNING: DrainState
DRAIN_STATE_UNSPECIFIED: DrainState
REASON_AUTH_LIMIT_EXCEEDED: Reason
REASON_AUTH_REVISION_STALE: Reason
REASON_DRAIN_NOT_FOUND: Reason
REASON_DRAIN_NOT_RUNNING: Reason
REASON_ILLEGAL_CLIENT: Reason
REASON_INVALID_PARAMS: Reason
REASON_INVALID_WRITE: Reason
REASON_KEY_ALREADY_EXISTS: Reason
REASON_KEY_NOT_FOUND: Reason
REASON_LEARNER_NOT_CAUGHT_UP: Reason
REASON_MEMBER_NOT_FOUND: Reason
REASON_NOT_LEADER: Reason
REASON_NO_AVAILABLE_HANDLE: Reason
REASON_NO_REPLICA_ON_SEGMENT: Reason
REASON_OBJECT_ALREADY_EXISTS: Reason
REASON_OBJECT_HAS_LEASE: Reason
REASON_OBJECT_HAS_REPLICATION_TASK: Reason
REASON_OBJECT_NOT_FOUND: Reason
REASON_OBJECT_NO_REPLICATION_TASK: Reason
REASON_RATE_LIMITED: Reason
REASON_REPLICA_IS_NOT_READY: Reason
REASON_REPLICA_NOT_FOUND: Reason
REASON_RESERVATION_LOST: Reason
REASON_RESPONSE_LIMIT_REACHED: Reason
REASON_ROLE_NOT_FOUND: Reason
REASON_SEGMENT_DRAINING: Reason
REASON_SEGMENT_NOT_FOUND: Reason
REASON_SEGMENT_OWNED_BY_OTHER_CLIENT: Reason
REASON_SEQUENCE_TOO_OLD: Reason
REASON_SESSION_EXPIRED: Reason
REASON_STATE_REPLACED: Reason
REASON_TASK_NOT_FOUND: Reason
REASON_TASK_PENDING_LIMIT_EXCEEDED: Reason
REASON_TENANT_ALREADY_EXISTS: Reason
REASON_TENANT_NOT_EMPTY: Reason
REASON_TENANT_NOT_REGISTERED: Reason
REASON_TENANT_QUOTA_EXCEEDED: Reason
REASON_UNAVAILABLE: Reason
REASON_UNSPECIFIED: Reason
REASON_WATCH_COMPACTED: Reason
REASON_WATCH_FELL_BEHIND: Reason
REPLICA_STATUS_COMPLETE: ReplicaStatus
REPLICA_STATUS_PROCESSING: ReplicaStatus
REPLICA_STATUS_UNSPECIFIED: ReplicaStatus
SOFT_PIN_ACTION_DISABLE: SoftPinAction
SOFT_PIN_ACTION_ENABLE: SoftPinAction
SOFT_PIN_ACTION_NONE: SoftPinAction
TASK_KIND_COPY: TaskKind
TASK_KIND_MOVE: TaskKind
TASK_KIND_OFFLOAD: TaskKind
TASK_KIND_PROMOTE: TaskKind
TASK_KIND_UNSPECIFIED: TaskKind
TASK_STATE_FAILED: TaskState
TASK_STATE_PENDING: TaskState
TASK_STATE_PROCESSING: TaskState
TASK_STATE_SUCCESS: TaskState
TASK_STATE_UNSPECIFIED: TaskState
TENANT_STATE_CLOSING: TenantState
TENANT_STATE_OPEN: TenantState
TENANT_STATE_REMOVED: TenantState
TENANT_STATE_UNSPECIFIED: TenantState
TIER_DFS: Tier
TIER_DISK: Tier
TIER_LOCAL_DISK: Tier
TIER_MEMORY: Tier
TIER_NOF: Tier
TIER_UNSPECIFIED: Tier

class DrainJob(_message.Message):
    __slots__ = ["created_unix_nano", "drain_id", "failed", "in_flight_task_ids", "max_concurrency", "moved", "objects_left", "segment_ids", "state", "target_segment_ids", "updated_unix_nano"]
    CREATED_UNIX_NANO_FIELD_NUMBER: _ClassVar[int]
    DRAIN_ID_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    IN_FLIGHT_TASK_IDS_FIELD_NUMBER: _ClassVar[int]
    MAX_CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    MOVED_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_LEFT_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TARGET_SEGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    UPDATED_UNIX_NANO_FIELD_NUMBER: _ClassVar[int]
    created_unix_nano: int
    drain_id: int
    failed: int
    in_flight_task_ids: _containers.RepeatedScalarFieldContainer[int]
    max_concurrency: int
    moved: int
    objects_left: int
    segment_ids: _containers.RepeatedScalarFieldContainer[bytes]
    state: DrainState
    target_segment_ids: _containers.RepeatedScalarFieldContainer[bytes]
    updated_unix_nano: int
    def __init__(self, drain_id: _Optional[int] = ..., segment_ids: _Optional[_Iterable[bytes]] = ..., target_segment_ids: _Optional[_Iterable[bytes]] = ..., max_concurrency: _Optional[int] = ..., state: _Optional[_Union[DrainState, str]] = ..., created_unix_nano: _Optional[int] = ..., updated_unix_nano: _Optional[int] = ..., moved: _Optional[int] = ..., failed: _Optional[int] = ..., in_flight_task_ids: _Optional[_Iterable[int]] = ..., objects_left: _Optional[int] = ...) -> None: ...

class ErrorDetail(_message.Message):
    __slots__ = ["key", "leader_address", "leader_name", "reason", "retry_after_ms", "revision", "tenant"]
    KEY_FIELD_NUMBER: _ClassVar[int]
    LEADER_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    LEADER_NAME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RETRY_AFTER_MS_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    leader_address: str
    leader_name: str
    reason: Reason
    retry_after_ms: int
    revision: Revision
    tenant: str
    def __init__(self, reason: _Optional[_Union[Reason, str]] = ..., tenant: _Optional[str] = ..., key: _Optional[bytes] = ..., leader_name: _Optional[str] = ..., leader_address: _Optional[str] = ..., revision: _Optional[_Union[Revision, _Mapping]] = ..., retry_after_ms: _Optional[int] = ...) -> None: ...

class OffloadResult(_message.Message):
    __slots__ = ["key", "size", "success"]
    KEY_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    size: int
    success: bool
    def __init__(self, key: _Optional[bytes] = ..., size: _Optional[int] = ..., success: bool = ...) -> None: ...

class Replica(_message.Message):
    __slots__ = ["base_address", "offset", "owner_client_id", "replica_id", "segment_endpoint", "segment_id", "size", "status", "tier"]
    BASE_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    OWNER_CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    base_address: int
    offset: int
    owner_client_id: bytes
    replica_id: int
    segment_endpoint: str
    segment_id: bytes
    size: int
    status: ReplicaStatus
    tier: Tier
    def __init__(self, replica_id: _Optional[int] = ..., tier: _Optional[_Union[Tier, str]] = ..., segment_id: _Optional[bytes] = ..., segment_endpoint: _Optional[str] = ..., base_address: _Optional[int] = ..., offset: _Optional[int] = ..., size: _Optional[int] = ..., status: _Optional[_Union[ReplicaStatus, str]] = ..., owner_client_id: _Optional[bytes] = ...) -> None: ...

class ReplicaConfig(_message.Message):
    __slots__ = ["data_type", "dfs_replicas", "hard_pin", "memory_replicas", "nof_replicas", "preferred_host", "preferred_segment_ids", "soft_pin", "soft_pin_ttl_ms"]
    DATA_TYPE_FIELD_NUMBER: _ClassVar[int]
    DFS_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    HARD_PIN_FIELD_NUMBER: _ClassVar[int]
    MEMORY_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    NOF_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_HOST_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_SEGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    SOFT_PIN_FIELD_NUMBER: _ClassVar[int]
    SOFT_PIN_TTL_MS_FIELD_NUMBER: _ClassVar[int]
    data_type: int
    dfs_replicas: int
    hard_pin: bool
    memory_replicas: int
    nof_replicas: int
    preferred_host: str
    preferred_segment_ids: _containers.RepeatedScalarFieldContainer[bytes]
    soft_pin: SoftPinAction
    soft_pin_ttl_ms: int
    def __init__(self, memory_replicas: _Optional[int] = ..., nof_replicas: _Optional[int] = ..., dfs_replicas: _Optional[int] = ..., preferred_segment_ids: _Optional[_Iterable[bytes]] = ..., soft_pin: _Optional[_Union[SoftPinAction, str]] = ..., soft_pin_ttl_ms: _Optional[int] = ..., hard_pin: bool = ..., data_type: _Optional[int] = ..., preferred_host: _Optional[str] = ...) -> None: ...

class Revision(_message.Message):
    __slots__ = ["index", "position"]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    index: int
    position: int
    def __init__(self, index: _Optional[int] = ..., position: _Optional[int] = ...) -> None: ...

class ScheduledTask(_message.Message):
    __slots__ = ["client_id", "created_unix_nano", "drain_id", "key", "kind", "message", "replicas", "size", "source_segment_id", "state", "target_segment_ids", "task_id", "tenant", "updated_unix_nano"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_UNIX_NANO_FIELD_NUMBER: _ClassVar[int]
    DRAIN_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TARGET_SEGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_UNIX_NANO_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    created_unix_nano: int
    drain_id: int
    key: bytes
    kind: TaskKind
    message: str
    replicas: int
    size: int
    source_segment_id: bytes
    state: TaskState
    target_segment_ids: _containers.RepeatedScalarFieldContainer[bytes]
    task_id: int
    tenant: str
    updated_unix_nano: int
    def __init__(self, task_id: _Optional[int] = ..., kind: _Optional[_Union[TaskKind, str]] = ..., tenant: _Optional[str] = ..., key: _Optional[bytes] = ..., source_segment_id: _Optional[bytes] = ..., target_segment_ids: _Optional[_Iterable[bytes]] = ..., replicas: _Optional[int] = ..., client_id: _Optional[bytes] = ..., state: _Optional[_Union[TaskState, str]] = ..., created_unix_nano: _Optional[int] = ..., updated_unix_nano: _Optional[int] = ..., message: _Optional[str] = ..., drain_id: _Optional[int] = ..., size: _Optional[int] = ...) -> None: ...

class SegmentDesc(_message.Message):
    __slots__ = ["base", "endpoint", "id", "name", "offload", "owner_client_id", "size", "tier"]
    BASE_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OFFLOAD_FIELD_NUMBER: _ClassVar[int]
    OWNER_CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    base: int
    endpoint: str
    id: bytes
    name: str
    offload: bool
    owner_client_id: bytes
    size: int
    tier: Tier
    def __init__(self, id: _Optional[bytes] = ..., name: _Optional[str] = ..., base: _Optional[int] = ..., size: _Optional[int] = ..., endpoint: _Optional[str] = ..., tier: _Optional[_Union[Tier, str]] = ..., owner_client_id: _Optional[bytes] = ..., offload: bool = ...) -> None: ...

class SessionHeader(_message.Message):
    __slots__ = ["first_unacked_seq", "seq", "session_id"]
    FIRST_UNACKED_SEQ_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    first_unacked_seq: int
    seq: int
    session_id: int
    def __init__(self, session_id: _Optional[int] = ..., seq: _Optional[int] = ..., first_unacked_seq: _Optional[int] = ...) -> None: ...

class Status(_message.Message):
    __slots__ = ["message", "reason"]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    message: str
    reason: Reason
    def __init__(self, reason: _Optional[_Union[Reason, str]] = ..., message: _Optional[str] = ...) -> None: ...

class Tier(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ReplicaStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Reason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class TaskKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class TenantState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class SoftPinAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class TaskState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class DrainState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
