#!/bin/bash -eu
# ClusterFuzzLite (or OSS-Fuzz) build of storesim's fuzz targets, run by the
# base-builder-go image with $SRC, $OUT and compile_native_go_fuzzer_v2 set
# up. One libFuzzer binary per target of fuzz/targets, and a seed corpus
# zip for each from the committed corpus files under fuzz/testdata/fuzz and
# fuzz/machine/testdata/fuzz.
#
# go test ./fuzz/fuzztool -run TestClusterFuzzLiteBuild runs this script
# with a stand-in for compile_native_go_fuzzer_v2 that stops at the Go
# archive (no clang or libFuzzer there): it checks the Go step compiles.
cd "$SRC/storesim"

# go-118-fuzz-build rewrites each harness's "testing" import to its own
# testing package, which the module must then resolve. It is not in go.mod
# (nothing but this build needs it). Its version must suit the image's
# go-118-fuzz-build_v2: GO118_FUZZ_BUILD pins one (default: the latest).
go get "github.com/AdamKorcz/go-118-fuzz-build/testing@${GO118_FUZZ_BUILD:-latest}"

# PACKAGE FUNCTION FUZZER, one line per target (fuzz/fuzztool list); each
# FUNCTION is a native Go fuzz test FuzzX(f *testing.F), alone in its file.
fuzzers=$(go run ./fuzz/fuzztool list)
while read -r pkg function fuzzer <&3; do
	compile_native_go_fuzzer_v2 "$pkg" "$function" "$fuzzer"
done 3<<<"$fuzzers"

# $OUT/FUZZER_seed_corpus.zip: each input framed the way the testing
# package just added hands it to f.Fuzz (-builder reads which one it is).
go run ./fuzz/fuzztool corpus -out "$OUT" -builder "$(go list -m -f '{{.Dir}}' github.com/AdamKorcz/go-118-fuzz-build)"
