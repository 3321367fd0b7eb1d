#!/usr/bin/env bash
# Regenerates the committed Go code of proto/metadv1 and the Python stubs of python/metad/metadv1
# from its .proto files with pinned generators, and the Python client's exception classes of the
# reason enum (python/metad/_reasons.py) and result dataclasses (python/metad/results.py).
# Run from anywhere (`make proto` runs it from the repo root). It installs what it needs:
#   - protoc from Debian's protobuf-compiler (apt-get), if no protoc is on PATH;
#   - protoc-gen-go and protoc-gen-go-grpc at the versions below into ./bin/tools (GOBIN);
#   - python3-protobuf (apt-get) for Debian's /usr/bin/python3, if it cannot import it.
# Output is deterministic: running it twice leaves the tree unchanged. The protoc version is written
# into each .pb.go header, so a different protoc changes that line only.
set -euo pipefail

PROTOC_GEN_GO_VERSION=v1.36.12    # google.golang.org/protobuf/cmd/protoc-gen-go; matches go.mod
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2 # google.golang.org/grpc/cmd/protoc-gen-go-grpc
# The Python stubs need the protoc of Debian 12 (3.21.12): their code runs on the protobuf runtime
# 3.21 (Python package 4.21) and every later one. Another version is refused, since it would change
# the committed stubs.
PYTHON_PROTOC_VERSION="libprotoc 3.21.12"
# The Python client's schemas: the files whose messages its calls send and answer. The client ships
# only these (the Raft log commands and snapshot records are the server's) and no gRPC stubs: it
# makes its calls from the services' descriptors (python/metad/_core.py).
PYTHON_PROTOS=(metadv1/types.proto metadv1/metadata.proto metadv1/admin.proto)

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
tools="$root/bin/tools"

if [ "$(id -u)" -eq 0 ]; then sudo=(); else sudo=(sudo); fi
if ! command -v protoc >/dev/null 2>&1; then
	echo "generate.sh: protoc not found; installing Debian's protobuf-compiler" >&2
	"${sudo[@]}" apt-get update -qq
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq protobuf-compiler >/dev/null
fi

# install_tool BINARY PACKAGE VERSION: go install PACKAGE@VERSION into $tools unless the binary there
# already reports VERSION.
install_tool() {
	local bin="$1" pkg="$2" version="$3"
	local have=""
	if [ -x "$tools/$bin" ]; then
		have="$("$tools/$bin" --version 2>/dev/null | awk '{print $NF}')"
	fi
	if [ "${have#v}" = "${version#v}" ]; then
		return
	fi
	echo "generate.sh: installing $pkg@$version into bin/tools" >&2
	GOBIN="$tools" go install "$pkg@$version"
}
mkdir -p "$tools"
install_tool protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go "$PROTOC_GEN_GO_VERSION"
install_tool protoc-gen-go-grpc google.golang.org/grpc/cmd/protoc-gen-go-grpc "$PROTOC_GEN_GO_GRPC_VERSION"

# Generate into a scratch directory, then replace the committed files, so a failure leaves them
# untouched and a removed .proto leaves no stale .pb.go behind.
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
mapfile -t protos < <(cd proto && find metadv1 -name '*.proto' | LC_ALL=C sort)
PATH="$tools:$PATH" protoc \
	--proto_path=proto \
	--go_out="$out" --go_opt=paths=source_relative \
	--go-grpc_out="$out" --go-grpc_opt=paths=source_relative \
	"${protos[@]}"


# Python: messages with type stubs (.pyi) for the client's schemas (PYTHON_PROTOS).
# protoc writes `from metadv1 import x_pb2`; the stubs live in the package metad.metadv1, so that
# import is rewritten to `from metad.metadv1 import x_pb2`.
if [ "$(protoc --version)" != "$PYTHON_PROTOC_VERSION" ]; then
	echo "generate.sh: the Python stubs need $PYTHON_PROTOC_VERSION (Debian 12's protobuf-compiler), not $(protoc --version)" >&2
	exit 1
fi
mkdir -p "$out/py"
protoc --proto_path=proto --python_out="$out/py" --pyi_out="$out/py" "${PYTHON_PROTOS[@]}"
sed -i 's/^from metadv1 import /from metad.metadv1 import /' "$out"/py/metadv1/*.py "$out"/py/metadv1/*.pyi

rm -f proto/metadv1/*.pb.go
cp "$out"/metadv1/*.pb.go proto/metadv1/
echo "generate.sh: generated $(ls "$out"/metadv1/*.pb.go | wc -l) files in proto/metadv1 with $(protoc --version)" >&2
py=python/metad/metadv1
mkdir -p "$py"
rm -f "$py"/*_pb2.py "$py"/*_pb2.pyi "$py"/*_pb2_grpc.py
cp "$out"/py/metadv1/* "$py"/
echo "generate.sh: generated $(ls "$out"/py/metadv1 | wc -l) files in $py with $(protoc --version)" >&2

# The client's exception classes, one per value of the reason enum (python/metad/_reasons.py), and
# its result dataclasses, one per message its calls answer (python/metad/results.py), are generated
# from the new stubs by Debian's Python; a reason with no kind in python/tools/gen_reasons.py, or a
# message field of a type with no class in python/tools/gen_results.py, stops here.
pybin=/usr/bin/python3
if ! "$pybin" -c 'import google.protobuf' 2>/dev/null; then
	echo "generate.sh: $pybin cannot import google.protobuf; installing Debian's python3-protobuf" >&2
	"${sudo[@]}" apt-get update -qq
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq python3-protobuf >/dev/null
fi
"$pybin" python/tools/gen_reasons.py
"$pybin" python/tools/gen_results.py
echo "generate.sh: generated python/metad/_reasons.py and python/metad/results.py" >&2
