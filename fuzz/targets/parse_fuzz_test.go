package targets

import "testing"

// FuzzParseOpLog is ParseOpLog as a native Go fuzz test (the input is text,
// as in the committed corpus of package fuzz).
func FuzzParseOpLog(f *testing.F) {
	f.Fuzz(func(t *testing.T, text string) { ParseOpLog([]byte(text)) })
}
