package model

import (
	"testing"

	"go.uber.org/goleak"
)

// porcupine runs each key's check on a goroutine; the concurrency test of
// the recorder starts some too.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
