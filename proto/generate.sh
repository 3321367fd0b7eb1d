#!/usr/bin/env bash
# Regenerates the committed Go code of proto/metadv1 from its .proto files with pinned generators.
# Run from anywhere (`make proto` runs it from the repo root). It installs what it needs:
#   - protoc from Debian's protobuf-compiler (apt-get), if no protoc is on PATH;
#   - protoc-gen-go and protoc-gen-go-grpc at the versions below into ./bin/tools (GOBIN).
# Output is deterministic: running it twice leaves the tree unchanged. The protoc version is written
# into each .pb.go header, so a different protoc changes that line only.
set -euo pipefail

PROTOC_GEN_GO_VERSION=v1.36.12    # google.golang.org/protobuf/cmd/protoc-gen-go; matches go.mod
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2 # google.golang.org/grpc/cmd/protoc-gen-go-grpc

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
tools="$root/bin/tools"

if ! command -v protoc >/dev/null 2>&1; then
	echo "generate.sh: protoc not found; installing Debian's protobuf-compiler" >&2
	if [ "$(id -u)" -eq 0 ]; then sudo=(); else sudo=(sudo); fi
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

rm -f proto/metadv1/*.pb.go
cp "$out"/metadv1/*.pb.go proto/metadv1/
echo "generate.sh: generated $(ls "$out"/metadv1/*.pb.go | wc -l) files in proto/metadv1 with $(protoc --version)" >&2
