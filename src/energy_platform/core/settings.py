"""Typed settings, read once from ``EP_*`` environment variables and passed in.

Each section below maps to variables named ``EP_<SECTION>_<FIELD>``, for example
``EP_DATABASE_URL`` or ``EP_HTTP_API_PORT``. Nothing in the package reads the environment on
its own: the CLI calls :meth:`Settings.from_env` once and hands the result down.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from ipaddress import IPv4Network, IPv6Network, ip_network
from typing import Any, ClassVar, Literal
from urllib.parse import unquote, urlsplit, urlunsplit

import msgspec

from energy_platform.core.errors import ConfigurationError

IPNetwork = IPv4Network | IPv6Network

# Variables renamed when their setting moved to another section: the old name still works and
# the CLI warns at start (``renamed_variables``) until deployments have moved to the new one.
# Issue 47 named each section for its domain: ingest's settings are the devices' (the service
# keeps its name, ``serve ingest``), the rules' the notifications', the corrections' history's.
RENAMED: dict[str, str] = {
    "EP_DEVICES_TFTP_PORT": "EP_PROVISIONING_TFTP_PORT",
    **{
        f"EP_INGEST_{name}": f"EP_DEVICES_{name}"
        for name in (
            "RECEIVE_MAXIMUM",
            "BATCH_MESSAGES",
            "BATCH_LINGER_MS",
            "ROUTE_CACHE_SECONDS",
            "CACHE_SIZE",
            "DEAD_LETTER_DAYS",
            "COAP_REQUESTS_PER_MINUTE",
            "COAP_BURST",
            "COAP_MAX_BODY_BYTES",
            "COAP_DATA_SERVER",
        )
    },
    **{
        f"EP_RULES_{name}": f"EP_NOTIFICATIONS_{name}"
        for name in (
            "INTERVAL",
            "OFFLINE_AFTER",
            "SILENT_AFTER",
            "SUBSCRIPTION_DAYS",
            "UNUSUAL_FACTOR",
            "UNUSUAL_SETTLE",
            "UNUSUAL_BATCH",
        )
    },
    "EP_CORRECTIONS_DAYS": "EP_HISTORY_CORRECTIONS_DAYS",
    # Issue 60 gave money and pairing their sections: the currency is billing's (the engine
    # only gives it to new cost streams), and this cluster's place at provisioning is pairing's.
    "EP_ENGINE_CURRENCY": "EP_BILLING_CURRENCY",
    "EP_CLUSTER_PROVISIONING_URL": "EP_PAIRING_PROVISIONING_URL",
    "EP_CLUSTER_SECRET": "EP_PAIRING_CLUSTER_SECRET",
    "EP_CLUSTER_ACCOUNTS_SYNC_INTERVAL": "EP_PAIRING_ACCOUNTS_SYNC_INTERVAL",
}


class Section(msgspec.Struct, frozen=True, kw_only=True):
    """A section of the settings. Its repr hides secrets, because settings end up in
    tracebacks and test reports: a field named in ``SECRETS`` shows only whether it is set, and
    a URL (a field whose name ends in ``url``, a URL or a ``key=value`` DSN) shows without its
    passwords."""

    SECRETS: ClassVar[frozenset[str]] = frozenset()

    def __repr__(self) -> str:
        fields = []
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if name in self.SECRETS:
                shown = "<set>" if value else "<unset>"
            elif name.endswith("url"):
                shown = repr(without_password(value))
            else:
                shown = repr(value)
            fields.append(f"{name}={shown}")
        return f"{type(self).__name__}({', '.join(fields)})"


def without_password(dsn: str) -> str:
    """``dsn`` with every password in it replaced by ``***``: a URL's userinfo and its query
    parameters named ``...password`` (libpq takes ``?password=``), or libpq's ``key=value``
    form (``host=db password=secret``, ``password = 'it\\'s'``, quoted or not)."""
    if not _URL.match(dsn):
        return _KEY_VALUE_PASSWORD.sub(r"\g<key>***", dsn)
    try:
        parts = urlsplit(dsn)
        password = parts.password
    except ValueError:
        return "***"  # not a URL Python can read: where its password is cannot be told
    if password is not None:
        user = f"{parts.username}:***" if parts.username else ":***"
        host = parts.netloc.rpartition("@")[2]
        parts = parts._replace(netloc=f"{user}@{host}")
    if parts.query:
        parts = parts._replace(
            query="&".join(map(_without_password_parameter, parts.query.split("&")))
        )
    return urlunsplit(parts)


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
# libpq's key=value form: a keyword ending in "password" (sslpassword too), then a value quoted
# in single quotes (backslash escapes inside; unterminated: to the end) or a run up to the next
# blank.
_KEY_VALUE_PASSWORD = re.compile(
    r"(?P<key>(?<![^\s])[A-Za-z_]*password\s*=\s*)(?:'(?:[^'\\]|\\.)*'?|(?:[^\s\\]|\\.)+)",
    re.IGNORECASE,
)


def _without_password_parameter(parameter: str) -> str:
    # libpq decodes a parameter's name too: pass%77ord is a password.
    name, equals, _ = parameter.partition("=")
    if equals and unquote(name).lower().endswith("password"):
        return f"{name}=***"
    return parameter


class DatabaseSettings(Section, frozen=True, kw_only=True):
    url: str = "postgresql://postgres@127.0.0.1:54329/energy_platform"
    """PostgreSQL (with TimescaleDB) connection URL."""
    read_url: str = ""
    """A streaming replica of it that the data API reads from (its GET requests and
    authentication); empty: the primary. Nothing writes there (docs/scaling.md)."""
    pool_max: int = 10
    """Connections per service pool."""
    connect_timeout: float = 5.0
    """Seconds to wait for a connection before reporting the database unreachable."""


Broker = Literal["mosquitto", "rabbitmq"]
"""The brokers a cluster can run on (``EP_MQTT_BROKER``, docs/decisions.md)."""


class MqttSettings(Section, frozen=True, kw_only=True):
    broker: Broker = "mosquitto"
    """``mosquitto``: ingest subscribes over MQTT 5; ``rabbitmq``: homebases still speak MQTT
    (its MQTT plugin) and ingest consumes the durable queue ``share_group`` over AMQP."""
    url: str = "mqtt://127.0.0.1:1883"
    """Broker URL with the ingest service's account, ``mqtt://user:password@host:port``; on
    RabbitMQ only its host and port are used (where homebases and the simulator connect)."""
    amqp_url: str = ""
    """On RabbitMQ: ingest's account, ``amqp://user:password@host:port/vhost`` (the vhost of
    the MQTT plugin, ``/`` by default)."""
    accounts_url: str = ""
    """The account that manages homebase accounts, required wherever this cluster pairs
    homebases (with ``EP_PAIRING_CLUSTER_SECRET``): Mosquitto's dynamic security admin,
    ``mqtt://user:password@host:port``; on RabbitMQ an administrator of its management API,
    ``http://user:password@host:15672``."""
    client_id: str = "energy-platform-ingest"
    """Client id of the persistent ingest session; each ingest worker needs its own."""
    share_group: str = "ingest"
    """Shared-subscription group of the ingest workers (``$share/<group>/...``); on RabbitMQ
    the name of the one queue they all consume."""
    session_expiry: int = 7 * 24 * 3600
    """Seconds the broker keeps an ingest session (and queues for it) while it is away."""
    topic_prefix: str = ""
    """Put before ``homebases/...``; empty in production. At most one level (``test-1/``):
    the ingest account's ACLs allow that much (tests use one to stay apart)."""


HttpServer = Literal["uvicorn", "granian"]
"""The HTTP servers an HTTP service can run on (``EP_HTTP_SERVER``)."""


class HttpSettings(Section, frozen=True, kw_only=True):
    host: str = "127.0.0.1"
    """Address the HTTP services bind to."""
    api_port: int = 8000
    """Port of the data API (feeds, streams, notifications)."""
    provisioning_port: int = 8001
    """Port of the provisioning API."""
    forwarder_port: int = 8002
    """Port of the forwarder API."""
    provisioning_plain_port: int = 8080
    """With a certificate configured, provisioning also speaks plain HTTP on this port (the
    spec lets homebases use HTTP and HTTPS); 0: HTTPS only. Unused without a certificate."""
    metrics_port: int = 0
    """Port where a process with no HTTP service of its own (``serve engine``, ``serve
    ingest``) serves ``/metrics``, ``/healthz`` and ``/readyz``; 0: none."""
    max_body_bytes: int = 1_048_576
    """Largest accepted request body; larger ones get 413."""
    server: HttpServer = "uvicorn"
    """HTTP server of every HTTP service: ``uvicorn`` (Python, in the services' event loop) or
    ``granian`` (Rust HTTP, embedded in the same event loop; docs/decisions.md)."""
    tls_cert: str = ""
    """PEM certificate (chain) file: with ``tls_key``, every HTTP service serves HTTPS on its
    port (provisioning also plain HTTP on ``provisioning_plain_port``)."""
    tls_key: str = ""
    """PEM private key file of ``tls_cert``."""
    reuse_port: bool = False
    """Bind with SO_REUSEPORT, so that several processes serve one port and the kernel spreads
    the connections among them (docs/scaling.md); uvicorn only. Off: a second process on a
    taken port fails to start, as a stray one should."""

    def __post_init__(self) -> None:
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ConfigurationError("EP_HTTP_TLS_CERT and EP_HTTP_TLS_KEY go together")
        if self.reuse_port and self.server != "uvicorn":
            raise ConfigurationError("EP_HTTP_REUSE_PORT needs EP_HTTP_SERVER=uvicorn")

    @property
    def tls(self) -> TlsFiles | None:
        """The certificate and key when HTTPS is configured."""
        return TlsFiles(self.tls_cert, self.tls_key) if self.tls_cert else None


class TlsFiles(msgspec.Struct, frozen=True):
    cert: str
    key: str


class ApiSettings(Section, frozen=True, kw_only=True):
    """The data API's shares of its process and of the database: what one user's exports may
    hold, and how long any statement or open transaction of its connections may last
    (docs/api.md#the-feed-export)."""

    exports_per_user: int = 2
    """Feed exports one user may run at once in one API process; more get 429 with
    Retry-After (the process runs at most half its pool's connections as exports)."""
    overviews_per_user: int = 2
    """Overviews one user may compute at once in one API process; more get 429 with
    Retry-After (exports and overviews hold at most half the pool's connections)."""
    costly_connections_per_user: int = 3
    """Connections one user's costly reads (overviews, what-ifs) hold at once in one API
    process: their reads beyond wait their turn, so that one user's loop of them keeps at most
    this many database backends busy (docs/api.md#shares-of-costly-reads). 3: an overview's
    three reads at once; 1 halved what a flood of one user cost the data endpoint and nearly
    doubled a year overview's p99 (docs/api.md#overview)."""
    costly_share_per_user: float = 0.25
    """While anyone else is being served, the share of one database backend's time that one
    user's costly reads (overviews, what-ifs) hold over time in one API process, past a burst
    of EP_API_COSTLY_BURST_S: their next read waits until they are back within it. Served
    alone, they are not rationed (docs/api.md#shares-of-costly-reads)."""
    costly_burst_s: float = 1.0
    """Seconds of connection time one user's costly reads may hold at once before their
    ration (EP_API_COSTLY_SHARE_PER_USER) applies: a page's few overviews pass unrationed."""
    overview_max_channels: int = 1000
    """Channels of a feed the overview reads at most: a feed with more gets 413 naming this
    bound (the data endpoint answers its streams one at a time)."""
    export_stall_s: float = 60.0
    """Seconds an export waits for its client to take the next piece of the body (64 KiB)
    before it is ended, its transaction rolled back and its connection returned."""
    statement_timeout_s: float = 60.0
    """PostgreSQL ``statement_timeout`` of the data API's connections (0: none), as long as
    its client waits for a statement (asyncpg's command timeout): every answer, and every
    fetch of an export's cursor, is one bounded statement."""
    idle_in_transaction_s: float = 600.0
    """PostgreSQL ``idle_in_transaction_session_timeout`` of the data API's connections (0:
    none): a transaction left open (an export whose client takes longer than this to read
    what one fetch gave) is ended by the server, and its snapshot no longer holds back
    vacuum."""

    def __post_init__(self) -> None:
        if (
            self.exports_per_user < 1
            or self.overviews_per_user < 1
            or self.costly_connections_per_user < 1
            or self.overview_max_channels < 1
            or not 0 < self.costly_share_per_user <= self.costly_connections_per_user
            or self.costly_burst_s < 0
            or self.export_stall_s <= 0
            or self.statement_timeout_s < 0
            or self.idle_in_transaction_s < 0
        ):
            raise ValueError(
                "EP_API_EXPORTS_PER_USER, EP_API_OVERVIEWS_PER_USER,"
                " EP_API_COSTLY_CONNECTIONS_PER_USER and EP_API_OVERVIEW_MAX_CHANNELS"
                " must be >= 1, EP_API_COSTLY_SHARE_PER_USER > 0 and at most"
                " EP_API_COSTLY_CONNECTIONS_PER_USER, EP_API_COSTLY_BURST_S >= 0,"
                " EP_API_EXPORT_STALL_S > 0, and"
                " EP_API_STATEMENT_TIMEOUT_S and EP_API_IDLE_IN_TRANSACTION_S >= 0"
            )

    def session(self) -> dict[str, str]:
        """The PostgreSQL settings of the data API's connections, given when each connects."""
        return {
            "statement_timeout": f"{round(self.statement_timeout_s * 1000)}",
            "idle_in_transaction_session_timeout": f"{round(self.idle_in_transaction_s * 1000)}",
        }


class DeviceSettings(Section, frozen=True, kw_only=True):
    """The devices' side of the cluster: the ``ingest`` service (MQTT, RabbitMQ, the CoAP data
    server) and the UDP address devices reach."""

    host: str = "127.0.0.1"
    """Address the UDP services (CoAP, TFTP) bind to."""
    coap_port: int = 5683
    """CoAP port of the provisioning and data servers."""
    receive_maximum: int = 2000
    """Unacknowledged MQTT messages the broker may send at once: bounds ingest's memory."""
    batch_messages: int = 500
    """Most messages written in one transaction."""
    batch_linger_ms: int = 20
    """How long a batch waits for more messages before it is written."""
    route_cache_seconds: float = 10.0
    """How long a homebase's feed or forwarder registration is cached."""
    cache_size: int = 100_000
    """Serial numbers each per-SN cache (routes, keys, drop logs) holds at most."""
    dead_letter_days: int = 30
    """Days a refused message is kept in ``cluster.dead_letters``."""
    coap_requests_per_minute: int = 60
    """CoAP ``/data`` and ``/events`` requests allowed per device (4.29 beyond)."""
    coap_burst: int = 30
    """CoAP requests one device may make at once before the per-minute rate applies."""
    coap_max_body_bytes: int = 65_536
    """Largest CoAP request body, block-wise uploads included (4.13 beyond)."""
    coap_data_server: str = ""
    """``ip:port`` provisioning assigns devices to for this data server (default: the bind)."""


class ProvisioningSettings(Section, frozen=True, kw_only=True):
    SECRETS = frozenset({"secret_key"})

    secret_key: str = ""
    """64 hex characters: the AES-256 key that encrypts homebase secrets at rest."""
    sn_requests_per_minute: int = 6
    """Homebase-facing requests (boot, upgrade, CoAP config) allowed per serial number."""
    sn_burst: int = 10
    """Requests one serial number may make at once before the per-minute rate applies."""
    address_requests_per_minute: int = 600
    """Homebase-facing requests allowed per client address (many homebases share a NAT)."""
    address_burst: int = 1200
    """Requests one address may make at once before the per-minute rate applies."""
    config_interval: int = 3600
    """Seconds a CoAP device waits before it asks for its configuration again."""
    tftp_port: int = 6969
    """Read-only TFTP port for firmware of generations 0 and 3 (bound on ``EP_DEVICES_HOST``;
    ``EP_DEVICES_TFTP_PORT``, its name before, still works)."""


class PairingSettings(Section, frozen=True, kw_only=True):
    """This cluster at provisioning, and the broker accounts its pairings keep (pairing/)."""

    SECRETS = frozenset({"cluster_secret"})

    provisioning_url: str = "http://127.0.0.1:8001"
    """Base URL of the provisioning service this cluster is registered with."""
    cluster_secret: str = ""
    """This cluster's authorisation secret (``X-SvcClusterAuth``), from ``admin clusters add``."""
    accounts_sync_interval: float = 600.0
    """Seconds between the engine's reconciliations of the broker's homebase accounts with this
    cluster's pairings (``admin broker-accounts sync``); 0: never. Only with a secret."""

    def __post_init__(self) -> None:
        if self.accounts_sync_interval < 0:
            raise ValueError("EP_PAIRING_ACCOUNTS_SYNC_INTERVAL must be >= 0")


class BillingSettings(Section, frozen=True, kw_only=True):
    currency: str = "EUR"
    """What money is in: the unit the engine gives new cost and credit streams, the bill's,
    the overview's and the plans' currency, and the one a price file must be in."""


class EngineSettings(Section, frozen=True, kw_only=True):
    poll_interval: float = 1.0
    """Seconds between looks at the work queues (the engine also wakes at each bucket end)."""
    workers: int = 1
    """Concurrent processing loops (each with its own connection); feeds are split between them."""
    intake_batch: int = 10_000
    """Dirty ranges moved from ingest's queue per transaction."""
    batch_feeds: int = 100
    """Feeds whose queued work one transaction recomputes."""
    max_span: int = 21_600
    """Seconds of one channel recomputed per transaction at most (a multiple of 90)."""
    round_s: float = 5.0
    """Seconds a processing round recomputes queued work before it takes ingest's new ranges
    in again: one homebase's backlog (a year sent at once) is worked off over many rounds, and
    every other feed's new readings are taken in and processed between them."""
    work_mem: str = "256MB"
    """PostgreSQL work_mem for the processing statements: hash aggregates instead of sorts."""
    rollup_delay: float = 600.0
    """Seconds queued rollup work waits before it is taken, so that a live stream's points of
    ten minutes cost one recomputation of their hour, not one per batch (readers answer the
    waiting hours from the points meanwhile: real-time rollups)."""
    rollup_batch: int = 500
    """Streams whose queued rollup work one transaction recomputes."""
    max_spread: int = 31 * 86_400
    """Seconds between two register readings up to which their rise is spread evenly over the
    time between them; a longer gap's rise goes whole to the later reading's bucket."""
    max_rate_power: float = 100_000.0
    """Fastest rise of an electricity register in W (Wh per hour); a faster one is a replaced
    meter or a wrong reading and adds 0 (settable per stream: admin streams configure)."""
    max_rate_gas: float = 10.0
    """Fastest rise of a gas meter in m³ per hour (a household's meter passes at most a few)."""
    max_rate_water: float = 10.0
    """Fastest rise of a water meter in m³ per hour (a household connection passes 2 to 5)."""
    max_rate_heat: float = 100.0
    """Fastest rise of a heat meter in kW (kWh per hour)."""
    statement_timeout: float = 50.0
    """Seconds one statement of the processing, the rollups or the notification rules may run
    before PostgreSQL cancels it (57014): counted against the feeds it computed, as below.
    Under the 60 s after which the connections' client gives up on any statement (a timeout
    of the world, retried whole for ever): the server's cancel must come first."""
    park_after: int = 3
    """Failures in a row of one feed's work with one SQLSTATE outside the data's classes (54001
    statement too complex, 53200 out of memory, 57014 a statement timeout) before the feed is
    parked like a data error (docs/operations.md#parked-work)."""

    def __post_init__(self) -> None:
        if self.max_spread < 0:
            raise ValueError("EP_ENGINE_MAX_SPREAD must be >= 0 seconds")
        if self.round_s <= 0:
            raise ValueError("EP_ENGINE_ROUND_S must be > 0 seconds")
        rates = (self.max_rate_power, self.max_rate_gas, self.max_rate_water, self.max_rate_heat)
        if min(rates) <= 0:
            raise ValueError("EP_ENGINE_MAX_RATE_* must be positive")
        if self.rollup_delay < 0 or self.rollup_batch < 1:
            raise ValueError("EP_ENGINE_ROLLUP_DELAY must be >= 0 and EP_ENGINE_ROLLUP_BATCH >= 1")
        if self.max_span <= 0 or self.max_span % 90:
            raise ValueError("EP_ENGINE_MAX_SPAN must be a positive multiple of 90 seconds")
        if self.workers < 1:
            raise ValueError("EP_ENGINE_WORKERS must be at least 1")
        if not 0 < self.statement_timeout < 60 or self.park_after < 1:
            raise ValueError(
                "EP_ENGINE_STATEMENT_TIMEOUT must be over 0 and under 60 seconds (the client's"
                " own limit) and EP_ENGINE_PARK_AFTER >= 1"
            )

    def timeout_ms(self) -> str:
        """``statement_timeout`` as PostgreSQL's setting takes it (milliseconds)."""
        return str(round(self.statement_timeout * 1000))


class ForwarderSettings(Section, frozen=True, kw_only=True):
    delivery_timeout: float = 10.0
    """Seconds a delivery may take (connect, send, answer) before it counts as failed."""
    max_concurrent: int = 200
    """Deliveries in flight at once over all customers (one at a time per customer)."""
    backoff_base: float = 1.0
    """Seconds before the first retry; doubled per failed attempt, capped at the interval."""
    settle_seconds: float = 1.0
    """How long after an interval's end its batch is made, so that ingest can store its points."""
    poll_interval: float = 0.5
    """Seconds between looks for customers whose next delivery is due."""
    claim_size: int = 500
    """Customers whose due batches one statement makes."""
    claim_workers: int = 2
    """Claims made at once, each on its own database connection (they skip each other's
    customers), so that making batches uses more than one database core."""
    allowed_networks: str = ""
    """Comma-separated CIDRs that destinations may be in although not public (e.g.
    ``127.0.0.0/8,::1/128`` for local development); empty: only public addresses."""

    def __post_init__(self) -> None:
        self.networks()  # a bad CIDR fails here, when the settings are read

    def networks(self) -> tuple[IPNetwork, ...]:
        """``allowed_networks`` parsed."""
        try:
            return tuple(
                ip_network(part.strip())
                for part in self.allowed_networks.split(",")
                if part.strip()
            )
        except ValueError as e:
            raise ValueError(f"allowed_networks: {e}") from None


class NotificationsSettings(Section, frozen=True, kw_only=True):
    interval: float = 10.0
    """Seconds between rounds of the notification rules."""
    offline_after: int = 900
    """Seconds without data and without a boot before a homebase counts as offline."""
    silent_after: int = 3600
    """Seconds without a point before a channel of a live homebase counts as silent."""
    subscription_days: int = 7
    """Days before a subscription's end when its owner is told."""
    unusual_factor: float = 2.0
    """A day's consumption over this times its 28-day median is unusual."""
    unusual_settle: int = 900
    """Seconds after local midnight before the day that ended is judged (late data settles)."""
    unusual_batch: int = 200
    """Feeds whose day is taken per round (the first round after midnight has many)."""
    events_days: int = 90
    """Days a device's event (``cluster.device_events``) is kept after it arrived, once the
    power-change rule has read it (0: for ever). Removed by the engine's retention rounds
    (``EP_RETENTION_INTERVAL``)."""

    def __post_init__(self) -> None:
        if self.events_days < 0:
            raise ValueError("EP_NOTIFICATIONS_EVENTS_DAYS must be >= 0")


class CompactionSettings(Section, frozen=True, kw_only=True):
    """When points move from the row tier (a row per point) into the compact tier (a row per
    stream and UTC day); docs/schema.md#tiers."""

    after_days: int = 7
    """Whole UTC days that ended this many days ago or earlier are compacted (0: never; else at
    least 2, which leaves writers into recent days a day's margin without a lock)."""
    interval: float = 3600.0
    """Seconds between compaction rounds."""
    page: int = 1_000
    """Streams looked at per candidate query."""

    def __post_init__(self) -> None:
        if self.after_days == 1 or self.after_days < 0:
            raise ValueError("EP_COMPACTION_AFTER_DAYS must be 0 (never) or at least 2")
        if self.interval <= 0 or self.page < 1:
            raise ValueError("EP_COMPACTION_INTERVAL must be > 0 and EP_COMPACTION_PAGE >= 1")


class RetentionSettings(Section, frozen=True, kw_only=True):
    """How long each kind of data is kept; 0 keeps it for ever. Measured data is kept by
    default; transient data (forwarder points once delivered, the delivery log) 30 days. Dead
    letters: ``EP_DEVICES_DEAD_LETTER_DAYS``."""

    raw_days: int = 0
    """Days raw points are kept (whole chunks older than this are dropped; 0: for ever)."""
    processed_days: int = 0
    """Days processed points are kept (0: for ever). Hourly rollups are always kept."""
    system_days: int = 0
    """Days system points are kept (0: for ever)."""
    forwarder_points_days: int = 30
    """Days a forwarder point is kept once every customer it belongs to has it delivered."""
    delivery_log_days: int = 30
    """Days a delivery attempt stays in forwarder.delivery_log (0: for ever)."""
    interval: float = 3600.0
    """Seconds between retention rounds."""
    batch: int = 50_000
    """Forwarder points deleted per transaction."""

    def __post_init__(self) -> None:
        ages = (
            self.raw_days,
            self.processed_days,
            self.system_days,
            self.forwarder_points_days,
            self.delivery_log_days,
        )
        if min(ages) < 0 or self.interval <= 0 or self.batch < 1:
            raise ValueError("EP_RETENTION_*_DAYS must be >= 0, INTERVAL > 0 and BATCH >= 1")


class HistorySettings(Section, frozen=True, kw_only=True):
    """A raw stream's history written from outside a device: the corrections of imports,
    repairs and undos (cluster.correction_log)."""

    corrections_days: int = 30
    """Days a correction (what it added, replaced and removed) is kept, and can be undone (0:
    for ever). Removed by the engine's retention rounds (``EP_RETENTION_INTERVAL``)."""
    undos_per_minute: int = 10
    """Undos one user may ask of one API process a minute, as many at once; more get 429 with
    Retry-After (each undo rewrites up to an import's points and queues the engine)."""

    def __post_init__(self) -> None:
        if self.corrections_days < 0 or self.undos_per_minute < 1:
            raise ValueError(
                "EP_HISTORY_CORRECTIONS_DAYS must be >= 0 and EP_HISTORY_UNDOS_PER_MINUTE >= 1"
            )


class LiveSettings(Section, frozen=True, kw_only=True):
    """The data API's live streams (``GET /feeds/{id}/live``, docs/api.md#live)."""

    replay_s: int = 900
    """Seconds of committed events kept, so that a reconnect with ``Last-Event-ID`` misses
    nothing; an older id gets a ``reload`` event. Pruned by the engine."""
    keepalive_s: float = 15.0
    """Seconds of silence after which a stream gets a comment line (proxies keep it open,
    clients see that it is alive)."""
    client_buffer_bytes: int = 1_048_576
    """Bytes of events waiting for one client; a client that falls this far behind is
    disconnected (it resumes with ``Last-Event-ID``)."""
    max_stream_s: float = 3600.0
    """Seconds after which a stream is ended; its client resumes with ``Last-Event-ID``
    without a gap, behind a load balancer perhaps on another API process."""
    streams_per_user: int = 20
    """Live streams one user may hold open at once in one API process; more get 429 (a
    runaway script cannot take every connection the process has)."""

    def __post_init__(self) -> None:
        if (
            self.replay_s < 1
            or self.keepalive_s <= 0
            or self.client_buffer_bytes < 1024
            or self.max_stream_s <= 0
            or self.streams_per_user < 1
        ):
            raise ValueError(
                "EP_LIVE_REPLAY_S must be >= 1, EP_LIVE_KEEPALIVE_S > 0,"
                " EP_LIVE_CLIENT_BUFFER_BYTES >= 1024, EP_LIVE_MAX_STREAM_S > 0 and"
                " EP_LIVE_STREAMS_PER_USER >= 1"
            )


class LogSettings(Section, frozen=True, kw_only=True):
    format: Literal["auto", "json", "console"] = "auto"
    """``auto``: console on a TTY, JSON lines otherwise."""
    level: Literal["debug", "info", "warning", "error"] = "info"
    """Lowest level written."""


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    database: DatabaseSettings = msgspec.field(default_factory=DatabaseSettings)
    mqtt: MqttSettings = msgspec.field(default_factory=MqttSettings)
    http: HttpSettings = msgspec.field(default_factory=HttpSettings)
    api: ApiSettings = msgspec.field(default_factory=ApiSettings)
    devices: DeviceSettings = msgspec.field(default_factory=DeviceSettings)
    provisioning: ProvisioningSettings = msgspec.field(default_factory=ProvisioningSettings)
    pairing: PairingSettings = msgspec.field(default_factory=PairingSettings)
    notifications: NotificationsSettings = msgspec.field(default_factory=NotificationsSettings)
    log: LogSettings = msgspec.field(default_factory=LogSettings)
    engine: EngineSettings = msgspec.field(default_factory=EngineSettings)
    billing: BillingSettings = msgspec.field(default_factory=BillingSettings)
    forwarder: ForwarderSettings = msgspec.field(default_factory=ForwarderSettings)
    retention: RetentionSettings = msgspec.field(default_factory=RetentionSettings)
    compaction: CompactionSettings = msgspec.field(default_factory=CompactionSettings)
    history: HistorySettings = msgspec.field(default_factory=HistorySettings)
    live: LiveSettings = msgspec.field(default_factory=LiveSettings)
    shutdown_timeout: float = 10.0
    """Seconds a service may take to stop before its tasks are cancelled."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        """Build settings from ``EP_*`` variables; unknown ``EP_*`` names are ignored here and
        reported by :func:`unknown_variables` (the CLI warns of them at start)."""
        raw: dict[str, Any] = {}
        names = _variable_names()
        # The variable each setting was read from: its current name, else its former one (an
        # error names the variable the operator actually set).
        given = {new: old for old, new in RENAMED.items() if old in environ}
        given |= {name: name for name in names.values() if name in environ}
        for path, name in names.items():
            if name in given:
                *section, field = path.removeprefix("$.").split(".")
                target = raw.setdefault(section[0], {}) if section else raw
                target[field] = environ[given[name]]
        try:
            return msgspec.convert(raw, cls, strict=False)
        except msgspec.ValidationError as e:
            message = str(e)
            for path, name in names.items():
                if message.endswith(f"at `{path}`"):
                    variable = given.get(name, name)
                    message = f"{variable}: {message.removesuffix(f' - at `{path}`')}"
            raise ConfigurationError(message) from e


def _variable_names() -> dict[str, str]:
    """Every setting's variable, by its path in :class:`Settings` (``$.http.api_port``)."""
    names = {"$.shutdown_timeout": "EP_SHUTDOWN_TIMEOUT"}
    for section, section_type in _sections().items():
        for field in msgspec.structs.fields(section_type):
            names[f"$.{section}.{field.name}"] = f"EP_{section}_{field.name}".upper()
    return names


def unknown_variables(environ: Mapping[str, str]) -> dict[str, str | None]:
    """``EP_*`` variables that name no setting, each with the setting it most likely meant
    (None when nothing is close): a typo is reported instead of silently ignored."""
    known = list(_variable_names().values())
    return {
        name: next(iter(difflib.get_close_matches(name, known, n=1, cutoff=0.8)), None)
        for name in sorted(environ)
        if name.startswith("EP_") and name not in known and name not in RENAMED
    }


def renamed_variables(environ: Mapping[str, str]) -> dict[str, str]:
    """Variables set under a setting's former name, each with its current name."""
    return {old: new for old, new in RENAMED.items() if old in environ}


def _sections() -> dict[str, type[msgspec.Struct]]:
    return {
        f.name: f.type
        for f in msgspec.structs.fields(Settings)
        if isinstance(f.type, type) and issubclass(f.type, msgspec.Struct)
    }
