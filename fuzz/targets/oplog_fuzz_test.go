package targets

import "testing"

// FuzzOpLog is OpLog as a native Go fuzz test, the form
// compile_native_go_fuzzer_v2 builds (.clusterfuzzlite/build.sh). Nothing
// here but the call: a libFuzzer build replaces package testing.
func FuzzOpLog(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) { OpLog(data) })
}
