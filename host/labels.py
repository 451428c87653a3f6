"""Docker labels: the durable record of which sandboxes exist (rebuilt from these after a restart)."""

PREFIX = "io.boxwright."
SANDBOX = PREFIX + "sandbox"  # sandbox id; marks every Boxwright container and volume
NAMESPACE = PREFIX + "namespace"
OWNER = PREFIX + "owner"
NAME = PREFIX + "name"
CREATED_AT = PREFIX + "created-at"  # epoch seconds
EXPIRES_AT = PREFIX + "expires-at"  # epoch seconds
TOKEN = PREFIX + "token"  # per-sandbox bearer token; never logged, never returned by a tool
IMAGE = PREFIX + "image"
SCHEMA = PREFIX + "label-schema"
SCHEMA_VERSION = "1"
NETWORK = PREFIX + "network"  # the sandbox's network mode: public | none | allowlist
ALLOW_HOSTS = PREFIX + "allow-hosts"  # with mode allowlist: the entries, comma-separated
ROLE = PREFIX + "role"  # on helper containers that are not sandboxes (the network guard)
