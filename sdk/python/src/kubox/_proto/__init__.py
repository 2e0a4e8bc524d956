"""Message types of kubox-agent's API, generated from proto/kubox/agent/v1 by protoc's Python
generator (and mypy-protobuf's stubs): ``make python-generate`` rewrites them, and
``make python-lint`` fails when they are stale. The SDK's public types (kubox.types) are built
from them; they are not part of the public API. Do not edit the generated files."""
