from metad.metadv1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
WATCH_EVENT_KIND_CHANGED: WatchEventKind
WATCH_EVENT_KIND_EVICTED: WatchEventKind
WATCH_EVENT_KIND_GROUP_CREATED: WatchEventKind
WATCH_EVENT_KIND_GROUP_REMOVED: WatchEventKind
WATCH_EVENT_KIND_REMOVED: WatchEventKind
WATCH_EVENT_KIND_SEGMENT_MOUNTED: WatchEventKind
WATCH_EVENT_KIND_SEGMENT_UNMOUNTED: WatchEventKind
WATCH_EVENT_KIND_STORED: WatchEventKind
WATCH_EVENT_KIND_UNSPECIFIED: WatchEventKind

class BatchExistRequest(_message.Message):
    __slots__ = ["keys", "stale", "tenant"]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedScalarFieldContainer[bytes]
    stale: bool
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., keys: _Optional[_Iterable[bytes]] = ..., stale: bool = ...) -> None: ...

class BatchExistResponse(_message.Message):
    __slots__ = ["exists", "lease_ttl_ms"]
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    LEASE_TTL_MS_FIELD_NUMBER: _ClassVar[int]
    exists: _containers.RepeatedScalarFieldContainer[bool]
    lease_ttl_ms: int
    def __init__(self, exists: _Optional[_Iterable[bool]] = ..., lease_ttl_ms: _Optional[int] = ...) -> None: ...

class BatchGetRequest(_message.Message):
    __slots__ = ["keys", "stale", "tenant"]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedScalarFieldContainer[bytes]
    stale: bool
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., keys: _Optional[_Iterable[bytes]] = ..., stale: bool = ...) -> None: ...

class BatchGetResponse(_message.Message):
    __slots__ = ["lease_ttl_ms", "results"]
    class Result(_message.Message):
        __slots__ = ["data_type", "replicas", "size", "status"]
        DATA_TYPE_FIELD_NUMBER: _ClassVar[int]
        REPLICAS_FIELD_NUMBER: _ClassVar[int]
        SIZE_FIELD_NUMBER: _ClassVar[int]
        STATUS_FIELD_NUMBER: _ClassVar[int]
        data_type: int
        replicas: _containers.RepeatedCompositeFieldContainer[_types_pb2.Replica]
        size: int
        status: _types_pb2.Status
        def __init__(self, status: _Optional[_Union[_types_pb2.Status, _Mapping]] = ..., replicas: _Optional[_Iterable[_Union[_types_pb2.Replica, _Mapping]]] = ..., size: _Optional[int] = ..., data_type: _Optional[int] = ...) -> None: ...
    LEASE_TTL_MS_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    lease_ttl_ms: int
    results: _containers.RepeatedCompositeFieldContainer[BatchGetResponse.Result]
    def __init__(self, results: _Optional[_Iterable[_Union[BatchGetResponse.Result, _Mapping]]] = ..., lease_ttl_ms: _Optional[int] = ...) -> None: ...

class BatchPutEndRequest(_message.Message):
    __slots__ = ["client_id", "keys", "session", "tenant", "tier"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    keys: _containers.RepeatedScalarFieldContainer[bytes]
    session: _types_pb2.SessionHeader
    tenant: str
    tier: _types_pb2.Tier
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., keys: _Optional[_Iterable[bytes]] = ..., tier: _Optional[_Union[_types_pb2.Tier, str]] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class BatchPutEndResponse(_message.Message):
    __slots__ = ["results"]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[_types_pb2.Status]
    def __init__(self, results: _Optional[_Iterable[_Union[_types_pb2.Status, _Mapping]]] = ...) -> None: ...

class BatchPutRevokeRequest(_message.Message):
    __slots__ = ["client_id", "keys", "session", "tenant", "tier"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    keys: _containers.RepeatedScalarFieldContainer[bytes]
    session: _types_pb2.SessionHeader
    tenant: str
    tier: _types_pb2.Tier
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., keys: _Optional[_Iterable[bytes]] = ..., tier: _Optional[_Union[_types_pb2.Tier, str]] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class BatchPutRevokeResponse(_message.Message):
    __slots__ = ["results"]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[_types_pb2.Status]
    def __init__(self, results: _Optional[_Iterable[_Union[_types_pb2.Status, _Mapping]]] = ...) -> None: ...

class BatchPutStartRequest(_message.Message):
    __slots__ = ["client_id", "config", "items", "session", "tenant"]
    class Item(_message.Message):
        __slots__ = ["group", "key", "size"]
        GROUP_FIELD_NUMBER: _ClassVar[int]
        KEY_FIELD_NUMBER: _ClassVar[int]
        SIZE_FIELD_NUMBER: _ClassVar[int]
        group: bytes
        key: bytes
        size: int
        def __init__(self, key: _Optional[bytes] = ..., group: _Optional[bytes] = ..., size: _Optional[int] = ...) -> None: ...
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    config: _types_pb2.ReplicaConfig
    items: _containers.RepeatedCompositeFieldContainer[BatchPutStartRequest.Item]
    session: _types_pb2.SessionHeader
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., items: _Optional[_Iterable[_Union[BatchPutStartRequest.Item, _Mapping]]] = ..., config: _Optional[_Union[_types_pb2.ReplicaConfig, _Mapping]] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class BatchPutStartResponse(_message.Message):
    __slots__ = ["results"]
    class Result(_message.Message):
        __slots__ = ["replicas", "status"]
        REPLICAS_FIELD_NUMBER: _ClassVar[int]
        STATUS_FIELD_NUMBER: _ClassVar[int]
        replicas: _containers.RepeatedCompositeFieldContainer[_types_pb2.Replica]
        status: _types_pb2.Status
        def __init__(self, status: _Optional[_Union[_types_pb2.Status, _Mapping]] = ..., replicas: _Optional[_Iterable[_Union[_types_pb2.Replica, _Mapping]]] = ...) -> None: ...
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[BatchPutStartResponse.Result]
    def __init__(self, results: _Optional[_Iterable[_Union[BatchPutStartResponse.Result, _Mapping]]] = ...) -> None: ...

class BatchRemoveRequest(_message.Message):
    __slots__ = ["force", "keys", "session", "tenant"]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    force: bool
    keys: _containers.RepeatedScalarFieldContainer[bytes]
    session: _types_pb2.SessionHeader
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., keys: _Optional[_Iterable[bytes]] = ..., force: bool = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class BatchRemoveResponse(_message.Message):
    __slots__ = ["results"]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[_types_pb2.Status]
    def __init__(self, results: _Optional[_Iterable[_Union[_types_pb2.Status, _Mapping]]] = ...) -> None: ...

class BatchReplicaClearRequest(_message.Message):
    __slots__ = ["client_id", "keys", "segment_id", "session", "tenant"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    keys: _containers.RepeatedScalarFieldContainer[bytes]
    segment_id: bytes
    session: _types_pb2.SessionHeader
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., keys: _Optional[_Iterable[bytes]] = ..., segment_id: _Optional[bytes] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class BatchReplicaClearResponse(_message.Message):
    __slots__ = ["results"]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[_types_pb2.Status]
    def __init__(self, results: _Optional[_Iterable[_Union[_types_pb2.Status, _Mapping]]] = ...) -> None: ...

class CloseSessionRequest(_message.Message):
    __slots__ = ["session_id"]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: int
    def __init__(self, session_id: _Optional[int] = ...) -> None: ...

class CloseSessionResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class CopyEndRequest(_message.Message):
    __slots__ = ["client_id", "key", "session", "tenant"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    key: bytes
    session: _types_pb2.SessionHeader
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., key: _Optional[bytes] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class CopyEndResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class CopyRevokeRequest(_message.Message):
    __slots__ = ["client_id", "key", "session", "tenant"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    key: bytes
    session: _types_pb2.SessionHeader
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., key: _Optional[bytes] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class CopyRevokeResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class CopyStartRequest(_message.Message):
    __slots__ = ["client_id", "key", "replicas", "session", "source_segment_id", "target_segment_ids", "tenant"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    SOURCE_SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_SEGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    key: bytes
    replicas: int
    session: _types_pb2.SessionHeader
    source_segment_id: bytes
    target_segment_ids: _containers.RepeatedScalarFieldContainer[bytes]
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., key: _Optional[bytes] = ..., source_segment_id: _Optional[bytes] = ..., target_segment_ids: _Optional[_Iterable[bytes]] = ..., replicas: _Optional[int] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class CopyStartResponse(_message.Message):
    __slots__ = ["source", "targets"]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TARGETS_FIELD_NUMBER: _ClassVar[int]
    source: _types_pb2.Replica
    targets: _containers.RepeatedCompositeFieldContainer[_types_pb2.Replica]
    def __init__(self, source: _Optional[_Union[_types_pb2.Replica, _Mapping]] = ..., targets: _Optional[_Iterable[_Union[_types_pb2.Replica, _Mapping]]] = ...) -> None: ...

class CreateCopyTaskRequest(_message.Message):
    __slots__ = ["key", "replicas", "session", "source_segment_id", "target_segment_ids", "tenant"]
    KEY_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    SOURCE_SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_SEGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    replicas: int
    session: _types_pb2.SessionHeader
    source_segment_id: bytes
    target_segment_ids: _containers.RepeatedScalarFieldContainer[bytes]
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., key: _Optional[bytes] = ..., source_segment_id: _Optional[bytes] = ..., target_segment_ids: _Optional[_Iterable[bytes]] = ..., replicas: _Optional[int] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class CreateCopyTaskResponse(_message.Message):
    __slots__ = ["task_id"]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: int
    def __init__(self, task_id: _Optional[int] = ...) -> None: ...

class CreateMoveTaskRequest(_message.Message):
    __slots__ = ["key", "session", "source_segment_id", "target_segment_id", "tenant"]
    KEY_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    SOURCE_SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    session: _types_pb2.SessionHeader
    source_segment_id: bytes
    target_segment_id: bytes
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., key: _Optional[bytes] = ..., source_segment_id: _Optional[bytes] = ..., target_segment_id: _Optional[bytes] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class CreateMoveTaskResponse(_message.Message):
    __slots__ = ["task_id"]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: int
    def __init__(self, task_id: _Optional[int] = ...) -> None: ...

class EvictDiskReplicaRequest(_message.Message):
    __slots__ = ["client_id", "keys", "session", "tenant", "tier"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    keys: _containers.RepeatedScalarFieldContainer[bytes]
    session: _types_pb2.SessionHeader
    tenant: str
    tier: _types_pb2.Tier
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., keys: _Optional[_Iterable[bytes]] = ..., tier: _Optional[_Union[_types_pb2.Tier, str]] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class EvictDiskReplicaResponse(_message.Message):
    __slots__ = ["results"]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[_types_pb2.Status]
    def __init__(self, results: _Optional[_Iterable[_Union[_types_pb2.Status, _Mapping]]] = ...) -> None: ...

class ExistRequest(_message.Message):
    __slots__ = ["key", "stale", "tenant"]
    KEY_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    stale: bool
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., key: _Optional[bytes] = ..., stale: bool = ...) -> None: ...

class ExistResponse(_message.Message):
    __slots__ = ["exists", "lease_ttl_ms"]
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    LEASE_TTL_MS_FIELD_NUMBER: _ClassVar[int]
    exists: bool
    lease_ttl_ms: int
    def __init__(self, exists: bool = ..., lease_ttl_ms: _Optional[int] = ...) -> None: ...

class FetchTasksRequest(_message.Message):
    __slots__ = ["batch", "client_id", "session"]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    batch: int
    client_id: bytes
    session: _types_pb2.SessionHeader
    def __init__(self, client_id: _Optional[bytes] = ..., batch: _Optional[int] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class FetchTasksResponse(_message.Message):
    __slots__ = ["tasks"]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[_types_pb2.ScheduledTask]
    def __init__(self, tasks: _Optional[_Iterable[_Union[_types_pb2.ScheduledTask, _Mapping]]] = ...) -> None: ...

class GetByRegexRequest(_message.Message):
    __slots__ = ["limit", "page_token", "pattern", "stale", "tenant"]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    page_token: bytes
    pattern: str
    stale: bool
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., pattern: _Optional[str] = ..., page_token: _Optional[bytes] = ..., limit: _Optional[int] = ..., stale: bool = ...) -> None: ...

class GetByRegexResponse(_message.Message):
    __slots__ = ["items", "lease_ttl_ms", "next_page_token"]
    class Item(_message.Message):
        __slots__ = ["data_type", "key", "replicas", "size"]
        DATA_TYPE_FIELD_NUMBER: _ClassVar[int]
        KEY_FIELD_NUMBER: _ClassVar[int]
        REPLICAS_FIELD_NUMBER: _ClassVar[int]
        SIZE_FIELD_NUMBER: _ClassVar[int]
        data_type: int
        key: bytes
        replicas: _containers.RepeatedCompositeFieldContainer[_types_pb2.Replica]
        size: int
        def __init__(self, key: _Optional[bytes] = ..., replicas: _Optional[_Iterable[_Union[_types_pb2.Replica, _Mapping]]] = ..., size: _Optional[int] = ..., data_type: _Optional[int] = ...) -> None: ...
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    LEASE_TTL_MS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[GetByRegexResponse.Item]
    lease_ttl_ms: int
    next_page_token: bytes
    def __init__(self, items: _Optional[_Iterable[_Union[GetByRegexResponse.Item, _Mapping]]] = ..., lease_ttl_ms: _Optional[int] = ..., next_page_token: _Optional[bytes] = ...) -> None: ...

class GetRequest(_message.Message):
    __slots__ = ["key", "stale", "tenant"]
    KEY_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    stale: bool
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., key: _Optional[bytes] = ..., stale: bool = ...) -> None: ...

class GetResponse(_message.Message):
    __slots__ = ["data_type", "lease_ttl_ms", "replicas", "size"]
    DATA_TYPE_FIELD_NUMBER: _ClassVar[int]
    LEASE_TTL_MS_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    data_type: int
    lease_ttl_ms: int
    replicas: _containers.RepeatedCompositeFieldContainer[_types_pb2.Replica]
    size: int
    def __init__(self, replicas: _Optional[_Iterable[_Union[_types_pb2.Replica, _Mapping]]] = ..., lease_ttl_ms: _Optional[int] = ..., size: _Optional[int] = ..., data_type: _Optional[int] = ...) -> None: ...

class ListGroupRequest(_message.Message):
    __slots__ = ["group", "limit", "stale", "start_after", "tenant"]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    START_AFTER_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    group: bytes
    limit: int
    stale: bool
    start_after: bytes
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., group: _Optional[bytes] = ..., stale: bool = ..., start_after: _Optional[bytes] = ..., limit: _Optional[int] = ...) -> None: ...

class ListGroupResponse(_message.Message):
    __slots__ = ["keys", "truncated"]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedScalarFieldContainer[bytes]
    truncated: bool
    def __init__(self, keys: _Optional[_Iterable[bytes]] = ..., truncated: bool = ...) -> None: ...

class ListObjectKeysRequest(_message.Message):
    __slots__ = ["limit", "page_token", "prefix", "stale", "tenant"]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    page_token: bytes
    prefix: bytes
    stale: bool
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., prefix: _Optional[bytes] = ..., page_token: _Optional[bytes] = ..., limit: _Optional[int] = ..., stale: bool = ...) -> None: ...

class ListObjectKeysResponse(_message.Message):
    __slots__ = ["keys", "next_page_token"]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedScalarFieldContainer[bytes]
    next_page_token: bytes
    def __init__(self, keys: _Optional[_Iterable[bytes]] = ..., next_page_token: _Optional[bytes] = ...) -> None: ...

class ListTasksRequest(_message.Message):
    __slots__ = ["limit", "start_after", "state", "tenant"]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    START_AFTER_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    start_after: int
    state: _types_pb2.TaskState
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., start_after: _Optional[int] = ..., limit: _Optional[int] = ..., state: _Optional[_Union[_types_pb2.TaskState, str]] = ...) -> None: ...

class ListTasksResponse(_message.Message):
    __slots__ = ["tasks", "truncated"]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[_types_pb2.ScheduledTask]
    truncated: bool
    def __init__(self, tasks: _Optional[_Iterable[_Union[_types_pb2.ScheduledTask, _Mapping]]] = ..., truncated: bool = ...) -> None: ...

class MarkTaskToCompleteRequest(_message.Message):
    __slots__ = ["client_id", "message", "session", "success", "task_id"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    message: str
    session: _types_pb2.SessionHeader
    success: bool
    task_id: int
    def __init__(self, client_id: _Optional[bytes] = ..., task_id: _Optional[int] = ..., success: bool = ..., message: _Optional[str] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class MarkTaskToCompleteResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class MountLocalDiskRequest(_message.Message):
    __slots__ = ["capacity_bytes", "client_id", "endpoint", "offload", "session"]
    CAPACITY_BYTES_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    OFFLOAD_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    capacity_bytes: int
    client_id: bytes
    endpoint: str
    offload: bool
    session: _types_pb2.SessionHeader
    def __init__(self, client_id: _Optional[bytes] = ..., capacity_bytes: _Optional[int] = ..., endpoint: _Optional[str] = ..., offload: bool = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class MountLocalDiskResponse(_message.Message):
    __slots__ = ["created", "segment_id"]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    created: bool
    segment_id: bytes
    def __init__(self, segment_id: _Optional[bytes] = ..., created: bool = ...) -> None: ...

class MountSegmentRequest(_message.Message):
    __slots__ = ["client_id", "segment", "session"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    segment: _types_pb2.SegmentDesc
    session: _types_pb2.SessionHeader
    def __init__(self, client_id: _Optional[bytes] = ..., segment: _Optional[_Union[_types_pb2.SegmentDesc, _Mapping]] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class MountSegmentResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class MoveEndRequest(_message.Message):
    __slots__ = ["client_id", "key", "session", "tenant"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    key: bytes
    session: _types_pb2.SessionHeader
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., key: _Optional[bytes] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class MoveEndResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class MoveRevokeRequest(_message.Message):
    __slots__ = ["client_id", "key", "session", "tenant"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    key: bytes
    session: _types_pb2.SessionHeader
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., key: _Optional[bytes] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class MoveRevokeResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class MoveStartRequest(_message.Message):
    __slots__ = ["client_id", "key", "session", "source_segment_id", "target_segment_id", "tenant"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    SOURCE_SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    key: bytes
    session: _types_pb2.SessionHeader
    source_segment_id: bytes
    target_segment_id: bytes
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., key: _Optional[bytes] = ..., source_segment_id: _Optional[bytes] = ..., target_segment_id: _Optional[bytes] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class MoveStartResponse(_message.Message):
    __slots__ = ["source", "target"]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    source: _types_pb2.Replica
    target: _types_pb2.Replica
    def __init__(self, source: _Optional[_Union[_types_pb2.Replica, _Mapping]] = ..., target: _Optional[_Union[_types_pb2.Replica, _Mapping]] = ...) -> None: ...

class NotifyOffloadRequest(_message.Message):
    __slots__ = ["client_id", "results", "session", "tenant"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    results: _containers.RepeatedCompositeFieldContainer[_types_pb2.OffloadResult]
    session: _types_pb2.SessionHeader
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., results: _Optional[_Iterable[_Union[_types_pb2.OffloadResult, _Mapping]]] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class NotifyOffloadResponse(_message.Message):
    __slots__ = ["results"]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[_types_pb2.Status]
    def __init__(self, results: _Optional[_Iterable[_Union[_types_pb2.Status, _Mapping]]] = ...) -> None: ...

class NotifyPromotionRequest(_message.Message):
    __slots__ = ["client_id", "key", "session", "success", "tenant"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    key: bytes
    session: _types_pb2.SessionHeader
    success: bool
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., key: _Optional[bytes] = ..., success: bool = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class NotifyPromotionResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class OpenSessionRequest(_message.Message):
    __slots__ = ["client_id"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    def __init__(self, client_id: _Optional[bytes] = ...) -> None: ...

class OpenSessionResponse(_message.Message):
    __slots__ = ["session_id", "ttl_ms", "window"]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    session_id: int
    ttl_ms: int
    window: int
    def __init__(self, session_id: _Optional[int] = ..., ttl_ms: _Optional[int] = ..., window: _Optional[int] = ...) -> None: ...

class PingRequest(_message.Message):
    __slots__ = ["client_id"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    def __init__(self, client_id: _Optional[bytes] = ...) -> None: ...

class PingResponse(_message.Message):
    __slots__ = ["client_ttl_ms", "leader_address", "leader_name", "member_addresses", "segment_ids", "term"]
    CLIENT_TTL_MS_FIELD_NUMBER: _ClassVar[int]
    LEADER_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    LEADER_NAME_FIELD_NUMBER: _ClassVar[int]
    MEMBER_ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    client_ttl_ms: int
    leader_address: str
    leader_name: str
    member_addresses: _containers.RepeatedScalarFieldContainer[str]
    segment_ids: _containers.RepeatedScalarFieldContainer[bytes]
    term: int
    def __init__(self, segment_ids: _Optional[_Iterable[bytes]] = ..., client_ttl_ms: _Optional[int] = ..., leader_name: _Optional[str] = ..., leader_address: _Optional[str] = ..., member_addresses: _Optional[_Iterable[str]] = ..., term: _Optional[int] = ...) -> None: ...

class PromotionAllocStartRequest(_message.Message):
    __slots__ = ["client_id", "key", "preferred_segment_ids", "session", "tenant"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_SEGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    key: bytes
    preferred_segment_ids: _containers.RepeatedScalarFieldContainer[bytes]
    session: _types_pb2.SessionHeader
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., key: _Optional[bytes] = ..., preferred_segment_ids: _Optional[_Iterable[bytes]] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class PromotionAllocStartResponse(_message.Message):
    __slots__ = ["replica", "size"]
    REPLICA_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    replica: _types_pb2.Replica
    size: int
    def __init__(self, replica: _Optional[_Union[_types_pb2.Replica, _Mapping]] = ..., size: _Optional[int] = ...) -> None: ...

class PutEndRequest(_message.Message):
    __slots__ = ["client_id", "key", "session", "tenant", "tier"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    key: bytes
    session: _types_pb2.SessionHeader
    tenant: str
    tier: _types_pb2.Tier
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., key: _Optional[bytes] = ..., tier: _Optional[_Union[_types_pb2.Tier, str]] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class PutEndResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class PutRevokeRequest(_message.Message):
    __slots__ = ["client_id", "key", "session", "tenant", "tier"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    key: bytes
    session: _types_pb2.SessionHeader
    tenant: str
    tier: _types_pb2.Tier
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., key: _Optional[bytes] = ..., tier: _Optional[_Union[_types_pb2.Tier, str]] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class PutRevokeResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class PutStartRequest(_message.Message):
    __slots__ = ["client_id", "config", "group", "key", "session", "size", "tenant"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    config: _types_pb2.ReplicaConfig
    group: bytes
    key: bytes
    session: _types_pb2.SessionHeader
    size: int
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., key: _Optional[bytes] = ..., group: _Optional[bytes] = ..., size: _Optional[int] = ..., config: _Optional[_Union[_types_pb2.ReplicaConfig, _Mapping]] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class PutStartResponse(_message.Message):
    __slots__ = ["replicas"]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    replicas: _containers.RepeatedCompositeFieldContainer[_types_pb2.Replica]
    def __init__(self, replicas: _Optional[_Iterable[_Union[_types_pb2.Replica, _Mapping]]] = ...) -> None: ...

class QueryTaskRequest(_message.Message):
    __slots__ = ["task_id", "tenant"]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    task_id: int
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., task_id: _Optional[int] = ...) -> None: ...

class QueryTaskResponse(_message.Message):
    __slots__ = ["task"]
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: _types_pb2.ScheduledTask
    def __init__(self, task: _Optional[_Union[_types_pb2.ScheduledTask, _Mapping]] = ...) -> None: ...

class RemoveAllRequest(_message.Message):
    __slots__ = ["force", "tenant"]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    force: bool
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., force: bool = ...) -> None: ...

class RemoveAllResponse(_message.Message):
    __slots__ = ["removed", "skipped"]
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    removed: int
    skipped: int
    def __init__(self, removed: _Optional[int] = ..., skipped: _Optional[int] = ...) -> None: ...

class RemoveByRegexRequest(_message.Message):
    __slots__ = ["force", "limit", "page_token", "pattern", "session", "tenant"]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    force: bool
    limit: int
    page_token: bytes
    pattern: str
    session: _types_pb2.SessionHeader
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., pattern: _Optional[str] = ..., page_token: _Optional[bytes] = ..., limit: _Optional[int] = ..., force: bool = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class RemoveByRegexResponse(_message.Message):
    __slots__ = ["next_page_token", "results"]
    class Result(_message.Message):
        __slots__ = ["key", "status"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        STATUS_FIELD_NUMBER: _ClassVar[int]
        key: bytes
        status: _types_pb2.Status
        def __init__(self, key: _Optional[bytes] = ..., status: _Optional[_Union[_types_pb2.Status, _Mapping]] = ...) -> None: ...
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    next_page_token: bytes
    results: _containers.RepeatedCompositeFieldContainer[RemoveByRegexResponse.Result]
    def __init__(self, results: _Optional[_Iterable[_Union[RemoveByRegexResponse.Result, _Mapping]]] = ..., next_page_token: _Optional[bytes] = ...) -> None: ...

class RemoveGroupRequest(_message.Message):
    __slots__ = ["force", "group", "session", "tenant"]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    force: bool
    group: bytes
    session: _types_pb2.SessionHeader
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., group: _Optional[bytes] = ..., force: bool = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class RemoveGroupResponse(_message.Message):
    __slots__ = ["removed"]
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    removed: int
    def __init__(self, removed: _Optional[int] = ...) -> None: ...

class RemoveRequest(_message.Message):
    __slots__ = ["force", "key", "session", "tenant"]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    force: bool
    key: bytes
    session: _types_pb2.SessionHeader
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., key: _Optional[bytes] = ..., force: bool = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class RemoveResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class UnmountLocalDiskRequest(_message.Message):
    __slots__ = ["client_id", "session"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    session: _types_pb2.SessionHeader
    def __init__(self, client_id: _Optional[bytes] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class UnmountLocalDiskResponse(_message.Message):
    __slots__ = ["objects_erased", "replicas_dropped"]
    OBJECTS_ERASED_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_DROPPED_FIELD_NUMBER: _ClassVar[int]
    objects_erased: int
    replicas_dropped: int
    def __init__(self, replicas_dropped: _Optional[int] = ..., objects_erased: _Optional[int] = ...) -> None: ...

class UnmountSegmentRequest(_message.Message):
    __slots__ = ["client_id", "grace_ms", "segment_id", "session"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    GRACE_MS_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    grace_ms: int
    segment_id: bytes
    session: _types_pb2.SessionHeader
    def __init__(self, client_id: _Optional[bytes] = ..., segment_id: _Optional[bytes] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ..., grace_ms: _Optional[int] = ...) -> None: ...

class UnmountSegmentResponse(_message.Message):
    __slots__ = ["closing", "objects_erased", "replicas_dropped", "unmount_at_unix_nano"]
    CLOSING_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_ERASED_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_DROPPED_FIELD_NUMBER: _ClassVar[int]
    UNMOUNT_AT_UNIX_NANO_FIELD_NUMBER: _ClassVar[int]
    closing: bool
    objects_erased: int
    replicas_dropped: int
    unmount_at_unix_nano: int
    def __init__(self, replicas_dropped: _Optional[int] = ..., objects_erased: _Optional[int] = ..., closing: bool = ..., unmount_at_unix_nano: _Optional[int] = ...) -> None: ...

class UpsertEndRequest(_message.Message):
    __slots__ = ["client_id", "key", "session", "tenant", "tier"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    key: bytes
    session: _types_pb2.SessionHeader
    tenant: str
    tier: _types_pb2.Tier
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., key: _Optional[bytes] = ..., tier: _Optional[_Union[_types_pb2.Tier, str]] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class UpsertEndResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class UpsertRevokeRequest(_message.Message):
    __slots__ = ["client_id", "key", "session", "tenant", "tier"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    key: bytes
    session: _types_pb2.SessionHeader
    tenant: str
    tier: _types_pb2.Tier
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., key: _Optional[bytes] = ..., tier: _Optional[_Union[_types_pb2.Tier, str]] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class UpsertRevokeResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class UpsertStartRequest(_message.Message):
    __slots__ = ["client_id", "config", "group", "key", "session", "size", "tenant"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    client_id: bytes
    config: _types_pb2.ReplicaConfig
    group: bytes
    key: bytes
    session: _types_pb2.SessionHeader
    size: int
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., client_id: _Optional[bytes] = ..., key: _Optional[bytes] = ..., group: _Optional[bytes] = ..., size: _Optional[int] = ..., config: _Optional[_Union[_types_pb2.ReplicaConfig, _Mapping]] = ..., session: _Optional[_Union[_types_pb2.SessionHeader, _Mapping]] = ...) -> None: ...

class UpsertStartResponse(_message.Message):
    __slots__ = ["replicas", "reused"]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    REUSED_FIELD_NUMBER: _ClassVar[int]
    replicas: _containers.RepeatedCompositeFieldContainer[_types_pb2.Replica]
    reused: bool
    def __init__(self, replicas: _Optional[_Iterable[_Union[_types_pb2.Replica, _Mapping]]] = ..., reused: bool = ...) -> None: ...

class WatchEvent(_message.Message):
    __slots__ = ["group", "key", "kind", "replicas", "revision", "segment", "size", "tenant", "time_unix_nano"]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TIME_UNIX_NANO_FIELD_NUMBER: _ClassVar[int]
    group: bytes
    key: bytes
    kind: WatchEventKind
    replicas: _containers.RepeatedCompositeFieldContainer[_types_pb2.Replica]
    revision: _types_pb2.Revision
    segment: _types_pb2.SegmentDesc
    size: int
    tenant: str
    time_unix_nano: int
    def __init__(self, revision: _Optional[_Union[_types_pb2.Revision, _Mapping]] = ..., kind: _Optional[_Union[WatchEventKind, str]] = ..., tenant: _Optional[str] = ..., key: _Optional[bytes] = ..., group: _Optional[bytes] = ..., size: _Optional[int] = ..., replicas: _Optional[_Iterable[_Union[_types_pb2.Replica, _Mapping]]] = ..., time_unix_nano: _Optional[int] = ..., segment: _Optional[_Union[_types_pb2.SegmentDesc, _Mapping]] = ...) -> None: ...

class WatchRequest(_message.Message):
    __slots__ = ["all_tenants", "key_prefix", "kinds", "progress_interval_ms", "start", "tenant"]
    ALL_TENANTS_FIELD_NUMBER: _ClassVar[int]
    KEY_PREFIX_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    all_tenants: bool
    key_prefix: bytes
    kinds: _containers.RepeatedScalarFieldContainer[WatchEventKind]
    progress_interval_ms: int
    start: _types_pb2.Revision
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., all_tenants: bool = ..., key_prefix: _Optional[bytes] = ..., kinds: _Optional[_Iterable[_Union[WatchEventKind, str]]] = ..., start: _Optional[_Union[_types_pb2.Revision, _Mapping]] = ..., progress_interval_ms: _Optional[int] = ...) -> None: ...

class WatchResponse(_message.Message):
    __slots__ = ["applied_index", "commit_index", "events", "next"]
    APPLIED_INDEX_FIELD_NUMBER: _ClassVar[int]
    COMMIT_INDEX_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_FIELD_NUMBER: _ClassVar[int]
    applied_index: int
    commit_index: int
    events: _containers.RepeatedCompositeFieldContainer[WatchEvent]
    next: _types_pb2.Revision
    def __init__(self, events: _Optional[_Iterable[_Union[WatchEvent, _Mapping]]] = ..., next: _Optional[_Union[_types_pb2.Revision, _Mapping]] = ..., applied_index: _Optional[int] = ..., commit_index: _Optional[int] = ...) -> None: ...

class WatchEventKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
